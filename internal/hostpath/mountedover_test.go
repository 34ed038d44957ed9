package hostpath_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A target or a staging path something else was mounted over since the plugin mounted the
// volume there (an admin's tmpfs, a disk): NodeUnpublishVolume and NodeUnstageVolume unmounted
// the topmost mount, the other one, whose tmpfs and data went with it, then failed to remove
// the target ("device or resource busy"), and sent again unmounted the volume. What is mounted
// on top is now checked to be the volume's directory: anything else is refused, named, and
// left mounted, with what to do; unmounted by hand, the request succeeds.
func TestTeardownRefusesToUnmountWhatWasMountedOverTheVolume(t *testing.T) {
	refusesToUnmountTheIntruder(t, "over", false)
}

// The same one step aside (review26f): the plugin's bind unmounted by hand and a tmpfs
// mounted in its place, data written there. Judged by the stack alone, a lone mount was taken
// for the plugin's, and the teardown unmounted the tmpfs, its data with it. A lone mount is
// the plugin's only when it shows the volume's directory (volumes/<id>): this one is refused,
// named, and left, as one over the volume is.
func TestTeardownRefusesToUnmountWhatWasMountedInTheVolumesPlace(t *testing.T) {
	refusesToUnmountTheIntruder(t, "instead", true)
}

// refusesToUnmountTheIntruder publishes a volume, mounts a tmpfs holding data at its target or
// staging path, over the plugin's bind or, inPlace, in its place (the bind unmounted first),
// and checks each teardown is refused, naming the tmpfs and the umount to run, and the data
// left; unmounted by hand, the teardowns go through.
func refusesToUnmountTheIntruder(t *testing.T, name string, inPlace bool) {
	hostpathtest.RequireMount(t)
	for _, which := range []string{"target", "staging"} {
		t.Run(which, func(t *testing.T) {
			c := start(t, hostpath.Config{})
			v, p := c.staged(t, name+"-"+which)
			mustOK(t, c.publish(v, p, p.target, false, nil))
			path := p.target
			if which == "staging" {
				mustOK(t, c.unpublish(v, p.target))
				path = p.staging
			}
			if inPlace {
				mustOK(t, unix.Unmount(path, 0))
			}
			if err := unix.Mount("someonesfs", path, "tmpfs", 0, "size=1m"); err != nil {
				t.Skipf("mounting a tmpfs: %v", err)
			}
			mustOK(t, os.WriteFile(filepath.Join(path, "theirs"), []byte("kept"), 0o600))

			var err error
			if which == "target" {
				err = c.unpublish(v, p.target)
			} else {
				err = c.unstage(v, p)
			}
			wantCode(t, err, codes.FailedPrecondition, path, "tmpfs someonesfs", "umount "+path)
			if b, rerr := os.ReadFile(filepath.Join(path, "theirs")); rerr != nil || string(b) != "kept" {
				t.Fatalf("what was mounted at the volume's %s: %q, %v; want it left mounted", which, b, rerr)
			}

			// Unmounted by hand, the request goes through.
			mustOK(t, unix.Unmount(path, 0))
			if which == "target" {
				mustOK(t, c.unpublish(v, p.target))
			}
			mustOK(t, c.unstage(v, p))
			if hostpathtest.Mounted(t, path) || hostpathtest.Mounted(t, p.staging) {
				t.Errorf("still mounted after the teardown")
			}
		})
	}
}

// tearsDown unpublishes and unstages volume v, failing unless both succeed and leave nothing
// mounted.
func (c *client) tearsDown(t *testing.T, v *csi.Volume, p paths) {
	t.Helper()
	mustOK(t, c.unpublish(v, p.target))
	mustOK(t, c.unstage(v, p))
	if hostpathtest.Mounted(t, p.target) || hostpathtest.Mounted(t, p.staging) {
		t.Errorf("still mounted after the teardown")
	}
}

