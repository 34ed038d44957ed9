package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// The CSI spec: ControllerPublishVolume's readonly MUST be false unless the plugin has the
// PUBLISH_READONLY controller capability.
func TestControllerPublishReadonlyNeedsCapability(t *testing.T) {
	for _, capOn := range []bool{false, true} {
		h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishReadonly = capOn })
		h.create(volume("ro", capab(spec.MultiNodeReaderOnly)))
		h.claim(ClaimRequest{VolumeID: "ro", Alloc: "r", ReadOnly: true})
		cp, ok := csitest.LastRequest[csi.ControllerPublishVolumeRequest](h.mem)
		if !ok {
			t.Fatal("no ControllerPublishVolume sent")
		}
		if cp.ReadOnly != capOn {
			t.Errorf("PUBLISH_READONLY %v: ControllerPublishVolume readonly = %v, want %v", capOn, cp.ReadOnly, capOn)
		}
	}
}
