package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMigrationDoesNotRunUnderAnOlderVolctlThatOpenedTheStateDirThroughABindMount: an older
// volctl (an agent in a container, a systemd unit with BindPaths=, anything whose mount
// namespace reaches the state dir by another path) has the database open through a bind mount
// of the state dir, and its volctl.db-lock is removed by hand. Store.openers now matches the
// removed lock file only by this Open's own path of it (as given, or with its symlinks resolved),
// while /proc names the holder's descriptor by the path its mount reaches it by
// ("/…/bind/volctl.db-lock (deleted)"), as openers' own comment says: no holder is found, and
// the newer volctl migrates the schema under the running older one (before the change, the base
// name matched and it refused). Correct: a process holding this database's -shm lock and a
// removed lock file that is this state dir's (the same file, whatever path /proc shows it by:
// compare the removed file's device and inode, or its name as before) is waited for, and the
// migration refused with ErrInUse naming it, the database left at its version.
// Found by helper review81 (ownd).
func TestMigrationDoesNotRunUnderAnOlderVolctlThatOpenedTheStateDirThroughABindMount(t *testing.T) {
	base := t.TempDir()
	real, bind := filepath.Join(base, "real"), filepath.Join(base, "bind")
	for _, d := range []string{real, bind} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(real, bind, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("precondition: bind-mounting the state dir: %v", err)
	}
	// Registered first, so run last: after the older process has been waited for.
	t.Cleanup(func() {
		if err := unix.Unmount(bind, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", bind, err)
		}
	})
	older, db, lock := olderWithItsLockRemoved(t, bind, real)
	s, err := Open(context.Background(), real, WithBusyTimeout(300*time.Millisecond))
	if err == nil {
		s.Close()
		t.Fatalf("Open of %s migrated the database to version %d while an older volctl (pid %d), which opened it through the bind mount %s, had it open at version %d "+
			"(its open lock's file %s removed): want the migration refused, ErrInUse naming the older process",
			real, userVersion(t, db), older.Process.Pid, bind, SchemaVersion()-1, lock)
	}
	if pid := "pid " + strconv.Itoa(older.Process.Pid); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), pid) {
		t.Errorf("Open under an older process that opened the state through a bind mount, its lock file removed: err = %v; want ErrInUse naming %s", err, pid)
	}
	if got := userVersion(t, db); got != SchemaVersion()-1 {
		t.Errorf("version after the refused migration = %d, want %d", got, SchemaVersion()-1)
	}
}
