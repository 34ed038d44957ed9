package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A mark that is a FIFO (anyone can make one in a volctl-quickstart-* directory of their own
// under a shared /tmp) was opened O_RDONLY, which blocks until a writer opens it: every
// quickstart of every user hung before it started, silently. Found by helper review63 (own).
func TestQuickstartSweepDoesNotHangOnAFIFOMark(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "volctl-quickstart-fifo")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, quickstartMark)
	if err := syscall.Mkfifo(mark, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var errOut bytes.Buffer
	go func() {
		defer close(done)
		sweepQuickstarts(parent, &errOut)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		// Let the sweep go: a writer opening the FIFO unblocks its open.
		if w, err := os.OpenFile(mark, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("sweepQuickstarts hung for 5s on %s, a FIFO named as a quickstart's mark: every quickstart would hang before it starts", mark)
	}
}

// sweepQuickstarts promises a directory "is removed only once nothing is mounted under it", but
// it ran RemoveAll right after hostpath.UnmountAll, which read the mount table once and passed
// over EINVAL ("not a mount point"), what unmounting a mount hidden by another mounted over its
// parent answers: the hidden mount was revealed once the upper one was detached, and RemoveAll
// then descended into it and deleted the files of whatever was mounted there (here a directory
// outside the quickstart's). UnmountAll now reads the table again until nothing is mounted
// below the directory; the directory then goes, the data mounted in it kept. Found by helper
// review63 (own).
func TestQuickstartSweepDoesNotDeleteThroughAHiddenMount(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	killed := filepath.Join(parent, "volctl-quickstart-killed")
	ext := filepath.Join(parent, "elsewhere") // data outside the quickstart's directory
	upper := filepath.Join(parent, "upper")   // what is mounted over killed/a
	for _, d := range []string{filepath.Join(killed, "a", "b"), ext, filepath.Join(upper, "b")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	precious := filepath.Join(ext, "precious")
	if err := os.WriteFile(precious, []byte("data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(ext, filepath.Join(killed, "a", "b"), "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(upper, filepath.Join(killed, "a"), "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, quickstartMark), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	sweepQuickstarts(parent, &errOut)
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("%s, in a directory bind-mounted inside a killed quickstart's directory, was deleted by the sweep (%v): "+
			"the sweep removed the directory with something still mounted under it; stderr: %s", precious, err, errOut.String())
	}
	if _, err := os.Lstat(killed); !os.IsNotExist(err) || !strings.Contains(errOut.String(), "Removed "+killed) {
		t.Errorf("%s is left (%v), every mount under it unmountable; stderr: %s", killed, err, errOut.String())
	}
}

// quickstart runs as root, and its sweep acts on directories in a /tmp every user writes to: a
// directory another user made there (they may swap it for a link to anything between the
// sweep's check and its unmount, which root would then do under the link's target: "/" as
// well), one another user may write, and any in a directory where every user may rename
// entries, are not touched, marked and unlocked as they may be (sweepable). Found by helper
// review63 (own), who swapped the directory for a symlink while the sweep waited on a FIFO mark.
func TestQuickstartSweepTouchesOnlyItsOwn(t *testing.T) {
	parent := t.TempDir()
	marked := func(name string, mode os.FileMode, uid int) string {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, quickstartMark), []byte("1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		if uid != os.Geteuid() {
			if os.Geteuid() != 0 {
				t.Skip("making a directory of another user takes root")
			}
			if err := os.Chown(dir, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	theirs := marked("volctl-quickstart-theirs", 0o700, 65534)
	open := marked("volctl-quickstart-open", 0o777, os.Geteuid())
	var errOut bytes.Buffer
	sweepQuickstarts(parent, &errOut)
	for _, d := range []string{theirs, open} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was swept (%v): not a directory this user made as quickstart makes its own; stderr: %s", d, err, errOut.String())
		}
	}
	// In a directory every user may rename entries of (world-writable, not sticky), not even
	// this user's own is touched.
	mine := marked("volctl-quickstart-mine", 0o700, os.Geteuid())
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	sweepQuickstarts(parent, &errOut)
	if _, err := os.Lstat(mine); err != nil {
		t.Errorf("%s, in a world-writable directory without the sticky bit, was swept (%v)", mine, err)
	}
	// Sticky, as /tmp is: this user's own is.
	if err := os.Chmod(parent, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	sweepQuickstarts(parent, &errOut)
	if _, err := os.Lstat(mine); !os.IsNotExist(err) {
		t.Errorf("%s, this user's own, marked and unlocked, in a sticky directory, was not swept (%v); stderr: %s", mine, err, errOut.String())
	}
}
