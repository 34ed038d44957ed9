package engine

import (
	"context"
	"testing"
	"time"
)

// A snapshot create answered with a snapshot whose delete another volctl has recorded waits for
// that delete (the snapshot's lock) before it asks the plugin again. The delete is hung (its
// DeleteSnapshot not answered: here held before it is sent, its snapshot lock taken). The create
// must not hold its source volume's lock while it waits: a release (or claim) of that volume,
// in a third volctl, would wait for as long as the plugin hangs. Before, the release waited for
// the volume's lock until the delete ended.
func TestSnapshotCreateWaitingForAHungDeleteDoesNotHoldItsVolume(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	s := h.snapshot("nightly")
	gate, delDone := h.deleteHeldOnceRecorded(s.ID)
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()
	let := func() { released = true; close(gate) }

	ctx, waiting := whenWaitingForAnyLock(h.ctx)
	type result struct {
		info SnapshotInfo
		err  error
	}
	createDone := make(chan result, 1)
	go func() { info, err := h.e.CreateSnapshot(ctx, "db", "nightly", nil); createDone <- result{info, err} }()
	select {
	case <-waiting: // it waits for the delete
	case r := <-createDone:
		t.Fatalf("the create returned before waiting for the delete of the snapshot it was answered with: %+v %v", r.info, r.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the create neither waited for a lock nor returned")
	}

	other := h.otherProcess()
	rctx, relWaiting := whenWaitingForAnyLock(h.ctx)
	relDone := make(chan error, 1)
	go func() { _, err := other.Release(rctx, "db", "web-0"); relDone <- err }()
	select {
	case <-relWaiting:
		let()
		t.Errorf("the release of volume db waited for a lock while a snapshot create of db waited for a hung delete of the snapshot it was answered with")
		if err := <-relDone; err != nil {
			t.Errorf("release, once the delete went on: %v", err)
		}
	case err := <-relDone:
		if err != nil {
			t.Errorf("release of db beside a create waiting for a hung delete: %v", err)
		}
		let()
	case <-time.After(30 * time.Second):
		let()
		t.Fatal("the release neither waited for a lock nor returned")
	}
	if live := h.liveClaims("db"); len(live) != 0 {
		t.Errorf("claims of db after the release: %+v", live)
	}

	var created result
	select {
	case created = <-createDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the create never returned once the delete went on")
	}
	h.createOutlivedTheDelete(created.info.ID, created.err, <-delDone, "it waited for")
	if created.err != nil {
		t.Errorf("the create, once the delete it waited for ended: %v", created.err)
	}
}

// The create's wait for the delete ends with its context (^C): it returns, its intent kept for
// reconcile, and holds no lock after (a claim of the volume goes on).
func TestSnapshotCreateWaitingForAHungDeleteEndsWithItsContext(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	gate, delDone := h.deleteHeldOnceRecorded(s.ID)
	defer func() { close(gate); <-delDone }()
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	ctx, waiting := whenWaitingForAnyLock(ctx)
	createDone := make(chan error, 1)
	go func() { _, err := h.e.CreateSnapshot(ctx, "db", "nightly", nil); createDone <- err }()
	select {
	case <-waiting:
	case err := <-createDone:
		t.Fatalf("the create returned before waiting: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the create neither waited for a lock nor returned")
	}
	cancel()
	var err error
	select {
	case err = <-createDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the create did not end with its context")
	}
	if err == nil {
		t.Fatal("the create cancelled while it waited said it made the snapshot")
	}
	t.Logf("create: %v", err)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
}
