package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestSnapshotDeleteOfAPendingCreateWhoseDriverCheckFailsKeepsTheIntent: `snapshot delete` of
// a snapshot whose create was interrupted (every CreateSnapshot answer lost: the plugin took the
// snapshot under its NAME) sends CreateSnapshot again to learn its ID, asking first which driver
// serves the socket (GetPluginInfo, checkSockets). That question answered INTERNAL left
// CreateSnapshot unsent (unsentRPC, "not sent: asking which driver serves the socket failed"),
// and finishPendingForDelete took it for the plugin refusing the create for good: the intent
// was forgotten and the delete said nothing was wrong, while the plugin still held the snapshot
// the lost answer was about, tracked by nothing. The round's fix (wasNotSent) was made in
// finishCreateForDelete only; docs/architecture.md says of it that a CreateVolume "refused before
// it was sent" is no refusal for good, and of the pending snapshot's delete that a CreateSnapshot
// whose refusal says nothing of what the plugin holds keeps the intent
// (TestSnapshotDeleteOfAPendingCreateRefusedCredentialsKeepsTheIntent). Found by helper review73 (own1).
func TestSnapshotDeleteOfAPendingCreateWhoseDriverCheckFailsKeepsTheIntent(t *testing.T) {
	t.Parallel()
	// No LIST_SNAPSHOTS: the snapshot the lost create took cannot be found by listing either.
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.Controller.ListSnapshots = false })
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "two", nil); err == nil {
		t.Fatal("snapshot with every answer lost succeeded")
	}
	h.faults.Clear()
	if n := len(h.mem.Snapshots()); n != 1 {
		t.Fatalf("the plugin holds %d snapshots after the lost creates, want 1", n)
	}
	sent := h.mem.CallCount(csi.RPCCreateSnapshot)
	h.faults.FailAlways(csi.RPCGetPluginInfo, codes.Internal)
	err := h.e.DeleteSnapshot(h.ctx, "mem", "two", nil)
	h.faults.Clear()
	if n := h.mem.CallCount(csi.RPCCreateSnapshot) - sent; n != 0 {
		t.Fatalf("the delete sent CreateSnapshot %d time(s); this case is of one whose CreateSnapshot was not sent", n)
	}
	var pending bool
	h.update(func(tx *store.Tx) error {
		_, gerr := tx.Snapshots().GetCreate("mem", "two")
		pending = gerr == nil
		return nil
	})
	if !pending {
		t.Errorf("snapshot two's pending create forgotten by a delete whose CreateSnapshot was not sent (GetPluginInfo answered INTERNAL; delete said: %v), "+
			"while the plugin still holds %d snapshot(s) taken under its name, tracked by nothing", err, len(h.mem.Snapshots()))
	}
	if err == nil {
		t.Fatalf("snapshot delete whose CreateSnapshot was not sent succeeded")
	}
	// Its advice: run the delete again once the plugin answers; the snapshot goes.
	if !strings.Contains(err.Error(), "run the delete again once the registered plugin answers") {
		t.Fatalf("snapshot delete: %v; want it to say to run it again once the plugin answers", err)
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "two", nil); err != nil {
		t.Fatalf("snapshot delete again with the plugin answering: %v", err)
	}
	if n := len(h.mem.Snapshots()); n != 0 {
		t.Errorf("the plugin still holds %d snapshot(s) after the delete", n)
	}
}
