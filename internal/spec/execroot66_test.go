package spec

import (
	"strings"
	"testing"
)

// `volctl plugin serve hostpath` now refuses a --root with a blank around it or an unexpanded
// "~" (cli writtenPathProblem): it exits 2 at every start. An exec block giving such a root is
// what the agent runs, and restarts for ever, as for a flag given twice, which the spec warns
// of for that very reason (TestExecGivingAServeFlagTwiceIsWarnedOf). "/srv/hp " (a trailing
// blank, absolute as filepath reads it) passes the plugin file without a word; "~/hp" is warned
// of as a relative root "which the plugin reads from the agent's working directory": it is not
// read at all, the plugin refuses it and never starts. Found by helper review66.
func TestExecServingARootServeRefusesIsWarnedOf(t *testing.T) {
	src := func(args string) []byte {
		return []byte("plugin \"hp\" {\n  type   = \"monolith\"\n  socket = \"/run/volctl/hp.sock\"\n  exec {\n    command = \"/usr/local/bin/volctl\"\n" +
			"    args    = [" + args + "]\n  }\n}\n")
	}
	for _, args := range []string{
		`"plugin", "serve", "hostpath", "--root", "/srv/hp ", "--node-id", "n1"`,
		`"plugin", "serve", "hostpath", "--root=~/hp", "--node-id", "n1"`,
	} {
		_, diags := NewParser().ParsePlugins("p.hcl", src(args))
		said := false
		for _, d := range diags {
			text := d.Summary + ": " + d.Detail
			if strings.Contains(text, "working directory") {
				continue // the relative-root warning: not what serve does with it
			}
			if strings.Contains(text, "--root") {
				said = true
			}
		}
		if !said {
			t.Errorf("args %s: diagnostics %v; want one saying `volctl plugin serve` refuses this --root (it would exit at every start, the agent restarting it for ever)", args, diags)
		}
	}
}
