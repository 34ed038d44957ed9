package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// A quickstart killed before its cleanup ran (SIGKILL, the OOM killer: its plugin runs in its
// own process and died with it) left its directory under $TMPDIR for good: the volume's bind
// mounts, the plugin's root and the state dir, which nothing removed and the next quickstart
// did not know of. The next quickstart now removes such a directory, its mounts unmounted
// first, and says so; one whose quickstart is running (its lock held), one kept with --keep and
// anything else named like one are left (sweepQuickstarts). Round 62's note, left item.
func TestQuickstartRemovesWhatAKilledQuickstartLeft(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	// Killed: marked, its lock gone with its process, a bind still mounted in it.
	killed := filepath.Join(parent, "volctl-quickstart-killed")
	source, target := filepath.Join(killed, "hostpath", "v"), filepath.Join(killed, "state", "publish", "web-0", "demo")
	for _, d := range []string{source, target} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(killed, quickstartMark), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Running: another quickstart holds its lock.
	running := filepath.Join(parent, "volctl-quickstart-running")
	if err := os.Mkdir(running, 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := markQuickstart(running)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// Kept (--keep): no mark. And a directory of the user's that only shares the name.
	kept, other := filepath.Join(parent, "volctl-quickstart-kept"), filepath.Join(parent, "volctl-quickstart-mine")
	for _, d := range []string{kept, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	ios, _, _, errOut := iostreams.Test()
	if err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent}); err != nil {
		t.Fatalf("quickstart: %v\nstderr: %s", err, errOut)
	}
	if _, err := os.Lstat(killed); !os.IsNotExist(err) {
		t.Errorf("%s, left by a killed quickstart with a bind mounted in it, is still there (mounted: %v); stderr: %s",
			killed, hostpathtest.Mounted(t, target), errOut)
	}
	if want := "Removed " + killed + ", left by a quickstart killed before it cleaned up"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr = %q, want it to say %q", errOut, want)
	}
	for _, d := range []string{running, kept, other} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s was removed (%v): only a marked quickstart directory whose lock no process holds is one a killed quickstart left", d, err)
		}
	}
}

// A kept directory (--keep) is not removed by the next quickstart: its mark goes when it is
// kept, and the next one finds a directory it does not know.
func TestQuickstartKeepsAKeptQuickstartsDirectory(t *testing.T) {
	hostpathtest.RequireMount(t)
	parent := hostpathtest.MountDir(t)
	ios, out, _, errOut := iostreams.Test()
	if err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios, TempDir: parent, Keep: true}); err != nil {
		t.Fatalf("quickstart --keep: %v\nstderr: %s", err, errOut)
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, "volctl-quickstart-*"))
	if len(dirs) != 1 {
		t.Fatalf("quickstart --keep left %v, want one directory\nstdout: %s", dirs, out)
	}
	ios2, _, _, errOut2 := iostreams.Test()
	if err := quickstartRun(context.Background(), &QuickstartOptions{IO: ios2, TempDir: parent}); err != nil {
		t.Fatalf("quickstart after a kept one: %v\nstderr: %s", err, errOut2)
	}
	if _, err := os.Lstat(dirs[0]); err != nil {
		t.Errorf("the directory quickstart --keep kept, %s, was removed by the next quickstart: %v (stderr: %s)", dirs[0], err, errOut2)
	}
}
