package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
)

// secretSpecFile writes dir/ID.hcl, the spec of single-node-writer volume ID of plugin "mem"
// with secret token secret, and returns its path.
func secretSpecFile(t *testing.T, dir, id, secret string) string {
	t.Helper()
	file := filepath.Join(dir, id+".hcl")
	if err := os.WriteFile(file, []byte(`id = "`+id+`"
name = "`+id+`"
type = "csi"
plugin_id = "mem"
secrets { token = "`+secret+`" }
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// echoSecretAsCreatedID is a plugin's interceptor that answers a CreateVolume with the
// request's secret in the volume's ID ("vol-<secret>").
func echoSecretAsCreatedID(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := resp.(*csipb.CreateVolumeResponse); ok && err == nil {
		for _, v := range req.(*csipb.CreateVolumeRequest).GetSecrets() {
			r.Volume.VolumeId = "vol-" + v
		}
	}
	return resp, err
}

// TestPluginNameAndVolumeIDEchoingSecretsRedacted plays a plugin that echoes a volume's secret
// where TestPluginDataEchoingSecretsRedacted does not look: its driver name (GetPluginInfo's
// name, which volctl stores as the provider and compares on every connection) and the
// volume_id of its CreateVolume answer (the volume's external ID). Both are kept raw, as the
// plugin's data is, and no command may print the secret from them.
func TestPluginNameAndVolumeIDEchoingSecretsRedacted(t *testing.T) {
	const secret = "echoname-s3cret-5e1a"
	ctx := context.Background()
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "csi." + secret + ".example"
	mem := csitest.NewMemPlugin(cfg)
	_, e, _ := serveMem(t, mem, csitest.WithInterceptor(echoSecretAsCreatedID))
	file := secretSpecFile(t, t.TempDir(), "db", secret)
	run := func(args ...string) string {
		t.Helper()
		ios, _, out, errOut := iostreams.Test()
		f := NewFactory(ios)
		f.engine = e
		err := runCmd(t, NewRootCmd(f), args...)
		if err != nil {
			f.Report(f.RedactError(ctx, err))
		}
		return out.String() + errOut.String()
	}
	// The create's own output, before and after: the secret is known once the volume is stored.
	out := run("volume", "create", file)
	if v, err := e.Volume(ctx, "db"); err != nil || !strings.Contains(v.ExternalID, secret) || !strings.Contains(v.Provider, secret) {
		t.Fatalf("the plugin did not echo the secret into its name and the volume's ID (%+q, %+q, %v): the test tests nothing", v.Provider, v.ExternalID, err)
	}
	outs := map[string]string{"volume create": out}
	for _, args := range [][]string{
		{"volume", "status", "db"}, {"volume", "status", "db", "--json"}, {"volume", "status", "db", "-t", `{{printf "%v" .}}`},
		{"volume", "status"}, {"volume", "status", "--json"}, {"status"}, {"status", "db", "--json"},
		{"plugin", "status"}, {"plugin", "status", "mem"}, {"plugin", "status", "mem", "--json"},
		{"events"}, {"events", "--json"},
		{"volume", "snapshot", "create", "db", "s1"}, {"volume", "snapshot", "list", "--json"},
		{"volume", "expand", "db", "--size", "2GiB"},
		{"volume", "claim", "db", "--alloc", "a1", "--json"},
		{"volume", "delete", "db", "--yes"},
	} {
		outs[strings.Join(args, " ")] = run(args...)
	}
	for what, s := range outs {
		if strings.Contains(s, secret) {
			t.Errorf("volctl %s shows the secret the plugin echoed:\n%s", what, s)
		}
	}
}
