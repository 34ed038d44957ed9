package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestRegisterOfACreateCleanupsStorageUnderItsOwnIDDoesNotAdviseDeletingIt: volume w's
// create was answered with storage volctl cannot use ("hand-1", made by hand, smaller than
// w's capacity_min: a plugin mapping two names onto one volume), and its cleanup's question
// failed, so w stays marked deleting as its create's cleanup (no DeleteVolume sent). The user,
// choosing to keep that storage, registers it under the volume's own ID, w, with external_id
// hand-1. The refusal says "volume "w" is deleting; run `volctl reconcile` to finish that
// first": followed, reconcile sends DeleteVolume of hand-1 and deletes the very storage being
// registered (another's), and the register run again then fails NotFound. The same refusal
// for a new ID names the cleanup mark and `volctl volume deregister w`, which forgets the mark
// and keeps the storage (TestRegisterOfStorageACreateCleanupRecordsDoesNotAdviseDeletingIt);
// the registration under w's own ID must say so too, and never advise what deletes the storage
// it registers. The test follows the advice: deregistered, then registered again, the storage
// kept. Found by helper review75.
func TestRegisterOfACreateCleanupsStorageUnderItsOwnIDDoesNotAdviseDeletingIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	createCleanupOfHandMadeStorage(t, h)

	_, err := h.e.RegisterVolume(h.ctx, registered("w", "hand-1"))
	if err == nil {
		t.Fatal("register of hand-1 as w succeeded while w is marked deleting as its create's cleanup")
	}
	msg := err.Error()
	if strings.Contains(msg, "volctl reconcile") || strings.Contains(msg, "volctl volume delete w") {
		// Follow the advice, as the user would: the storage being registered goes.
		_, rerr := h.e.Reconcile(h.ctx)
		_, still := h.mem.Volume("hand-1")
		if !still {
			_, again := h.e.RegisterVolume(h.ctx, registered("w", "hand-1"))
			t.Fatalf("register of hand-1 as w: %v\nfollowed (reconcile: %v), the plugin no longer holds hand-1 (DeleteVolume sent %d time(s)): "+
				"the storage being registered is deleted, and the register run again says: %v; "+
				"want the refusal to name the create's cleanup mark and `volctl volume deregister w`, which keeps the storage",
				err, rerr, h.mem.CallCount(csi.RPCDeleteVolume), again)
		}
	}
	if !strings.Contains(msg, "`volctl volume deregister w`") {
		t.Fatalf("register of hand-1 as w: %v\nwant the way out that keeps the storage named: `volctl volume deregister w`, then register again", err)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "w", false); err != nil {
		t.Fatalf("the advised `volctl volume deregister w`: %v", err)
	}
	if _, err := h.e.RegisterVolume(h.ctx, registered("w", "hand-1")); err != nil {
		t.Fatalf("the advised registration again of hand-1 as w: %v", err)
	}
	if _, still := h.mem.Volume("hand-1"); !still || h.mem.CallCount(csi.RPCDeleteVolume) != 0 {
		t.Fatalf("after the advice, the plugin holds hand-1: %v, DeleteVolume sent %d time(s); want it kept, none sent", still, h.mem.CallCount(csi.RPCDeleteVolume))
	}
}
