package agent

// review31h: fix31a's interpreter-argument reader read as its adversary.

import (
	"os"
	"path/filepath"
	"testing"
)

func r31hSafe(t *testing.T) (safe, open string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files must be root's")
	}
	b := baseDir(t)
	return mkdir(t, filepath.Join(b, "safe"), 0o755), mkdir(t, filepath.Join(b, "open"), 0o777)
}

// A real agent runs in / under systemd: legitimate node plugins with node's and V8's own
// options (all accepted by node v20: `node --trace-gc index.js` runs) must start.
func TestR31hNodeV8FlagsAreNotRefused(t *testing.T) {
	safe, _ := r31hSafe(t)
	node := argsLook(t, "node")
	s := argsWrite(t, filepath.Join(safe, "index.js"), "1\n")
	for _, opts := range [][]string{
		{"--trace-gc"}, {"--perf-basic-prof"}, {"--optimize-for-size"}, {"--no-opt"},
		{"--max_old_space_size=512", "--trace-gc"}, {"--disable-sigusr1"}, {"--experimental-test-snapshots"},
	} {
		args := append(append([]string{}, opts...), s, "--endpoint", "unix:///csi/csi.sock")
		if err := untrustedArgs("node", node, args, nil, "/"); err != nil {
			t.Errorf("node %q refused: %v", args, err)
		}
	}
}

