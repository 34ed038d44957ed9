package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/backoff"
	"github.com/volctl/volctl/internal/pathtrust"
)

// A process that has the store open holds a shared flock on <state>/volctl.db-lock for as long
// as it has it open (the kernel drops it when the process dies); a migration needs it exclusive.
// An older volctl still running (an agent, a dashboard) keeps the statements of its schema, which
// SQLite re-prepares against the new one and runs: rows written without what the new schema
// adds, read back by the new volctl as if they had it. So a database is never migrated under a
// running volctl: the migrating open waits for them, up to the busy timeout, then refuses,
// naming their pids. It costs an open and a flock per Open and nothing per transaction.
// Processes of volctl versions before this lock hold none: they are not waited for. One whose
// lock file was removed or replaced under it is seen by SQLite's own lock on the -shm and the
// removed file it holds open, and waited for too (Store.openers).

// lockSuffix names the open lock beside the database: volctl.db-lock.
const lockSuffix = "-lock"

// lockFileFlags open the lock file read-only, never through a symlink, and without blocking
// (a named pipe put in its place cannot hold Open in open(2)).
const lockFileFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// openLockFile opens (creating it 0600) the lock file of the database at path: never through a
// symlink, and without blocking, so a named pipe put in its place cannot hold Open in open(2).
func openLockFile(path string) (*os.File, error) {
	p := path + lockSuffix
	f, err := os.OpenFile(p, os.O_CREATE|lockFileFlags, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("open state: lock file %s is a symlink, not a regular file as volctl makes it: remove it, and volctl makes it again", p)
		}
		return nil, fmt.Errorf("open state: lock file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("lock file %s is %s, not a regular file as volctl makes it: remove it, and volctl makes it again", p, pathtrust.FileKind(fi.Mode()))
	}
	if err == nil {
		err = checkOwner(fi, "state lock file", p, "keep volctl from upgrading its state")
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open state: %w", err)
	}
	return f, nil
}

// flockFile takes or converts the flock on f without waiting (how is unix.LOCK_SH or
// unix.LOCK_EX); ok is false when another open file holds a conflicting one. A variable so tests
// can stand in a file system whose flock fails. Converting is not atomic (flock(2)): a failed
// conversion to exclusive leaves no lock held.
var flockFile = func(f *os.File, how int) (ok bool, err error) {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		return false, err
	}
}

// unsupportedLock says a flock error means the file system has no flock (some network and FUSE
// file systems): the store opens without its open lock there, as volctl did before it had one.
func unsupportedLock(err error) bool {
	return errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS)
}

// lockShared takes the open lock shared, waiting while another volctl migrates the database
// (holds it exclusive), until deadline or the context ends. held is false on a file system
// without flock, and when held, called once the lock is found held exclusive before the wait,
// returns true: the caller goes on without the lock (a reader, readMigrating).
func (s *Store) lockShared(ctx context.Context, deadline time.Time, whenHeld func() (bool, error)) (held bool, err error) {
	waits := backoff.New(time.Millisecond, 100*time.Millisecond)
	watch := s.openLockWatch()
	for {
		ok, err := flockFile(s.lock, unix.LOCK_SH)
		if err != nil {
			if unsupportedLock(err) {
				return false, nil
			}
			return false, fmt.Errorf("open state %s: lock %s: %w", s.path, s.lock.Name(), err)
		}
		if ok {
			return true, nil
		}
		if whenHeld != nil {
			if without, err := whenHeld(); without || err != nil {
				return false, err
			}
			whenHeld = nil
		}
		// A migration stopped by a signal (^Z) keeps the lock until resumed or ended: said so,
		// with how, once it has been stopped for the stopped wait (or at the deadline, stopped),
		// as the write lock's wait says it; before, the wait ran its whole bound and said the holder "has been migrating"
		// (TestOpenBehindAStoppedMigrationSaysHowToResumeIt).
		if d := watch.Look(time.Now()); d > 0 && (d >= s.stoppedWait || time.Now().After(deadline)) {
			return false, fmt.Errorf("open state %s: %w", s.path, &busyError{why: "the open lock, which a volctl migrating the state database takes, is " + StuckHolders(watch.Holders(), d)})
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("open state %s: %w", s.path, &busyError{why: "another volctl" + holders(s.lock) + " has been migrating its schema for " + s.busyTimeout.String()})
		}
		if err := sleepCtx(ctx, backoff.Jitter(waits.Next())); err != nil {
			return false, fmt.Errorf("open state %s: interrupted while waiting for another volctl to migrate the state database: %w", s.path, err)
		}
	}
}

