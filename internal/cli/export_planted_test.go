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
	base, shared, target, link := plantedOut(t)
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

// TestExportNomadChecksARelativeOutFromTheWorkingDirectory: a relative --out was checked as if
// it began at "/" (pathtrust walked "out" as /out), so the planted symlink above, reached as
// "out" from the shared directory, passed and volctl wrote its files where that user chose; and
// a relative --out of this user's was refused for a directory of the same name under "/" it
// does not name. Checked where the kernel resolves it: from the working directory.
func TestExportNomadChecksARelativeOutFromTheWorkingDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a symlink of another user's needs root to make")
	}
	h := newCLIHarness(t)
	createSingleWriter(t, h.e, "logs")
	base, shared, target, _ := plantedOut(t)
	t.Chdir(shared)
	code, stdout, stderr := h.runReported("export", "nomad", "logs", "--include-secrets", "--out", "out")
	if code == 0 || !strings.Contains(stderr, shared+" is writable by other users (mode 0777)") {
		t.Errorf("export nomad --out out (relative, in %s): exit %d\n%s%s\nwant a refusal naming %s", shared, code, stdout, stderr, shared)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("export nomad --out out (relative) wrote into %s: %v", target, ents)
	}

	// The converse: the relative path names a directory of this user's under the working
	// directory; the same path under "/" (base, made writable by all) is not the one written.
	rel := strings.TrimPrefix(base, "/") + "/mine" // base without its leading slash
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, rel), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	code, stdout, stderr = h.runReported("export", "nomad", "logs", "--out", rel)
	if code != 0 {
		t.Errorf("export nomad --out %s (relative, in %s, only root may write it): exit %d\n%s%s\nwant it written", rel, wd, code, stdout, stderr)
	}
	if ents, _ := os.ReadDir(filepath.Join(wd, rel)); len(ents) == 0 {
		t.Errorf("export nomad --out %s (relative) wrote nothing into %s", rel, filepath.Join(wd, rel))
	}
}

// plantedOut makes, in a new directory base, shared (mode 0777, not sticky: anyone may put a
// name there), target (root's), and link, shared/out, a symlink of uid 4242's to target.
func plantedOut(t *testing.T) (base, shared, target, link string) {
	t.Helper()
	base = t.TempDir()
	shared = filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	target = filepath.Join(base, "roots")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(shared, "out")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	return base, shared, target, link
}
