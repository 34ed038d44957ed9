package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestReregisterForAnotherDriverDoesNotInheritUnrecordedDeletes: a delete cut short of a
// snapshot volctl has no record of is kept against the plugin ID alone: nothing records which
// driver it was for. Deregistering the ID forgets it for that reason (forgetUnrecordedDeletes).
// Registering the ID again, straight over, for another driver (allowed while no volume uses
// it) did not: the next reconcile sent the DeleteSnapshot to the new driver, deleting its
// snapshot of that ID. Found by helper review71.
func TestReregisterForAnotherDriverDoesNotInheritUnrecordedDeletes(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	unrecordedDeleteThenVolumeGone(t, h)
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "other.driver"
	mem2 := csitest.NewMemPlugin(cfg)
	sock2, _ := csitest.Serve(t, csitest.WithServer(mem2))
	// No deregister: `volctl plugin register --id mem --socket sock2` over the old row.
	info, reg, err := h.e.RegisterPluginOutcome(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: sock2})
	if err != nil {
		t.Fatalf("register mem again for other.driver: %v", err)
	}
	t.Logf("registered again: %s %+v", info.Provider, reg)
	otherDriversSnapshotSurvivesReconcile(t, h, sock2, mem2)
}

// TestOwedUnpublishRefusalOfAPluginThatLostTheCapabilityDoesNotPromiseReconcile: a plugin
// restarted without PUBLISH_UNPUBLISH_VOLUME while a volume is attached through it: the release
// keeps the attachment recorded, owed, and `plugin deregister` (with --force too) and `volume
// deregister` refuse. Their refusals told the user to "Run `volctl reconcile` once plugin "mem"
// answers (it sends it)": the plugin answers, and reconcile sends nothing. They say, from the
// recorded fingerprint, to start it with that capability again. Found by helper review71.
func TestOwedUnpublishRefusalOfAPluginThatLostTheCapabilityDoesNotPromiseReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartPlugin(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false }, "v")
	h.release("v", "a")
	rep, rerr := h.e.Reconcile(h.ctx)
	sent := false
	for _, pr := range rep.Problems {
		if pr.VolumeID == "v" && strings.Contains(pr.Message, "cannot be sent") {
			sent = true // reconcile says it cannot send it
		}
	}
	if !sent {
		t.Fatalf("reconcile: %v %+v; want it to say the unpublish cannot be sent", rerr, rep.Problems)
	}
	err := h.e.DeregisterPlugin(h.ctx, "mem", true)
	if err == nil {
		t.Fatal("plugin deregister --force with an owed unpublish: deregistered")
	}
	_, verr := h.e.DeregisterVolume(h.ctx, "v", false)
	for what, err := range map[string]error{"plugin deregister --force": err, "volume deregister": verr} {
		if err == nil || strings.Contains(err.Error(), `once plugin "mem" answers (it sends it)`) || !strings.Contains(err.Error(), "start the plugin with that capability again") {
			t.Errorf("%s refusal:\n%v\nit says reconcile sends the unpublish once the plugin answers; the plugin answers, without PUBLISH_UNPUBLISH_VOLUME, and reconcile (just run) sends nothing: the way is to start it with that capability again", what, err)
		}
	}
}

// TestVolumeDeregisterAfterForcedPluginDeregisterAdvisesAWayThatWorks: a plugin deregistered
// with --force while a volume of it is claimed: the volume's `volume deregister` refusal advised
// "`volctl volume release v --alloc a` releases it, or `volctl volume deregister v --force`
// releases them first". Both failed, the plugin not being registered. It names the forced
// detach, which the test follows to the deregister. Found by helper review71.
func TestVolumeDeregisterAfterForcedPluginDeregisterAdvisesAWayThatWorks(t *testing.T) {
	t.Parallel()
	h, _ := claimedThenForcedOff(t)
	_, err := h.e.DeregisterVolume(h.ctx, "v", false)
	if err == nil {
		t.Fatal("volume deregister of a claimed volume: deregistered")
	}
	t.Logf("refusal: %v", err)
	_, relErr := h.e.Release(h.ctx, "v", "a")
	_, forceErr := h.e.DeregisterVolume(h.ctx, "v", true)
	if relErr == nil || forceErr == nil {
		t.Fatalf("premise: with the plugin deregistered, the release (%v) or the deregister --force (%v) worked", relErr, forceErr)
	}
	msg := err.Error()
	if !strings.Contains(msg, "volume detach v --force") && !strings.Contains(msg, "plugin register") {
		t.Fatalf("volume deregister refusal, plugin mem deregistered with --force:\n%v\nthe commands it advises both fail:\n  release: %v\n  deregister --force: %v\nwant it to name a way that works with the plugin gone (register it again, or volume detach v --force)", msg, relErr, forceErr)
	}
	if _, err := h.e.Detach(h.ctx, "v", true); err != nil {
		t.Fatalf("the advised `volctl volume detach v --force`: %v", err)
	}
	// The forced detach leaves the attachment owed, which the deregister names the way past.
	_, err = h.e.DeregisterVolume(h.ctx, "v", false)
	if err == nil {
		return
	}
	if !strings.Contains(err.Error(), "`volctl volume deregister v --force --yes`") || strings.Contains(err.Error(), `once plugin "mem" answers`) {
		t.Fatalf("volume deregister after the advised forced detach: %v\nwant it naming `volctl volume deregister v --force --yes`, and not a reconcile through a plugin no longer registered", err)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", true); err != nil {
		t.Fatalf("the advised `volctl volume deregister v --force --yes`: %v", err)
	}
}

// otherDriversSnapshotSurvivesReconcile makes a volume and its snapshot "other" through the other
// driver on sock2 (mem2), registered under the plugin ID of h's earlier driver, runs reconcile,
// and fails when the snapshot is gone: a delete recorded against the ID's earlier driver sent to it.
func otherDriversSnapshotSurvivesReconcile(t *testing.T, h *harness, sock2 string, mem2 *csitest.MemPlugin) {
	t.Helper()
	c2, err := csi.New(csi.Config{ControllerSocket: sock2, NodeSocket: sock2, Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	v, err := c2.CreateVolume(h.ctx, csi.CreateVolumeRequest{Name: "x", CapacityMin: 1 << 20,
		Capabilities: volumeCapabilities(volume("v"))})
	if err != nil {
		t.Fatalf("create on the second driver: %v", err)
	}
	if _, err := c2.CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: v.ID, Name: "other"}); err != nil {
		t.Fatal(err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v %+v", err, rep.Actions, rep.Problems)
	if len(mem2.Snapshots()) != 1 {
		t.Fatalf("reconcile deleted driver other.driver's snapshot \"other\", for a delete recorded against the plugin ID's earlier driver")
	}
}
