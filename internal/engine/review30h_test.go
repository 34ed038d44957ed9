package engine

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// Two IDs of one monolith on one socket, the second through a bind mount of the first's
// directory (docs: one entry, one process, not refused); then a reboot: the directory is
// made again on tmpfs (a new inode), the bind mount made again, the plugin started again.
func TestReview30hBindMountedDirAfterRebootNotRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("bind-mounting the plugin's socket directory needs root")
	}
	h := newHarness(t, nil)
	dir := filepath.Join(t.TempDir(), "run")
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(dir, 0o755)
	os.Mkdir(mnt, 0o755)
	boot := func() func() {
		if err := syscall.Mount(dir, mnt, "", syscall.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		return csitest.ServeAt(t, filepath.Join(dir, "csi.sock"), csitest.WithServer(nodeOnePlugin()))
	}
	stop := boot()
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	h.registerPlugin("c1", filepath.Join(dir, "csi.sock"))
	h.registerPlugin("c2", filepath.Join(mnt, "csi.sock"))
	for _, when := range []string{"registered", "after a reboot"} {
		h.open(Config{})
		for _, id := range []string{"c1", "c2"} {
			if infos, err := h.e.PluginStatus(h.ctx, id); err != nil || !infos[0].Healthy {
				t.Errorf("%s, %s: %+v %v", id, when, infos, err)
			}
		}
		stop()
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
		var before, after syscall.Stat_t
		syscall.Stat(dir, &before)
		keep := filepath.Join(filepath.Dir(dir), "keep") // holds the old inode, as a reboot gives another
		if err := os.Rename(dir, keep); err != nil {
			t.Fatal(err)
		}
		os.Mkdir(dir, 0o755)
		syscall.Stat(dir, &after)
		t.Logf("dir inode %d -> %d", before.Ino, after.Ino)
		os.RemoveAll(keep)
		stop = boot()
	}
}

// Two IDs of one monolith registered on the very same path, whose directory is a release
// symlink (current -> v1) switched to the next release (current -> v2) at an upgrade.
func TestReview30hSamePathThroughSwitchedReleaseSymlinkNotRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	base := t.TempDir()
	v1, v2, cur := filepath.Join(base, "v1"), filepath.Join(base, "v2"), filepath.Join(base, "current")
	os.Mkdir(v1, 0o755)
	os.Mkdir(v2, 0o755)
	os.Symlink("v1", cur)
	stop := csitest.ServeAt(t, filepath.Join(v1, "csi.sock"), csitest.WithServer(nodeOnePlugin()))
	h.registerPlugin("c1", filepath.Join(cur, "csi.sock"))
	h.registerPlugin("c2", filepath.Join(cur, "csi.sock"))
	h.open(Config{})
	for _, id := range []string{"c1", "c2"} {
		if infos, err := h.e.PluginStatus(h.ctx, id); err != nil || !infos[0].Healthy {
			t.Errorf("%s registered: %+v %v", id, infos, err)
		}
	}
	stop()
	csitest.ServeAt(t, filepath.Join(v2, "csi.sock"), csitest.WithServer(nodeOnePlugin()))
	os.Remove(cur)
	os.Symlink("v2", cur)
	h.open(Config{})
	for _, id := range []string{"c1", "c2"} {
		if infos, err := h.e.PluginStatus(h.ctx, id); err != nil || !infos[0].Healthy {
			t.Errorf("%s after the upgrade: healthy %v, %s %v", id, infos[0].Healthy, infos[0].LastError, err)
		}
	}
}

// A status probe of a plugin freshly fingerprinted, another plugin being on a link to its
// socket: forgetAliases's write waits for another process's write lock (checkHealth's own
// write does not: TryUpdateProgress).
func TestReview30hProbeDoesNotWaitForTheWriteLock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, socket, stop := linkThenRegisterOther(t, h)
	stop()
	csitest.ServeAt(t, socket, csitest.WithServer(other)) // other restarted: a new socket file
	h.open(Config{})
	release := h.holdWriteLock()
	go func() { time.Sleep(5 * time.Second); release() }()
	start := time.Now()
	infos, err := h.e.PluginStatus(h.ctx, "other")
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("plugin status of other took %v behind another process's write lock (%+v %v)", d, infos != nil, err)
	}
}
