package nomad

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestGroupJobRefusesAFlagNotInNFC: a group job's --command, --arg or --image given in another
// Unicode normal form than C was written composed, another string (a path that may not exist
// on the clients), and said written; it is refused naming the flag, as a plugin job's
// --plugin-root is (TestExportNomadPluginRootNotInNFCIsNotWrittenAsAnotherPath).
func TestGroupJobRefusesAFlagNotInNFC(t *testing.T) {
	const decomposed = "/opt/cafe\u0301/run"
	g := spec.Group{Name: "web", Volumes: []spec.VolumeRequest{{Name: "data", Source: "db"}}, Mounts: []spec.VolumeMount{{Volume: "data", Destination: "/data"}}}
	for _, c := range []struct {
		flag string
		opts JobOptions
	}{
		{"--command", JobOptions{Command: decomposed}},
		{"--arg", JobOptions{Command: "/bin/sh", Args: []string{"-c", decomposed}}},
		{"--image", JobOptions{Driver: "docker", Image: decomposed}},
		{"--datacenter", JobOptions{Datacenters: []string{"dc-e\u0301"}}},
	} {
		b, _, err := GroupJob(g, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.flag) || !strings.Contains(err.Error(), "normal form C") {
			t.Errorf("group job with %s %q: %v (%d bytes written); want it refused naming %s", c.flag, decomposed, err, len(b), c.flag)
		}
	}
	if _, _, err := GroupJob(g, JobOptions{Command: "/opt/caf\u00e9/run"}); err != nil {
		t.Errorf("group job with --command in NFC: %v", err)
	}
}
