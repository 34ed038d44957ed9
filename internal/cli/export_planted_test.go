package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportNomadRefusesAnOutDirAnotherUserControls: --out in a directory another user may
// write (a planted symlink to a directory of root's, or a directory of theirs) had volctl,
// often root and with --include-secrets writing the volumes' secrets, write its files where
// that user chose. Refused before anything is written, naming the path and why.
func TestExportNomadRefusesAnOutDirAnotherUserControls(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a symlink and a directory of another user's need root to make")
	}
	h := newCLIHarness(t)
	createSingleWriter(t, h.e, "logs")
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil { // not sticky: anyone may put a name there
		t.Fatal(err)
	}
	target := filepath.Join(base, "roots")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(shared, "out")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, into, want string }{
		{link, target, shared + " is writable by other users (mode 0777)"},
		{theirs, theirs, theirs + " is owned by uid 4242"},
	} {
		code, stdout, stderr := h.runReported("export", "nomad", "logs", "--include-secrets", "--out", c.out)
		if code == 0 || !strings.Contains(stderr, "--out "+c.out) || !strings.Contains(stderr, c.want) {
			t.Errorf("export nomad --out %s: exit %d\n%s%s\nwant a refusal saying %q", c.out, code, stdout, stderr, c.want)
		}
		if ents, _ := os.ReadDir(c.into); len(ents) != 0 {
			t.Errorf("export nomad --out %s wrote into %s: %v", c.out, c.into, ents)
		}
	}
}
