package hostpath_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
)

// Two processes serve one root after a handover to Nomad (shared_root_test.go). A snapshot
// one of them made after the other started was unknown to the other: Nomad's DeleteSnapshot
// of a snapshot volctl's plugin made answered OK and deleted nothing (its copy and record left
// on the root for good), a clone from it was NOT_FOUND, and ListSnapshots by its ID listed
// nothing. A snapshot named by ID is read from its record, as a volume is; and a volume the
// one process copies is not deleted by the other under the copy.
func TestSnapshotOfAnotherProcessOnTheRootIsServed(t *testing.T) {
	root, local, nomad, v := dataOnOneRoot(t)
	snap := <-snapshotOf(local, v)
	mustOK(t, snap.err)
	ctx := context.Background()

	listed, err := nomad.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snap.id})
	mustOK(t, err)
	if len(listed.GetEntries()) != 1 {
		t.Fatalf("ListSnapshots by ID through the other process lists %d snapshots, want 1", len(listed.GetEntries()))
	}
	clone, err := nomad.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "restored", VolumeCapabilities: []*csi.VolumeCapability{snw},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.id}}},
	})
	if err != nil {
		t.Fatalf("a clone through the other process of a snapshot made since it started: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(nomad.volumeDir(t, clone.GetVolume().GetVolumeId()), "f")); err != nil || string(b) != "data" {
		t.Fatalf("the clone holds %q (%v), want the snapshot's data", b, err)
	}

	_, err = nomad.ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.id})
	mustOK(t, err)
	for _, path := range []string{filepath.Join(root, "snapshots", snap.id), filepath.Join(root, "meta", "snapshots", snap.id+".json")} {
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after DeleteSnapshot through the other process, %s is still there (%v)", path, err)
		}
	}
	listed, err = local.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snap.id})
	mustOK(t, err)
	if len(listed.GetEntries()) != 0 {
		t.Errorf("the process that made it still lists the snapshot the other deleted")
	}

	// A copy under way in one process holds off the other's delete of its source.
	reached, release := make(chan struct{}), make(chan struct{})
	hostpath.AfterEachCopiedFile(t, func(rel string) {
		if rel == "f" {
			close(reached)
			<-release
		}
	})
	t.Cleanup(func() { letGo(release) })
	made := snapshotOf(local, v)
	<-reached
	_, err = nomad.ctl.DeleteVolume(within(t, 2*time.Second), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.Aborted, v.GetVolumeId(), "is being copied")
	letGo(release)
	mustOK(t, (<-made).err)
}

// A root moved or removed while the plugin serves it is said so, FAILED_PRECONDITION, by the
// requests that change a record (TestRootMovedUnderThePluginSaysSo); a create and a snapshot,
// which take no lock on meta/, were not: CreateVolume answered INTERNAL, "creating directory:
// no such file or directory", and CreateSnapshot NOT_FOUND of a source volume that exists.
func TestCreatesOnAMovedRootSayItMoved(t *testing.T) {
	root := t.TempDir() + "/root"
	c, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	v := c.withData(t, "db")
	snap := <-snapshotOf(c, v)
	mustOK(t, snap.err)
	if err := os.Rename(root, root+"-moved"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	moved := []string{"root " + root + " has no meta directory", "moved or removed", "restart the plugin with --root where it is now"}
	_, err := c.ctl.CreateVolume(ctx, createReq("new", mib))
	wantCode(t, err, codes.FailedPrecondition, moved...)
	_, err = c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "again", SourceVolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.FailedPrecondition, moved...)
	_, err = c.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "clone", VolumeCapabilities: []*csi.VolumeCapability{snw},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.GetVolumeId()}}},
	})
	wantCode(t, err, codes.FailedPrecondition, moved...)
	_, err = c.ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.id})
	wantCode(t, err, codes.FailedPrecondition, moved...)
}
