package spec

import (
	"strings"
	"testing"
)

// `volctl plugin serve` refuses a flag given twice with two values ("--socket was given before
// as ...: give it once", exit 2), so an exec block giving its hostpath plugin one so exits at
// every start, and the agent restarts it for ever: warned of, naming the flag and both values.
// The same value twice is one (serve takes it), and so is another program's flag. Before,
// FlagValue took the last one given as what serve would read: an exec block whose last
// --socket was the plugin's socket, or whose last --root was absolute, was valid without a
// word. Found by helper review61.
func TestExecGivingAServeFlagTwiceIsWarnedOf(t *testing.T) {
	src := execPluginSpec
	serve := func(more ...string) []string {
		return append([]string{"plugin", "serve", "hostpath", "--node-id", "n1"}, more...)
	}
	for _, tc := range []struct {
		name string
		args []string
		warn string // "" for none
	}{
		{"--socket, the last the plugin's", serve("--root", "/srv/hp", "--socket", "/run/y.sock", "--socket", "/run/volctl/hp.sock"), `--socket twice, as "/run/y.sock" and "/run/volctl/hp.sock"`},
		{"--root, the last absolute", serve("--root", "data/hp", "--root", "/srv/hp"), `--root twice, as "data/hp" and "/srv/hp"`},
		{"--root and --root=", serve("--root", "/srv/a", "--root=/srv/b"), `--root twice, as "/srv/a" and "/srv/b"`},
		{"--max-volumes", serve("--root", "/srv/hp", "--max-volumes", "2", "--max-volumes=5"), `--max-volumes twice, as "2" and "5"`},
		{"--enable-attach, then false", serve("--root", "/srv/hp", "--enable-attach", "--enable-attach=false"), `--enable-attach twice, as "true" and "false"`},
		{"the same root twice", serve("--root", "/srv/hp", "--root=/srv/hp"), ""},
		{"the same count, spelled otherwise", serve("--root", "/srv/hp", "--max-volumes", "5", "--max-volumes", "05"), ""},
		{"--enable-attach twice", serve("--root", "/srv/hp", "--enable-attach", "--enable-attach=true"), ""},
		{"a root that is another flag's value", serve("--socket", "--root", "--root", "/srv/hp"), ""},
		{"after --", append(serve("--root", "/srv/hp"), "--", "--root", "/x"), ""},
		{"another program", []string{"--root", "/a", "--root", "/b"}, ""},
	} {
		_, diags := NewParser().ParsePlugins("p.hcl", src(tc.args...))
		var twice []string
		for _, d := range diags {
			if d.Summary == "Flag given twice" {
				twice = append(twice, d.Detail)
			}
		}
		switch {
		case diags.HasErrors():
			t.Errorf("%s: %v", tc.name, diags)
		case tc.warn == "" && len(twice) != 0:
			t.Errorf("%s: %q; serve takes these arguments", tc.name, twice)
		case tc.warn != "" && (len(twice) != 1 || !strings.Contains(twice[0], tc.warn) || !strings.Contains(twice[0], "restart it for ever")):
			t.Errorf("%s: %v; want one \"Flag given twice\" saying %s", tc.name, diags, tc.warn)
		case tc.warn != "" && len(diags) != 1:
			t.Errorf("%s: %v; want the flag given twice alone, not what its last value would do", tc.name, diags)
		}
	}
}
