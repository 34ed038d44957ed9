package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// The same for the write that clears a published claim's flag for reconcile once its target is
// found mounted (settleLocked, through save): it checked nothing inside its transaction. A
// settle that waited for the database while the lock file was removed and a second volctl took
// the lock on a new file (and, say, marked the claim releasing) wrote its stale copy of the claim
// over the row the second drives. Checked inside the transaction, nothing is written and the
// settle stops, naming the lock file.
func TestLockFileDeletedWhileASettleWaitsForTheDatabaseWritesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	cl := h.liveClaims("db")[0]
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		cl.NeedsReconcile = true
		return tx.Claims().Update(&cl)
	}); err != nil {
		t.Fatal(err)
	}
	unlock, err := h.e.locks.volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	lockPath, err := h.lockLostWhileWaitingForTheDatabase("db", "engine.(*Engine).save", func() error {
		_, err := h.e.settleLocked(h.ctx, cl.ID)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), lockPath) {
		t.Errorf("the settle whose lock file was deleted while it waited: %v; want it stopped, naming %s", err, lockPath)
	}
	if live := h.liveClaims("db"); len(live) != 1 || !live[0].NeedsReconcile || !live[0].UpdatedAt.Equal(cl.UpdatedAt) {
		t.Errorf("claims after = %+v; want the one as it was (%+v): nothing written once the second volctl held the lock", live, cl)
	}
}

// The same for a claim's check of its volume's staging (restageIfLost, under the lock, on the
// claim path): a staging its row says staged but the mount table, read before, lacks was marked
// unstaged in a transaction that checked nothing. Waiting for the database while the lock was
// lost, it marked unstaged a staging a second volctl may have made since, whose NodeUnstageVolume
// a release then skips. Checked inside the transaction, nothing is written.
func TestLockFileDeletedWhileALostStagingsMarkWaitsForTheDatabaseWritesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	st, ok, err := h.e.getStaging(h.ctx, "db")
	if err != nil || !ok || !st.Staged {
		t.Fatalf("staging of db after the claim: %+v, %v, %v; want staged", st, ok, err)
	}
	h.mounts.markGone(st.StagingPath)
	unlock, err := h.e.locks.volume(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	lockPath, err := h.lockLostWhileWaitingForTheDatabase("db", "engine.(*Engine).restageIfLost", func() error {
		return h.e.restageIfLost(h.ctx, "db", nil)
	})
	if err == nil || !strings.Contains(err.Error(), lockPath) {
		t.Errorf("the staging check whose lock file was deleted while it waited: %v; want it stopped, naming %s", err, lockPath)
	}
	if after, ok, err := h.e.getStaging(h.ctx, "db"); err != nil || !ok || !after.Staged {
		t.Errorf("staging of db after = %+v, %v, %v; want it still staged: nothing written once the second volctl held the lock", after, ok, err)
	}
}
