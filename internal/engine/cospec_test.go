package engine

import (
	"errors"
	"strings"

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

// A ValidateVolumeCapabilities answer without `confirmed` is the plugin's refusal: register
// fails and shows the plugin's message, and nothing is recorded.
func TestRegisterRefusedWithoutConfirmed(t *testing.T) {
	h := newHarness(t, func(c *csitest.MemConfig) { c.AccessModes = []spec.AccessMode{spec.SingleNodeWriter} })
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	sv := registered("v", "ext-1")
	sv.Capabilities = []spec.Capability{capab(spec.MultiNodeMultiWriter)}
	_, err := h.e.RegisterVolume(h.ctx, sv)
	if err == nil || !errors.Is(err, csi.ErrNotConfirmed) || !strings.Contains(err.Error(), "access mode multi-node-multi-writer is not supported") {
		t.Fatalf("register = %v, want a refusal with the plugin's message", err)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume after the refused register: %v, want not found", err)
	}
}
