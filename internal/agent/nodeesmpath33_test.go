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

// node resolves --import #name through the "imports" of the package.json nearest the working
// directory: root's package.json mapping #hook to ./hooks/h.mjs, hooks another user's
// directory, had node load their module as root; the reader looked #hook up in node_modules
// only. Now the package.json node finds and the files its imports name are checked; a
// package whose hooks are root's still runs.
func TestNodeImportSubpathThroughPackageJSONIsChecked(t *testing.T) {
	safe, _ := argsDirs(t)
	pkg := mkdir(t, filepath.Join(safe, "pkg"), 0o755)
	hooks := mkdir(t, filepath.Join(pkg, "hooks"), 0o777)
	good := mkdir(t, filepath.Join(pkg, "good"), 0o755)
	argsWrite(t, filepath.Join(hooks, "h.mjs"), "")
	argsWrite(t, filepath.Join(good, "h.mjs"), "")
	argsWrite(t, filepath.Join(pkg, "package.json"), `{"imports": {"#hook": {"node": "./hooks/h.mjs"}, "#good": "./good/h.mjs"}}`)
	for _, name := range []string{"#hook", "#good"} {
		m := argCode{what: "--import", path: name}
		err := untrustedModule("node", &node, m, pkg)
		if name == "#hook" && (err == nil || !strings.Contains(err.Error(), hooks)) {
			t.Errorf("node --import #hook in %s: %v; want refused, naming %s", pkg, err, hooks)
		}
		if name == "#good" && err != nil {
			t.Errorf("node --import #good in %s: %v; want it run", pkg, err)
		}
	}
}

// The URL parser strips C0 controls and spaces around a URL, no other white space: a no-break
// space before file:'s path makes it relative to the working directory, after it part of the
// name. fileURLPath trimmed every Unicode space, and checked /safe/x where node loads
// ./<NBSP>///safe/x from the working directory.
func TestFileURLPathTrimsOnlyWhatNodeTrims(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"\u00a0///safe/x.mjs": "\u00a0/safe/x.mjs",
		"///safe/x.mjs\u00a0": "/safe/x.mjs\u00a0",
		" ///safe/x.mjs\t\n":  "/safe/x.mjs",
	} {
		if got := fileURLPath(in); got != want {
			t.Errorf("fileURLPath(%+q) = %+q; want %+q", in, got, want)
		}
	}
}
