package agent

// The interpreter-argument reader (programargs.go) read as its adversary (review31h).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A real agent runs in / under systemd: legitimate node plugins with node's and V8's own
// options (all accepted by node v20: `node --trace-gc index.js` runs) must start.
func TestNodeV8AndUnlistedFlagsStart(t *testing.T) {
	safe, _ := argsDirs(t)
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
func TestNonInteractiveShellsENVIsNotRead(t *testing.T) {
	safe, open := argsDirs(t)
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
func TestPerlLEIsInlineAndTheOptionsAfterAreRead(t *testing.T) {
	_, open := argsDirs(t)
	perl := argsLook(t, "perl")
	if err := untrustedArgs("perl", perl, []string{"-le", "require Foo", "-I" + open}, nil, "/"); err == nil {
		t.Errorf("perl -le CODE -I%s ran: -I names a directory another user may write", open)
	}
}

// perl's -M'MODULE LIST' is `use MODULE LIST;`: -M'lib qw(DIR)' puts DIR first as -Mlib=DIR does.
func TestPerlMlibListIsRefused(t *testing.T) {
	safe, open := argsDirs(t)
	perl := argsLook(t, "perl")
	s := writeScript(t, filepath.Join(safe, "ok.pl"), "perl")
	if err := untrustedArgs("perl", perl, []string{"-Mlib qw(" + open + ")", s}, nil, "/"); err == nil {
		t.Errorf("perl -M'lib qw(%s)' ran: it puts a directory another user may write first on @INC", open)
	}
}

// env's long options are getopt_long's, which takes any unambiguous prefix: --unse is --unset,
// which takes the next argument; what env runs is the one after.
func TestEnvAbbreviatedLongOptionsAreGetoptLongs(t *testing.T) {
	_, open := argsDirs(t)
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
func TestNodePEThenRequireIsRead(t *testing.T) {
	_, open := argsDirs(t)
	node := argsLook(t, "node")
	m := argsWrite(t, filepath.Join(open, "evil.js"), "1\n")
	if err := untrustedArgs("node", node, []string{"-pe", "1", "-r", m}, nil, "/"); err == nil {
		t.Errorf("node -pe 1 -r %s ran: -r names a file another user may write", m)
	}
}

// env -S splits its string as a shell would its quotes, \_ and ${VAR}: what it runs is
// /usr/bin/python3 with <open>/evil.py in each.
func TestEnvSplitStringQuotesAndEscapesAreRead(t *testing.T) {
	_, open := argsDirs(t)
	env := argsLook(t, "env")
	py := argsLook(t, "python3")
	s := writeScript(t, filepath.Join(open, "evil.py"), "python3")
	for _, sv := range []string{
		"python3 '" + s + "'",
		`python3 "` + s + `"`,
		"'" + py + "' " + s,
		`python3\_` + s,
		"python3 ${READER_EVIL}",
	} {
		if err := untrustedArgs("env", env, []string{"-S", sv}, []string{"READER_EVIL=" + s, "PATH=/usr/bin:/bin"}, "/"); err == nil {
			t.Errorf("env -S %q ran: it runs %s, which another user may write", sv, s)
		}
	}
}

// The same through startProcess (the agent's own cwd, root's here): the code another user may
// write runs as root.
func TestEnvSplitStringQuotedScriptIsNotStarted(t *testing.T) {
	_, open := argsDirs(t)
	env := argsLook(t, "env")
	argsLook(t, "python3")
	s := writeScript(t, filepath.Join(open, "evil.py"), "python3")
	err := argsStartEnv(t, nil, env, "-S", "python3 '"+s+"'")
	if err == nil {
		t.Errorf("env -S \"python3 '%s'\" started (ran: %v): the script is one another user may write", s, ranBeside(s))
	}
}

// node reads NODE_OPTIONS with double quotes taken off ("--require \"/dir/x.js\"").
func TestNodeOptionsQuotedRequireIsChecked(t *testing.T) {
	safe, open := argsDirs(t)
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
func TestPerlSScriptIsLookedUpInPATH(t *testing.T) {
	safe, _ := argsDirs(t)
	perl := argsLook(t, "perl")
	s := writeScript(t, filepath.Join(safe, "readerplugin.pl"), "perl")
	if err := os.Chmod(s, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(s, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + safe + ":/usr/bin:/bin"}
	if err := untrustedArgs("perl", perl, []string{"-S", "readerplugin.pl"}, env, "/"); err == nil {
		t.Errorf("perl -S readerplugin.pl ran: it runs %s, nobody's", s)
	}
}

// node's -r (CommonJS require) of a name with a colon other than node: is a package looked up
// in node_modules as any name is (node -r a:b loads ./node_modules/a:b).
func TestNodeRequireOfAColonNameIsLookedUp(t *testing.T) {
	safe, open := argsDirs(t)
	node := argsLook(t, "node")
	js := argsWrite(t, filepath.Join(safe, "index.js"), "1\n")
	if err := untrustedArgs("node", node, []string{"-r", "a:b", js}, nil, open); err == nil {
		t.Errorf("node -r a:b from %s ran: %s/node_modules is another user's to make", open, open)
	}
	if err := untrustedArgs("node", node, []string{"-r", "dotenv", js}, nil, open); err == nil {
		t.Errorf("node -r dotenv from %s ran", open)
	}
}

// A word the reader takes as the script, joined to the working directory, that is not there
// (a misread value: /'x', /print 1) is refused: before, nobody could make it, so it passed.
func TestAScriptThatIsNotThereIsRefused(t *testing.T) {
	safe, _ := argsDirs(t)
	sh, py := argsLook(t, "sh"), argsLook(t, "python3")
	for _, tt := range []struct {
		path string
		args []string
	}{
		{sh, []string{"-e", filepath.Join(safe, "gone.sh")}},
		{sh, []string{"'" + filepath.Join(safe, "x.sh") + "'"}},
		{py, []string{"print 1"}},
	} {
		err := untrustedArgs("cmd", tt.path, tt.args, nil, "/")
		if err == nil || !strings.Contains(err.Error(), "is not there") {
			t.Errorf("%s %q: %v; want it refused, the script not there", tt.path, tt.args, err)
		}
	}
}

// env -S's string is split as GNU env splits it (coreutils' env.c): quotes, escapes, ${NAME}
// from env's variables at that point, comments; what env refuses is an error.
func TestEnvSplitStringIsSplitAsGNUEnvDoes(t *testing.T) {
	env := []string{"A=x y", "B=1", "B=2"}
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"python3 '/o/e.py'", []string{"python3", "/o/e.py"}},
		{`python3 "/o/e.py"`, []string{"python3", "/o/e.py"}},
		{`python3\_/o/e.py`, []string{"python3", "/o/e.py"}},
		{`"a\_b" c`, []string{"a b", "c"}},
		{"p ${A} ${B}", []string{"p", "x y", "2"}},
		{`p '\\ \' \n'`, []string{"p", `\ ' \n`}},
		{`p a\c b`, []string{"p", "a"}},
		{"p #comment x", []string{"p"}},
		{`p a#b \#c`, []string{"p", "a#b", "#c"}},
		{"  p\t''  ", []string{"p", ""}},
		{`p\tq`, []string{"p\tq"}},
	} {
		got, err := splitString(tt.in, env)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitString(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`p 'x`, `p "x`, `p \q`, `p $A`, `p ${A`, `p ${1A}`, `p "a\cb"`, `p \`} {
		if got, err := splitString(bad, env); err == nil {
			t.Errorf("splitString(%q) = %q; want an error, as env gives", bad, got)
		}
	}
}

// env -S's words name the program env runs: a quoted script another user may write is refused
// for that (not for a word that is not there), and a string env cannot split is refused.
func TestEnvSplitStringNamesTheUntrustedScript(t *testing.T) {
	_, open := argsDirs(t)
	env := argsLook(t, "env")
	argsLook(t, "python3")
	s := writeScript(t, filepath.Join(open, "evil.py"), "python3")
	for _, sv := range []string{"python3 '" + s + "'", "python3 ${READER_EVIL}", `python3\_` + s} {
		err := untrustedArgs("env", env, []string{"-S", sv}, []string{"READER_EVIL=" + s, "PATH=/usr/bin:/bin"}, "/")
		if err == nil || !strings.Contains(err.Error(), open) || strings.Contains(err.Error(), "is not there") {
			t.Errorf("env -S %q: %v; want it refused naming %s", sv, err, open)
		}
	}
	if err := untrustedArgs("env", env, []string{"-S", "python3 'x"}, nil, "/"); err == nil || !strings.Contains(err.Error(), "-S") {
		t.Errorf("env -S \"python3 'x\": %v; want it refused, naming -S", err)
	}
}

// env's long options by prefix: an ambiguous or unknown one without "=" is refused; a unique
// prefix is the option (--chd is --chdir, whose value is the next argument).
func TestEnvLongOptionPrefixes(t *testing.T) {
	argsDirs(t)
	env := argsLook(t, "env")
	for _, a := range []string{"--i", "--frobnicate"} { // --ignore-environment, --ignore-signal
		if err := untrustedArgs("env", env, []string{a, "X", "/bin/true"}, nil, "/"); err == nil || !strings.Contains(err.Error(), a) {
			t.Errorf("env %s X /bin/true: %v; want it refused, naming %s", a, err, a)
		}
	}
	for _, args := range [][]string{{"--chd", "/", "/bin/true"}, {"--ignore-e", "/bin/true"}, {"--unset=FOO", "/bin/true"}} {
		if err := untrustedArgs("env", env, args, nil, "/"); err != nil {
			t.Errorf("env %q: %v; want it run", args, err)
		}
	}
}

// perl -S NAME that no PATH directory holds runs nothing: refused, as a missing script is.
func TestPerlSScriptNotInPATHIsRefused(t *testing.T) {
	safe, _ := argsDirs(t)
	perl := argsLook(t, "perl")
	if err := untrustedArgs("perl", perl, []string{"-S", "no-such-plugin.pl"}, []string{"PATH=" + safe}, "/"); err == nil || !strings.Contains(err.Error(), "no-such-plugin.pl") {
		t.Errorf("perl -S no-such-plugin.pl: %v; want it refused, naming it", err)
	}
	s := writeScript(t, filepath.Join(safe, "readerok.pl"), "perl")
	if err := os.Chmod(s, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := untrustedArgs("perl", perl, []string{"-S", "readerok.pl"}, []string{"PATH=" + safe + ":/usr/bin:/bin"}, "/"); err != nil {
		t.Errorf("perl -S readerok.pl, root's: %v; want it run", err)
	}
}

// perl's -l and -0 stop at their octal (or 0x hex) digits: -0777e CODE -I DIR is -0777, -e
// CODE and -I DIR. (-C takes the rest of its group: a letter not its own perl refuses.)
func TestPerlDigitOptionsEndAtTheirDigits(t *testing.T) {
	_, open := argsDirs(t)
	perl := argsLook(t, "perl")
	for _, o := range []string{"-0777e", "-0x1Fle", "-l012e", "-le", "-wle"} {
		if err := untrustedArgs("perl", perl, []string{o, "1", "-I" + open}, nil, "/"); err == nil || !strings.Contains(err.Error(), open) {
			t.Errorf("perl %s 1 -I%s: %v; want it refused: -I names a directory another user may write", o, open, err)
		}
	}
}

// A #! line's env -S string is split the same way: `#!/usr/bin/env -S python3 "<open>/evil.py"`
// runs that script, refused for it.
func TestShebangEnvSplitStringQuotesAreRead(t *testing.T) {
	safe, open := argsDirs(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("no /usr/bin/python3, which env looks up in PATH=/usr/bin:/bin here: %v", err)
	}
	evil := writeScript(t, filepath.Join(open, "evil.py"), "python3")
	sb := filepath.Join(safe, "plugin")
	if err := os.WriteFile(sb, []byte("#!/usr/bin/env -S python3 \""+evil+"\" --v\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := untrustedArgs(sb, sb, nil, []string{"PATH=/usr/bin:/bin"}, "/")
	if err == nil || !strings.Contains(err.Error(), open) || strings.Contains(err.Error(), "is not there") {
		t.Errorf("#!/usr/bin/env -S python3 \"%s\": %v; want it refused, naming %s", evil, err, open)
	}
}
