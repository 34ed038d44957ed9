package engine

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// mem and mem2 are two plugin
// IDs on one socket (one process, one storage). Snapshot "nightly" of db is on the plugin,
// unrecorded (deregistered: the storage kept). Another volctl deletes it through mem2: its
// delete is recorded and it holds the snapshot's lock, its DeleteSnapshot not sent yet. A create
// of "nightly" of db through mem is answered with that very snapshot. Through one plugin ID the
// create waits for the delete's lock and asks again once the delete is over
// (TestSnapshotCreateAnsweredWithOneAboutToBeDeletedAsksAgainAfterTheDelete); but the
// snapshot's lock is named after the plugin ID (snapshotLockName), not the socket, and the
// create looked for a delete recorded under its own ID alone (Deleting(intent.PluginID, ...)):
// it recorded the snapshot at once and said it made it, then the mate's delete deleted it.
// Found by helper review68.
func TestSnapshotCreateWaitsForASocketMatesDeleteOfItsAnswer(t *testing.T) {
	t.Parallel()
	h, s := unrecordedSnapshotOfMates(t)

	// Another volctl's delete through mem2, held once its delete is recorded (at its next lock:
	// the controller's, for DeleteSnapshot).
	var armed atomic.Bool
	reached := make(chan struct{})
	gate := make(chan struct{})
	var once sync.Once
	deleting := func() bool {
		var d bool
		if err := h.e.store.View(h.ctx, func(tx *store.Tx) (err error) {
			d, err = tx.Snapshots().Deleting("mem2", s.ID)
			return err
		}); err != nil {
			t.Error(err)
		}
		return d
	}
	deleter, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts, BeforeLock: func() {
		if armed.Load() && deleting() {
			once.Do(func() { close(reached); <-gate })
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleter.Close() })
	armed.Store(true)
	delDone := make(chan error, 1)
	go func() { delDone <- deleter.DeleteSnapshot(h.ctx, "mem2", s.ID, nil) }()
	select {
	case <-reached:
	case err := <-delDone:
		t.Fatalf("the delete through mem2 returned before it was held with its delete recorded: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the delete through mem2 never took a lock with its delete recorded")
	}

	ctx, waiting := whenWaitingForAnyLock(h.ctx)
	info, cerr := h.createNightlyLettingTheDeleteOn(ctx, waiting, gate)
	derr := <-delDone
	t.Logf("delete through mem2: %v; create through mem: %+v %v", derr, info.ID, cerr)
	if cerr == nil && len(h.mem.Snapshots()) == 0 {
		t.Errorf("the create through mem said it made snapshot %q (recorded: %v), and the delete through its socket mate mem2, in flight, deleted it", info.ID, h.recordedSnapshot(info.ID))
	}
}

// Plugin "split" is
// a monolith with split sockets, its controller on mem's socket (one process: mem's, which
// serves split's controller calls; split's node calls go to a second socket). A release of a
// claim of a split volume, past its node steps, sends ControllerUnpublishVolume to mem's
// process. The agent stops mem's process only under mem's publish lock, counting the mounts of
// every plugin ID on its socket, split's included (socketMates), and promises never to stop it
// under a release's ControllerUnpublishVolume sent once the store shows no mount
// (TestReleaseHoldsThePublishLockAgainstTheAgentsStop). But the release held split's publish
// lock, its node socket's (publishLocks), not the lock of the process it sends the unpublish to:
// the agent's count found no mount and no publish under way, and would have stopped mem's
// process under the RPC. Found by helper review68.
func TestReleaseHoldsThePublishLockOfTheControllerSocketItSendsThrough(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	nodeSock, _ := csitest.Serve(t, csitest.WithServer(h.mem))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "split", Type: spec.PluginMonolith, ControllerSocket: h.socket, NodeSocket: nodeSock}); err != nil {
		t.Fatalf("register split: %v", err)
	}
	sv := volume("db")
	sv.PluginID = "split"
	h.create(sv)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	m, _, err := h.agentsCountDuringARelease("db", "web-0", "mem")
	if err != nil || !m.Any() {
		t.Fatalf("the agent's count of mem's process (split's controller) during split's ControllerUnpublishVolume through it = %+v, %v; "+
			"want a publish under way (Publishing) or a mount: the agent would stop the process under the RPC", m, err)
	}
}

// unrecordedSnapshotOfMates is a snapshot harness with plugin IDs mem and mem2 on one socket
// and snapshot "nightly" of volume db on the plugin, taken through mem, its record forgotten
// (deregistered: the storage kept).
func unrecordedSnapshotOfMates(t *testing.T) (*harness, SnapshotInfo) {
	t.Helper()
	return unrecordedSnapshotOfMatesWith(t, nil)
}

// unrecordedSnapshotOfMatesWith is unrecordedSnapshotOfMates with the plugin configured by mutate.
func unrecordedSnapshotOfMatesWith(t *testing.T, mutate func(*csitest.MemConfig)) (*harness, SnapshotInfo) {
	t.Helper()
	h, _ := snapshotHarness(t, mutate)
	h.registerPlugin("mem2", h.socket)
	s := h.snapshot("nightly")
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID); err != nil {
		t.Fatalf("deregister the snapshot's record: %v", err)
	}
	if len(h.mem.Snapshots()) != 1 {
		t.Fatalf("the plugin's snapshots after the deregister: %d, want the one kept", len(h.mem.Snapshots()))
	}
	return h, s
}
