package hostpath_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Two processes serve one root (volctl's plugin and Nomad's), and the one that did not make a
// snapshot deletes it (currentSnapshot). A CreateSnapshot of the same name through the one that
// made it makes it again. Before, that process found the name in memory and answered OK with
// the deleted snapshot's ID, whose directory and record were gone.
func TestSnapshotDeletedByTheOtherProcessIsMadeAgain(t *testing.T) {
	root, local, _, v, first := snapshotDeletedByTheOther(t)
	if _, err := os.Lstat(filepath.Join(root, "snapshots", first)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the other process's DeleteSnapshot left %s (%v)", first, err)
	}

	again := <-snapshotOf(local, v)
	mustOK(t, again.err)
	if again.id == first {
		t.Fatalf("CreateSnapshot %q again answered OK with snapshot %s, which the other process deleted: its directory and record are gone", "snap", first)
	}
}

// A listing not filtered by ID, or filtered by source volume, leaves out a snapshot the other
// process serving the root deleted. Before, it listed it from memory (filtered by its ID, it did
// not).
func TestListSnapshotsDropsOneTheOtherProcessDeleted(t *testing.T) {
	_, local, _, v, deleted := snapshotDeletedByTheOther(t)
	for _, req := range []*csi.ListSnapshotsRequest{{}, {SourceVolumeId: v.GetVolumeId()}} {
		listed, err := local.ctl.ListSnapshots(context.Background(), req)
		mustOK(t, err)
		for _, e := range listed.GetEntries() {
			if e.GetSnapshot().GetSnapshotId() == deleted {
				t.Errorf("ListSnapshots(%v) still lists %s, deleted by the other process serving the root (no directory, no record)", req, deleted)
			}
		}
	}
}
