package testproc

import (
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// flockWait bounds LockExclusive's wait: far past any fork's copy of a descriptor, and short of
// the package's -timeout, so a lock still held fails the test, naming the file.
const flockWait = 30 * time.Second

// LockExclusive takes f's flock exclusive (as another volctl migrating the state holds the
// state's open lock) once the locks on its file closed in this process are gone, and fails
// the test if it cannot within flockWait. A lock closed by this process is not gone at once
// when a process was being started meanwhile: between its fork and its exec, the child holds a
// copy of every descriptor, close-on-exec ones included, and a flock belongs to the open file,
// held until the last copy closes. Test binaries start processes from parallel tests all the
// time (plugins, children of their own), so a LOCK_NB taken just after a Close failed now and
// then ("resource temporarily unavailable": TestReaderDoesNotWaitForAMigration, one run in
// six under load with a fork loop beside it); volctl's own waits for the lock (the migrating
// open's, up to its busy timeout) are not troubled by such a copy.
func LockExclusive(t testing.TB, f *os.File) {
	t.Helper()
	deadline := time.Now().Add(flockWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return
		case !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR):
			t.Fatalf("taking the lock on %s exclusive: %v", f.Name(), err)
		case time.Now().After(deadline):
			t.Fatalf("taking the lock on %s exclusive: still held by another open of it after %s", f.Name(), flockWait)
		}
		// Polled, not waited for in a goroutine of its own: a go statement here would be the one
		// a panic in it could not report (internal/crash, TestEveryGoroutineIsStartedByGo), and
		// the copy held across a fork lasts only until that child's exec.
		time.Sleep(5 * time.Millisecond)
	}
}
