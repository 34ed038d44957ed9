package engine

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A create of a NAME again, answered with the snapshot volctl recorded under it (Unchanged),
// but by a plugin that no longer says its size (size_bytes 0, or a negative one read as 0):
// the size recorded when it was taken is what a restore from it may not be smaller than
// (sourceSize). The record must keep it, as it keeps the recorded time of an undated answer
// (TestUnchangedSnapshotOfAnUndatedPluginKeepsItsRecordedTime). Here it is overwritten with
// 0, and a restore answered with a volume an eighth of the snapshot is then recorded ready.
// Found by helper review65.
func TestUnchangedSnapshotAnsweredWithoutASizeKeepsItsRecordedSize(t *testing.T) {
	t.Parallel()
	for _, size := range []int64{0, -5} {
		// A plugin that does not list snapshots: the record is all a restore has to go by.
		h, s := eightMiBSnapshot(t, func(c *csitest.MemConfig) { c.Controller.ListSnapshots = false })
		h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
			m.(*csipb.CreateSnapshotResponse).Snapshot.SizeBytes = size
		}})
		again, outcome, err := h.e.CreateSnapshotOutcome(h.ctx, "big", "s1", nil)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != s.ID || outcome != Unchanged {
			t.Fatalf("premise: create of s1 again = %q (%v), want %q unchanged", again.ID, outcome, s.ID)
		}
		recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.ID == s.ID && r.SizeBytes != 8*mib {
				t.Errorf("size_bytes %d: after `snapshot create big s1` again (answered unchanged, the plugin saying no size), snapshot %q is recorded at %d bytes, was %d: the known size is lost",
					size, s.ID, r.SizeBytes, 8*mib)
			}
		}
		sv := volume("restored")
		sv.CapacityMin = 0
		sv.SnapshotID = s.ID
		answerCreateVolumeAt(h, 1*mib)
		if v, err := h.e.CreateVolume(h.ctx, sv); err == nil {
			t.Errorf("size_bytes %d: restore from snapshot %q (8 MiB when taken) answered with a volume of 1 MiB: recorded %s at %d bytes, no error",
				size, s.ID, v.State, v.CapacityBytes)
		}
	}
}

// A plugin not idempotent by name (it makes a new snapshot for a NAME it holds) leaves two
// recorded snapshots under one NAME, both kept since it still lists the first
// (TestSnapshotCreateAgainForgetsNoSnapshotThePluginStillHolds). `snapshot delete PLUGIN NAME`
// then picks one of them by the order of their IDs (recordNamed) and deletes it, saying
// "deleted" of the NAME, with no word that it named two snapshots, nor which one went: the
// one deleted here is the newer one, "b-nightly", and a second delete by the NAME deletes the
// other. A NAME that names two recorded snapshots must be refused, naming both IDs, with
// nothing sent. Found by helper review65.
func TestSnapshotDeleteByANameTwoRecordsHoldIsRefused(t *testing.T) {
	t.Parallel()
	h, first := nightlySnapshot(t)
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "b-" })
	second, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, r := range recs {
		if r.Name == "nightly" {
			named++
		}
	}
	if named != 2 || second.ID == first.ID {
		t.Fatalf("premise: %d records named nightly (%+v), want 2: %q and %q", named, recs, first.ID, second.ID)
	}
	before := len(h.mem.Snapshots())
	err = h.e.DeleteSnapshot(h.ctx, "mem", "nightly", nil)
	after := len(h.mem.Snapshots())
	if err == nil || after != before {
		t.Errorf("`snapshot delete mem nightly`, a NAME two recorded snapshots (%q, %q) hold: err = %v, the plugin holds %d snapshots, %d before; "+
			"want it refused naming both, nothing deleted", first.ID, second.ID, err, after, before)
	}
	if err != nil && (!strings.Contains(err.Error(), first.ID) || !strings.Contains(err.Error(), second.ID)) {
		t.Errorf("the refusal does not name both snapshots %q and %q: %v", first.ID, second.ID, err)
	}
}
