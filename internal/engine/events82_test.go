package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestDeleteFailureAfterARefusalIsRecorded: a delete that fails (UNAVAILABLE) leaves the volume
// deleting with a "delete failed" event; the next delete is refused FAILED_PRECONDITION, which
// puts the volume back to ready with a "delete refused, volume kept" event; a third delete fails
// as the first did and leaves the volume deleting again. appendFailure walks past the refusal
// (same kind, same plugin) and finds the first failure among the volume's newest events, so the
// third failure is not recorded: the newest event of the volume says it was kept (ready) while
// it is marked deleting. appendFailure's own doc says "the delete refused" in between makes the
// next failure an event again; it should be recorded.
// Found by helper review82 (events).
func TestDeleteFailureAfterARefusalIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	busy := csitest.Fault{Code: codes.Unavailable, Times: fastRetry.Attempts, Message: "backend busy"}
	h.faults.Inject(csi.RPCDeleteVolume, busy)
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("the first delete finished while the plugin fails DeleteVolume")
	}
	h.faults.Clear(csi.RPCDeleteVolume)
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.FailedPrecondition, Times: fastRetry.Attempts, Message: "volume has snapshots"})
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("the second delete finished while the plugin refuses DeleteVolume")
	}
	if st := h.volumeInfo("v").State; st != "ready" {
		t.Fatalf("after the refusal the volume is %q; want it put back to ready (precondition)", st)
	}
	h.faults.Clear(csi.RPCDeleteVolume)
	h.faults.Inject(csi.RPCDeleteVolume, busy)
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("the third delete finished while the plugin fails DeleteVolume")
	}
	if st := h.volumeInfo("v").State; st != "deleting" {
		t.Fatalf("after the third delete failed the volume is %q; want deleting (precondition)", st)
	}
	evs := h.eventsOf("volume-delete", "v", "")
	if len(evs) == 0 || !strings.HasPrefix(evs[0], "delete failed") {
		t.Fatalf("volume v is marked deleting after a failed delete, but its newest volume-delete event is not that failure; its events, newest first:\n%s",
			strings.Join(evs, "\n"))
	}
}