// The volume's directory removed by hand under its mounts (rm -rf of the root's volumes/ID),
// or there again as another directory (removed and made again by hand, restored from a
// backup): nothing is mounted over the target or the staging path, yet "what is mounted on top
// is the volume's directory" was judged by the directory's inode, which is not the mounted
// one's any more, and every NodeUnpublishVolume and NodeUnstageVolume was refused, "has ext4
// /dev/... mounted over the volume", the release failing at every try. What is mounted over is
// judged by the mounts stacked at the path.
func TestTeardownOfAVolumeWhoseDirectoryIsThereAgain(t *testing.T) {
	hostpathtest.RequireMount(t)
	for _, again := range []bool{false, true} {
		t.Run(fmt.Sprintf("made-again=%t", again), func(t *testing.T) {
			c := start(t, hostpath.Config{})
			v, p := c.staged(t, "again")
			mustOK(t, c.publish(v, p, p.target, false, nil))
			dir := c.volumeDir(t, v.GetVolumeId())
			mustOK(t, os.RemoveAll(dir))
			if again {
				mustOK(t, os.Mkdir(dir, 0o750))
			}
			c.tearsDown(t, v, p)
		})
	}
}

// The plugin's root moved to another disk (copied, the old one removed) and the plugin started
// again with --root where it is now, as its FAILED_PRECONDITION for a moved root says to do:
// the volume's directory there is another one than the one mounted, and the teardown of what
// was staged and published before the move was refused as "mounted over", for good.
func TestTeardownAfterTheRootMovedToAnotherDisk(t *testing.T) {
	hostpathtest.RequireMount(t)
	old := filepath.Join(hostpathtest.MountDir(t), "root")
	c := start(t, hostpath.Config{Root: old, NodeID: "n1"})
	v, p := c.staged(t, "moved")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	mustOK(t, c.srv.Stop())

	moved := filepath.Join(hostpathtest.Tmpfs(t, "size=16m"), "root")
	if out, err := exec.Command("cp", "-a", old, moved).CombinedOutput(); err != nil {
		t.Fatalf("copying the root: %v: %s", err, out)
	}
	mustOK(t, os.RemoveAll(old))
	start(t, hostpath.Config{Root: moved, NodeID: "n1"}).tearsDown(t, v, p)
}

// Another directory of the volume's own file system bind-mounted over the target (same device,
// another root) is not the volume's: refused as a tmpfs is, and left mounted.
func TestTeardownRefusesABindOfAnotherDirectoryOverTheVolume(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v, p := c.staged(t, "bound-over")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	other := filepath.Join(filepath.Dir(c.volumeDir(t, v.GetVolumeId())), "..", "someone-elses")
	mustOK(t, os.Mkdir(other, 0o750))
	mustOK(t, unix.Mount(other, p.target, "", unix.MS_BIND, ""))
	wantCode(t, c.unpublish(v, p.target), codes.FailedPrecondition, p.target, "mounted over the volume", "umount "+p.target)
	mustOK(t, unix.Unmount(p.target, 0))
	mustOK(t, c.unpublish(v, p.target))
	mustOK(t, c.unstage(v, p))
}

// The fake mounter judges "mounted over" as the system's does, by the mounts stacked at the
// path, so fake-based tests see what the real plugin does: the volume's directory there again
// as another one is no mount over anything, and a bind of another directory over the target is.
func TestFakeMounterJudgesMountedOverByTheStack(t *testing.T) {
	c, m := startFake(t, hostpath.Config{})
	v, p := c.staged(t, "fake-over")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	dir := c.volumeDir(t, v.GetVolumeId())
	mustOK(t, os.RemoveAll(dir))
	mustOK(t, os.Mkdir(dir, 0o750))
	other := t.TempDir()
	mustOK(t, m.BindMount(other, p.target, "", 0))
	wantCode(t, c.unpublish(v, p.target), codes.FailedPrecondition, p.target, "mounted over the volume")
	mustOK(t, m.Unmount(p.target))
	if got := m.Mounts(); !slices.Contains(got, p.target) {
		t.Fatalf("mounts after unmounting what was over the target: %v, want the volume's still at %s", got, p.target)
	}
	mustOK(t, c.unpublish(v, p.target))
	mustOK(t, c.unstage(v, p))
	if got := m.Mounts(); len(got) != 0 {
		t.Errorf("mounts after the teardown: %v, want none", got)
	}
}
