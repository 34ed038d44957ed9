package engine

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A restore from a snapshot volctl does not record (deregistered with `snapshot deregister`,
// made through another state dir or another tool) is checked first against the plugin's own
// listing (restoreReady, findsSnapshot), which says the snapshot's size_bytes. A plugin that
// answers the restore with a volume an eighth of that size has made a truncated restore (the
// CSI spec: a volume restored from a snapshot MUST NOT be smaller than it), which the same
// answer is refused for when volctl records the snapshot
// (TestRestoreAnsweredSmallerThanItsSnapshotIsRefused). Before, the size the plugin itself had
// just listed was thrown away (restoreReady returned the source volume alone; sourceSize reads
// only records) and the truncated volume was recorded ready. Found by helper review64.
func TestRestoreOfAnUnrecordedSnapshotAnsweredSmallerThanItsListedSizeIsRefused(t *testing.T) {
	t.Parallel()
	h, s := eightMiBSnapshot(t, nil)
	// Forgotten by volctl, kept by the plugin, which lists it at 8 MiB, ready.
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID); err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, sn := range h.mem.Snapshots() {
		if sn.ID == s.ID && sn.SizeBytes == 8*mib && sn.ReadyToUse {
			listed = true
		}
	}
	if !listed {
		t.Fatalf("the plugin does not hold snapshot %q at 8 MiB, ready: %+v", s.ID, h.mem.Snapshots())
	}

	sv := volume("restored")
	sv.CapacityMin = 0 // as large as the snapshot: the plugin's to choose
	sv.SnapshotID = s.ID
	madeSmallerThanItsSource(t, h, sv, fmt.Sprintf("restore from snapshot %s, which the plugin lists at 8 MiB", s.ID))
}

// An expansion left pending (ControllerExpandVolume sent, the plugin grew the storage, its
// answer lost) is sent again by the same expand run again, as its error advises. The plugin
// cannot list the volume's size, so nothing but the replay's answer says what the storage is. A
// final refusal of that replay says the replay did nothing, not that the lost attempt before it
// did nothing (the rule the same file keeps within one command: `earlier`, and the one a
// snapshot intent keeps: "a final refusal of a CreateSnapshot sent again keeps the intent (the
// first one may have made it)"). Before, the pending mark was cleared as "refused: the plugin did
// nothing" (`replayed` was not among the reasons it stays): the storage was 4 MiB, the record
// said 1 MiB with nothing pending and no node expansion owed, and neither reconcile nor any
// command said the storage may have grown. Found by helper review64.
func TestPendingExpansionRefusedWhenSentAgainStaysPending(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume, c.Controller.ListVolumes = false, false })
	h.create(volume("v"))
	ext := h.volumeInfo("v").ExternalID
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand whose answers were all lost succeeded")
	}
	if got, _ := h.mem.Volume(ext); got.CapacityBytes != 4*mib {
		t.Fatalf("the plugin holds the volume at %d bytes after the lost answers, want %d (it grew it)", got.CapacityBytes, 4*mib)
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("after the lost answers: expansion pending %d, want %d", v.ExpansionPending, 4*mib)
	}

	// The replay the error advises is refused with a final code (a plugin busy with the resize
	// it did, one refusing a required_bytes it has already: anything but OK).
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Code: codes.InvalidArgument, Message: "resize already done", Times: 1})
	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err == nil {
		t.Fatal("the replay refused INVALID_ARGUMENT succeeded")
	}
	t.Logf("the replay's error: %v", err)
	v := h.volumeInfo("v")
	if v.ExpansionPending == 0 && v.CapacityBytes < 4*mib {
		t.Errorf("after the replay of a pending expansion was refused: recorded at %d bytes, nothing pending, node expansion owed %d; "+
			"the plugin holds the storage at 4 MiB (the lost attempt grew it): want the expansion kept pending, as the lost attempt may have done it",
			v.CapacityBytes, v.NodeExpansionOwed)
	}
}
