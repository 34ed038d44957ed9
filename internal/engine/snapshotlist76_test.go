package engine

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A delete of a snapshot still being created (its first CreateSnapshot made it, the answer
// lost) sends CreateSnapshot again; a plugin not idempotent by name answers ALREADY_EXISTS.
// finishSnapshot then lists the volume's snapshots to decide whether to keep the create; when
// that listing fails (one INTERNAL answer), it forgets the create there and then. The delete
// (finishPendingForDelete) finds the create gone, lists again, and this time the plugin lists
// the snapshot the lost call made: the delete fails saying the snapshot "stays recorded as
// being created" and that `volctl volume snapshot deregister mem nightly` forgets it. Neither
// holds: nothing is recorded any more, the advised deregister fails, and the snapshot on the
// storage is tracked by nothing (no reconcile will ever finish it). Correct: what the error
// says holds: a create forgotten by the first listing's failure is not said to stay (or the
// create is kept where the listing could not be asked, as finishPendingForDelete's second
// listing, which found it, shows it should have been). Found by helper review76 (crash).
func TestPendingSnapshotDeleteWhoseFirstListingFailedDoesNotSayAForgottenCreateStays(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	h.create(volume("v"))
	pendingSnapshotMade(t, h, "nightly", true)
	made := h.mem.Snapshots()[0].ID
	h.faults.FailOnce(csi.RPCCreateSnapshot, codes.AlreadyExists)
	h.faults.FailOnce(csi.RPCListSnapshots, codes.Internal)
	_, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil)
	if err == nil {
		t.Fatalf("delete of the pending snapshot whose CreateSnapshot was answered ALREADY_EXISTS, the plugin holding %s: succeeded", made)
	}
	_, creates := snapshotsKnown(h, "v")
	if !strings.Contains(err.Error(), "stays recorded as being created") || !slices.Equal(creates, []string{"nightly"}) {
		t.Errorf("delete: %v\ncreates recorded %v; want the create kept where the listing that would tell could not be asked, and said so", err, creates)
	}
	// Run again once the plugin answers: the snapshot goes.
	if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil); err != nil {
		t.Fatalf("the delete run again: %v", err)
	}
	if n := len(h.mem.Snapshots()); n != 0 {
		t.Errorf("the plugin still holds %d snapshot(s) after the delete run again", n)
	}
}
