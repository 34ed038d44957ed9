package cli

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// TestExportNomadNodeIDRefusalShowsNoSecretEchoedIntoTheTopology: a plugin (reporting itself
// as volctl's hostpath) echoes a volume's secret, one holding an apostrophe ("it's-the-..."),
// into the accessible topology it answers CreateVolume with. `export nomad --include-secrets
// --node-id edge-8` then refuses (the topology names another node), and the refusal, scrubbed
// as main scrubs every error (Factory.RedactError, the state's secrets), reads
// `names node "[REDACTED]" ...; give --node-id <the secret, shell-quoted>`: the secret is
// masked where it is Go-quoted and printed whole, beside its own [REDACTED], where the advice
// quotes it for a shell. csi.Scrubber looks for a value as it is, Go/JSON/C-quoted, percent-,
// hex- and base64-encoded, but not as shellquote.Arg writes it (each apostrophe closed, escaped
// and reopened: apostrophe, backslash, apostrophe, apostrophe), the form every advised command takes. --include-secrets writes the
// secret into the 0600 files it is asked for, never to stderr.
// Correct: the shell-quoted form of a secret value is scrubbed too, so the refusal shows
// [REDACTED] in the advised --node-id as well and no part of the secret.
// Found by helper review77 (secrets).
func TestExportNomadNodeIDRefusalShowsNoSecretEchoedIntoTheTopology(t *testing.T) {
	const secret = "it's-the-s3cret-word"
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) {
		c.Name = hostpath.PluginName // exported with a plugin job, as volctl's own plugin is
		c.CreateTopology = &spec.Topology{Segments: map[string]string{hostpath.TopologyKey: secret}}
	})
	if _, err := h.e.CreateVolume(h.ctx, spec.Volume{ID: "hv", Name: "hv", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"password": secret}}); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runExportNomad(t, h, func(o *ExportNomadOptions) {
		o.Volumes = []string{"hv"}
		o.Plugin.VolctlPath = "/usr/local/bin/volctl"
		o.Plugin.NodeID = "edge-8"
		o.IncludeSecrets = true
	})
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `"edge-8"`) {
		t.Fatalf("precondition: export with --node-id edge-8 of a volume whose topology names another node: exit %d, %v (stderr %q); want the --node-id refusal, exit %d",
			ExitCode(err), err, stderr, ExitUsage)
	}
	// What main prints: the error scrubbed of the state's secrets (Factory.RedactError).
	redact, rerr := h.e.Redactor(h.ctx)
	if rerr != nil {
		t.Fatal(rerr)
	}
	shown := redact(err.Error())
	if strings.Contains(shown, "s3cret-word") || strings.Contains(stderr, "s3cret-word") {
		t.Errorf("the refusal shows the volume's secret %q (shell-quoted in its advice), scrubbed as main prints it:\n%s\nstderr: %q", secret, shown, stderr)
	}
}
