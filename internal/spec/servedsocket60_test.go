package spec

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// execPluginSpec is plugin "hp", a monolith on /run/volctl/hp.sock whose exec block runs
// /usr/local/bin/volctl with args.
func execPluginSpec(args ...string) []byte {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	return []byte("plugin \"hp\" {\n  type   = \"monolith\"\n  socket = \"/run/volctl/hp.sock\"\n  exec {\n    command = \"/usr/local/bin/volctl\"\n" +
		"    args    = [" + strings.Join(quoted, ", ") + "]\n  }\n}\n")
}

// An exec block that runs volctl's hostpath plugin with a --socket other than the plugin's
// socket is warned of at its args, in a plugin spec and an agent config alike: the plugin
// serves on its --socket, not on the CSI_ENDPOINT the agent hands it, and the agent, probing
// the block's socket, finds nothing there and restarts it for ever. Before, it was valid
// without a word (`volctl init plugin`'s example gives the path twice, which an edit of one
// of them parts). The same path, spelled unix://PATH or uncleaned, no --socket, another
// program, or a --socket past "--" is taken without one.
func TestExecServingAnotherSocketIsWarnedOf(t *testing.T) {
	src := execPluginSpec
	serve := []string{"plugin", "serve", "hostpath", "--root", "/srv/hp", "--node-id", "n1"}
	for _, tc := range []struct {
		name string
		args []string
		warn string
	}{
		{"another path", append(serve, "--socket", "/run/volctl/other.sock"), `--socket "/run/volctl/other.sock", where it serves instead of the plugin's socket "/run/volctl/hp.sock"`},
		{"another path, =", append(serve, "--socket=unix:///tmp/x.sock"), `--socket "/tmp/x.sock"`},
		// Two of them, serve refuses: TestExecGivingAServeFlagTwiceIsWarnedOf.
		{"the same path", append(serve, "--socket", "/run/volctl/hp.sock"), ""},
		{"the same path, unix://", append(serve, "--socket", "unix:///run/volctl/hp.sock"), ""},
		{"the same path, uncleaned", append(serve, "--socket=/run/volctl//hp.sock"), ""},
		{"no --socket", serve, ""},
		{"another program", []string{"--socket", "/run/other.sock"}, ""},
	} {
		for kind, parse := range map[string]func([]byte) hcl.Diagnostics{
			"plugin spec":  func(b []byte) hcl.Diagnostics { _, d := NewParser().ParsePlugins("p.hcl", b); return d },
			"agent config": func(b []byte) hcl.Diagnostics { _, d := NewParser().ParseAgentConfig("agent.hcl", b); return d },
		} {
			diags := parse(src(tc.args...))
			if diags.HasErrors() {
				t.Errorf("%s, %s: %v", kind, tc.name, diags)
				continue
			}
			if tc.warn == "" {
				if len(diags) != 0 {
					t.Errorf("%s, %s: %v; want no warning", kind, tc.name, diags)
				}
				continue
			}
			if len(diags) != 1 || diags[0].Summary != "Plugin serves another socket" || !strings.Contains(diags[0].Detail, tc.warn) ||
				!strings.Contains(diags[0].Detail, "restart the plugin for ever") || diags[0].Subject == nil || diags[0].Subject.Start.Line != 6 {
				t.Errorf("%s, %s: %v; want one warning, \"Plugin serves another socket\" at line 6 saying %q", kind, tc.name, diags, tc.warn)
			}
		}
	}
}

// An exec block that runs volctl's hostpath plugin with a relative --root is warned of at its
// args, as a relative command is: the plugin reads it from the agent's working directory ("/"
// under systemd), not the file's, and export nomad cannot tell which directory it served.
// Before, it was taken without a word. An absolute --root, or a relative one past "--" or of
// another program, is taken without one.
func TestExecServingARelativeRootIsWarnedOf(t *testing.T) {
	src := func(args string) []byte {
		return []byte("plugin \"hp\" {\n  type   = \"monolith\"\n  socket = \"/run/volctl/hp.sock\"\n  exec {\n    command = \"/usr/local/bin/volctl\"\n" +
			"    args    = [" + args + "]\n  }\n}\n")
	}
	for args, warn := range map[string]string{
		`"plugin", "serve", "hostpath", "--root", "data/hp", "--node-id", "n1"`:   `--root "data/hp", a relative path`,
		`"plugin", "serve", "hostpath", "--root=./hp", "--node-id", "n1"`:         `--root "./hp", a relative path`,
		`"plugin", "serve", "hostpath", "--root", "/srv/hp", "--node-id", "n1"`:   "",
		`"plugin", "serve", "hostpath", "--node-id", "n1", "--", "--root", "rel"`: "",
		`"--root", "rel"`: "",
	} {
		_, diags := NewParser().ParsePlugins("p.hcl", src(args))
		if diags.HasErrors() {
			t.Errorf("args %s: %v", args, diags)
			continue
		}
		if warn == "" {
			if len(diags) != 0 {
				t.Errorf("args %s: %v; want no warning", args, diags)
			}
			continue
		}
		if len(diags) != 1 || diags[0].Summary != "Relative plugin root" || !strings.Contains(diags[0].Detail, warn) || diags[0].Subject == nil || diags[0].Subject.Start.Line != 6 {
			t.Errorf("args %s: %v; want one warning, \"Relative plugin root\" at line 6 saying %q", args, diags, warn)
		}
	}
}
