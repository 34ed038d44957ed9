package engine

import (
	"maps"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A volume registered again without a `context` keeps the one stored (Nomad's rule), and the
// claims go on sending it; the ValidateVolumeCapabilities of that registration sent an empty
// volume_context, which CSI has match the volume's (found by review 58). It sends the stored
// one; a context given is sent as given.
func TestRegisterAgainWithoutAContextValidatesTheStoredOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	sv := registered("v", "ext-1") // context endpoint=10.0.0.1
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	sent := func() map[string]string {
		t.Helper()
		req, ok := csitest.LastRequest[csi.ValidateVolumeCapabilitiesRequest](h.mem)
		if !ok {
			t.Fatal("no ValidateVolumeCapabilities sent")
		}
		return req.VolumeContext
	}
	again := sv
	again.Context = nil
	if _, err := h.e.RegisterVolume(h.ctx, again); err != nil {
		t.Fatal(err)
	}
	if got := sent(); !maps.Equal(got, sv.Context) {
		t.Errorf("registered again without a context, ValidateVolumeCapabilities sent volume_context %v; want the stored %v", got, sv.Context)
	}
	if v, err := h.e.Volume(h.ctx, "v"); err != nil || !maps.Equal(v.Context, sv.Context) {
		t.Errorf("stored context after the registration = %v (%v); want %v kept", v.Context, err, sv.Context)
	}
	other := sv
	other.Context = map[string]string{"endpoint": "10.0.0.2"}
	if _, err := h.e.RegisterVolume(h.ctx, other); err != nil {
		t.Fatal(err)
	}
	if got := sent(); !maps.Equal(got, other.Context) {
		t.Errorf("registered again with a context, ValidateVolumeCapabilities sent %v; want %v", got, other.Context)
	}
}
