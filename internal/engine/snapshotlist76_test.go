package engine

import (
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

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
	h, made := nightlyMadeAndItsAnswerLost(t)
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

// The same pending delete, the plugin's listing lagging the create it made: the first listing
// (finishSnapshot's, deciding whether to keep the create) shows nothing unrecorded, and the
// create is forgotten; the delete's listing after it then named the snapshot and said the create
// "stays recorded as being created", advising a deregister that failed ("no record of it"). It
// says the create was forgotten, and names the snapshot with the delete that takes it; followed,
// the plugin holds nothing. Found by helper review76 (own3).
func TestPendingSnapshotDeleteWhoseListingLagsSaysTheCreateForgottenAndNamesTheSnapshot(t *testing.T) {
	t.Parallel()
	h, made := nightlyMadeAndItsAnswerLost(t)
	h.faults.FailOnce(csi.RPCCreateSnapshot, codes.AlreadyExists)
	h.faults.Inject(csi.RPCListSnapshots, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
		m.(*csipb.ListSnapshotsResponse).Entries = nil
	}})
	_, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil)
	h.faults.Clear()
	_, creates := snapshotsKnown(h, "v")
	advice := "volctl volume snapshot delete mem " + made
	if err == nil || strings.Contains(err.Error(), "stays recorded") || !strings.Contains(err.Error(), "was forgotten") ||
		!strings.Contains(err.Error(), advice) || len(creates) != 0 {
		t.Fatalf("delete: %v\ncreates recorded %v; want the create said forgotten, and %s named with `%s`", err, creates, made, advice)
	}
	if evs := h.eventsOf("snapshot-delete", "v", "forgotten"); len(evs) == 0 || !strings.Contains(evs[len(evs)-1], made) {
		t.Errorf("no snapshot-delete event says nightly's create was forgotten, naming %s: %v (own4: its event went missing)", made, evs)
	}
	if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", made, nil); err != nil {
		t.Fatalf("the advised `%s`: %v", advice, err)
	}
	if n := len(h.mem.Snapshots()); n != 0 {
		t.Errorf("the plugin still holds %d snapshot(s) after the advice was followed", n)
	}
}
