package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nomad34: node's --import #name, mapped by the nearest package.json's "imports" to a bare
// package (dep), and --import dep itself, load the file node resolves in the first
// node_modules/dep it finds, through a symlink (npm link makes one) and the package's
// "exports" or "main". The reader checked only the node_modules directories: root's
// node_modules holding dep as a symlink to another user's directory, or a package whose
// exports name a directory another user may write, had node load their code as root. Now the
// package's directory, its package.json and the files it names are checked; a package whose
// files are root's still runs. Real node confirms what it loads (a marker its module writes).
func TestNodeBarePackageIsCheckedToTheFileNodeLoads(t *testing.T) {
	safe, open := argsDirs(t)
	nodeProg := argsLook(t, "node")
	pkg := mkdir(t, filepath.Join(safe, "pkg"), 0o755)
	argsWrite(t, filepath.Join(pkg, "package.json"), `{"imports": {"#linked": "linked", "#lib": "lib/sub", "#good": "good"}}`)
	nm := mkdir(t, filepath.Join(pkg, "node_modules"), 0o755)
	// linked: npm link's symlink to a directory another user may write.
	theirs := mkdir(t, filepath.Join(open, "linked"), 0o755)
	marker := filepath.Join(open, "nomad34-linked.ran")
	argsWrite(t, filepath.Join(theirs, "package.json"), `{"name": "linked", "main": "index.mjs"}`)
	argsWrite(t, filepath.Join(theirs, "index.mjs"), "import { writeFileSync } from 'node:fs';\nwriteFileSync('"+marker+"', '');\n")
	if err := os.Symlink(theirs, filepath.Join(nm, "linked")); err != nil {
		t.Fatal(err)
	}
	// lib: root's directory, its exports naming a directory any user may write.
	lib := mkdir(t, filepath.Join(nm, "lib"), 0o755)
	argsWrite(t, filepath.Join(lib, "package.json"), `{"name": "lib", "exports": {"./sub": {"import": "./hooks/h.mjs"}}}`)
	hooks := mkdir(t, filepath.Join(lib, "hooks"), 0o777)
	argsWrite(t, filepath.Join(hooks, "h.mjs"), "")
	// good: root's, all of it.
	good := mkdir(t, filepath.Join(nm, "good"), 0o755)
	argsWrite(t, filepath.Join(good, "package.json"), `{"name": "good", "exports": "./h.mjs"}`)
	argsWrite(t, filepath.Join(good, "h.mjs"), "")

	// What node loads: the linked package's file, through the symlink and its main.
	cmd := exec.Command(nodeProg, "--import", "#linked", "-e", "")
	cmd.Dir = pkg
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --import #linked in %s: %v\n%s", pkg, err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("node --import #linked did not load %s: %v", theirs, err)
	}

	for spec, bad := range map[string]string{
		"#linked": open,
		"linked":  open,
		"#lib":    hooks,
		"lib/sub": hooks,
		"#good":   "",
		"good":    "",
		"good/x":  "",
	} {
		err := untrustedModule("node", &node, argCode{what: "--import", path: spec}, pkg)
		switch {
		case bad == "" && err != nil:
			t.Errorf("node --import %s in %s: %v; want it run", spec, pkg, err)
		case bad != "" && (err == nil || !strings.Contains(err.Error(), bad)):
			t.Errorf("node --import %s in %s: %v; want refused, naming %s", spec, pkg, err, bad)
		}
	}
	// NODE_OPTIONS' --import of a bare name is refused whatever it resolves to (node resolves it
	// from whatever directory the plugin runs in), as docs/agent.md says.
	if err := untrustedEnv("node", nodeProg, []string{"NODE_OPTIONS=--import=#good"}); err == nil {
		t.Error("NODE_OPTIONS=--import=#good taken; want refused: node resolves it from the plugin's working directory")
	}
	// --require dep is resolved in node_modules alike.
	if err := untrustedModule("node", &node, argCode{what: "--require", path: "linked"}, pkg); err == nil || !strings.Contains(err.Error(), open) {
		t.Errorf("node --require linked in %s: %v; want refused, naming %s", pkg, err, open)
	}
}
