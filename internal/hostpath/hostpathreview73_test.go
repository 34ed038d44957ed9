package hostpath_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestControllerUnpublishOfAnEarlierNodeIDsAttachmentIsRefusedWhileMountedHere: a plugin
// started again under another --node-id (a host renamed under --node-id $(hostname)) answered
// OK to the ControllerUnpublishVolume of the attachment its earlier run made for the old node
// ID, while the volume was still staged and published on this host, the only host the plugin
// mounts on: the attachment went from under the mounts, and the node RPCs still to come with
// its publish_context were refused. docs/architecture.md promises: "ControllerUnpublishVolume of
// a volume still staged or published on the node (a path its record names that is a mount
// point) is refused with FAILED_PRECONDITION naming the path, as CSI has the CO send it only
// after the node RPCs"; the check was made only for an attachment under the current node ID. Found by helper review73.
func TestControllerUnpublishOfAnEarlierNodeIDsAttachmentIsRefusedWhileMountedHere(t *testing.T) {
	ctx := context.Background()
	// The same host, its plugin now serving under the host's new name; the mounts are still there.
	c, v, p := attachedUnderAnEarlierNodeID(t, true)
	_, err := c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "old-name"})
	if err == nil {
		t.Fatalf("ControllerUnpublishVolume of node %q answered OK while the volume is staged at %s and published at %s on this host",
			"old-name", p.staging, p.target)
	}
	wantCode(t, err, codes.FailedPrecondition, p.staging)
}

// TestDeleteRefusesAVolumeStillMountedWhereItsRecordsNoLongerLead: DeleteVolume removed the
// directory, the data, of a volume still bind-mounted on the host, because it looked for the
// volume's mounts only at the paths its records name: the directory holding the staging path
// and the target renamed (a mount moves with its parent directory), the records led nowhere,
// and the delete answered OK while the staging and the target still showed the volume, now
// empty. docs/architecture.md promises the delete is "refused with FAILED_PRECONDITION while
// attached or mounted", and that "only the mount table is taken at its word": the table still
// has the binds of volumes/<id>. Found by helper review73.
func TestDeleteRefusesAVolumeStillMountedWhereItsRecordsNoLongerLead(t *testing.T) {
	hostpathtest.RequireMount(t)
	ctx := context.Background()
	c := start(t, hostpath.Config{})
	v := c.createVolume(t, "moved")
	base := hostpathtest.MountDir(t)
	orig := filepath.Join(base, "alloc")
	mustOK(t, os.Mkdir(orig, 0o755))
	p := paths{staging: filepath.Join(orig, "staging"), target: filepath.Join(orig, "target")}
	mustOK(t, c.stage(v, p, nil))
	mustOK(t, c.publish(v, p, p.target, false, nil))
	mustOK(t, os.WriteFile(filepath.Join(p.target, "data"), []byte("precious"), 0o644))

	moved := filepath.Join(base, "alloc-moved")
	mustOK(t, os.Rename(orig, moved))
	if !hostpathtest.Mounted(t, filepath.Join(moved, "target")) {
		t.Fatalf("the target's mount did not move with its directory: the case cannot be set up")
	}

	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	b, rerr := os.ReadFile(filepath.Join(moved, "target", "data"))
	if err == nil {
		t.Fatalf("DeleteVolume answered OK while the volume is mounted at %s and %s; the consumer's file now reads %q, %v",
			filepath.Join(moved, "staging"), filepath.Join(moved, "target"), b, rerr)
	}
	wantCode(t, err, codes.FailedPrecondition)
	if string(b) != "precious" {
		t.Errorf("the consumer's file reads %q, %v after the refused delete", b, rerr)
	}
}

// TestNodeGetVolumeStatsAtATargetNowShowingSomethingElseIsNotFound: with the plugin's bind at a
// target unmounted by hand and a tmpfs mounted in its place, NodeGetVolumeStats of the volume at
// that path answered OK with the volume's usage, and NodeGetVolumeHealth called it healthy
// there, though the path no longer shows the volume. The CSI spec's NodeGetVolumeStats answers
// NOT_FOUND when "a volume corresponding to the specified volume_id does not exist on specified
// volume_path", and docs/architecture.md says "a path that is no longer mounted makes the volume
// INACCESSIBLE"; the plugin judges what a path shows elsewhere (showsTheVolume, Mounter.Holds)
// but these two took any mount point there for the volume's. Found by helper review73.
func TestNodeGetVolumeStatsAtATargetNowShowingSomethingElseIsNotFound(t *testing.T) {
	hostpathtest.RequireMount(t)
	ctx := context.Background()
	c := start(t, hostpath.Config{})
	v, p := c.staged(t, "stats")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	mustOK(t, unix.Unmount(p.target, 0))
	if err := unix.Mount("someonesfs", p.target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs at the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(p.target, unix.MNT_DETACH) })

	_, err := c.nd.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: p.target})
	if err == nil {
		t.Errorf("NodeGetVolumeStats at %s, which shows a tmpfs, answered OK with the volume's usage", p.target)
	} else {
		wantCode(t, err, codes.NotFound)
	}
	h, err := c.nd.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.GetVolumeId(), VolumePublishPath: p.target})
	mustOK(t, err)
	if len(h.GetVolumeHealth().GetHealthStatuses()) == 0 {
		t.Errorf("NodeGetVolumeHealth at %s, which shows a tmpfs, found nothing wrong", p.target)
	}
}

// TestDeleteOfALargeVolumeLetsOtherRequestsThrough: DeleteVolume removed the volume's directory
// while holding the plugin's lock (its mutex and the lock on meta/ every process serving the
// root shares), so while a volume of many files was removed every other request waited, a
// claim's NodePublishVolume of another volume among them, and timed out. docs/architecture.md
// holds copies and stats' walks out of the lock for that reason ("every other request is
// answered while it copies (before, the copy held the mutex throughout, and with a large
// source every other volume's RPCs timed out"); the removal, a walk of the same size, held it. Found by helper review73.
func TestDeleteOfALargeVolumeLetsOtherRequestsThrough(t *testing.T) {
	ctx := context.Background()
	c, _ := startFake(t, hostpath.Config{})
	big := c.createVolume(t, "big")
	dir := c.volumeDir(t, big.GetVolumeId())
	// 60,000 names, hard links of one file: a removal as long as of as many files, made in a
	// fraction of the time creating them takes.
	const dirs, files = 200, 300
	one := filepath.Join(dir, "one")
	mustOK(t, os.WriteFile(one, nil, 0o600))
	for i := range dirs {
		sub := filepath.Join(dir, fmt.Sprint(i))
		mustOK(t, os.Mkdir(sub, 0o777))
		for j := range files {
			mustOK(t, os.Link(one, filepath.Join(sub, fmt.Sprint(j))))
		}
	}
	other, p := c.staged(t, "other")

	done := make(chan error, 1)
	go func() {
		_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: big.GetVolumeId()})
		done <- err
	}()
	// Once the removal has begun (the directory has lost an entry), another volume's publish.
	for {
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) < dirs+1 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("DeleteVolume ended before its removal was seen under way: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.nd.NodePublishVolume(pctx, &csi.NodePublishVolumeRequest{
		VolumeId: other.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target, VolumeCapability: snw,
	})
	waited := time.Since(start)
	mustOK(t, <-done)
	if err != nil {
		t.Fatalf("NodePublishVolume of another volume while a large volume was deleted: %v (%s after %s), want it answered meanwhile",
			status.Code(err), status.Convert(err).Message(), waited.Round(time.Millisecond))
	}
}
