package agent

// secrets32's second reading of the interpreter-argument check (programargs.go): options that
// have the interpreter load code from a place the reader did not look.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python -X pycache_prefix=DIR reads the compiled modules of what it imports from DIR (as
// PYTHONPYCACHEPREFIX, which the exec env is refused for, does): a user who may write DIR plants
// a .pyc with the header of the root-owned source (its mtime and size), and python runs it in
// place of the source as root. The reader took -X's value as a plain value, so the plugin ran.
// With the prefix a directory root's alone, it runs.
func TestPythonPycachePrefixIsChecked(t *testing.T) {
	safe, open := argsDirs(t)
	py := argsLook(t, "python3")
	plugin := argsWrite(t, filepath.Join(safe, "plugin.py"), "import vt32mod\n")
	marker := filepath.Join(open, "vt32mod")
	// The attacker's module, compiled into the prefix with the size and mtime the root's
	// source will have.
	evil := "open('" + marker + ".ran', 'w').close()\n"
	benign := "x = 1\n#" + strings.Repeat("-", len(evil)-8) + "\n"
	if len(benign) != len(evil) {
		t.Fatalf("the sources differ in size: %d, %d", len(benign), len(evil))
	}
	src := argsWrite(t, filepath.Join(safe, "vt32mod.py"), evil)
	mtime := time.Unix(1700000000, 0)
	if err := os.Chtimes(src, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	// Compiled by the python found (a pyenv shim starts slowly), which names the program it is.
	out, err := exec.Command(py, "-X", "pycache_prefix="+open, "-c",
		"import py_compile, sys; py_compile.compile(sys.argv[1], doraise=True); print(sys.executable)", src).CombinedOutput()
	if err != nil {
		t.Skipf("python3 cannot compile into a prefix here: %v: %s", err, out)
	}
	if real := strings.TrimSpace(string(out)); filepath.IsAbs(real) {
		py = real
	}
	argsWrite(t, src, benign)
	if err := os.Chtimes(src, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	argsEvidence(t, marker)
	for _, args := range [][]string{{"-X", "pycache_prefix=" + open, plugin}, {"-Xpycache_prefix=" + open, plugin}, {"-BX", "pycache_prefix=" + open, plugin}} {
		checkArgsStart(t, py, args, marker, open, "-X pycache_prefix")
	}

	// Root's own prefix: the plugin runs.
	prefix := mkdir(t, filepath.Join(safe, "pycache"), 0o755)
	ok := writeScript(t, filepath.Join(safe, "ok.py"), "python3")
	checkArgsStart(t, py, []string{"-X", "pycache_prefix=" + prefix, ok}, ok, "")
}

// ruby -C DIR (-X DIR, -xDIR) changes its working directory as it reads its options: the
// relative script after it, and a relative -I or -r, are opened from DIR, not from the agent's
// working directory the reader checked them in. Checked with untrustedArgs directly: no ruby
// here. A -C to a root directory, with the script there, is not refused.
func TestRubyChdirIsWhereItsRelativeScriptIs(t *testing.T) {
	safe, open := argsDirs(t)
	ruby := argsWrite(t, filepath.Join(safe, "ruby"), "")
	argsWrite(t, filepath.Join(safe, "plugin.rb"), "")
	argsWrite(t, filepath.Join(open, "plugin.rb"), "")
	mkdir(t, filepath.Join(safe, "lib"), 0o755)
	mkdir(t, filepath.Join(open, "lib"), 0o777)
	argsWrite(t, filepath.Join(safe, "lib.rb"), "")
	argsWrite(t, filepath.Join(open, "lib.rb"), "")
	for _, args := range [][]string{
		{"-C", open, "plugin.rb"},
		{"-C" + open, "plugin.rb"},
		{"-X", open, "plugin.rb"},
		{"-x" + open, "plugin.rb"},
		{"-C", open, "-I", "lib", "/" + filepath.Join(safe, "plugin.rb")},
		{"-C", open, "-r", "./lib.rb", filepath.Join(safe, "plugin.rb")},
		{"-C", "..", "plugin.rb"}, // from safe: safe/.. is baseDir, whose plugin.rb is not made: relative moves are followed too
	} {
		err := untrustedArgs("ruby", ruby, args, nil, safe)
		if err == nil || !strings.Contains(err.Error(), "not run") {
			t.Errorf("untrustedArgs(ruby %q) in %s = %v; want refused: ruby opens what %s holds", args, safe, err, open)
		}
	}
	for _, args := range [][]string{
		{"-C", safe, "plugin.rb"},
		{"-C", safe, "-I", "lib", "-r", "./lib.rb", "-r", "json", "plugin.rb"},
		{"-x", filepath.Join(safe, "plugin.rb")}, // -x alone: no directory
	} {
		if err := untrustedArgs("ruby", ruby, args, nil, open); err != nil {
			t.Errorf("untrustedArgs(ruby %q) in %s = %v; want it run: what it opens is root's", args, open, err)
		}
	}
}

// node --inspect (--inspect-brk, --inspect-wait, =HOST:PORT or not; or in NODE_OPTIONS) opens
// node's inspector on a TCP port, 127.0.0.1:9229 by default, which any local user may connect
// to and run JavaScript through in the plugin as root: the code another user can change is
// whatever they send. The reader took --inspect for a flag, and the plugin ran. node with
// --inspect-port alone (no inspector) still runs.
func TestNodeInspectorIsRefused(t *testing.T) {
	safe, _ := argsDirs(t)
	node := argsLook(t, "node")
	ok := argsWrite(t, filepath.Join(safe, "ok.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	for _, args := range [][]string{{"--inspect", ok}, {"--inspect=127.0.0.1:0", ok}, {"--inspect-brk=0", ok}, {"--inspect-wait", ok}} {
		err := untrustedArgs("node", node, args, nil, safe)
		if err == nil || !strings.Contains(err.Error(), "not run") || !strings.Contains(err.Error(), "inspector") || !strings.Contains(err.Error(), strings.Split(args[0], "=")[0]) {
			t.Errorf("untrustedArgs(node %q) = %v; want refused, naming the option and its inspector", args, err)
		}
	}
	for _, v := range []string{"--inspect", "--max-old-space-size=64 --inspect=0"} {
		err := untrustedEnv("node", node, []string{"NODE_OPTIONS=" + v})
		if err == nil || !strings.Contains(err.Error(), "NODE_OPTIONS") || !strings.Contains(err.Error(), "--inspect") || strings.Contains(err.Error(), "max-old") {
			t.Errorf("untrustedEnv(NODE_OPTIONS=%q) = %v; want refused, naming the variable and the option, not the value", v, err)
		}
	}
	if err := untrustedEnv("node", node, []string{"NODE_OPTIONS=--inspect-port=9230 --max-old-space-size=64"}); err != nil {
		t.Errorf("NODE_OPTIONS with --inspect-port alone refused: %v", err)
	}
	checkArgsStart(t, node, []string{"--inspect-port=0", ok}, ok, "")
}

// node reads '_' as '-' in a long option's name (--inspect_brk is --inspect-brk), and has
// --inspect-brk-node: each opens its inspector. In NODE_OPTIONS, node takes the quotes off
// ("--inspect"), and an option the reader does not know (--experimental-shadow-realm) stopped
// it before the --inspect after it. Each was read as no inspector, and node run (review32a).
func TestNodeInspectorIsRefusedInEverySpelling(t *testing.T) {
	safe, _ := argsDirs(t)
	node := argsLook(t, "node")
	ok := argsWrite(t, filepath.Join(safe, "ok.js"), "")
	for _, args := range [][]string{
		{"--inspect_brk=127.0.0.1:0", ok},
		{"--inspect_wait=127.0.0.1:0", ok},
		{"--inspect-brk-node=127.0.0.1:0", ok},
		{"--inspect-brk_node", ok},
	} {
		err := untrustedArgs("node", node, args, nil, safe)
		if err == nil || !strings.Contains(err.Error(), "inspector") || !strings.Contains(err.Error(), strings.Split(args[0], "=")[0]) {
			t.Errorf("untrustedArgs(node %q) = %v; want refused, naming the option as written: node opens its inspector", args, err)
		}
	}
	for _, v := range []string{
		"--inspect_brk",
		"--inspect_wait=0",
		"--experimental-shadow-realm --inspect=0",
		"--trace-gc --trace-gc-verbose --inspect",
		`"--inspect"`,
		`--max-old-space-size=64 "--insp"ect"-brk"`,
	} {
		err := untrustedEnv("node", node, []string{"NODE_OPTIONS=" + v})
		if err == nil || !strings.Contains(err.Error(), "inspect") || !strings.Contains(err.Error(), "NODE_OPTIONS") {
			t.Errorf("untrustedEnv(NODE_OPTIONS=%q) = %v; want refused: node opens its inspector", v, err)
		}
	}
}

// NODE_OPTIONS is split as node splits it (spaces outside double quotes; a backslash in them
// escapes), and read both ways at an option the agent does not know, as the args are: a
// --require after --experimental-shadow-realm (unknown) was not read, and node loaded another
// user's file first. A quote left open, which node refuses, is refused; honest values run.
func TestNodeOptionsAreReadAsNodeReadsThem(t *testing.T) {
	_, open := argsDirs(t)
	node := argsLook(t, "node")
	evil := argsWrite(t, filepath.Join(open, "evil.js"), "")
	spaced := argsWrite(t, filepath.Join(open, "a b.js"), "")
	for _, v := range []string{
		"--experimental-shadow-realm --require " + evil,
		"--trace-gc --require=" + evil,
		`--require "` + strings.ReplaceAll(spaced, " ", `\ `) + `"`,
		`--require "` + spaced + `"`,
	} {
		if err := untrustedEnv("node", node, []string{"NODE_OPTIONS=" + v}); err == nil || !strings.Contains(err.Error(), "NODE_OPTIONS") {
			t.Errorf("untrustedEnv(NODE_OPTIONS=%q) = %v; want refused: node loads another user's file first", v, err)
		}
	}
	err := untrustedEnv("node", node, []string{`NODE_OPTIONS=--title "s3cret`})
	if err == nil || !strings.Contains(err.Error(), "quote") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("NODE_OPTIONS with a quote left open: %v; want refused, saying so, without the value", err)
	}
	for _, v := range []string{"--max-old-space-size=512", "--enable-source-maps", "--dns-result-order=ipv4first",
		"--max-old-space-size=512 --enable-source-maps --dns-result-order ipv4first", `--title "csi plugin"`, "--trace-gc"} {
		if err := untrustedEnv("node", node, []string{"NODE_OPTIONS=" + v}); err != nil {
			t.Errorf("untrustedEnv(NODE_OPTIONS=%q) refused: %v", v, err)
		}
	}
}

// ruby requires its -r libraries once it has read every option, -C's chdir included, and keeps
// a "./" -I relative (its expand_include_path): both are opened from the last working directory,
// not the one the option was read in. The reader checked them where they were read, and ruby
// loaded another user's lib.rb (review32a).
func TestRubyRequireBeforeChdirIsOpenedAfterIt(t *testing.T) {
	safe, open := argsDirs(t)
	ruby := argsWrite(t, filepath.Join(safe, "ruby"), "")
	plugin := argsWrite(t, filepath.Join(safe, "plugin.rb"), "")
	argsWrite(t, filepath.Join(safe, "lib.rb"), "")
	argsWrite(t, filepath.Join(open, "lib.rb"), "")
	mkdir(t, filepath.Join(safe, "lib"), 0o755)
	mkdir(t, filepath.Join(open, "lib"), 0o777)
	for _, args := range [][]string{
		{"-r", "./lib.rb", "-C", open, plugin},
		{"-r./lib.rb", "-C" + open, plugin},
		{"-I", "./lib", "-C", open, "-r", "lib2", plugin},
	} {
		err := untrustedArgs("ruby", ruby, args, nil, safe)
		if err == nil || !strings.Contains(err.Error(), open) {
			t.Errorf("untrustedArgs(ruby %q) in %s = %v; want refused, naming %s: ruby requires from there", args, safe, err, open)
		}
	}
	// The same from root's directory, -C moving there last, runs.
	for _, args := range [][]string{{"-r", "./lib.rb", "-C", safe, plugin}, {"-I", "./lib", "-C", safe, plugin}} {
		if err := untrustedArgs("ruby", ruby, args, nil, open); err != nil {
			t.Errorf("untrustedArgs(ruby %q) in %s refused: %v", args, open, err)
		}
	}
}

// chdir(2) and open(2) follow a symlink before "..": ruby -C link/.. is the parent of link's
// target, not the directory link is in, as the reader's filepath.Join (Clean) had it, and ruby
// ran another user's plugin.rb (review32a). A ".." after a symlink is refused; one after none
// is read as before.
func TestDotDotAfterASymlinkIsRefused(t *testing.T) {
	safe, open := argsDirs(t)
	ruby := argsWrite(t, filepath.Join(safe, "ruby"), "")
	argsWrite(t, filepath.Join(safe, "plugin.rb"), "")
	argsWrite(t, filepath.Join(open, "plugin.rb"), "")
	sub := mkdir(t, filepath.Join(open, "sub"), 0o777)
	if err := os.Symlink(sub, filepath.Join(safe, "link")); err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(safe, "dir"), 0o755)
	for _, args := range [][]string{
		{"-C", "link/..", "plugin.rb"},
		{"-C", "link", "-C", "..", "plugin.rb"},
		{filepath.Join(safe, "link") + "/../plugin.rb"},
	} {
		err := untrustedArgs("ruby", ruby, args, nil, safe)
		if err == nil || !strings.Contains(err.Error(), `".."`) || !strings.Contains(err.Error(), filepath.Join(safe, "link")) {
			t.Errorf("untrustedArgs(ruby %q) in %s = %v; want refused, naming the symlink: ruby runs %s", args, safe, err, filepath.Join(open, "plugin.rb"))
		}
	}
	if err := untrustedArgs("ruby", ruby, []string{"-C", "dir/..", "plugin.rb"}, nil, safe); err != nil {
		t.Errorf("ruby -C dir/.. (no symlink) refused: %v", err)
	}
}
