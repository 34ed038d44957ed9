package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A claim admitted while another operation held the volume's lock waits for it, then drives
// the claim as the store has it. The node's limits were checked at admission from the probe's
// fingerprint; the plugin restarted during the wait with a lower max_volumes_per_node, and the
// claim was published past it: recheckAdmission compared the live fingerprint with
// admission's only when admission had run under the lock. It is refused, rolled back with
// nothing sent, as a claim admitted under the lock is.
func TestClaimThatWaitedForTheLockIsHeldToLimitsStatedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v1"))
	h.create(volume("v2"))
	h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})

	unlock := h.lockVolume("v2") // another operation on v2
	done := make(chan error, 1)
	go func() {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v2", Alloc: "b"})
		done <- err
	}()
	for len(h.liveClaims("v2")) == 0 { // admitted without the lock
		select {
		case err := <-done:
			unlock()
			t.Fatalf("the claim returned while the volume was locked: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	mem := h.restartPlugin(func(c *csitest.MemConfig) { c.MaxVolumes = 1 }, "v1", "v2")
	unlock()
	err := <-done
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "allows 1 volume(s) per node") {
		t.Fatalf("v2's claim after the plugin restarted allowing one volume = %v, want a conflict naming the limit", err)
	}
	if live := h.liveClaims("v2"); len(live) != 0 {
		t.Errorf("v2's claims after the refusal = %+v, want none", live)
	}
	for _, rpc := range []string{"NodeStageVolume", "NodePublishVolume"} {
		if n := mem.CallCount(rpc); n != 0 {
			t.Errorf("%s sent %d times past the node's limit", rpc, n)
		}
	}
	var outcome store.Outcome
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		past, err := tx.History("v2", 1)
		if len(past) == 1 {
			outcome = past[0].Outcome
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if outcome != store.OutcomeRolledBack {
		t.Errorf("v2's claim was freed as %q, want rolled back", outcome)
	}
}
