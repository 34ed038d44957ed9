package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// Snapshot "nightly" of db is on the plugin (IDs other than names: "snap-..."), unrecorded (its record deregistered, the storage
// kept), and mem2 is mem's socket mate (one process, one storage). A create of "nightly" through
// mem is answered with that snapshot and looks for a delete of it: none is recorded. Then a
// delete of it, through mem itself or through mem2, records itself and sends DeleteSnapshot; the
// create records the snapshot and says it made it; the delete's answer is recorded. The delete's
// last check, which keeps a record a create made meanwhile and says so, ran only for a snapshot
// the delete found recorded, and looked under its own plugin ID alone: the delete said "deleted",
// the create said "made", and the snapshot the create's record names was deleted, nothing
// saying so. Left in round 68 for a socket mate; the same held through one plugin ID.
func TestSnapshotDeleteOfAnUnrecordedSnapshotCrossingACreateOfItSaysSo(t *testing.T) {
	for _, through := range []string{"mem", "mem2"} {
		t.Run(through, func(t *testing.T) { // not parallel: it swaps testHookSnapshotDeleteLookedFor
			h, s := unrecordedSnapshotOfMatesWith(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
			proceedCreate := make(chan struct{})
			createDone := h.createStoppedOnceItLooked(s.ID, proceedCreate)
			pause, done := h.snapshotDeleteThroughStoppedAtItsCheck(through, s.ID, "delete", func() { close(proceedCreate) })
			close(proceedCreate)
			if err := <-createDone; err != nil {
				close(pause.proceed)
				t.Fatalf("the create: %v", err)
			}
			close(pause.proceed)
			derr := <-done
			t.Logf("delete through %s: %v", through, derr)
			if !h.recordedSnapshot(s.ID) {
				t.Fatalf("the delete through %s forgot snapshot %s's record, which the create made meanwhile", through, s.ID)
			}
			if !errors.Is(derr, ErrConflict) || !strings.Contains(derr.Error(), "nightly") || !strings.Contains(derr.Error(), `"db"`) {
				t.Errorf("the delete through %s says %v; want a conflict naming the snapshot the create recorded meanwhile and its volume", through, derr)
			}
		})
	}
}
