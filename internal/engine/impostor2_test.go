package engine

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// impostorOnSocket stops the harness's plugin and serves another driver on its socket; stop
// brings the registered one back.
func (h *harness) impostorOnSocket() (impostor *csitest.MemPlugin, stop func()) {
	h.t.Helper()
	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "impostor.csi.example"
	cfg.NodeID = "node-1"
	impostor = csitest.NewMemPlugin(cfg)
	stopImpostor := csitest.ServeAt(h.t, h.socket, csitest.WithServer(impostor))
	return impostor, func() { stopImpostor(); h.serveAgain(h.t) }
}

// Another driver on the socket between a create's intent (left by a retryable failure) and the
// reconcile that finishes it, and under every other storage-changing operation not covered by
// TestAnotherDriverOnThePluginSocketGetsNoVolumeRPC (expand, snapshot create and delete, forced
// detach, a pending snapshot's reconcile): nothing goes to it, and the intents stay for the
// registered driver, which finishes them once back.
func TestAnotherDriverGetsNoIntentOrControllerRPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a"))
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web"})
	h.create(volume("b"))
	snap, err := h.e.CreateSnapshot(h.ctx, "b", "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCCreateVolume, codes.Unavailable)
	h.faults.FailAlways(csi.RPCCreateSnapshot, codes.Unavailable)
	if _, err := h.e.CreateVolume(h.ctx, volume("c")); err == nil {
		t.Fatal("create with CreateVolume unavailable succeeded")
	}
	if _, err := h.e.CreateSnapshot(h.ctx, "b", "s2", nil); err == nil {
		t.Fatal("snapshot with CreateSnapshot unavailable succeeded")
	}
	h.faults.Clear(csi.RPCCreateVolume, csi.RPCCreateSnapshot)

	impostor, back := h.impostorOnSocket()
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Error("reconcile with another driver on the socket reported no problem")
	}
	if _, err := h.e.ExpandVolume(h.ctx, "b", 4*mib, 0); err == nil {
		t.Error("expand through another driver succeeded")
	}
	if _, err := h.e.CreateSnapshot(h.ctx, "b", "s3", nil); err == nil {
		t.Error("snapshot through another driver succeeded")
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", snap.ID, nil); err == nil {
		t.Error("snapshot delete through another driver succeeded")
	}
	if _, err := h.e.Detach(h.ctx, "a", true); err != nil {
		t.Logf("forced detach: %v", err)
	}
	for _, rpc := range volumeRPCs(impostor) {
		t.Errorf("the impostor received %s", rpc)
	}
	if v, err := h.e.Volume(h.ctx, "c"); err != nil || v.State != string(store.VolumeCreating) {
		t.Errorf("c after reconcile against another driver: %+v, %v; want its create intent kept", v, err)
	}

	back()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile with the registered driver back: %v", err)
	}
	if v, err := h.e.Volume(h.ctx, "c"); err != nil || v.State != string(store.VolumeReady) {
		t.Errorf("c after reconcile with the registered driver back: %+v, %v", v, err)
	}
}
