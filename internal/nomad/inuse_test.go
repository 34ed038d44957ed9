package nomad

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// Nomad refuses to change the mount options of a volume its allocs claim, or its capabilities
// to ones without the mode they claim it in (CSIVolume.Merge); RefusedInUse names those, and
// nothing for a volume no alloc claims (against Nomad 2.0.5: TestNomadVolumeInUseInNomad).
func TestRefusedInUse(t *testing.T) {
	snw := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	mnr := spec.Capability{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}
	want := spec.Volume{ID: "db", Capabilities: []spec.Capability{snw}, MountOptions: &spec.MountOptions{}}
	for _, c := range []struct {
		name string
		have VolumeState
		want []string
	}{
		{"not in use", VolumeState{Capabilities: []spec.Capability{mnr}, FSType: "xfs", inUse: mnr}, nil},
		{"in use, as volctl has it", VolumeState{WriteAllocs: []string{"a"}, Capabilities: []spec.Capability{snw}, inUse: snw}, nil},
		{"in use, another fs_type", VolumeState{WriteAllocs: []string{"a"}, Capabilities: []spec.Capability{snw}, FSType: "xfs", inUse: snw}, []string{"mount_options"}},
		{"in use, mount flags", VolumeState{ReadAllocs: []string{"a"}, Capabilities: []spec.Capability{snw}, MountFlags: 1, inUse: snw}, []string{"mount_options"}},
		{"in use in a mode volctl's lack", VolumeState{ReadAllocs: []string{"a"}, Capabilities: []spec.Capability{snw, mnr}, inUse: mnr}, []string{"capabilities"}},
	} {
		if got := RefusedInUse(c.have, want); !slices.Equal(got, c.want) {
			t.Errorf("%s: RefusedInUse = %q, want %q", c.name, got, c.want)
		}
	}
}
