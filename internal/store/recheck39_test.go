package store_test

// recheck39b: the agent lock's holders (store.FlockPids, agent38) on an overlay file system.

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// overlayAt mounts an overlay file system at a temp dir, its lower and upper layers on two
// tmpfs of their own (sameFS false: as a container's, when its image's layers and its writable
// one are on other file systems) or on one (sameFS true: Docker's overlay2), with file
// agent.lock in its lower layer; unmounted when the test ends. It skips where mounting is not
// allowed.
func overlayAt(t *testing.T, sameFS bool) string {
	t.Helper()
	d := t.TempDir()
	lowerFS, upperFS, m := filepath.Join(d, "lfs"), filepath.Join(d, "ufs"), filepath.Join(d, "m")
	for _, dir := range []string{lowerFS, upperFS, m} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mount := func(src, target, fstype, data string) {
		t.Helper()
		if err := unix.Mount(src, target, fstype, 0, data); err != nil {
			t.Skipf("mounting %s at %s is not allowed here: %v", fstype, target, err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", target, err)
			}
		})
	}
	mount("tmpfs", lowerFS, "tmpfs", "size=1m")
	if sameFS {
		upperFS = lowerFS
	} else {
		mount("tmpfs", upperFS, "tmpfs", "size=1m")
	}
	lower, upper, work := filepath.Join(lowerFS, "lower"), filepath.Join(upperFS, "upper"), filepath.Join(upperFS, "work")
	for _, dir := range []string{lower, upper, work} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(lower, "agent.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mount("overlay", m, "overlay", "lowerdir="+lower+",upperdir="+upper+",workdir="+work)
	return m
}

// The adversary: a state dir on an overlay file system whose layers are on other file systems
// than each other (a container's root, its image on one and its writable layer on another),
// where /proc/locks names a flock by the layer's device and stat names the overlay's file by
// another. An agent holding the agent lock there was not found among its holders, none and
// known: every supervision record it wrote read "gone" (AgentGone, no stop or restart) while
// it ran. The honest cases: on one file system (Docker's overlay2, a plain directory) the
// holder is found, as before.
func TestFlockPidsOnAnOverlay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		sameFS bool
	}{{"layers on two file systems", false}, {"layers on one file system", true}, {"no overlay", true}} {
		dir := t.TempDir()
		if c.name != "no overlay" {
			dir = overlayAt(t, c.sameFS)
		} else if err := os.WriteFile(filepath.Join(dir, "agent.lock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "agent.lock")
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		pids, ok, err := store.FlockPids(path)
		f.Close()
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case ok && !slices.Contains(pids, os.Getpid()):
			t.Errorf("%s: the lock this process holds is not found, and no holder is known: %v", c.name, pids)
		case !ok && c.sameFS:
			t.Errorf("%s: nothing is known of the lock's holders, where this process is one", c.name)
		}
	}
}
