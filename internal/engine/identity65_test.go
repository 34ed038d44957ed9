package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin deregistered with --force while volumes still name it (the way out the "now served
// by" refusal advises: "deregister the plugin and register it anew"), then registered again
// under the same ID while another driver serves the socket. The docs promise that registering
// another driver under a plugin ID that volumes use is refused (checkReregistration), and the
// forced deregistration kept the driver name the plugin last gave (store.LeftPlugin). Yet the
// registration goes through, and the volumes' external IDs are sent to the other driver: its
// NOT_FOUND to DeleteVolume drops the record of storage the first driver still holds.
// Found by helper review65.
func TestReregisterAfterForcedDeregisterOfAnotherDriverIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.create(volume("b"))
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("deregister --force: %v", err)
	}
	other := h.restartPlugin(func(c *csitest.MemConfig) { c.Name = "other.csi.volctl.test" })

	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "mem.csi.volctl.test") {
		t.Errorf("register mem again with driver other.csi.volctl.test on its socket while volumes v and b name mem (last driver mem.csi.volctl.test): %v; want a conflict naming the registered driver", err)
	}
	if err != nil {
		return
	}
	// Registered: the other driver now takes the volumes' RPCs.
	derr := h.e.DeleteVolume(h.ctx, "b")
	if _, verr := h.e.Volume(h.ctx, "b"); verr != nil {
		t.Errorf("volume b's record after DeleteVolume went to another driver (delete: %v): %v; its storage on mem.csi.volctl.test is left untracked", derr, verr)
	}
	for _, rpc := range volumeRPCs(other) {
		t.Errorf("the other driver received %s", rpc)
	}
}
