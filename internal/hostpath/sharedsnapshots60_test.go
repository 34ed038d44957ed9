package hostpath_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/hostpath"
)

// A snapshot the other process serving the root deleted and then made again under the same
// name is the one CreateSnapshot of that name answers with: CSI's CreateSnapshot is idempotent
// by name. Before, CreateSnapshot dropped its stale copy and made a second snapshot of the
// name, a full copy of the volume, which nothing would ever delete by that name (round 59's
// fix, found by helper review60).
func TestSnapshotRemadeByTheOtherProcessIsNotMadeTwice(t *testing.T) {
	root, local, nomad, v, _ := snapshotDeletedByTheOther(t)
	remade := <-snapshotOf(nomad, v)
	mustOK(t, remade.err)

	again := <-snapshotOf(local, v)
	mustOK(t, again.err)
	named := snapshotsNamed(t, root, "snap")
	if again.id != remade.id || len(named) != 1 {
		t.Fatalf("CreateSnapshot %q through the first process answered %s; the other process had made it again as %s; the root now holds %d snapshots named %q: %v",
			"snap", again.id, remade.id, len(named), "snap", named)
	}
}

// dataOnOneRoot serves one root by two processes (volctl's plugin and Nomad's), and creates
// volume db with data through the first.
func dataOnOneRoot(t *testing.T) (root string, local, other *client, v *csi.Volume) {
	t.Helper()
	root = t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	local, _ = startFake(t, cfg)
	other, _ = startFake(t, cfg)
	return root, local, other, local.withData(t, "db")
}

// snapshotDeletedByTheOther serves one root by two processes (volctl's plugin and Nomad's),
// snapshots volume db as "snap" through the first and deletes the snapshot through the other.
func snapshotDeletedByTheOther(t *testing.T) (root string, local, other *client, v *csi.Volume, deleted string) {
	t.Helper()
	root, local, other, v = dataOnOneRoot(t)
	first := <-snapshotOf(local, v)
	mustOK(t, first.err)
	_, err := other.ctl.DeleteSnapshot(context.Background(), &csi.DeleteSnapshotRequest{SnapshotId: first.id})
	mustOK(t, err)
	return root, local, other, v, first.id
}

// snapshotsNamed are the IDs of the snapshot records on root named name.
func snapshotsNamed(t *testing.T, root, name string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "meta", "snapshots"))
	mustOK(t, err)
	var ids []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(root, "meta", "snapshots", e.Name()))
		mustOK(t, err)
		var rec struct{ ID, Name string }
		if json.Unmarshal(b, &rec) == nil && rec.Name == name {
			ids = append(ids, rec.ID)
		}
	}
	return ids
}

// ListSnapshots, not filtered by ID, lists what the root holds, as it leaves out what the
// other process serving the root deleted: a snapshot the other process made is listed too.
// Before, it listed only what its own memory held, so a snapshot Nomad's plugin made was
// missing from volctl's listing until asked for by its ID.
func TestListSnapshotsListsOneTheOtherProcessMade(t *testing.T) {
	_, local, nomad, v := dataOnOneRoot(t)
	snap := <-snapshotOf(nomad, v)
	mustOK(t, snap.err)

	for _, req := range []*csi.ListSnapshotsRequest{{}, {SourceVolumeId: v.GetVolumeId()}} {
		listed, err := local.ctl.ListSnapshots(context.Background(), req)
		mustOK(t, err)
		var ids []string
		for _, e := range listed.GetEntries() {
			ids = append(ids, e.GetSnapshot().GetSnapshotId())
		}
		if len(ids) != 1 || ids[0] != snap.id {
			t.Errorf("ListSnapshots(%v) through the first process lists %v; the root holds snapshot %s, made by the other process (record and directory there)", req, ids, snap.id)
		}
	}
}
