package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestReconcileRemovesTheLockFilesOfSnapshotsItHasNothingOf: a snapshot's delete and its
// deregister lock it (locks/snapshot-HASH.lock), and a delete of an ID of none does too, so a
// state dir that snapshots a volume and deletes the snapshot per CI job kept a lock file per
// snapshot for good. A reconcile pass removes those of snapshots the state names nowhere, and
// keeps those of a snapshot still recorded and one another operation holds; a snapshot deleted
// under a removed lock's name is locked and deleted as before.
func TestReconcileRemovesTheLockFilesOfSnapshotsItHasNothingOf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	ids := map[string]string{}
	for _, name := range []string{"deleted", "deregistered", "kept", "again"} {
		sn, err := h.e.CreateSnapshot(h.ctx, "db", name, nil)
		if err != nil {
			t.Fatalf("snapshot create %s: %v", name, err)
		}
		ids[name] = sn.ID
	}
	if err := h.e.DeleteSnapshot(h.ctx, "mem", ids["deleted"], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", ids["deregistered"]); err != nil {
		t.Fatal(err)
	}
	// An ID volctl does not record is the plugin's to answer (gone is done), locked all the same.
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "typo", nil); err != nil {
		t.Fatalf("delete of a snapshot volctl does not record: %v", err)
	}
	// "kept" is recorded, with a lock file: a delete of it that the plugin refused.
	unlock, err := h.e.locks.snapshot(h.ctx, "mem", ids["kept"])
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	// "held": an operation holds the lock of a snapshot not recorded (a create answered with
	// it, say, waiting for its delete).
	unlockHeld, err := h.e.locks.snapshot(h.ctx, "mem", "held")
	if err != nil {
		t.Fatal(err)
	}
	lockFile := func(id string) string { return filepath.Join(h.dir, lockDir, snapshotLockName("mem", id)+".lock") }
	for _, id := range []string{ids["deleted"], ids["deregistered"], "typo", ids["kept"], "held"} {
		if _, err := os.Lstat(lockFile(id)); err != nil {
			t.Fatalf("before reconcile: %v; the test wants snapshot %q's lock file there", err, id)
		}
	}
	_, err = h.e.Reconcile(h.ctx)
	unlockHeld()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ids["deleted"], ids["deregistered"], "typo"} {
		if _, err := os.Lstat(lockFile(id)); !os.IsNotExist(err) {
			t.Errorf("lock file of snapshot %q, which the state has nothing of, after reconcile: %v; want it removed", id, err)
		}
	}
	for _, id := range []string{ids["kept"], "held"} {
		if _, err := os.Lstat(lockFile(id)); err != nil {
			t.Errorf("lock file of snapshot %q after reconcile: %v; want it kept (recorded, or held)", id, err)
		}
	}
	if n := snapshotLockFiles(t, h); n != 2 {
		t.Errorf("snapshot lock files after reconcile = %d, want 2 (kept's and held's)", n)
	}
	// A snapshot whose lock file a pass removed is locked again by its delete.
	if err := h.e.DeleteSnapshot(h.ctx, "mem", ids["again"], nil); err != nil {
		t.Fatalf("delete after the pass: %v", err)
	}
	if _, err := os.Lstat(lockFile(ids["again"])); err != nil {
		t.Errorf("lock file of the snapshot deleted after the pass: %v; want its delete to have made it", err)
	}
}

// TestSnapshotLockFilesTidiedBesideSnapshotsMadeAndDeletedAgainAndAgain: reconcile passes run
// while another volctl creates and deletes a snapshot of one name over and over (whose lock
// file the passes find with nothing recorded between a delete and the next), and while each
// delete holds it: none is stopped as having lost its lock, none fails, and what is left at the
// end is removed by the next pass.
func TestSnapshotLockFilesTidiedBesideSnapshotsMadeAndDeletedAgainAndAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	other := h.otherProcess()
	h.reconcilingBeside(func() {
		for i := range 25 {
			sn, err := other.CreateSnapshot(h.ctx, "db", "nightly", nil)
			if err != nil {
				t.Fatalf("round %d: snapshot create: %v", i, err)
			}
			if err := other.DeleteSnapshot(h.ctx, "mem", sn.ID, nil); err != nil {
				t.Fatalf("round %d: snapshot delete: %v", i, err)
			}
		}
	})
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if n := snapshotLockFiles(t, h); n != 0 {
		t.Errorf("snapshot lock files once every snapshot is deleted and a pass ran = %d, want 0", n)
	}
}

// snapshotLockFiles counts the snapshot lock files in h's state dir.
func snapshotLockFiles(t *testing.T, h *harness) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(h.dir, lockDir))
	if err != nil {
		t.Fatal(err)
	}
	return len(slices.DeleteFunc(entries, func(en os.DirEntry) bool { return !strings.HasPrefix(en.Name(), snapshotLockPrefix) }))
}

// TestReconcileRemovesTheLockFilesOfPluginSocketsNoLongerRegistered: a create through a plugin
// takes its controller socket's locks and a claim its node socket's publish locks (socketLocks,
// two files each), which stayed after the plugin's deregistration, so a state dir registering a
// plugin at a temporary socket per CI job kept four files per job. A reconcile pass removes
// those of sockets no plugin registered has, and keeps the registered plugin's.
func TestReconcileRemovesTheLockFilesOfPluginSocketsNoLongerRegistered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	socket2, _ := csitest.Serve(t, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
	h.registerPlugin("mem2", socket2)
	for _, pid := range []string{"mem", "mem2"} {
		v := volume("v-" + pid)
		v.PluginID = pid
		h.create(v)
		h.claim(ClaimRequest{VolumeID: v.ID, Alloc: "web"})
		h.release(v.ID, "web")
	}
	if err := h.e.DeleteVolume(h.ctx, "v-mem2"); err != nil {
		t.Fatal(err)
	}
	gone := append(socketLocks("controller", "mem2", socket2), socketLocks("publish", "mem2", socket2)...)
	kept := append(socketLocks("controller", "mem", h.socket), socketLocks("publish", "mem", h.socket)...)
	lockFile := func(name string) string { return filepath.Join(h.dir, lockDir, name+".lock") }
	for _, name := range append(gone, kept...) {
		if _, err := os.Lstat(lockFile(name)); err != nil {
			t.Fatalf("before reconcile: %v; the test wants the socket lock file there", err)
		}
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem2", false); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range gone {
		if _, err := os.Lstat(lockFile(name)); !os.IsNotExist(err) {
			t.Errorf("lock file %s of the deregistered plugin's socket after reconcile: %v; want it removed", name, err)
		}
	}
	for _, name := range kept {
		if _, err := os.Lstat(lockFile(name)); err != nil {
			t.Errorf("lock file %s of the registered plugin's socket after reconcile: %v; want it kept", name, err)
		}
	}
	// The registered plugin goes on as before; one registered again at the removed files'
	// socket takes new ones.
	h.registerPlugin("mem2", socket2)
	v := volume("again")
	v.PluginID = "mem2"
	h.create(v)
	h.claim(ClaimRequest{VolumeID: "again", Alloc: "web"})
	h.release("again", "web")
	for _, name := range gone {
		if _, err := os.Lstat(lockFile(name)); err != nil {
			t.Errorf("lock file %s once the plugin is registered again and used: %v", name, err)
		}
	}
}
