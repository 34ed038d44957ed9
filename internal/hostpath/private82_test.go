package hostpath_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestRootDirectoriesOpenToOthersAreMadePrivate: a root whose volumes/ (and snapshots/, meta/,
// partial/) directory exists at 0755 (restored with cp -r, or made by hand) let every local
// user traverse into the volumes' directories, 0777 for their consumers, and read or write any
// volume's data: the plugin takes the other users' permissions from its own directories when it
// starts (hostpath's "worth a closer look" in round 82's review). The root itself may stay
// readable (TestRootAnotherUserControlsIsRefused serves a 0755 root).
func TestRootDirectoriesOpenToOthersAreMadePrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	mustOK(t, os.Mkdir(root, 0o700))
	mustOK(t, os.Chmod(root, 0o755))
	subs := []string{"volumes", "snapshots", "partial", "meta"}
	for _, d := range subs {
		mustOK(t, os.Mkdir(filepath.Join(root, d), 0o700))
		mustOK(t, os.Chmod(filepath.Join(root, d), 0o755))
	}
	if _, err := hostpath.New(hostpath.Config{Root: root, NodeID: "n1"}); err != nil {
		t.Fatalf("New with root %s: %v", root, err)
	}
	for _, d := range subs {
		fi, err := os.Stat(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s/ is mode %#o after the plugin started: other users reach into it", d, perm)
		}
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the root itself was changed (%v, %v): it is the user's to keep readable", fi.Mode(), err)
	}
}
