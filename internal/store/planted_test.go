package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state dir other users could write (0777: made under umask 000, or chmod-ed by mistake)
// holding what another user planted in it (a locks or publish directory they own, which they
// keep writing through a working directory held open once the dir is made private) is refused,
// naming it, and left as it was; one holding only this user's files is adopted and made 0700.
// Needs root, to give a file to another user.
func TestOpenRefusesALooseStateDirHoldingWhatOthersPlanted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another user")
	}
	t.Parallel()
	const nobody = 65534
	for _, withDB := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "state")
		if withDB {
			s, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		} else if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if !withDB {
			// What marks it a state dir to adopt: a file named as the database's are.
			if err := os.WriteFile(filepath.Join(dir, FileName+"-journal"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(filepath.Join(dir, FileName+"-journal"), nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		publish := filepath.Join(dir, "publish")
		if err := os.Mkdir(publish, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(publish, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		s, err := Open(context.Background(), dir)
		if err == nil {
			s.Close()
			t.Fatalf("Open of a 0777 state dir holding another user's publish dir succeeded (database there: %v)", withDB)
		}
		if !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "publish (uid 65534)") || !strings.Contains(err.Error(), "state dir "+dir+" is writable by other users") {
			t.Errorf("Open (database there: %v): %v\nwant ErrNotOwned naming the state dir and publish (uid 65534)", withDB, err)
		}
		if got := perm(t, dir); got != 0o777 {
			t.Errorf("refused state dir's mode changed to %v", got)
		}
		// Removed, the dir is adopted.
		if err := os.Remove(publish); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, FileName+"-journal"))
		s, err = Open(context.Background(), dir)
		if err != nil {
			t.Fatalf("Open once the planted dir is gone: %v", err)
		}
		s.Close()
		if got := perm(t, dir); got != 0o700 {
			t.Errorf("adopted state dir's mode = %v, want 0700", got)
		}
	}
}
