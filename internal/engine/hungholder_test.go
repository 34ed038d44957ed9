package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/procfs/procfstest"
	"github.com/volctl/volctl/internal/store"
)

// lockThenHangEnv, set to "LOCK\nPATH", makes the test binary a process that takes a flock on
// the file LOCK, prints "ready", and stats PATH, which on a FUSE file system that does not
// answer blocks it in the kernel (state D) until the connection is aborted.
const lockThenHangEnv = "VOLCTL_TEST_LOCK_THEN_HANG"

func init() {
	arg := os.Getenv(lockThenHangEnv)
	if arg == "" {
		return
	}
	lock, hang, _ := strings.Cut(arg, "\n")
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = os.Stat(hang)
	os.Exit(0)
}

// hungFUSE mounts a FUSE file system whose daemon never answers (the test holds /dev/fuse and
// reads nothing from it, as a daemon SIGSTOPped before its INIT reply would) and returns a
// path on it: whatever looks it up sleeps in the kernel until the test's cleanup aborts the
// connection and unmounts it.
func hungFUSE(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a FUSE file system")
	}
	fuse, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("needs /dev/fuse to make a file system that does not answer: %v", err)
	}
	dir := t.TempDir()
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fuse.Fd())
	if err := unix.Mount("volctl-test-hung", dir, "fuse", 0, opts); err != nil {
		fuse.Close()
		t.Skipf("cannot mount a FUSE file system at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		fuse.Close() // aborts the connection: the sleepers get ENOTCONN
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	})
	return filepath.Join(dir, "x")
}

// A volctl blocked in the kernel while it holds a volume's lock (an unmount or a stat on a hard
// NFS mount whose server is gone, a FUSE file system whose daemon is stopped) holds it until
// that answers, maybe never. /proc showed it sleeping (S: a Go process's first thread idles in
// a futex while another is the one blocked), and a command waiting for the lock waited as
// for one running, naming it without its state, while its context lasted: in a script, for
// ever. Now the wait names the holder as blocked in the kernel, with the function it sleeps
// in, and gives up once it has been in that one sleep for stoppedWait, saying what to do.
func TestLockHeldByAProcessBlockedInTheKernelIsNamedAndNotWaitedForEver(t *testing.T) {
	hang := hungFUSE(t)
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.e.locks.stoppedWait = 2 * time.Second
	lock := filepath.Join(h.e.locks.dir, "volume-v.lock")

	pid := procfstest.StartReady(t, lockThenHangEnv, lock+"\n"+hang)
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if hs := store.FlockHolders(fi, ""); len(hs) == 1 && hs[0].Pid == pid && hs[0].Blocked != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("holders of %s: %+v; want pid %d seen blocked in the kernel on %s", lock, store.FlockHolders(fi, ""), pid, hang)
		}
	}

	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	_, err = h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || ctx.Err() != nil {
		t.Fatalf("claim behind a holder of the volume's lock blocked in the kernel: %v; want it to give up before its context ends", err)
	}
	for _, want := range []string{
		fmt.Sprintf(`the lock on volume "v" is held by pid %d: %s, blocked in the kernel (uninterruptible sleep in fuse_`, pid, filepath.Base(os.Args[0])),
		"FUSE daemon", fmt.Sprintf("kill -KILL %d", pid), "volctl reconcile"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("claim behind a holder blocked in the kernel: %v; want it to say %q", err, want)
		}
	}
	if got := h.liveClaims("v"); len(got) != 1 || got[0].State != store.ClaimTaken {
		t.Fatalf("the claim that gave up left %+v; want it left taken", got)
	}
}
