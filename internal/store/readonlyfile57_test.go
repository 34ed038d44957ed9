package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readOnlyDirEnv tells TestReadOnlyDatabaseChild, run as another user, which state dir to open.
const readOnlyDirEnv = "VOLCTL_READONLY_DB_STATE_DIR"

// A user's own state database left read-only for its owner (0400: restored by `install -m
// 0400`, copied off read-only media, `chmod a-w` to protect it) could not be opened at all, not
// even by `volume status`: prepareFile opened it O_RDWR first and returned the bare "permission
// denied". volctl sets the mode of the files it owns (0644 to 0600, a 0500 state dir to 0700):
// this one is made 0600 too, with a warning. As root the mode bites nobody, so the check runs as
// another user (nobody), from a copy of this test binary it can run.
func TestReadOnlyDatabaseOfItsOwnUserIsMadeWritable(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "x", Message: "kept"}) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, FileName)
	if os.Geteuid() != 0 {
		if err := os.Chmod(db, 0o400); err != nil {
			t.Fatal(err)
		}
		if msg := openReadOnlyOutcome(dir); msg != "" {
			t.Error(msg)
		}
		return
	}
	const nobody = 65534
	for _, p := range []string{base, filepath.Dir(base)} { // the test's own temporary dirs
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(base, "store.test")
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		if err := os.Chown(filepath.Join(dir, e.Name()), nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(db, 0o400); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestReadOnlyDatabaseChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), readOnlyDirEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if !strings.Contains(string(out), "--- ") {
		t.Fatalf("the child as uid %d did not run the check: %v\n%s", nobody, err, out)
	}
	if err != nil {
		t.Errorf("as uid %d, owner of %s (mode 0400):\n%s", nobody, db, out)
	}
}

// TestReadOnlyDatabaseChild is TestReadOnlyDatabaseOfItsOwnUserIsMadeWritable's child.
func TestReadOnlyDatabaseChild(t *testing.T) {
	dir := os.Getenv(readOnlyDirEnv)
	if dir == "" {
		t.Skip("run by TestReadOnlyDatabaseOfItsOwnUserIsMadeWritable, as another user")
	}
	if msg := openReadOnlyOutcome(dir); msg != "" {
		t.Error(msg)
	}
}

// openReadOnlyOutcome opens dir as a write command and as a read command would, and says what
// went wrong ("" when both opened it and read its event, the file made 0600).
func openReadOnlyOutcome(dir string) string {
	var msgs []string
	for _, tc := range []struct {
		what string
		opts []Option
	}{{"Open", nil}, {"Open ForReading (volume status)", []Option{ForReading()}}} {
		if err := os.Chmod(filepath.Join(dir, FileName), 0o400); err != nil {
			return err.Error()
		}
		s, err := Open(context.Background(), dir, tc.opts...)
		if err != nil {
			msgs = append(msgs, fmt.Sprintf("%s of a state whose database is its own user's, mode 0400: %v; want it opened, made 0600", tc.what, err))
			continue
		}
		var n int
		err = s.View(context.Background(), func(tx *Tx) (err error) { n, err = tx.Events().Logged(); return err })
		s.Close()
		fi, serr := os.Stat(filepath.Join(dir, FileName))
		switch {
		case err != nil || n != 1:
			msgs = append(msgs, fmt.Sprintf("%s: read %d events, %v; want the one kept", tc.what, n, err))
		case serr != nil || fi.Mode().Perm() != 0o600:
			msgs = append(msgs, fmt.Sprintf("%s: the database's mode after the open is %v (%v); want 0600", tc.what, fi.Mode().Perm(), serr))
		}
	}
	return strings.Join(msgs, "\n")
}
