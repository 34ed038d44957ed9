package engine

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestUnrecordedSnapshotDeleteHungOnThePluginDoesNotHoldAPendingCreatesVolume: a snapshot
// create of volume db was cut short (its CreateSnapshot unanswered, the create left pending
// for reconcile), and alloc web-0 holds a claim on db. In another volctl the user deletes a
// snapshot volctl records nothing of (another tool's snapshot of volume "logs", unrelated to
// db), and the plugin does not answer its DeleteSnapshot. holdPendingCreates takes db's lock
// for that delete (the pending create's answer might be the snapshot deleted) and holds it
// across the DeleteSnapshot: a `volume release db web-0` in a third volctl waits for the
// volume's lock for as long as the plugin hangs on a delete of another volume's snapshot. The
// design rejects exactly that for a snapshot create waiting for a hung delete
// (snapshotLockAfterItsDelete, TestSnapshotCreateWaitingForAHungDeleteDoesNotHoldItsVolume):
// a DeleteSnapshot that hangs must not hold up the claims and releases of a volume. Correct
// behaviour: the pending creates' volume locks are held only until the delete is recorded
// (its mark, which a create answered later finds and waits on through the snapshot's lock),
// not across the RPC, so the release goes on without waiting.
// Found by helper review77 (clone).
func TestUnrecordedSnapshotDeleteHungOnThePluginDoesNotHoldAPendingCreatesVolume(t *testing.T) {
	t.Parallel()
	// No PUBLISH_UNPUBLISH_VOLUME: the release sends node RPCs only, and needs no controller
	// lock, which the hung DeleteSnapshot holds.
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	logs := h.create(volume("logs"))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})

	// A create of db's snapshot "nightly", cut short: it stays pending for reconcile.
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Times: 20})
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil); err == nil || !strings.Contains(err.Error(), "stays recorded as being created") {
		t.Fatalf("precondition: snapshot create of db with CreateSnapshot unanswered: %v; want it left pending", err)
	}
	h.faults.Clear()

	// Another tool's snapshot of volume logs, which volctl records nothing of.
	theirs, err := h.pluginClient().CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: logs.ExternalID, Name: "theirs"})
	if err != nil {
		t.Fatalf("precondition: another tool's snapshot of logs: %v", err)
	}

	// The plugin hangs on the DeleteSnapshot of it.
	gate := make(chan struct{})
	opened := true
	letGo := func() {
		if opened {
			opened = false
			close(gate)
		}
	}
	defer letGo()
	h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Gate: gate, Times: 1})
	deleter := h.otherProcess()
	delDone := make(chan error, 1)
	go func() { _, err := deleter.DeleteSnapshotNoted(h.ctx, "mem", theirs.ID, nil); delDone <- err }()
	for deadline := time.Now().Add(30 * time.Second); h.faults.Held() == 0; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-delDone:
			t.Fatalf("precondition: the delete of %s returned before its DeleteSnapshot was held: %v", theirs.ID, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("precondition: the delete of %s never sent DeleteSnapshot", theirs.ID)
		}
	}

	// A release of db in a third volctl, while that DeleteSnapshot hangs.
	releaser := h.otherProcess()
	waits := make(chan string, 1)
	rctx := WithProgress(h.ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on ") {
			select {
			case waits <- step:
			default:
			}
		}
	})
	relDone := make(chan error, 1)
	go func() { _, err := releaser.Release(rctx, "db", "web-0"); relDone <- err }()
	select {
	case step := <-waits:
		letGo()
		t.Errorf("the release of volume db waited (%q) while another volctl's DeleteSnapshot of %s (a snapshot of volume logs volctl records nothing of) hung on the plugin: "+
			"the delete holds db's lock across the RPC because a snapshot create of db is pending", step, theirs.ID)
		if err := <-relDone; err != nil {
			t.Errorf("release, once the delete went on: %v", err)
		}
	case err := <-relDone:
		if err != nil {
			t.Errorf("release of db beside a hung delete of another volume's snapshot: %v", err)
		}
		letGo()
	case <-time.After(30 * time.Second):
		letGo()
		t.Fatal("the release neither waited for a lock nor returned")
	}
	select {
	case err := <-delDone:
		t.Logf("the delete of %s, once let go: %v", theirs.ID, err)
	case <-time.After(60 * time.Second):
		t.Fatal("the delete never returned once let go")
	}
	if h.recordedSnapshot(theirs.ID) || h.deletingRecorded(theirs.ID) {
		t.Errorf("after the delete, snapshot %s is recorded (%v) or its delete is (%v): volctl recorded nothing of it", theirs.ID, h.recordedSnapshot(theirs.ID), h.deletingRecorded(theirs.ID))
	}
	if live := h.liveClaims("db"); len(live) != 0 {
		t.Errorf("claims of db after the release: %+v", live)
	}
}
