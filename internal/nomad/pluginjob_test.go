package nomad

import (
	"strings"
	"testing"
)

// TestPluginJobRefusesANodeIDServeRefuses: PluginJob wrote any non-empty node ID into the job's
// --node-id, one `volctl plugin serve hostpath` refuses (a bidi override, an escape sequence,
// past CSI's 256 bytes) too: Nomad then restarted a plugin that never started. It is refused
// with the value escaped; a node ID serve takes (a long DNS name, two scripts) is written.
func TestPluginJobRefusesANodeIDServeRefuses(t *testing.T) {
	opts := func(node string) PluginJobOptions {
		return PluginJobOptions{PluginID: "hp", VolctlPath: "/usr/local/bin/volctl", Root: "/srv/vols", NodeID: node, NomadDataDir: "/opt/nomad/data"}
	}
	for node, want := range map[string]string{
		"n1\u202e2n":             `plugin "hp" job: --node-id "n1\u202e2n" must not contain U+202E (its character 3)`,
		"n1\x1b[2J":              `plugin "hp" job: --node-id "n1\x1b[2J" must not contain the control character U+001B (its character 3)`,
		strings.Repeat("n", 257): `plugin "hp" job: --node-id is 257 bytes long; the CSI spec limits a node ID to 256`,
	} {
		b, err := PluginJob(opts(node))
		if err == nil || !strings.Contains(err.Error(), want) || b != nil {
			t.Errorf("node ID %q: err = %v, want %q and no job", node, err, want)
		}
	}
	for _, node := range []string{strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + ".example.com", "узел-node1"} {
		if b, err := PluginJob(opts(node)); err != nil || !strings.Contains(string(b), `"--node-id", "`+node+`"`) {
			t.Errorf("node ID %q: err = %v, job:\n%s", node, err, b)
		}
	}
}
