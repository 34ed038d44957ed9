package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestRegisterOfStorageACreateCleanupRecordsDoesNotAdviseDeletingIt: volume w's create was
// answered with storage volctl cannot use (a plugin mapping two names onto one volume: the
// storage is "hand-1", made by hand, not w's), and its cleanup's question failed, so no
// DeleteVolume was sent and w stays deleting (create_cleanup, migration 0022). Registering
// hand-1 as "data" is refused: the refusal said w's DeleteVolume was sent (none was), and
// advised finishing "that delete" (`volctl reconcile`, or `volctl volume delete w` again)
// before registering: followed, it deletes hand-1, the very storage being registered, which is
// another's (deleteMayBeLeft says as much for the same record's deregister).
// Found by helper review70 (own2).
func TestRegisterOfStorageACreateCleanupRecordsDoesNotAdviseDeletingIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	createCleanupOfHandMadeStorage(t, h)
	_, err := h.e.RegisterVolume(h.ctx, registered("data", "hand-1"))
	if err == nil {
		t.Fatal("register of hand-1 as data succeeded beside w's record of it")
	}
	msg := err.Error()
	if strings.Contains(msg, "DeleteVolume sent") {
		t.Errorf("the refusal says w's DeleteVolume was sent; none was (its cleanup's question failed): %v", err)
	}
	if strings.Contains(msg, "volctl volume delete w") {
		// Follow the advice: the storage being registered goes.
		derr := h.e.DeleteVolume(h.ctx, "w")
		_, still := h.mem.Volume("hand-1")
		t.Errorf("the refusal advises `volctl volume delete w` to finish w's create's cleanup before registering hand-1: %v\n"+
			"followed (delete: %v), the plugin still holds hand-1: %t (DeleteVolume sent %d time(s)): the storage being registered, another's, is deleted",
			err, derr, still, h.mem.CallCount(csi.RPCDeleteVolume))
	}
	if !strings.Contains(msg, "`volctl volume deregister w`") {
		t.Fatalf("the refusal names no deregister of w's mark: %v", err)
	}
	// The advice followed: the mark forgotten, the storage left, the spec registered.
	if _, err := h.e.DeregisterVolume(h.ctx, "w", false); err != nil {
		t.Fatalf("volume deregister w, as advised: %v", err)
	}
	if _, err := h.e.RegisterVolume(h.ctx, registered("data", "hand-1")); err != nil {
		t.Errorf("register of hand-1 as data after the deregister advised: %v", err)
	}
	if _, still := h.mem.Volume("hand-1"); !still {
		t.Error("hand-1 is gone from the plugin after the advice was followed")
	}
}

// createCleanupOfHandMadeStorage has volume w's create answered with "hand-1", storage made by
// hand and too small for w, while the plugin cannot list volumes: the cleanup's question fails,
// so w stays marked deleting as its create's cleanup of hand-1, no DeleteVolume sent.
func createCleanupOfHandMadeStorage(t *testing.T, h *harness) {
	t.Helper()
	h.mem.AddVolume(csi.Volume{ID: "hand-1", CapacityBytes: 1 << 30})
	h.mem.AnswerCreateWith("hand-1")
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Code: codes.Unavailable})
	h.mem.ResetCalls()
	sv := volume("w")
	sv.CapacityMin = 1 << 40 // more than hand-1 holds: the answer is unusable
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create of w answered with hand-1, too small: succeeded")
	}
	h.faults.Reset()
	h.mem.AnswerCreateWith("")
	if w := h.volumeInfo("w"); w.State != string(store.VolumeDeleting) || w.ExternalID != "hand-1" {
		t.Fatalf("w is %s with external ID %q; want deleting hand-1 (its create's cleanup, its question failed)", w.State, w.ExternalID)
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Fatalf("DeleteVolume sent %d time(s); the test needs none", n)
	}
}
