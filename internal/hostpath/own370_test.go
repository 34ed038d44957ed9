package hostpath_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

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
