package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// readOnlyBindOf bind-mounts dir read-only at a new directory, unmounted when the test ends;
// where mounting is not allowed the test fails, saying so.
func readOnlyBindOf(t *testing.T, dir string) string {
	t.Helper()
	ro := t.TempDir()
	if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("this test needs root with CAP_SYS_ADMIN to bind-mount a state dir read-only: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(ro, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", ro, err)
		}
	})
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("this test needs root with CAP_SYS_ADMIN to remount a bind read-only: %v", err)
	}
	return ro
}

// TestDatabaseNotVolctlsOnAReadOnlyFileSystemIsNamedForWhatItIs: on a read-only file system
// (a backup mounted read-only, a read-only bind) Open refused another program's SQLite file,
// and a volctl state whose schema version was lost (reads 0 while it holds volctl's tables),
// as "at schema version 0, older than this volctl's N, and cannot be migrated there: read it
// with the volctl that wrote it": no volctl wrote either, and the user is sent to look for an
// older volctl. openReadOnly checks the version without the schema's names (checkVersion(...,
// nil)), which refuseForeign needs to tell these apart. Open's doc says "another program's
// SQLite file is refused rather than converted", with "not a volctl state database" on the
// writable path, and docs/architecture.md that a state "marked volctl's whose version reads 0
// while it holds tables lost its version, and is refused saying so". Found by helper review73.
func TestDatabaseNotVolctlsOnAReadOnlyFileSystemIsNamedForWhatItIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		make func(t *testing.T) string // the state dir
		want string
	}{
		{"another program's file", func(t *testing.T) string {
			dir := t.TempDir()
			db := rawDB(t, filepath.Join(dir, FileName))
			if _, err := db.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)"); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "not a volctl state database"},
		{"volctl's state with its version lost", func(t *testing.T) string {
			dir := stateWithPluginP(t)
			db := rawDB(t, filepath.Join(dir, FileName))
			if _, err := db.Exec("PRAGMA user_version = 0"); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "schema version reads 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.make(t)
			// The writable path says what the file is.
			if s, err := Open(ctx, dir); err == nil {
				s.Close()
				t.Fatalf("Open of %s succeeded on the writable path", tc.name)
			} else if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open on the writable path: %v; want it to say %q", err, tc.want)
			}
			ro := readOnlyBindOf(t, dir)
			s, err := Open(ctx, ro)
			if err == nil {
				s.Close()
				t.Fatalf("Open of %s on a read-only file system succeeded", tc.name)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "read it with the volctl that wrote it") {
				t.Errorf("Open of %s on a read-only file system: %v\nwant it to say %q, as on the writable path, not to send the user to an older volctl", tc.name, err, tc.want)
			}
		})
	}
}
