package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The open lock's file, volctl.db-lock, removed by hand while an older volctl (an agent, a
// dashboard) has the database open and holds its shared flock on that file: a "-lock" file is
// what people remove when something seems stuck, as the engine's lock files are (chaos21,
// lockedAtPath), and the -wal and -shm are (checkWALGone, checkSHMGone). The newer volctl's Open
// then makes a new volctl.db-lock, takes it shared, converts it to exclusive (nobody holds the
// new inode) and migrates the schema under the running older process, which goes on writing with
// its statements into the new schema: exactly what the open lock exists to prevent
// (docs/architecture.md, State: "a database is never migrated under a running volctl"). Nothing
// checks that the file it locked is the one every other open locked. Correct: a migration does
// not run while another process has the database open, whatever became of the lock file; the
// other process can still be seen (SQLite's read lock on the -shm's dead-man byte, which
// walgone.go already reads, or /proc/locks), so the open waits and then refuses with ErrInUse
// naming the older process, and the database stays at its version.
// Found by helper review80 (locks).
func TestMigrationDoesNotRunUnderAnOlderVolctlWhoseOpenLockFileWasRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	older, db, lock := olderWithItsLockRemoved(t, dir, dir)
	s, err := Open(context.Background(), dir, WithBusyTimeout(300*time.Millisecond))
	if err == nil {
		s.Close()
		t.Fatalf("Open migrated the database to version %d while an older volctl (pid %d) had it open at version %d "+
			"(its open lock's file %s had been removed): want the migration refused, ErrInUse naming the older process",
			userVersion(t, db), older.Process.Pid, SchemaVersion()-1, lock)
	}
	if pid := "pid " + strconv.Itoa(older.Process.Pid); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), pid) {
		t.Errorf("Open under an older process whose lock file was removed: err = %v; want ErrInUse naming %s", err, pid)
	}
	if got := userVersion(t, db); got != SchemaVersion()-1 {
		t.Errorf("version after the refused migration = %d, want %d", got, SchemaVersion()-1)
	}
}

// olderWithItsLockRemoved starts an older volctl with the state at dir open (startOlderProcess)
// and removes its open lock's file; the database is read through real, the state dir's path
// with its symlinks resolved. It returns the older process, a raw handle on the database, and
// the lock file's path.
func olderWithItsLockRemoved(t *testing.T, dir, real string) (*exec.Cmd, *sql.DB, string) {
	t.Helper()
	older, _ := startOlderProcess(t, dir)
	db := rawDB(t, filepath.Join(real, FileName))
	if got := userVersion(t, db); got != SchemaVersion()-1 {
		t.Fatalf("precondition: the older process's database is at version %d, want %d", got, SchemaVersion()-1)
	}
	lock := filepath.Join(dir, FileName+lockSuffix)
	if err := os.Remove(lock); err != nil {
		t.Fatalf("precondition: removing the open lock's file: %v", err)
	}
	return older, db, lock
}
