package engine

import (
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// review30f's findings in reconcile's finishing of recorded snapshot deletes.

// A delete unanswered (the plugin did delete it), then a new snapshot under the same ID (the
// plugin derives IDs from names): reconcile must not delete the new one.
func TestReview30fReconcileDeletesASnapshotMadeSinceUnderTheSameID(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	// Another orchestrator's snapshot "nightly" on the plugin, deleted through volctl.
	c := h.pluginClient()
	if _, err := c.CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: h.volumeInfo("db").ExternalID, Name: "nightly"}); err != nil {
		t.Fatal(err)
	}
	h.unansweredSnapshotDelete("nightly")
	h.faults.Clear()
	// The delete went through after all.
	if err := c.DeleteSnapshot(h.ctx, csi.DeleteSnapshotRequest{SnapshotID: "nightly"}); err != nil {
		t.Fatal(err)
	}
	// The user makes a new snapshot named nightly with volctl.
	s := h.snapshot("nightly")
	t.Logf("new snapshot %s; delete recorded: %v", s.ID, h.deletingRecorded(s.ID))
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v", err, rep.Actions)
	if got := h.mem.Snapshots(); len(got) != 1 {
		t.Fatalf("after reconcile the plugin has %+v: the snapshot the user made since was deleted", got)
	}
}

// A recorded delete against a plugin answering UNAVAILABLE: each pass keeps the recorded delete
// (and logs what it cost: tries, events).
func TestReview30fReconcileAgainstUnavailable(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.unansweredSnapshotDelete(s.ID)
	count := func() int {
		n := 0
		_ = h.e.store.View(h.ctx, func(tx *store.Tx) error {
			evs, err := tx.Events().Recent(0, store.EventFilter{})
			n = len(evs)
			return err
		})
		return n
	}
	before, calls := count(), h.faults.Calls(csi.RPCDeleteSnapshot)
	for i := 0; i < 3; i++ {
		start := time.Now()
		rep, err := h.e.Reconcile(h.ctx)
		t.Logf("pass %d: %v in %v, problems %d, events +%d, DeleteSnapshot calls +%d", i, err, time.Since(start), len(rep.Problems), count()-before, h.faults.Calls(csi.RPCDeleteSnapshot)-calls)
	}
	if !h.deletingRecorded(s.ID) {
		t.Fatal("forgot")
	}
}

// A delete given --secret (a snapshot volctl does not record), unanswered; reconcile sends it
// without the secret, the plugin refuses it (it needs the secret), and the recorded delete --
// which says the first delete may have deleted the snapshot -- must not be forgotten.
func TestReview30fReconcileWithoutTheDeletesSecrets(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	c := h.pluginClient()
	if _, err := c.CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: h.volumeInfo("db").ExternalID, Name: "other"}); err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCDeleteSnapshot, codes.Unavailable)
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "other", spec.Secrets{"token": "t"}); err == nil {
		t.Fatal("want unanswered")
	}
	h.faults.Clear()
	h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Code: codes.PermissionDenied, When: func(req proto.Message) bool {
		return len(req.(*csipb.DeleteSnapshotRequest).GetSecrets()) == 0
	}})
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v", err, rep.Problems)
	if !h.deletingRecorded("other") {
		t.Fatal("reconcile, which sent the delete without the secret the user gave it and was refused for that, forgot the recorded delete")
	}
}

// The agent's reconcile finishing a recorded delete, its DeleteSnapshot slow; the user
// deregisters the snapshot meanwhile (as reconcile's problem advised): told it is left, it must
// not be deleted.
func TestReview30fDeregisterDuringReconcilesDelete(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.unansweredSnapshotDelete(s.ID)
	h.faults.Clear()
	h.faults.Delay(csi.RPCDeleteSnapshot, 700*time.Millisecond)
	done := make(chan error, 1)
	go func() { _, err := h.e.Reconcile(h.ctx); done <- err }()
	for h.faults.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	warn, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID)
	t.Logf("deregister: %v %v", warn, err)
	t.Logf("reconcile: %v", <-done)
	if err == nil && len(h.mem.Snapshots()) == 0 {
		t.Fatalf("deregister succeeded saying the snapshot is left, and reconcile's delete in flight deleted it")
	}
}

// The same with volctl's own snapshot: its delete unanswered (the plugin did delete it), the user
// takes the snapshot of the same name again.
func TestReview30fRecordedSnapshotTakenAgainThenReconcile(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.unansweredSnapshotDelete(s.ID)
	h.faults.Clear()
	if err := h.pluginClient().DeleteSnapshot(h.ctx, csi.DeleteSnapshotRequest{SnapshotID: s.ID}); err != nil {
		t.Fatal(err)
	}
	s2, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	t.Logf("taken again: %+v %v; plugin has %d; delete recorded %v", s2.ID, err, len(h.mem.Snapshots()), h.deletingRecorded(s.ID))
	if err != nil {
		t.Fatalf("snapshot %q taken again after its delete went through: %v", "nightly", err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v %+v", err, rep.Actions)
	if got := h.mem.Snapshots(); len(got) != 1 {
		t.Fatalf("after reconcile the plugin has %+v: the snapshot taken again was deleted", got)
	}
}

// An unrecorded snapshot's delete unanswered, then the plugin deregistered: reconcile must not
// report the delete every pass with no way out; the advised deregister clears it.
func TestReview30fRecordedDeleteOfADeregisteredPlugin(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	unrecordedDeleteThenVolumeGone(t, h)
	err := h.e.DeregisterPlugin(h.ctx, "mem", false)
	t.Logf("plugin deregister: %v; delete recorded %v", err, h.deletingRecorded("other"))
	if err != nil {
		t.Fatalf("plugin deregister: %v", err)
	}
	for i := 0; i < 2; i++ {
		rep, err := h.e.Reconcile(h.ctx)
		t.Logf("reconcile: %v %+v", err, rep.Problems)
	}
	_, err = h.e.DeregisterSnapshot(h.ctx, "mem", "other")
	t.Logf("snapshot deregister: %v", err)
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile after the advised deregister: %v %+v", err, rep.Problems)
	}
}

// An unrecorded snapshot's delete unanswered, the plugin deregistered, then "mem" registered
// again for another driver that has a snapshot "other": reconcile must not send it the delete
// recorded for the first driver.
func TestReview30fRecordedDeleteSentToAnotherDriverUnderTheID(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	unrecordedDeleteThenVolumeGone(t, h)
	if err := h.e.DeregisterPlugin(h.ctx, "mem", false); err != nil {
		t.Fatal(err)
	}
	cfg := csitest.DefaultMemConfig()
	cfg.Name = "other.driver"
	mem2 := csitest.NewMemPlugin(cfg)
	sock2, _ := csitest.Serve(t, csitest.WithServer(mem2))
	h.registerPlugin("mem", sock2)
	otherDriversSnapshotSurvivesReconcile(t, h, sock2, mem2)
}

// unrecordedDeleteThenVolumeGone makes a snapshot "other" of volume db on the plugin (volctl
// records none), has volctl's delete of it go unanswered (recorded), then deletes db.
func unrecordedDeleteThenVolumeGone(t *testing.T, h *harness) {
	t.Helper()
	if _, err := h.pluginClient().CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: h.volumeInfo("db").ExternalID, Name: "other"}); err != nil {
		t.Fatal(err)
	}
	h.unansweredSnapshotDelete("other")
	h.faults.Clear()
	if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
}
