package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin may echo a secret into its node ID (echoingMemConfig), which every view scrubs
// (redactOutput, RedactValue). The reason `volume status ID` gives for a volume outside its
// topology, its Not Schedulable row, is VolumeInfo's outsideWords, "... plugin "mem"'s node
// "<node ID>" is in {...}": an unexported field, which RedactValue's reflection never reached,
// so the node ID was printed with the secret in it (engine's unexportedText now scrubs it).
func TestOutsideTopologyReasonIsScrubbedOfSecrets(t *testing.T) {
	const secret = "review56b-s3cret-7f1e"
	ctx := context.Background()
	cfg := echoingMemConfig(secret) // its node ID is "node-<secret>"
	cfg.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
	cfg.CreateTopology = &spec.Topology{Segments: map[string]string{"zone": "b"}} // a plugin that makes it elsewhere
	mem := csitest.NewMountingMemPlugin(t, cfg)
	_, e, eng := serveMem(t, mem)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem",
		Secrets:      spec.Secrets{"token": secret},
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if v, err := e.Volume(ctx, "db"); err != nil || v.Schedulability().Why != engine.OutsideTopology {
		t.Fatalf("volume db: %v, %v; the test needs it outside its topology", v.Schedulability(), err)
	}

	ios, _, out, _ := iostreams.Test()
	if err := volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: nowFunc, ID: "db"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Not Schedulable") {
		t.Fatalf("volume status db gives no reason:\n%s", out)
	}
	if strings.Contains(out.String(), secret) {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, secret) {
				t.Errorf("volume status db shows the volume's secret %q, which the plugin echoed into its node ID, unredacted:\n%s", secret, l)
			}
		}
	}
}
