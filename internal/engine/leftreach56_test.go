package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A plugin deregistered with --force while a volume of it is claimed, another plugin ID
// registered on the same socket (one process, one storage), and that volume's storage registered
// again through it under another volume ID: before, the two records were not taken for one
// storage (socketMates knew registered plugins only, and mem was no longer one), so the
// registration was recorded and a writer admitted on it beside v's: two writers on a
// single-node-writer volume. The forced deregistration keeps where mem was reached while
// volumes still name it (store.LeftPlugin), and a plugin ID registered there since is its mate.
func TestStorageOfAForcedDeregisteredPluginsVolumeIsNotRecordedAgainThroughItsSocket(t *testing.T) {
	t.Parallel()
	h, ext := claimedThenForcedOff(t)
	h.registerPlugin("mem2", h.socket)
	if left := h.leftPlugins(); len(left) != 1 || left[0].ID != "mem" || left[0].Socket != h.socket || left[0].Provider != "mem.csi.volctl.test" {
		t.Fatalf("kept of the forced-deregistered plugin: %+v, want mem at %s as mem.csi.volctl.test", left, h.socket)
	}

	w := registered("w", ext)
	w.PluginID = "mem2"
	_, err := h.e.RegisterVolume(h.ctx, w)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("register of v's storage as w through mem2, on the socket of the forced-deregistered mem: %v; want a conflict", err)
	}
	for _, want := range []string{`already registered as volume "v" through plugin "mem"`, "deregistered with --force", "same socket"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %s", err, want)
		}
	}

	// Recorded all the same (by an older volctl): its claim is refused while v's holds it, and
	// nothing is sent to the plugin for it.
	h.recordTwice("v", "w", "mem2")
	h.mem.ResetCalls()
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"})
	wantStorageRefusal(t, err, "w", "v", `alloc "a"`)
	if rpcs := h.rpcs(); len(rpcs) > 0 {
		t.Errorf("RPCs sent for the refused claim: %v, want none", rpcs)
	}

	// A reconcile keeps it while v names mem; once v is forgotten, the next one lets it go.
	h.e.Reconcile(h.ctx) //nolint:errcheck // what it keeps is checked below
	if left := h.leftPlugins(); len(left) != 1 {
		t.Fatalf("kept after a reconcile while v names mem: %+v, want mem's", left)
	}
	if _, err := h.e.Detach(h.ctx, "v", true); err != nil {
		t.Fatalf("detach v --force: %v", err)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", true); err != nil {
		t.Fatalf("deregister v --force: %v", err)
	}
	h.e.Reconcile(h.ctx) //nolint:errcheck // what it left is checked below
	if left := h.leftPlugins(); len(left) != 0 {
		t.Errorf("kept after a reconcile once no volume names mem: %+v, want nothing", left)
	}
}

// Another driver at the socket a plugin deregistered with --force was reached on is another
// storage, however alike its IDs (sequential ones): registering a volume through it under an
// external ID a volume of the deregistered plugin records is not refused. And the plugin ID
// registered again takes its volumes back: nothing is kept of the forced deregistration.
func TestForcedDeregisteredPluginsSocketServedByAnotherDriverIsAnotherStorage(t *testing.T) {
	t.Parallel()
	h, ext := claimedThenForcedOff(t)
	h.restartPlugin(func(c *csitest.MemConfig) { c.Name = "other.csi.volctl.test" }, "v")
	h.registerPlugin("other", h.socket)
	w := registered("w", ext)
	w.PluginID = "other"
	if _, err := h.e.RegisterVolume(h.ctx, w); err != nil {
		t.Fatalf("register through another driver on the socket of the forced-deregistered mem: %v; want it registered", err)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "w", false); err != nil {
		t.Fatalf("deregister w: %v", err)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "other", false); err != nil {
		t.Fatalf("deregister other: %v", err)
	}
	h.restartPlugin(func(*csitest.MemConfig) {}, "v")
	h.registerPlugin("mem", h.socket)
	h.release("v", "a")
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Fatalf("deregister v: %v", err)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); err != nil {
		t.Fatalf("deregister mem: %v", err)
	}
	if left := h.leftPlugins(); len(left) != 0 {
		t.Errorf("kept of mem, registered again then deregistered with no volume: %+v, want nothing", left)
	}
}

// claimedThenForcedOff creates and claims volume v through the harness's plugin mem, then
// deregisters mem with --force, and returns v's external ID.
func claimedThenForcedOff(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	ext := h.externalID("v")
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("deregister --force: %v", err)
	}
	return h, ext
}

// leftPlugins is what forced deregistrations kept of plugins not registered again.
func (h *harness) leftPlugins() []store.LeftPlugin {
	h.t.Helper()
	left, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.LeftPlugin, error) { return tx.Plugins().ListLeft() })
	if err != nil {
		h.t.Fatalf("list plugins left: %v", err)
	}
	return left
}
