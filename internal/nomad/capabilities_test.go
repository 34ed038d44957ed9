package nomad

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The file of a volume with a block-device capability beside another, which Nomad refuses to
// register when the volume's plugin confirms the capabilities it is asked (against Nomad 2.0.5:
// TestNomadRegistersTheExportOfEveryVolumeKind), is noted as such, with the line of its first
// block-device capability; before, it was written without a word, and `nomad volume register`
// refused it naming neither the volume nor a way out. Volumes Nomad takes are not noted.
func TestVolumeFileNotesCapabilitiesNomadRefuses(t *testing.T) {
	block := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}
	blockReader := spec.Capability{AccessMode: spec.SingleNodeReaderOnly, AttachmentMode: spec.BlockDevice}
	fs := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	reader := spec.Capability{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}
	for _, c := range []struct {
		caps    []spec.Capability
		refused string // the pair the note names; "" for none
	}{
		{[]spec.Capability{fs, block}, "single-node-writer/block-device is beside single-node-writer/file-system"},
		{[]spec.Capability{block, blockReader}, "single-node-writer/block-device is beside single-node-reader-only/block-device"},
		{[]spec.Capability{block}, ""},
		{[]spec.Capability{fs, reader}, ""},
		{[]spec.Capability{fs}, ""},
	} {
		v := spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "p", ExternalID: "e", Capabilities: c.caps}
		data, notes, err := VolumeFile(v, false)
		if err != nil {
			t.Fatal(err)
		}
		note := strings.Join(notes, "\n")
		if c.refused == "" {
			if strings.Contains(note, "Nomad may refuse") {
				t.Errorf("capabilities %v: noted %q", c.caps, note)
			}
			continue
		}
		lines := strings.Split(string(data), "\n")
		line := 0
		for i, l := range lines {
			if strings.Contains(l, `"block-device"`) {
				line = i + 1
				break
			}
		}
		for _, want := range []string{`volume "v": Nomad may refuse its file`, c.refused, "was not requested but was validated by the controller",
			fmt.Sprintf("line %d is the first block-device one", line)} {
			if !strings.Contains(note, want) {
				t.Errorf("capabilities %v: notes %q\nwant them to say %q", c.caps, note, want)
			}
		}
	}
}
