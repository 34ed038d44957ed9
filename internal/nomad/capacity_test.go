package nomad

import (
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// A registration carries the size the plugin reported as the volume's capacity, as Nomad's own
// `nomad volume create` records it: registered without one, Nomad had the volume as 0 bytes
// (`nomad volume status` said so), and an update in Nomad asking for no more than the volume
// had was sent to the plugin as an expand (refused for a plugin that cannot expand). A volume
// whose size no plugin reported (registered in volctl, never listed) sends none, as `nomad
// volume register` sends none. Against Nomad 2.0.5: TestNomadCorpusRoundTrip.
func TestRegistrationCarriesThePluginsCapacity(t *testing.T) {
	c, err := NewClient("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	base := engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", Name: "db", PluginID: "p"}, ExternalID: "vol-1",
		Capabilities: []spec.Capability{{AccessMode: spec.AccessMode("single-node-writer"), AttachmentMode: spec.AttachmentMode("file-system")}}}
	for _, tc := range []struct {
		name              string
		size, min         int64
		capacity, sentMin int64
	}{
		{"created, the plugin's size", 10 << 30, 0, 10 << 30, 10 << 30},
		{"created with a capacity_min, made larger", 12 << 30, 10 << 30, 12 << 30, 12 << 30},
		{"registered, no size reported", 0, 5 << 30, 0, 5 << 30},
	} {
		info := base
		info.CapacityBytes, info.RequestedMin = tc.size, tc.min
		vol := c.APIVolume(RegisterSpec(info))
		if vol.Capacity != tc.capacity || vol.RequestedCapacityMin != tc.sentMin {
			t.Errorf("%s: registration sends capacity %d, capacity_min %d; want %d, %d", tc.name, vol.Capacity, vol.RequestedCapacityMin, tc.capacity, tc.sentMin)
		}
	}
}
