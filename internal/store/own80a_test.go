package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMigrationThroughASymlinkedStateDirDoesNotRunUnderAnOlderVolctlWhoseOpenLockFileWasRemoved:
// the state of TestMigrationDoesNotRunUnderAnOlderVolctlWhoseOpenLockFileWasRemoved (an older
// volctl has the database open, and its volctl.db-lock was removed by hand), with the state dir
// reached through a symlink, as /var/lib/volctl often is (docs/architecture.md: engine.Open
// resolves such a dir for mount paths, but hands store.Open the path as given). Store.openers
// looks for a process holding open a file /proc names exactly s.lock.Name()+" (deleted)"; the
// kernel names an open file by its real path, so through the symlink the name never matches,
// no opener is found, and the newer volctl migrates the schema under the running older one,
// which goes on writing with its statements: what the open lock and today's openers check
// exist to prevent. Correct: the deleted lock file is recognised whatever path the state dir
// was given by (compare the real path, or the file's base name, since holding the -shm's
// dead-man byte already ties the process to this database): the open waits, then refuses with
// ErrInUse naming the older process, and the database stays at its version.
// Found by helper review80 (own80a), in this round's own change.
func TestMigrationThroughASymlinkedStateDirDoesNotRunUnderAnOlderVolctlWhoseOpenLockFileWasRemoved(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "state") // what --state-dir names: a symlink to real
	if err := os.Symlink(real, dir); err != nil {
		t.Fatal(err)
	}
	older, db, lock := olderWithItsLockRemoved(t, dir, real)
	s, err := Open(context.Background(), dir, WithBusyTimeout(300*time.Millisecond))
	if err == nil {
		s.Close()
		t.Fatalf("Open through the symlinked state dir %s migrated the database to version %d while an older volctl (pid %d) had it open at version %d "+
			"(its open lock's file %s had been removed): want the migration refused, ErrInUse naming the older process, as through the real path",
			dir, userVersion(t, db), older.Process.Pid, SchemaVersion()-1, lock)
	}
	if pid := "pid " + strconv.Itoa(older.Process.Pid); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), pid) {
		t.Errorf("Open through a symlinked state dir under an older process whose lock file was removed: err = %v; want ErrInUse naming %s", err, pid)
	}
	if got := userVersion(t, db); got != SchemaVersion()-1 {
		t.Errorf("version after the refused migration = %d, want %d", got, SchemaVersion()-1)
	}
}

// TestMigrationBehindAStoppedOlderVolctlWhoseOpenLockFileWasRemovedSaysHowToResumeIt: an older
// volctl has the database open and is stopped by a signal (^Z, SIGSTOP), and its
// volctl.db-lock was removed (a "-lock" file is what people remove when something seems stuck,
// a stopped process being such a thing). The newer volctl's migration finds it through
// Store.openers and refuses, but with the words of a running holder: "stop it (an agent, a
// dashboard) and run this again", advice that does nothing for a process stopped already,
// after waiting out the whole busy timeout. Through the open lock (the file not removed), the
// same stopped holder is named as stopped with how to resume or end it (`kill -CONT PID`,
// stuckOpenHolders; TestMigrationBehindAStoppedOlderVolctlSaysHowToResumeIt). Correct: the
// openers' wait watches its holders as the open lock's does (openLockWatch, stoppedWait) and
// its refusal says how to resume or end a stopped one.
// Found by helper review80 (own80a), in this round's own change.
func TestMigrationBehindAStoppedOlderVolctlWhoseOpenLockFileWasRemovedSaysHowToResumeIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	older, finish := startOlderProcess(t, dir)
	pid := older.Process.Pid
	// Registered after startOlderProcess's cleanup, so it runs first: resumed, the older
	// process can read its stdin's end and exit.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	if err := os.Remove(filepath.Join(dir, FileName+lockSuffix)); err != nil {
		t.Fatalf("precondition: removing the open lock's file: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pid)
	s, err := Open(context.Background(), dir, WithBusyTimeout(time.Second))
	if err == nil {
		s.Close()
		t.Fatalf("precondition: Open migrated the state while an older volctl (pid %d, stopped, its lock file removed) had it open", pid)
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) {
		t.Fatalf("precondition: Open behind a stopped older volctl whose lock file was removed: %v; want ErrInUse naming pid %d", err, pid)
	}
	if want := fmt.Sprintf("kill -CONT %d", pid); !strings.Contains(err.Error(), want) {
		t.Errorf("Open behind an older volctl stopped by a signal, its lock file removed: %v\nwant it to say how to resume it (%q) or end it, as the open lock's wait for the same stopped holder does; "+
			"\"stop it\" is no advice for a process that is stopped", err, want)
	}
	resumedThenMigrated(t, dir, pid, finish)
}
