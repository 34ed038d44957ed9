package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A claim admitted while another operation held the volume, whose claim a release then freed
// before the claim got the lock, is a conflict (exit 4), not a runtime error: two volctl
// processes disagreed about one claim and the release went first. Found by cmd/volctl's
// TestConcurrentClaims; here the interleaving is forced.
func TestClaimOvertakenByRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter)))
	unlock := h.lockVolume("db") // another process's operation on the volume
	done := make(chan error, 1)
	go func() {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		done <- err
	}()
	// The claim is admitted without the lock, then waits for it.
	var id int64
	for id == 0 {
		select {
		case err := <-done:
			t.Fatalf("the claim returned while the volume was locked: %v", err)
		default:
		}
		err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
			c, err := tx.Claims().Find("db", "web-0")
			id = c.ID
			return err
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	// A release (of a claim in state taken: nothing to undo) frees it before the claim gets
	// the lock.
	h.update(func(tx *store.Tx) error { return tx.Claims().Free(id, store.OutcomeReleased) })
	unlock()
	err := <-done
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `claim "db" for alloc "web-0": the claim was released by another volctl meanwhile`) {
		t.Fatalf("err = %v, want a conflict saying the claim was released meanwhile", err)
	}
	if n := h.mem.CallCount("NodePublishVolume"); n != 0 {
		t.Errorf("NodePublishVolume sent %d times for a claim that no longer exists", n)
	}
}
