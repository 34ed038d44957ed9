package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestInitPluginDescribesSplitPluginsThatWork: what `volctl init plugin` says about a plugin
// split in two is what volctl accepts: its commented example, uncommented, is one plugin with
// both sockets.
func TestInitPluginDescribesSplitPluginsThatWork(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	if err := initRun(&InitOptions{IO: ios, Kind: spec.KindPlugin, File: "-"}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "two plugin blocks with the same ID") {
		t.Fatalf("the example does not say how to declare a split plugin:\n%s", text)
	}
	// The commented-out blocks after that advice, uncommented.
	_, rest, _ := strings.Cut(text, "two plugin blocks with the same ID")
	var blocks strings.Builder
	for _, line := range strings.Split(rest, "\n") {
		if l, ok := strings.CutPrefix(line, "# "); ok && (strings.HasPrefix(l, "plugin \"") || strings.HasPrefix(l, " ") || l == "}") {
			blocks.WriteString(l + "\n")
		}
	}
	ps, diags := spec.NewParser().ParsePlugins("split.hcl", []byte(blocks.String()))
	if diags.HasErrors() {
		t.Fatalf("the split example, uncommented, is refused: %v\n%s", diags, blocks.String())
	}
	if len(ps) != 1 || ps[0].ControllerSocket == "" || ps[0].NodeSocket == "" {
		t.Fatalf("the split example gives %+v; want one plugin with both sockets", ps)
	}
}

// The controller half of a split plugin in one file and its node half in another, as two
// Nomad plugin jobs declare them, are registered as one plugin.
func TestPluginRegisterJoinsHalvesFromTwoFiles(t *testing.T) {
	files := map[string]string{
		"ctrl.hcl": "plugin \"ebs\" {\n  type   = \"controller\"\n  socket = \"/run/c.sock\"\n}\n",
		"node.hcl": "plugin \"ebs\" {\n  type   = \"node\"\n  socket = \"/run/n.sock\"\n}\n",
		"exec.hcl": "plugin \"ebs\" {\n  type   = \"node\"\n  socket = \"/run/n.sock\"\n  exec {\n    command = \"/bin/n\"\n  }\n}\n",
	}
	read := func(name string) ([]byte, error) { return []byte(files[name]), nil }
	ios, _, _, _ := iostreams.Test()
	o := &PluginRegisterOptions{IO: ios, ReadFile: read, Files: []string{"node.hcl", "ctrl.hcl"}}
	got, err := o.plugins(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Plugin{ID: "ebs", Type: spec.PluginMonolith, ControllerSocket: "/run/c.sock", NodeSocket: "/run/n.sock"}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("plugins = %+v, want %+v", got, want)
	}
	o.Files = []string{"ctrl.hcl", "exec.hcl"}
	if got, err := o.plugins(context.Background()); got != nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "cannot have an exec block") {
		t.Fatalf("halves with an exec block: %v, %v", got, err)
	}
}
