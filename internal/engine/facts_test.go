package engine

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
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
	for _, tt := range []struct {
		c    ClaimInfo
		want string
	}{
		{ClaimInfo{LastRPC: "NodePublishVolume", LastCode: "Unavailable", LastError: "connection refused"}, "NodePublishVolume: Unavailable: connection refused"},
		// The RPC's own error names the RPC and the code already.
		{ClaimInfo{LastRPC: "NodePublishVolume", LastCode: "Unavailable", LastError: "NodePublishVolume: Unavailable: connection refused"},
			"NodePublishVolume: Unavailable: connection refused"},
		{ClaimInfo{LastRPC: "NodeStageVolume", LastCode: "Unknown", LastError: "NodeStageVolume: the mount check failed"}, "NodeStageVolume: the mount check failed"},
		{ClaimInfo{LastRPC: "NodeStageVolume", LastError: "mount check failed"}, "NodeStageVolume: mount check failed"},
		{ClaimInfo{LastError: "the volume's lock was lost"}, "the volume's lock was lost"},
		{ClaimInfo{LastRPC: "NodeStageVolume", LastCode: "Unavailable"}, ""},
	} {
		if got := tt.c.LastErrorText(); got != tt.want {
			t.Errorf("LastErrorText of %+v = %q, want %q", tt.c, got, tt.want)
		}
	}
	if d := Duration(5000350 * time.Microsecond).String(); d != "5.0s" {
		t.Errorf("latency 5.00035s reads %q, want 5.0s", d)
	}
}

// TestClaimsLastErrorNamesItsRPCOnce: the dashboard shows a claim's last error with its RPC and
// code (LastErrorText), and the error recorded for a failed RPC names both already: a claim
// left for reconcile read "NodePublishVolume: Unavailable: NodePublishVolume: Unavailable: ..."
// in the claims view, its detail and a release's error. Read here from a claim that failed.
func TestClaimsLastErrorNamesItsRPCOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err == nil {
		t.Fatal("a claim whose NodePublishVolume fails succeeded")
	}
	claims, err := h.e.Claims(h.ctx)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claims = %+v, %v; want the one left for reconcile", claims, err)
	}
	text := claims[0].LastErrorText()
	if n := strings.Count(text, "NodePublishVolume"); n != 1 || !strings.HasPrefix(text, "NodePublishVolume: Unavailable: ") {
		t.Errorf("LastErrorText = %q; want it to name NodePublishVolume once, with its code", text)
	}
	h.faults.Clear(csi.RPCNodePublishVolume)
	h.release("db", "web-0")
}
