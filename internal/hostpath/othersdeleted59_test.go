package hostpath_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/hostpath"
)

// Two processes serve one root (volctl's plugin and Nomad's), and the one that did not make a
// snapshot deletes it (currentSnapshot). A CreateSnapshot of the same name through the one that
// made it makes it again. Before, that process found the name in memory and answered OK with
// the deleted snapshot's ID, whose directory and record were gone.
func TestSnapshotDeletedByTheOtherProcessIsMadeAgain(t *testing.T) {
	root := t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	local, _ := startFake(t, cfg)
	nomad, _ := startFake(t, cfg)
	v := local.withData(t, "db")
	first := <-snapshotOf(local, v)
	mustOK(t, first.err)
	_, err := nomad.ctl.DeleteSnapshot(context.Background(), &csi.DeleteSnapshotRequest{SnapshotId: first.id})
	mustOK(t, err)
	if _, err := os.Lstat(filepath.Join(root, "snapshots", first.id)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the other process's DeleteSnapshot left %s (%v)", first.id, err)
	}

	again := <-snapshotOf(local, v)
	mustOK(t, again.err)
	if again.id == first.id {
		t.Fatalf("CreateSnapshot %q again answered OK with snapshot %s, which the other process deleted: its directory and record are gone", "snap", first.id)
	}
}

// A listing not filtered by ID, or filtered by source volume, leaves out a snapshot the other
// process serving the root deleted. Before, it listed it from memory (filtered by its ID, it did
// not).
func TestListSnapshotsDropsOneTheOtherProcessDeleted(t *testing.T) {
	root := t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	local, _ := startFake(t, cfg)
	nomad, _ := startFake(t, cfg)
	v := local.withData(t, "db")
	snap := <-snapshotOf(local, v)
	mustOK(t, snap.err)
	_, err := nomad.ctl.DeleteSnapshot(context.Background(), &csi.DeleteSnapshotRequest{SnapshotId: snap.id})
	mustOK(t, err)

	for _, req := range []*csi.ListSnapshotsRequest{{}, {SourceVolumeId: v.GetVolumeId()}} {
		listed, err := local.ctl.ListSnapshots(context.Background(), req)
		mustOK(t, err)
		for _, e := range listed.GetEntries() {
			if e.GetSnapshot().GetSnapshotId() == snap.id {
				t.Errorf("ListSnapshots(%v) still lists %s, deleted by the other process serving the root (no directory, no record)", req, snap.id)
			}
		}
	}
}
