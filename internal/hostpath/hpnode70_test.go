package hostpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestPublishAgainAtATargetNowShowingAnotherVolumeIsNotOK: volume A was published at T; its mount there went without the node RPCs (a reboot, an
// admin's umount: A's record still names T). B's data is mounted at T (a careless or hostile
// orchestrator's publish of B there, which the plugin took then, or an admin's bind). Then A's publish at T is sent again (the restore after a reboot sends exactly that):
// T is a mount point and A's record names T with the same options, so the plugin answered OK
// without looking at what is mounted there. A's consumer is handed B's data. A publish that
// answers OK must leave the volume asked for at the target. Found by helper review70.
func TestPublishAgainAtATargetNowShowingAnotherVolumeIsNotOK(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b, pb := c.staged(t, "b")
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, b.GetVolumeId()), "b-secret"), []byte("B's"), 0o600))
	_ = pb
	mustOK(t, c.publish(a, pa, pa.target, false, nil))
	mustOK(t, unix.Unmount(pa.target, 0)) // A's mount gone behind the plugin's back
	// B's data bound there by hand (a publish of B there is refused now, A's record naming
	// the target: TestPublishAtATargetAnotherVolumeRecordsIsRefused).
	mustOK(t, unix.Mount(c.volumeDir(t, b.GetVolumeId()), pa.target, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(pa.target, unix.MNT_DETACH) })
	errA := c.publish(a, pa, pa.target, false, nil) // A's publish sent again
	_, secret := os.Stat(filepath.Join(pa.target, "b-secret"))
	if errA == nil && secret == nil {
		t.Errorf("NodePublishVolume of volume a at %s answered OK, and the target shows volume b's data", pa.target)
	}
}

// TestStageAgainAtAPathNowShowingAnotherVolumeIsNotOK: the same for the staging path: A staged at S, its mount gone behind the plugin's back, B's
// data mounted at S, then A's stage at S sent again answered OK: S showed B. Found by
// helper review70.
func TestStageAgainAtAPathNowShowingAnotherVolumeIsNotOK(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b := c.createVolume(t, "b")
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, b.GetVolumeId()), "b-secret"), []byte("B's"), 0o600))
	mustOK(t, unix.Unmount(pa.staging, 0)) // A's staging mount gone behind the plugin's back
	// B's data bound there by hand (B's stage there is refused now, A's record naming the path).
	mustOK(t, unix.Mount(c.volumeDir(t, b.GetVolumeId()), pa.staging, "", unix.MS_BIND, ""))
	t.Cleanup(func() { _ = unix.Unmount(pa.staging, unix.MNT_DETACH) })
	errA := c.stage(a, pa, nil) // A's stage sent again
	_, secret := os.Stat(filepath.Join(pa.staging, "b-secret"))
	if errA == nil && secret == nil {
		t.Errorf("NodeStageVolume of volume a at %s answered OK, and the staging path shows volume b's data", pa.staging)
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

// TestPublishAtATargetAnotherVolumeRecordsIsRefused: volume A is published at T;
// its mount there goes without the node RPCs (an admin's umount, a reboot), A's record still
// names T. Volume B's publish at T was then answered OK: the plugin asked targetOwner only when T
// was a mount point. Two records now name T. Since showsTheVolume (review70), A's publish
// again at T is refused, advising `umount T`: that takes B's live mount away behind B's
// record, and once A's publish then binds A there, B's unpublish of T is refused the same way
// (A's bind "mounted over the volume", advising `umount T` again): each volume's restore or
// teardown unmounts the other's by hand, forever. The publish of another volume at a target
// one volume records is refused now, naming it, as it was while that target was mounted.
// Found by helper review70 (own3).
func TestPublishAtATargetAnotherVolumeRecordsIsRefused(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b, pb := c.staged(t, "b")
	mustOK(t, c.publish(a, pa, pa.target, false, nil))
	mustOK(t, unix.Unmount(pa.target, 0)) // A's mount gone behind the plugin's back; A's record names the target

	errB := c.publish(b, pb, pa.target, false, nil)
	if errB == nil {
		// What follows, for the report: the advice of A's refusal, followed, leaves B's
		// teardown refused.
		errA := c.publish(a, pa, pa.target, false, nil)
		t.Logf("A's publish again: %v", errA)
		if errA != nil {
			mustOK(t, unix.Unmount(pa.target, 0)) // the advice followed
			t.Logf("A's publish after the advised umount: %v", c.publish(a, pa, pa.target, false, nil))
			t.Logf("B's unpublish then: %v", c.unpublish(b, pa.target))
		}
		t.Fatalf("NodePublishVolume of volume b at %s, the target volume a's record names, answered OK: two records name one target", pa.target)
	}
	wantCode(t, errB, codes.FailedPrecondition, a.GetVolumeId())
}

// TestStageAtAPathAnotherVolumeRecordsIsRefused: the same for a staging path: A staged
// at S, its mount gone behind the plugin, B's stage at S answered OK, and A's record and B's
// both name S as their staging: A's stage again is refused (showsTheVolume) advising
// `umount S`, which unstages B behind its record. Found by helper review70 (own3).
func TestStageAtAPathAnotherVolumeRecordsIsRefused(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b := c.createVolume(t, "b")
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, b.GetVolumeId()), "b-data"), []byte("B"), 0o600))
	mustOK(t, unix.Unmount(pa.staging, 0)) // A's staging mount gone behind the plugin's back

	errB := c.stage(b, pa, nil)
	if errB == nil {
		t.Logf("A's stage again: %v", c.stage(a, pa, nil))
		t.Fatalf("NodeStageVolume of volume b at %s, the staging path volume a's record names, answered OK: two records name one staging path", pa.staging)
	}
	wantCode(t, errB, codes.FailedPrecondition, a.GetVolumeId())
}

