package store

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/procfs/procfstest"
)

// lockThenEndFirstThreadEnv, set to a directory, makes the test binary a process that holds a
// flock on lock in that directory, then ends its first thread alone (a C program whose main
// calls pthread_exit), its other threads running on until its stdin closes.
const lockThenEndFirstThreadEnv = "VOLCTL_TEST_LOCK_THEN_END_FIRST_THREAD"

// init acts as lockThenEndFirstThreadEnv says (procfstest.Child).
func init() {
	procfstest.Child(lockThenEndFirstThreadEnv, func(dir string) (string, any) {
		f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			os.Exit(1)
		}
		return filepath.Join(dir, "sock"), f
	})
}

// A lock's holder whose first thread has exited (a C program whose main called pthread_exit)
// is named by its command line, and seen stopped once SIGSTOP stops it, as any other holder
// is: read through its first thread, /proc shows a zombie with no command line, and a stopped
// holder was never seen stopped, so a command waited on it with no word of the stop and no
// end (the lock waits give up on a holder stopped for 10 s).
func TestLockHolderWhoseFirstThreadExited(t *testing.T) {
	dir := t.TempDir()
	pid := procfstest.Start(t, lockThenEndFirstThreadEnv, dir, nil)
	fi, err := os.Stat(filepath.Join(dir, "lock"))
	if err != nil {
		t.Fatal(err)
	}
	hs := FlockHolders(fi, "")
	if len(hs) != 1 || hs[0].Pid != pid {
		t.Fatalf("holders = %+v, want pid %d", hs, pid)
	}
	if want := filepath.Base(os.Args[0]); !strings.Contains(hs[0].Command, want) {
		t.Errorf("holder's command = %q, want it to name %q", hs[0].Command, want)
	}
	if hs[0].Stopped {
		t.Errorf("holder = %+v, seen stopped before it was", hs[0])
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		hs = FlockHolders(fi, "")
		if len(hs) == 1 && hs[0].Stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("holders after SIGSTOP = %+v, want pid %d seen stopped", hs, pid)
		}
	}
}
