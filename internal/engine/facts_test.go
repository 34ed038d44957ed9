package engine

import (
	"testing"
	"time"
)

func TestPluginHealth(t *testing.T) {
	t.Parallel()
	probed := time.Now()
	for _, tt := range []struct {
		p    PluginInfo
		want PluginHealth
		why  string
	}{
		{PluginInfo{}, PluginUnknown, "not probed yet"},
		{PluginInfo{ProbedAt: probed, LastError: "Probe: Unavailable"}, PluginUnhealthy, "Probe: Unavailable"},
		{PluginInfo{ProbedAt: probed, Healthy: true}, PluginNotReady, "its Probe says it is not ready"},
		{PluginInfo{ProbedAt: probed, Healthy: true, Ready: true}, PluginHealthy, ""},
	} {
		if got := tt.p.Health(); got != tt.want {
			t.Errorf("%+v: Health = %q, want %q", tt.p, got, tt.want)
		}
		if got := tt.p.HealthWhy(); got != tt.why {
			t.Errorf("%+v: HealthWhy = %q, want %q", tt.p, got, tt.why)
		}
	}
}

func TestSchedulability(t *testing.T) {
	t.Parallel()
	down := &PluginInfo{ID: "ceph", ProbedAt: time.Now(), LastError: "Probe: Unavailable"}
	never := &PluginInfo{ID: "ceph"}
	for _, tt := range []struct {
		v      VolumeSummary
		p      *PluginInfo
		cell   string
		reason string
	}{
		{VolumeSummary{State: "ready", Schedulable: true}, nil, "yes", "it can take claims"},
		{VolumeSummary{State: "deleting"}, nil, "no: deleting", "the volume is deleting, not ready"},
		{VolumeSummary{State: "creating", PluginID: "ceph"}, down, "no: creating", "the volume is creating, not ready"},
		{VolumeSummary{State: "ready", PluginID: "ceph"}, down, "no: plugin unhealthy", `its plugin "ceph" is unhealthy: Probe: Unavailable`},
		{VolumeSummary{State: "ready", PluginID: "ceph"}, never, "no: plugin not probed yet", `its plugin "ceph" has not been probed healthy yet`},
		{VolumeSummary{State: "ready", PluginID: "ceph"}, nil, "no: plugin unhealthy", `its plugin "ceph" is unhealthy`},
	} {
		s := tt.v.Schedulability(tt.p)
		if s.String() != tt.cell || s.Sentence() != tt.reason {
			t.Errorf("%+v: %q / %q, want %q / %q", tt.v, s.String(), s.Sentence(), tt.cell, tt.reason)
		}
	}
	for _, tt := range []struct {
		v    VolumeInfo
		cell string
	}{
		{VolumeInfo{VolumeSummary: VolumeSummary{State: "ready", PluginID: "x"}, PluginError: `plugin "x" is not registered`}, "no: plugin not registered"},
		{VolumeInfo{VolumeSummary: VolumeSummary{State: "ready", PluginID: "x"}}, "no: plugin not probed yet"},
		{VolumeInfo{VolumeSummary: VolumeSummary{State: "ready", PluginID: "x"}, PluginError: "Probe: Unavailable"}, "no: plugin unhealthy"},
		{VolumeInfo{VolumeSummary: VolumeSummary{State: "deleting", PluginID: "x"}}, "no: deleting"},
	} {
		if got := tt.v.Schedulability().String(); got != tt.cell {
			t.Errorf("%+v: %q, want %q", tt.v, got, tt.cell)
		}
	}
}

// A claim's notes appear by one rule, in one order, wherever it is shown.
func TestClaimCondition(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		c    ClaimInfo
		want string
	}{
		{ClaimInfo{State: "published"}, "published"},
		{ClaimInfo{State: "published", Releasing: true, NeedsReconcile: true}, "published (releasing, needs reconcile)"},
		{ClaimInfo{State: "unpublishing", Releasing: true}, "unpublishing"},
		{ClaimInfo{State: "node-detached", Releasing: true, NeedsReconcile: true}, "node-detached (needs reconcile)"},
		{ClaimInfo{State: "taken", Releasing: true}, "taken (releasing)"},
		{ClaimInfo{State: "controller-detached", Releasing: true}, "controller-detached"},
		{ClaimInfo{State: "node-staged", Degraded: true, NeedsReconcile: true}, "node-staged (degraded, needs reconcile)"},
	} {
		if got := tt.c.Condition().String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.c, got, tt.want)
		}
	}
	c := ClaimInfo{LastRPC: "NodePublishVolume", LastCode: "Unavailable", LastError: "connection refused"}
	if got := c.LastErrorText(); got != "NodePublishVolume: Unavailable: connection refused" {
		t.Errorf("LastErrorText = %q", got)
	}
	if d := Duration(5000350 * time.Microsecond).String(); d != "5.0s" {
		t.Errorf("latency 5.00035s reads %q, want 5.0s", d)
	}
}