// TestMountBelowRefusalNamesTheVolumeAndAdvisesNoHarm: volume A is published at
// D/x/data; B's publish at D/x is refused (refuseMountsBelow) "unmount that first", naming
// neither volume A nor the RPC that would: the mount below is A's recorded target. The advice
// followed (`umount D/x/data`), B's publish at D/x goes ahead, and A's record still names
// D/x/data, which now leads into B's data: A's unpublish there finds no mount point and
// removes what it finds, B's own empty directory "data", answering OK. The refusal must name
// volume A (its unpublish), not advise an unmount behind A's record.
// Found by helper review70 (own3).
func TestMountBelowRefusalNamesTheVolumeAndAdvisesNoHarm(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	b, pb := c.staged(t, "b")
	outer := filepath.Join(hostpathtest.MountDir(t), "x")
	mustOK(t, os.Mkdir(outer, 0o755))
	inner := filepath.Join(outer, "data")
	mustOK(t, c.publish(a, pa, inner, false, nil))
	bData := filepath.Join(c.volumeDir(t, b.GetVolumeId()), "data")
	mustOK(t, os.Mkdir(bData, 0o755)) // B's user's own empty directory

	errB := c.publish(b, pb, outer, false, nil)
	if errB == nil {
		t.Fatalf("publish of b over a's target: OK")
	}
	msg := errB.Error()
	// The advice followed.
	mustOK(t, unix.Unmount(inner, 0))
	errB2 := c.publish(b, pb, outer, false, nil)
	errA := c.unpublish(a, inner)
	_, gone := os.Stat(bData)
	t.Logf("refusal: %s\nb's publish after the advised umount: %v\na's unpublish: %v\nb's directory data after: %v", msg, errB2, errA, gone)
	if !strings.Contains(msg, a.GetVolumeId()) {
		t.Errorf("the refusal does not name volume a, whose recorded target is the mount below: %s", msg)
	}
	if gone != nil {
		t.Errorf("following the refusal's advice, volume a's unpublish at %s (answered %v) removed volume b's own directory %s", inner, errA, bData)
	}
}

// TestTargetWithAForeignMountBelowIsRefused: refuseMountsBelow's own case, a mount below the
// target that no volume's record names (an admin's tmpfs): a volume mounted over the directory
// would hide it. Refused, naming it.
func TestTargetWithAForeignMountBelowIsRefused(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, pa := c.staged(t, "a")
	outer := filepath.Join(hostpathtest.MountDir(t), "x")
	inner := filepath.Join(outer, "scratch")
	mustOK(t, os.MkdirAll(inner, 0o755))
	mustOK(t, unix.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = unix.Unmount(inner, unix.MNT_DETACH) })
	err := c.publish(a, pa, outer, false, nil)
	wantCode(t, err, codes.FailedPrecondition, "scratch")
	if ok, _ := mountinfo.Mounted(outer); ok {
		_ = unix.Unmount(outer, unix.MNT_DETACH)
		t.Errorf("volume a was mounted over %s, hiding the tmpfs below it", outer)
	}
}
