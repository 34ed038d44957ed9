package nomad

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A volume with a block-device capability beside another, exported: the note said Nomad may
// refuse its file and to "keep in the file only the capability block its jobs use", while the
// file's own first line says to hand it over with `volctl nomad register v`, which reads
// volctl's record, not the file: the edit changes nothing of what it sends (both capabilities,
// refused again), and the one command that reads the edited file, `nomad volume register
// FILE`, is the one the file warns leaves the volume held by volctl and Nomad at once. The way
// out that works, which `volctl nomad register`'s own warning gives, goes through volctl's
// record: deregister it here, then register the edited spec with that one capability block,
// which the note says now.
func TestCapabilitiesNoteOfTheExportSaysHowTheEditReachesTheHandover(t *testing.T) {
	fs := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
	block := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}
	v := spec.Volume{ID: "v", Namespace: spec.DefaultNamespace, Name: "v", Type: "csi", PluginID: "p", ExternalID: "e", Capabilities: []spec.Capability{fs, block}}
	data, notes, err := VolumeFile(v, false)
	if err != nil {
		t.Fatal(err)
	}
	note := strings.Join(notes, "\n")
	if !strings.Contains(note, "keep in the file only that capability block") {
		t.Fatalf("notes %q: want the capabilities note", note)
	}
	if !strings.Contains(string(data), "Hand it over with: volctl nomad register v") {
		t.Fatalf("file does not name volctl nomad register as the way to hand it over:\n%s", data)
	}
	if !strings.Contains(note, "volctl volume deregister") || !strings.Contains(note, "volctl volume register") {
		t.Errorf("the export's note says to edit the file, whose handover (`volctl nomad register v`, its first line) never reads it:\n%s\nwant it to say how the edit reaches volctl's record (`volctl volume deregister v`, then `volctl volume register` of the edited file), as `volctl nomad register`'s warning does", note)
	}
}
