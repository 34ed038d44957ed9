package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/spec"
)

// TestPluginJobNodeIDEchoingASecretIsRefused: a plugin naming itself volctl's hostpath driver,
// answering NodeGetInfo with a node ID that echoed a volume's secret, its volumes without
// topology: export nomad wrote its plugin job, mode 0644, with that node ID whole in the job's
// args (the volume file's external ID and topology were checked for such an echo, the job's node
// ID not). It is refused, naming --node-id, and the export with --node-id given holds no secret.
// Found by helper review72.
func TestPluginJobNodeIDEchoingASecretIsRefused(t *testing.T) {
	const secret = "Zq8wPkT4sec"
	cfg := csitest.DefaultMemConfig()
	cfg.Name = hostpath.PluginName
	cfg.NodeID = "n-" + secret
	mem := csitest.NewMemPlugin(cfg)
	_, e, _ := serveMem(t, mem)
	ctx := context.Background()
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "hv", Name: "hv", Type: "csi", PluginID: "mem",
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Secrets:      spec.Secrets{"token": secret}}); err != nil {
		t.Fatal(err)
	}
	h := &cliHarness{ctx: ctx, e: e}
	export := func(nodeID string) (dir, out, errOut string, err error) {
		out, errOut, err = runExportNomad(t, h, func(o *ExportNomadOptions) {
			o.Volumes = []string{"hv"}
			o.Plugin.VolctlPath = "/usr/local/bin/volctl"
			o.Plugin.Root = t.TempDir()
			o.Plugin.NodeID = nodeID
			dir = o.OutDir
		})
		if strings.Contains(out+errOut+fmt.Sprint(err), secret) {
			t.Errorf("export (--node-id %q) showed the secret:\n%s\n%s\n%v", nodeID, out, errOut, err)
		}
		return dir, out, errOut, err
	}
	if dir, _, _, err := export(""); err == nil || !strings.Contains(err.Error(), "--node-id") {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("export of a plugin whose node ID echoed a secret: %v (files %v); want it refused, naming --node-id", err, entries)
	}
	dir, _, _, err := export("node1")
	if err != nil {
		t.Fatalf("export with --node-id, as the refusal advises: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) == 0 {
		t.Fatal("export with --node-id wrote nothing")
	}
	for _, en := range entries {
		b, rerr := os.ReadFile(filepath.Join(dir, en.Name()))
		if rerr != nil {
			t.Fatal(rerr)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s, written without --include-secrets, holds the volume's secret whole:\n%s", en.Name(), b)
		}
	}
}
