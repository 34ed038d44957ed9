package agent

// recheck33a's reading of the interpreter-argument check (programargs.go): perl's -xDIR, which
// moves perl to DIR before its -I and -Mlib= directories are searched, and node's file: URLs,
// which node decodes (%XX, %2e%2e a "..") before it loads the file.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// perl -xDIR chdirs to DIR once the script is opened, before the modules its -M options and
// the script's `use` lines name are searched for: a relative -I lib or -Mlib=lib is DIR/lib
// then, not the agent's working directory's lib the reader checked. With DIR another user's,
// the plugin loaded their module as root. The script itself is opened before the move: a
// relative one is still the agent's directory's, and a -xDIR of root's with its lib runs.
func TestPerlChdirIsWhereItsRelativeIncludeIs(t *testing.T) {
	safe, open := argsDirs(t)
	perlProg := argsLook(t, "perl")
	mkdir(t, filepath.Join(safe, "lib"), 0o755)
	mkdir(t, filepath.Join(open, "lib"), 0o777)
	marker := filepath.Join(open, "vt33mod")
	argsWrite(t, filepath.Join(open, "lib", "Vt33.pm"), "package Vt33; open(my $f, '>', '"+marker+".ran'); close $f; 1;\n")
	argsWrite(t, filepath.Join(safe, "lib", "Vt33.pm"), "package Vt33; 1;\n")
	plugin := argsWrite(t, filepath.Join(safe, "plugin.pl"), "junk before the #! line -x skips\n#!perl\nuse Vt33;\nopen(my $f, '>', \"$0.ran\"); close $f;\n")
	argsEvidence(t, marker)
	for _, args := range [][]string{
		{"-x" + open, "-Ilib", plugin},
		{"-Ilib", "-x" + open, plugin},
		{"-x" + open, "-I", "lib", plugin},
		{"-x" + open, "-Mlib=lib", plugin},
		{"-wx" + open, "-I./lib", plugin},
	} {
		checkArgsStart(t, perlProg, args, marker, open, "-x"+open, "lib")
	}
	// The same reading without a start: a relative script with -xDIR is still the agent's
	// directory's (perl opens it before it moves), so -x to an open directory alone is no refusal.
	if err := untrustedArgs("perl", perlProg, []string{"-x" + open, "plugin.pl"}, nil, safe); err != nil {
		t.Errorf("untrustedArgs(perl -x%s plugin.pl) in %s = %v; want it run: perl opens the script before it moves", open, safe, err)
	}
	// Root's directory and its lib: the plugin runs, its module from there.
	checkArgsStart(t, perlProg, []string{"-x" + safe, "-Ilib", plugin}, plugin, "")
}

// node decodes a file: URL before it opens it, as the URL parser and fileURLToPath do: %XX is
// the byte, and a segment %2e%2e (or .%2e) is a "..", taken off with the one before it as
// text. The reader took the URL's text as the path: file://SAFE/x/%2e%2e/../OPEN/evil.mjs named
// a directory "%2e%2e" not made under root's x, which no other user may make, and node loaded
// OPEN/evil.mjs as root. An honest URL with an escaped space in a root directory still runs.
func TestNodeFileURLIsDecodedAsNodeDecodesIt(t *testing.T) {
	safe, open := argsDirs(t)
	nodeProg := argsLook(t, "node")
	mkdir(t, filepath.Join(safe, "x"), 0o755)
	marker := filepath.Join(open, "vt33node")
	evil := argsWrite(t, filepath.Join(open, "evil.mjs"), "import { writeFileSync } from 'node:fs';\nwriteFileSync('"+marker+".ran', '');\n")
	ok := argsWrite(t, filepath.Join(safe, "ok.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	argsEvidence(t, marker)
	up := "/" + filepath.Base(open) + "/evil.mjs" // from safe's parent
	for _, url := range []string{
		"file://" + safe + "/x/%2e%2e/.." + up,
		"file://" + safe + "/x/.%2E/%2E%2e" + up,
		"file://" + strings.TrimSuffix(evil, "evil.mjs") + "%65vil.mjs",
	} {
		checkArgsStart(t, nodeProg, []string{"--import", url, ok}, marker, open, "--import")
		if err := untrustedEnv("node", nodeProg, []string{"NODE_OPTIONS=--import=" + url}); err == nil {
			t.Errorf("NODE_OPTIONS=--import=%s accepted; want refused: node loads %s", url, evil)
		}
	}
	// A root module in a directory whose name has a space, escaped in the URL: it runs.
	spaced := mkdir(t, filepath.Join(safe, "a dir"), 0o755)
	argsWrite(t, filepath.Join(spaced, "hook.mjs"), "")
	checkArgsStart(t, nodeProg, []string{"--import", "file://" + filepath.Join(safe, "a%20dir", "hook.mjs"), ok}, ok, "")
	if err := untrustedEnv("node", nodeProg, []string{"NODE_OPTIONS=--import=file://" + filepath.Join(safe, "a%20dir", "hook.mjs")}); err != nil {
		t.Errorf("NODE_OPTIONS with a root module's escaped URL refused: %v", err)
	}
}

// node reads NODE_OPTIONS from the file its --env-file names (node 20.6 on) when the
// environment has none: an --inspect there opens the inspector as one in the exec env would.
// The file's variables are checked as the exec env is, so it is refused, whatever the quoting;
// a file that sets other options still runs.
func TestNodeInspectorInAnEnvFileIsRefused(t *testing.T) {
	safe, _ := argsDirs(t)
	nodeProg := argsLook(t, "node")
	ok := argsWrite(t, filepath.Join(safe, "ok.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	for i, line := range []string{`NODE_OPTIONS="--inspect"`, `NODE_OPTIONS='--inspect-brk=0'`, `export NODE_OPTIONS=--max-old-space-size=64 --inspect_wait`} {
		env := argsWrite(t, filepath.Join(safe, fmt.Sprintf("inspect%d.env", i)), line+"\n")
		err := untrustedArgs("node", nodeProg, []string{"--env-file=" + env, ok}, nil, safe)
		if err == nil || !strings.Contains(err.Error(), "not run") || !strings.Contains(err.Error(), "inspect") || !strings.Contains(err.Error(), env) {
			t.Errorf("node --env-file with %s: %v; want refused, naming the file and the inspector", line, err)
		}
	}
	env := argsWrite(t, filepath.Join(safe, "ok.env"), "NODE_OPTIONS=\"--max-old-space-size=64\"\nA=1\n")
	checkArgsStart(t, nodeProg, []string{"--env-file=" + env, ok}, ok, "")
}
