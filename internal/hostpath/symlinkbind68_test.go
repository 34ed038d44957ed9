package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestDeleteRefusesNestedMount with the plugin's --root given through a symlink
// (/var/lib/volctl -> /data/volctl, a root moved to a bigger disk and linked back). The mount
// table names the real path, so a mount inside the volume's directory must still stop DeleteVolume from deleting through it; it did not (the
// root looked for as given), and the delete removed what the mount held. Found by helper
// review68.
func TestDeleteRefusesNestedMountUnderASymlinkedRoot(t *testing.T) {
	hostpathtest.RequireMount(t)
	base := hostpathtest.MountDir(t)
	real := filepath.Join(base, "real")
	mustOK(t, os.Mkdir(real, 0o700))
	link := filepath.Join(base, "link")
	mustOK(t, os.Symlink(real, link))
	c := start(t, hostpath.Config{Root: link})
	v := c.createVolume(t, "nested")
	inside := filepath.Join(c.volumeDir(t, v.GetVolumeId()), "mnt")
	mustOK(t, os.Mkdir(inside, 0o755))
	elsewhere := filepath.Join(hostpathtest.MountDir(t), "precious")
	mustOK(t, os.MkdirAll(elsewhere, 0o755))
	mustOK(t, os.WriteFile(filepath.Join(elsewhere, "keep"), []byte("x"), 0o644))
	mustOK(t, unix.Mount(elsewhere, inside, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(inside, unix.MNT_DETACH) })

	_, err := c.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	if _, serr := os.Stat(filepath.Join(elsewhere, "keep")); serr != nil {
		t.Errorf("DeleteVolume (answered %v) deleted through a mount inside the volume: %v", err, serr)
	}
	wantCode(t, err, codes.FailedPrecondition, "mounted inside")
}

// Volume A was published at T, and its mount there went without the node RPCs (a reboot, a
// forced detach: the record still names T). T is a symbolic link now, to a tmpfs holding someone's data. A teardown
// unmounts only the plugin's own mount at the path (Mounter.Holds); the tmpfs at the link's end
// is not, and must stay mounted with its data. It was unmounted (IsMountPoint and umount2
// followed the link). Found by helper review68.
func TestUnpublishDoesNotUnmountWhatASymlinkAtTheTargetLeadsTo(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v, p := c.staged(t, "a")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	other := madeALinkToATmpfs(t, p.target)

	err := c.unpublish(v, p.target)
	if !hostpathtest.Mounted(t, other) {
		t.Errorf("NodeUnpublishVolume of %s (answered %v) unmounted the tmpfs at %s, which the target links to: not the plugin's mount", p.target, err, other)
	}
	if _, serr := os.Stat(filepath.Join(other, "data")); serr != nil {
		t.Errorf("the tmpfs's data is gone: %v", serr)
	}
}

// The same for the staging path.
func TestUnstageDoesNotUnmountWhatASymlinkAtTheStagingLeadsTo(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v, p := c.staged(t, "a")
	other := madeALinkToATmpfs(t, p.staging)

	err := c.unstage(v, p)
	if !hostpathtest.Mounted(t, other) {
		t.Errorf("NodeUnstageVolume of %s (answered %v) unmounted the tmpfs at %s, which the staging path links to: not the plugin's mount", p.staging, err, other)
	}
}

// Volume A is staged at S, a bind of A's directory root/volumes/A. A target S/x of volume B is
// inside the plugin's root reached through that bind mount: the plugin made its directory in A's data and mounted B there, so
// A's consumers read and write B's data, and (propagated) B is mounted below the root. The
// plugin refuses a path inside its root "as given or resolved ... by the directories'
// identities, which a bind mount shares with its source"; it did not, the chain above S never
// meeting the root's own identity. Found by helper review68.
func TestTargetInsideAnotherVolumesStagingIsRefused(t *testing.T) {
	hostpathtest.RequireMount(t)
	// The root and the orchestrator's paths on one shared mount, as on a systemd host.
	base := hostpathtest.MountDir(t)
	mustOK(t, unix.Mount(base, base, "", unix.MS_BIND, ""))
	mustOK(t, unix.Mount("", base, "", unix.MS_SHARED, ""))
	c := start(t, hostpath.Config{Root: filepath.Join(base, "root")})
	a, b := c.createVolume(t, "a"), c.createVolume(t, "b")
	mustOK(t, os.Mkdir(filepath.Join(base, "a"), 0o755))
	mustOK(t, os.Mkdir(filepath.Join(base, "b"), 0o755))
	pa := paths{staging: filepath.Join(base, "a", "staging")}
	pb := paths{staging: filepath.Join(base, "b", "staging")}
	mustOK(t, c.stage(a, pa, nil))
	mustOK(t, c.stage(b, pb, nil))
	target := filepath.Join(pa.staging, "x")
	err := c.publish(b, pb, target, false, nil)
	if err == nil {
		t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
		mustOK(t, os.WriteFile(filepath.Join(target, "b-secret"), []byte("b's"), 0o644))
		if _, serr := os.Stat(filepath.Join(c.volumeDir(t, a.GetVolumeId()), "x", "b-secret")); serr == nil {
			t.Errorf("volume b is mounted inside the plugin's root, in volume a's directory at %s", filepath.Join(c.volumeDir(t, a.GetVolumeId()), "x"))
		}
	}
	wantCode(t, err, codes.InvalidArgument, "inside the plugin's root")
}

// madeALinkToATmpfs unmounts the plugin's mount at path by hand (without the node RPCs, as a
// reboot does) and makes path a symlink to a tmpfs holding a file, data, which it returns.
func madeALinkToATmpfs(t *testing.T, path string) string {
	t.Helper()
	mustOK(t, unix.Unmount(path, 0))
	mustOK(t, os.Remove(path))
	other := filepath.Join(hostpathtest.MountDir(t), "scratch")
	mustOK(t, os.Mkdir(other, 0o755))
	mustOK(t, unix.Mount("tmpfs", other, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(other, unix.MNT_DETACH) })
	mustOK(t, os.WriteFile(filepath.Join(other, "data"), []byte("only here"), 0o644))
	mustOK(t, os.Symlink(other, path))
	return other
}
