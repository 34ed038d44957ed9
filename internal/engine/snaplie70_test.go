package engine

import (
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestSnapshotAnsweredWithAHugeForeignSourceIsNotQuotedWhole: a plugin answers CreateSnapshot
// with a snapshot whose source_volume_id is another volume's,
// spelled in 3 MiB (under gRPC's 4 MiB). The create is refused (of another volume), but the
// conflict quoted that source whole: a 3 MiB error printed on stderr, where every other answer
// of a plugin volctl quotes is cut (spec.Cut; withoutOversizedIDs for the listing's sources).
// Found by helper review70.
func TestSnapshotAnsweredWithAHugeForeignSourceIsNotQuotedWhole(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	huge := strings.Repeat("other-volume-", (3<<20)/13)
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
		m.(*csipb.CreateSnapshotResponse).Snapshot.SourceVolumeId = huge
	}})
	_, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if err == nil {
		t.Fatal("a CreateSnapshot answered with a snapshot of another volume was recorded")
	}
	if n := len(err.Error()); n > 64<<10 {
		t.Errorf("the refusal of a snapshot of another volume is %d bytes long (it quotes the plugin's %d-byte source_volume_id whole); begins %q",
			n, len(huge), err.Error()[:300])
	}
}

// TestPendingSnapshotDeleteListingHasTheChecksTimeBound: a pending snapshot (its CreateSnapshot
// answer lost) is deleted by its NAME; the plugin
// refuses the CreateSnapshot sent again for good, and volctl asks it for the volume's
// snapshots (unrecordedSnapshotsOf) before it forgets the create. The doc has that listing
// "within a check's bounds on pages and time" (1,000 pages, Config.ListCheck: 30 s), the
// bounds of a listing under a lock others wait for (here the source volume's); it runs
// ran within Config.ListTime (2 min), the bound of a listing shown to the user.
// Found by helper review70.
func TestPendingSnapshotDeleteListingHasTheChecksTimeBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.PageSize = 1 })
	h.open(Config{Now: func() time.Time { return snapshotClock }, ListCheck: 300 * time.Millisecond, ListTime: 8 * time.Second})
	h.create(volume("db"))
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Lost: true})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil); err == nil {
		t.Fatal("premise: the create whose answer was lost succeeded")
	}
	h.faults.Clear(csi.RPCCreateSnapshot)
	h.mem.DropSnapshot("nightly") // a plugin keeping to CSI less than it says: the name finds nothing
	h.faults.FailAlways(csi.RPCCreateSnapshot, codes.InvalidArgument)
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Delay: 20 * time.Millisecond, FirstPage: true,
		NextToken: func(start string) string { return start + "." }})
	began := time.Now()
	err := h.e.DeleteSnapshot(h.ctx, "mem", "nightly", nil)
	took := time.Since(began)
	t.Logf("delete of the pending snapshot: %v, after %s, %d ListSnapshots pages", err, took, h.faults.Calls(csi.RPCListSnapshots))
	if took > 4*time.Second {
		t.Errorf("the delete of pending snapshot %q held volume db's lock for %s listing the plugin's snapshots without end: past the check's bound (ListCheck %s)",
			"nightly", took.Round(time.Millisecond), 300*time.Millisecond)
	}
}

// TestDeleteOfAnUnrecordedSnapshotStillListedAdvisesNoDeregisterOfNothing: a snapshot made on
// the plugin by another tool, which volctl records nothing of, is deleted by
// its ID (TestDeleteSnapshotVolctlDoesNotRecordStillDeletesThePlugins); the plugin answers
// DeleteSnapshot OK and keeps listing it (it deletes in the background, or lied). The delete
// fails, which is right, but its words said "the snapshot stays recorded" and advised, for a
// plugin that keeps listing it, `volctl volume snapshot deregister mem ID`, which "forgets the
// record": volctl has no record, nor a recorded delete (undone), and that deregister fails
// (not found, exit 1). The advice must be a command that works, and nothing said recorded.
// Found by helper review70.
func TestDeleteOfAnUnrecordedSnapshotStillListedAdvisesNoDeregisterOfNothing(t *testing.T) {
	t.Parallel()
	h, v := snapshotHarness(t, nil)
	made, err := h.pluginClient().CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: v.ExternalID, Name: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = true })
	_, err = h.e.DeleteSnapshotNoted(h.ctx, "mem", made.ID, nil)
	if err == nil {
		t.Fatal("premise: the delete of a snapshot the plugin still lists succeeded")
	}
	t.Logf("delete: %v", err)
	_, derr := h.e.DeregisterSnapshot(h.ctx, "mem", made.ID)
	t.Logf("the deregister advised: %v", derr)
	if strings.Contains(err.Error(), "volctl volume snapshot deregister") && derr != nil {
		t.Errorf("the delete's error advises `volctl volume snapshot deregister mem %s`, which fails: %v", made.ID, derr)
	}
	if strings.Contains(err.Error(), "stays recorded") {
		t.Errorf("the delete's error says the snapshot %q stays recorded; volctl records nothing of it", made.ID)
	}
}