// openLockWatch watches who holds the open lock, for a wait on it that gives up once every
// holder is stuck (stopped by a signal, or blocked in the kernel).
func (s *Store) openLockWatch() *HolderWatch {
	return NewHolderWatch(func() []LockHolder {
		fi, err := s.lock.Stat()
		if err != nil {
			return nil
		}
		return FlockHolders(fi, filepath.Dir(s.lock.Name()))
	})
}

// holders is " (pid 12: volctl agent; pid 34: volctl tui)": the processes other than this one
// that hold a flock on f (FlockHolders), or "" when none can be named.
func holders(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if hs := FlockHolders(fi, filepath.Dir(f.Name())); len(hs) > 0 {
		return " (" + LockHolders(hs) + ")"
	}
	return ""
}

// checkLockHolds refuses a file system whose flock is a no-op (some 9p and FUSE servers answer
// every lock request yes): with the open lock held shared, a second open of its file must not
// get it exclusive. volctl's locks between processes (the engine's volume and controller locks
// are flocks too) would not hold there, and two commands could act on one volume at once. It
// costs an open, a flock and a close per Open.
func (s *Store) checkLockHolds() error {
	f, err := os.OpenFile(s.lock.Name(), lockFileFlags, 0)
	if err != nil {
		return fmt.Errorf("open state %s: lock %s: %w", s.path, s.lock.Name(), err)
	}
	defer f.Close()
	if ok, err := flockFile(f, unix.LOCK_EX); err != nil || !ok {
		return nil
	}
	return fmt.Errorf("open state %s: flock does not lock on this file system: a second open of %s took it exclusive while this one held it shared, so volctl's locks between processes would not hold and two commands could act on one volume at once; put the state dir on a local file system",
		s.path, s.lock.Name())
}

// readMigrating is lockShared's whenHeld for a store opened for reading (ForReading) while
// another volctl migrates the database: when the database's last committed version is this
// volctl's, the store reads that state without the open lock, as WAL readers need no writer:
// a migration is one write transaction, so each read sees the state whole, before it or after
// it. Waiting for the lock, `volctl volume status` hung up to the busy timeout (30 s) behind a
// newer volctl's migration, and behind one stopped mid-way (^Z) gave up only then
// (TestReaderDoesNotWaitForAMigration). The store then writes nothing: every write's error
// (roErr, CheckWritable) says who migrates, and matches ErrBusy, as a write a reader makes on
// the side (TryUpdateProgress) skips. A database older than this volctl is still waited for: it
// is this volctl's to migrate once the other is done, and reads need its schema.
func (s *Store) readMigrating(ctx context.Context, versions *pool, target int) (bool, error) {
	version, appID, err := s.readVersion(ctx, versions)
	if err != nil || s.checkVersion(version, appID, nil) != nil || version != target {
		return false, nil // waited for as before, and checked again after
	}
	who := "another volctl" + holders(s.lock)
	s.migrating = &busyError{why: who + " is migrating the state database to a newer schema: this command read the state as last committed and changes nothing meanwhile; run it again once that volctl is done"}
	s.log.Warn(who + " is migrating the state database to a newer schema: shown as last committed before it")
	return true, nil
}
