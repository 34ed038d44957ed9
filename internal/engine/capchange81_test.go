package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestDeleteOfACreatedVolumeThroughAPluginThatLostCreateDeleteSaysTheStorageStays: volctl
// created volume v through plugin mem's CREATE_DELETE_VOLUME; the plugin is then restarted
// without that capability (an upgrade, another config), and `volume delete v` is refused with
// "plugin "mem" cannot delete volumes (no CREATE_DELETE_VOLUME controller capability); use
// `volctl volume deregister` to forget the volume". That is worded for a plugin that never
// could: it does not say the capability was lost (the plugin made this very volume through
// it), nor that starting the plugin with it again lets the delete go on. Its one way out,
// followed, forgets the volume in silence while the storage volctl created stays on the
// plugin under its external ID, tracked by nothing (the deregister warns of nothing). The
// interrupted delete of the same volume is refused with exactly those words
// (deleteCapabilityLost); a ready volume is not. Correct: the refusal says the plugin lost
// CREATE_DELETE_VOLUME, to start it with the capability again (then delete again), and that
// `volume deregister` leaves the storage, naming its external ID, as deleteCapabilityLost
// does. Found by helper review81 (capchange).
func TestDeleteOfACreatedVolumeThroughAPluginThatLostCreateDeleteSaysTheStorageStays(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	ext := h.externalID("v")
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteVolume = false })

	err := h.e.DeleteVolume(h.ctx, "v")
	if err == nil {
		t.Fatal("delete through a plugin without CREATE_DELETE_VOLUME: done, want a refusal")
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Fatalf("premise: DeleteVolume sent %d times to a plugin without CREATE_DELETE_VOLUME", n)
	}
	msg := err.Error()
	if !strings.Contains(msg, "no longer") || !strings.Contains(msg, "again") {
		t.Errorf("delete refusal:\n%v\nit speaks of a plugin that cannot delete volumes, of one that created this very volume through CREATE_DELETE_VOLUME "+
			"and lost it in a restart: want it to say the capability was lost and to start the plugin with it again", err)
	}
	if !strings.Contains(msg, ext) {
		t.Errorf("delete refusal:\n%v\nits one way out, `volctl volume deregister`, forgets the volume and leaves the storage volctl created on the plugin: "+
			"want it to say so, naming the external ID %q", err, ext)
	}

	// The way out a correct refusal names works: the plugin started with the capability
	// again, the delete goes through and the storage is gone.
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteVolume = true })
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete with the capability back: %v", err)
	}
	if n := h.pluginVolumeCount(); n != 0 {
		t.Fatalf("plugin holds %d volumes after the delete with the capability back, want 0", n)
	}
}
