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
