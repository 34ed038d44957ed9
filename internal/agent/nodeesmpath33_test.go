package agent

// mend33a: node resolves --import's and --loader's specifier as an ES module specifier, a URL
// relative to the working directory, even when it is a plain path: /x/%2e%2e/y.mjs is /y.mjs,
// %65 an "e", a #fragment or ?query off. --require's (CommonJS) is a path, as the kernel reads it.

import (
	"path/filepath"
	"strings"
	"testing"
)

// The adversary: --import /SAFE/x/%2e%2e/../OPEN/evil.mjs. The reader checked the kernel's
// reading of it (a directory "%2e%2e" not made under root's x, which no other user may make),
// and node loaded OPEN/evil.mjs as root, as it did for the same text after file:// before
// recheck33a. An honest absolute path, and a --require of a path with a "%" in a root
// directory, still run.
func TestNodeImportPathIsReadAsAURL(t *testing.T) {
	safe, open := argsDirs(t)
	nodeProg := argsLook(t, "node")
	mkdir(t, filepath.Join(safe, "x"), 0o755)
	marker := filepath.Join(open, "vt33esm")
	evil := argsWrite(t, filepath.Join(open, "evil.mjs"), "import { writeFileSync } from 'node:fs';\nwriteFileSync('"+marker+".ran', '');\n")
	ok := argsWrite(t, filepath.Join(safe, "ok.js"), "require('fs').writeFileSync(__filename + '.ran', '')\n")
	argsEvidence(t, marker)
	up := "/" + filepath.Base(open) + "/evil.mjs" // from safe's parent
	for _, spec := range []string{
		safe + "/x/%2e%2e/.." + up,
		safe + "/x/.%2E/%2E%2e" + up,
		strings.TrimSuffix(evil, "evil.mjs") + "%65vil.mjs",
	} {
		for _, opt := range []string{"--import", "--loader"} {
			checkArgsStart(t, nodeProg, []string{opt, spec, ok}, marker, open, opt)
		}
		if err := untrustedEnv("node", nodeProg, []string{"NODE_OPTIONS=--import=" + spec}); err == nil {
			t.Errorf("NODE_OPTIONS=--import=%s accepted; want refused: node loads %s", spec, evil)
		}
	}
	hook := argsWrite(t, filepath.Join(safe, "hook.mjs"), "")
	checkArgsStart(t, nodeProg, []string{"--import", hook, ok}, ok, "")
	if err := untrustedEnv("node", nodeProg, []string{"NODE_OPTIONS=--import=" + hook}); err != nil {
		t.Errorf("NODE_OPTIONS=--import=%s refused: %v", hook, err)
	}
	pct := mkdir(t, filepath.Join(safe, "100%2e"), 0o755)
	req := argsWrite(t, filepath.Join(pct, "req.js"), "")
	checkArgsStart(t, nodeProg, []string{"--require", req, ok}, ok, "")
}
