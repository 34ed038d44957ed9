package nomad

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// An exported volume file said "Register it with: nomad volume register FILE". Registered so,
// the volume has no handover mark: volctl goes on claiming it, a forced detach sends
// ControllerUnpublishVolume under Nomad's allocs, and `volctl volume delete` destroys storage
// Nomad has registered, the volume held by both orchestrators at once. The file names the
// command that hands it over, `volctl nomad register ID` (the ID quoted for the shell), and
// says what registering it by hand leaves.
func TestVolumeFileNamesTheHandoverCommand(t *testing.T) {
	for id, cmd := range map[string]string{"db": "volctl nomad register db", "db x[0]": "volctl nomad register 'db x[0]'"} {
		data, _, err := VolumeFile(spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hostpath", ExternalID: "vol-1",
			Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}, false)
		if err != nil {
			t.Fatal(err)
		}
		var header []string
		for line := range strings.SplitSeq(string(data), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			header = append(header, line)
		}
		text := strings.Join(header, "\n")
		if !strings.Contains(text, "Hand it over with: "+cmd+"\n") || !strings.Contains(text, "held by both") {
			t.Errorf("volume %q: the file's header does not name `%s` as the way to hand it over, nor what nomad volume register alone leaves:\n%s", id, cmd, text)
		}
	}
}
