package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateDirOthersCouldReplaceIsRefused: a state dir is only as safe as the directories on
// the way to it. One whose parent another user owns, or may write (not sticky, as /tmp is),
// or reached through a symlink another user owns, can be swapped by that user for one of
// theirs while a volctl (often root, an agent for days) goes on using it by its path: their
// staging and publish directories, lock files and database. volctl running as root took
// such a state dir and made it 0700 as if that settled it; Open refuses it, naming the
// directory or link and its owner or mode, and makes nothing there.
func TestStateDirOthersCouldReplaceIsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	const other = 4242
	tests := []struct {
		name  string
		setup func(t *testing.T, root string) (stateDir string)
		want  string // in the error; "" when Open must succeed
	}{
		{"parent owned by another user", func(t *testing.T, root string) string {
			parent := mkdir(t, root, "theirs", 0o755, other)
			return filepath.Join(parent, "state")
		}, "theirs, which is owned by uid 4242"},
		{"parent owned by another user, state dir made already", func(t *testing.T, root string) string {
			parent := mkdir(t, root, "theirs", 0o755, other)
			return mkdir(t, parent, "state", 0o700, 0)
		}, "theirs, which is owned by uid 4242"},
		{"parent others may write", func(t *testing.T, root string) string {
			return filepath.Join(mkdir(t, root, "open", 0o777, 0), "state")
		}, "open, which is writable by other users (mode 0777)"},
		{"grandparent a group may write", func(t *testing.T, root string) string {
			shared := mkdir(t, root, "shared", 0o775, 0)
			if err := os.Chown(shared, 0, other); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(mkdir(t, shared, "mine", 0o755, 0), "state")
		}, "shared, which is writable by other users (mode 0775)"},
		{"symlink another user owns, in a sticky dir", func(t *testing.T, root string) string {
			tmp := mkdir(t, root, "tmp", os.ModeSticky|0o777, 0)
			target := mkdir(t, root, "real", 0o700, 0)
			link := filepath.Join(tmp, "state")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, other, other); err != nil {
				t.Fatal(err)
			}
			return link
		}, "symlink %ROOT%/tmp/state, which is owned by uid 4242"},
		{"the target's parent another user owns", func(t *testing.T, root string) string {
			target := filepath.Join(mkdir(t, root, "theirs", 0o755, other), "real")
			mkdir(t, filepath.Dir(target), "real", 0o700, 0)
			link := filepath.Join(root, "state")
			if err := os.Symlink("theirs/real", link); err != nil {
				t.Fatal(err)
			}
			return link
		}, "theirs, which is owned by uid 4242"},
		// What stays accepted: a sticky dir such as /tmp, a symlink of this user's into a safe dir.
		{"in a sticky dir", func(t *testing.T, root string) string {
			return filepath.Join(mkdir(t, root, "tmp", os.ModeSticky|0o777, 0), "state")
		}, ""},
		{"own symlink in a sticky dir", func(t *testing.T, root string) string {
			tmp := mkdir(t, root, "tmp", os.ModeSticky|0o777, 0)
			mkdir(t, root, "real", 0o700, 0)
			link := filepath.Join(tmp, "state")
			if err := os.Symlink("../real", link); err != nil {
				t.Fatal(err)
			}
			return link
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := tt.setup(t, root)
			_, existed := os.Lstat(filepath.Join(dir, FileName))
			s, err := Open(context.Background(), dir)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("Open of %s succeeded, want it refused", dir)
			}
			want := strings.ReplaceAll(tt.want, "%ROOT%", root)
			if !strings.Contains(err.Error(), want) || !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "use another --state-dir") {
				t.Errorf("Open: %v\nwant it to say %q and what to do, and match ErrNotOwned", err, want)
			}
			if _, err := os.Lstat(filepath.Join(dir, FileName)); existed != nil && err == nil {
				t.Errorf("a database was made in the refused state dir %s", dir)
			}
		})
	}
}

// mkdir makes parent/name with mode and owner, and returns its path.
func mkdir(t *testing.T, parent, name string, mode os.FileMode, owner int) string {
	t.Helper()
	p := filepath.Join(parent, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	// Chmod: Mkdir's mode passes the umask, and sticky is not a Mkdir bit on every system.
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, owner, owner); err != nil {
		t.Fatal(err)
	}
	return p
}