// sh (dash, bash as sh, ksh, mksh) reads ENV only when interactive: a non-interactive plugin
// script's ENV naming an application's file is not a startup file.
func TestR31hNonInteractiveShellsENVIsNotRead(t *testing.T) {
	safe, open := r31hSafe(t)
	sh := argsLook(t, "sh")
	s := writeScript(t, filepath.Join(safe, "run.sh"), "sh")
	appEnv := argsWrite(t, filepath.Join(open, "app.env"), "X=1\n")
	for _, env := range [][]string{{"ENV=" + appEnv}, {"ENV=$HOME/.app"}} {
		if err := untrustedArgs("sh", sh, []string{"-e", s}, env, "/"); err != nil {
			t.Errorf("sh -e %s with %q refused: %v", s, env, err)
		}
	}
	// A #!/bin/sh plugin, the agent's own environment carrying an operator's ENV (su without -).
	sb := filepath.Join(safe, "plugin")
	if err := os.WriteFile(sb, []byte("#!/bin/sh\nexec /bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := untrustedArgs(sb, sb, nil, []string{"ENV=" + appEnv}, "/"); err != nil {
		t.Errorf("#!/bin/sh plugin with ENV=%s refused: %v", appEnv, err)
	}
}

// perl -l takes an octal number only: -le is -l and -e, and the options after the code are
// perl's (perl -le 'require Foo' -I/dir loads /dir/Foo.pm).
func TestR31hPerlLEIsInlineAndItsOptionsAreRead(t *testing.T) {
	_, open := r31hSafe(t)
	perl := argsLook(t, "perl")
	if err := untrustedArgs("perl", perl, []string{"-le", "require Foo", "-I" + open}, nil, "/"); err == nil {
		t.Errorf("perl -le CODE -I%s ran: -I names a directory another user may write", open)
	}
}

// perl's -M'MODULE LIST' is `use MODULE LIST;`: -M'lib qw(DIR)' puts DIR first as -Mlib=DIR does.
func TestR31hPerlMlibQwIsChecked(t *testing.T) {
	safe, open := r31hSafe(t)
	perl := argsLook(t, "perl")
	s := writeScript(t, filepath.Join(safe, "ok.pl"), "perl")
	if err := untrustedArgs("perl", perl, []string{"-Mlib qw(" + open + ")", s}, nil, "/"); err == nil {
		t.Errorf("perl -M'lib qw(%s)' ran: it puts a directory another user may write first on @INC", open)
	}
}

// env's long options are getopt_long's, which takes any unambiguous prefix: --unse is --unset,
// which takes the next argument; what env runs is the one after.
func TestR31hEnvAbbreviatedLongOptions(t *testing.T) {
	_, open := r31hSafe(t)
	env := argsLook(t, "env")
	s := writeScript(t, filepath.Join(open, "evil.sh"), "sh")
	if err := os.Chmod(s, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := untrustedArgs("env", env, []string{"--unse", "FOO", s}, nil, "/"); err == nil {
		t.Errorf("env --unse FOO %s ran: the program is one another user may write", s)
	}
}

// node's -pe is an alias of --print --eval; the options after its code are node's.
func TestR31hNodePEThenRequire(t *testing.T) {
	_, open := r31hSafe(t)
	node := argsLook(t, "node")
	m := argsWrite(t, filepath.Join(open, "evil.js"), "1\n")
	if err := untrustedArgs("node", node, []string{"-pe", "1", "-r", m}, nil, "/"); err == nil {
		t.Errorf("node -pe 1 -r %s ran: -r names a file another user may write", m)
	}
}

// env -S splits its string as a shell would its quotes, \_ and ${VAR}: what it runs is
// /usr/bin/python3 with <open>/evil.py in each.
func TestR31hEnvSplitStringQuotesAndEscapes(t *testing.T) {
	_, open := r31hSafe(t)
	env := argsLook(t, "env")
	py := argsLook(t, "python3")
	s := writeScript(t, filepath.Join(open, "evil.py"), "python3")
	for _, sv := range []string{
		"python3 '" + s + "'",
		`python3 "` + s + `"`,
		"'" + py + "' " + s,
		`python3\_` + s,
		"python3 ${R31H_EVIL}",
	} {
		if err := untrustedArgs("env", env, []string{"-S", sv}, []string{"R31H_EVIL=" + s, "PATH=/usr/bin:/bin"}, "/"); err == nil {
			t.Errorf("env -S %q ran: it runs %s, which another user may write", sv, s)
		}
	}
}

// The same through startProcess (the agent's own cwd, root's here): the code another user may
// write runs as root.
func TestR31hEnvSplitStringQuotesRunsThroughStart(t *testing.T) {
	_, open := r31hSafe(t)
	env := argsLook(t, "env")
	argsLook(t, "python3")
	s := writeScript(t, filepath.Join(open, "evil.py"), "python3")
	err := argsStartEnv(t, nil, env, "-S", "python3 '"+s+"'")
	if err == nil {
		t.Errorf("env -S \"python3 '%s'\" started (ran: %v): the script is one another user may write", s, ranBeside(s))
	}
}

// node reads NODE_OPTIONS with double quotes taken off ("--require \"/dir/x.js\"").
func TestR31hNodeOptionsQuoted(t *testing.T) {
	safe, open := r31hSafe(t)
	node := argsLook(t, "node")
	js := argsWrite(t, filepath.Join(safe, "index.js"), "1\n")
	evil := argsWrite(t, filepath.Join(open, "e.js"), "1\n")
	for _, env := range [][]string{{`NODE_OPTIONS=--require "` + evil + `"`}, {`NODE_OPTIONS=--require="` + evil + `"`}} {
		err := untrustedEnv("node", node, env)
		if err == nil {
			err = untrustedArgs("node", node, []string{js}, env, "/")
		}
		if err == nil {
			t.Errorf("node with %q ran", env)
		}
	}
}

// perl -S looks its script up in PATH: one another user owns, in a root directory of PATH.
func TestR31hPerlSLooksUpTheScriptInPATH(t *testing.T) {
	safe, _ := r31hSafe(t)
	perl := argsLook(t, "perl")
	s := writeScript(t, filepath.Join(safe, "r31hplugin.pl"), "perl")
	if err := os.Chmod(s, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(s, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + safe + ":/usr/bin:/bin"}
	if err := untrustedArgs("perl", perl, []string{"-S", "r31hplugin.pl"}, env, "/"); err == nil {
		t.Errorf("perl -S r31hplugin.pl ran: it runs %s, nobody's", s)
	}
}

// node's -r (CommonJS require) of a name with a colon other than node: is a package looked up
// in node_modules as any name is (node -r a:b loads ./node_modules/a:b).
func TestR31hNodeRequireOfAColonNameIsLookedUp(t *testing.T) {
	safe, open := r31hSafe(t)
	node := argsLook(t, "node")
	js := argsWrite(t, filepath.Join(safe, "index.js"), "1\n")
	if err := untrustedArgs("node", node, []string{"-r", "a:b", js}, nil, open); err == nil {
		t.Errorf("node -r a:b from %s ran: %s/node_modules is another user's to make", open, open)
	}
	if err := untrustedArgs("node", node, []string{"-r", "dotenv", js}, nil, open); err == nil {
		t.Errorf("node -r dotenv from %s ran", open)
	}
}
