package csi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestConfirmedParametersAndContextAreComparedWithWhatWasSent: a ValidateVolumeCapabilities
// answer's `confirmed` carries, beside the capabilities, the parameters, mutable parameters
// and volume_context the plugin validated, optional each, and the CSI spec has the CO compare
// them with what it sent. Only the capabilities were: a plugin confirming tier=slow for
// tier=fast, or another endpoint in the context (it validated another volume, or read the
// request otherwise), had `volume register` record the volume as validated (found by review
// 58). Where set, each must be what was sent; an answer that leaves them out is a
// confirmation still. The error names the keys that differ, not their values.
func TestConfirmedParametersAndContextAreComparedWithWhatWasSent(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	c, ctx := h.client, context.Background()
	vol, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "db", Capabilities: []csi.VolumeCapability{fsWriter},
		Parameters: map[string]string{"tier": "fast"}})
	if err != nil {
		t.Fatal(err)
	}
	req := csi.ValidateVolumeCapabilitiesRequest{VolumeID: vol.ID, VolumeContext: map[string]string{"endpoint": "10.0.0.1"},
		Capabilities: []csi.VolumeCapability{fsWriter}, Parameters: map[string]string{"tier": "fast"},
		MutableParameters: map[string]string{"iops": "100"}, Secrets: spec.Secrets{"token": "t0ken-s3cret-58"}}
	for _, c2 := range []struct {
		name string
		edit func(*csipb.ValidateVolumeCapabilitiesResponse_Confirmed)
		want string // "" for a confirmation
	}{
		{"left out", func(cf *csipb.ValidateVolumeCapabilitiesResponse_Confirmed) {
			cf.Parameters, cf.VolumeContext, cf.MutableParameters = nil, nil, nil
		}, ""},
		{"as sent", func(cf *csipb.ValidateVolumeCapabilitiesResponse_Confirmed) {
			cf.Parameters, cf.VolumeContext = map[string]string{"tier": "fast"}, map[string]string{"endpoint": "10.0.0.1"}
			cf.MutableParameters = map[string]string{"iops": "100"}
		}, ""},
		{"other parameters", func(cf *csipb.ValidateVolumeCapabilitiesResponse_Confirmed) {
			cf.Parameters = map[string]string{"tier": "slow"}
		}, `the plugin confirmed other parameters than were sent (keys differing: "tier")`},
		{"parameters with one more", func(cf *csipb.ValidateVolumeCapabilitiesResponse_Confirmed) {
			cf.Parameters = map[string]string{"tier": "fast", "zone": "b"}
		}, `other parameters than were sent (keys differing: "zone")`},
		{"other mutable parameters", func(cf *csipb.ValidateVolumeCapabilitiesResponse_Confirmed) {
			cf.MutableParameters = map[string]string{"iops": "9000"}
		}, `other mutable_parameters than were sent (keys differing: "iops")`},
		{"another context", func(cf *csipb.ValidateVolumeCapabilitiesResponse_Confirmed) {
			cf.VolumeContext = map[string]string{"endpoint": "10.9.9.9"}
		}, `other volume_context than were sent (keys differing: "endpoint")`},
		{"the secret echoed as a key", func(cf *csipb.ValidateVolumeCapabilitiesResponse_Confirmed) {
			cf.VolumeContext = map[string]string{"endpoint": "10.0.0.1", "t0ken-s3cret-58": "x"}
		}, `other volume_context than were sent (keys differing: "` + spec.Redacted + `")`},
	} {
		h.faults.Inject(csi.RPCValidateVolumeCapabilities, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
			r := m.(*csipb.ValidateVolumeCapabilitiesResponse)
			if r.Confirmed == nil {
				t.Fatalf("%s: the plugin confirmed nothing (harness)", c2.name)
			}
			c2.edit(r.Confirmed)
		}})
		err := c.ValidateVolumeCapabilities(ctx, req)
		switch {
		case c2.want == "" && err != nil:
			t.Errorf("%s: %v; want it confirmed", c2.name, err)
		case c2.want != "" && (!errors.Is(err, csi.ErrNotConfirmed) || !strings.Contains(err.Error(), c2.want)):
			t.Errorf("%s: %v; want not confirmed, saying %q", c2.name, err, c2.want)
		case c2.want != "" && (strings.Contains(err.Error(), "10.9.9.9") || strings.Contains(err.Error(), "slow") || strings.Contains(err.Error(), "t0ken-s3cret-58")):
			t.Errorf("%s: the error names the values: %v", c2.name, err)
		}
	}
}
