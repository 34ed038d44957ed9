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

// `volctl plugin serve hostpath` reads --max-volumes in decimal digits (intVar, since round 77;
// before, as Go reads an integer literal, base 0, so "0x10" was 16 and "010" 8): `--max-volumes
// 10 --max-volumes 010` is served (one value), and `--max-volumes 16 --max-volumes 0x10` is
// refused (0x10 is no value serve takes), as are 8 and 010, and 1000 and 1_000. The "Flag given
// twice" warning must follow serve: none for the first, one for the others. Before (earlier in
// round 61), sameFlagValue read integers in base 10 alone while serve read them as Go literals;
// they read them alike again. Found by helper review61.
func TestServeFlagTwiceReadsMaxVolumesAsServeDoes(t *testing.T) {
	serve := func(more ...string) []string {
		return append([]string{"plugin", "serve", "hostpath", "--node-id", "n1", "--root", "/srv/hp"}, more...)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		served bool // serve takes these arguments
	}{
		{"16 and 0x10, 0x10 refused by serve", serve("--max-volumes", "16", "--max-volumes", "0x10"), false},
		{"8 and 010, two values to serve", serve("--max-volumes", "8", "--max-volumes", "010"), false},
		{"1000 and 1_000, 1_000 refused by serve", serve("--max-volumes", "1000", "--max-volumes=1_000"), false},
		{"10 and 010, one value to serve", serve("--max-volumes", "10", "--max-volumes", "010"), true},
	} {
		_, diags := NewParser().ParsePlugins("p.hcl", execPluginSpec(tc.args...))
		var twice []string
		for _, d := range diags {
			if d.Summary == "Flag given twice" {
				twice = append(twice, d.Detail)
			}
		}
		switch {
		case tc.served && len(twice) != 0:
			t.Errorf("%s: warned %q, but serve takes these arguments (it reads 010 as 10, in decimal digits)", tc.name, strings.Join(twice, "; "))
		case !tc.served && len(twice) != 1:
			t.Errorf("%s: no \"Flag given twice\" (diags %v), but serve refuses them, and the plugin exits at every start", tc.name, diags)
		}
		_, _, got := FlagTwice(tc.args, "--max-volumes")
		if got == tc.served {
			t.Errorf("%s: FlagTwice says twice=%v; serve %s them", tc.name, got, map[bool]string{true: "takes", false: "refuses"}[tc.served])
		}
	}
}
