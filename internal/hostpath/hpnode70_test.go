package hostpath_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestPublishAgainAtATargetNowShowingAnotherVolumeIsNotOK: volume A was published at T; its mount there went without the node RPCs (a reboot, an
// admin's umount: A's record still names T). A careless or hostile orchestrator publishes
// volume B at T: T is not a mount point, so the plugin mounts B there, though A's record
// names T. Then A's publish at T is sent again (the restore after a reboot sends exactly that):
// T is a mount point and A's record names T with the same options, so the plugin answered OK
// without looking at what is mounted there. A's consumer is handed B's data. A publish that
// answers OK must leave the volume asked for at the target. Found by helper review70.
func TestPublishAgainAtATargetNowShowingAnotherVolumeIsNotOK(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b, pb := c.staged(t, "b")
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, b.GetVolumeId()), "b-secret"), []byte("B's"), 0o600))
	mustOK(t, c.publish(a, pa, pa.target, false, nil))
	mustOK(t, unix.Unmount(pa.target, 0)) // A's mount gone behind the plugin's back

	errB := c.publish(b, pb, pa.target, false, nil) // B at A's recorded target
	errA := c.publish(a, pa, pa.target, false, nil) // A's publish sent again
	_, secret := os.Stat(filepath.Join(pa.target, "b-secret"))
	if errA == nil && secret == nil {
		t.Errorf("NodePublishVolume of volume a at %s answered OK, and the target shows volume b's data (b's publish there answered %v)", pa.target, errB)
	}
}

// TestStageAgainAtAPathNowShowingAnotherVolumeIsNotOK: the same for the staging path: A staged at S, its mount gone behind the plugin's back, B
// staged at S (nothing mounted there), then A's stage at S sent again answered OK: S showed B. Found by
// helper review70.
func TestStageAgainAtAPathNowShowingAnotherVolumeIsNotOK(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b := c.createVolume(t, "b")
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, b.GetVolumeId()), "b-secret"), []byte("B's"), 0o600))
	mustOK(t, unix.Unmount(pa.staging, 0)) // A's staging mount gone behind the plugin's back

	errB := c.stage(b, pa, nil) // B staged at A's recorded staging path
	errA := c.stage(a, pa, nil) // A's stage sent again
	_, secret := os.Stat(filepath.Join(pa.staging, "b-secret"))
	if errA == nil && secret == nil {
		t.Errorf("NodeStageVolume of volume a at %s answered OK, and the staging path shows volume b's data (b's stage there answered %v)", pa.staging, errB)
	}
}

// TestUnpublishOfATargetCoveredByAnotherVolumeDoesNotLeaveItsMount: volume A is published at
// D/x/data, D/x a plain directory of the orchestrator's. Volume B
// is then published at D/x: the plugin took the directory as it was and mounted B over it,
// hiding A's mount below (the reverse order, A's target inside B's, is refused: the plugin
// will not mount one volume in another's data). A's unpublish at D/x/data then found no
// mount point there (the path leads into B's data), answered OK and forgot the target, and
// A's bind of its directory stayed in the mount table, hidden under B's and shown again, with
// no record naming it, once B is unpublished: a mount left behind, the teardown answered
// OK. Found by helper review70.
func TestUnpublishOfATargetCoveredByAnotherVolumeDoesNotLeaveItsMount(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b, pb := c.staged(t, "b")
	outer := filepath.Join(hostpathtest.MountDir(t), "x")
	mustOK(t, os.Mkdir(outer, 0o755))
	inner := filepath.Join(outer, "data")
	mustOK(t, c.publish(a, pa, inner, false, nil))

	errB := c.publish(b, pb, outer, false, nil) // B over the directory holding A's target
	errA := c.unpublish(a, inner)
	if errB != nil {
		return // refused to cover A's target: nothing hidden
	}
	mustOK(t, c.unpublish(b, outer))
	if errA == nil && mountedInTable(t, inner) {
		t.Errorf("NodeUnpublishVolume of volume a at %s answered OK, and its mount is still there (hidden under volume b's at %s while b was published)", inner, outer)
	}
}

// mountedInTable says whether the mount table has a mount at path (its parent's symlinks
// resolved), hidden or not.
func mountedInTable(t *testing.T, path string) bool {
	t.Helper()
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	mustOK(t, err)
	at := filepath.Join(dir, filepath.Base(path))
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != at, false })
	mustOK(t, err)
	return len(mounts) > 0
}
