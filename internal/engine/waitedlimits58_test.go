package engine

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
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

// The same for the plugin's controller lock (found by review 58): a claim admitted and
// rechecked waits for it (another volctl's operation through the plugin holds it) while the
// plugin restarts stating a topology the volume is not accessible from, or a lower
// max_volumes_per_node. The socket file changed, so the plugin is fingerprinted again before
// the RPC (checkSockets); that went on when the driver, capabilities and node ID were the
// same, and the volume was attached, staged and published on a node the plugin says cannot
// reach it. No RPC that puts the volume on the node is sent, and the claim is rolled back, as
// admission would have refused it.
func TestClaimThatWaitedForTheControllerLockIsHeldToLimitsStatedMeanwhile(t *testing.T) {
	t.Parallel()
	zoneA := &spec.Topology{Segments: map[string]string{"zone": "a"}}
	for _, c := range []struct {
		name    string
		other   bool // another volume on the node first
		restart func(*csitest.MemConfig)
		want    string
	}{
		{"topology", false, func(c *csitest.MemConfig) { c.Topology = &spec.Topology{Segments: map[string]string{"zone": "b"}} },
			"accessible topology {zone=b}, was {zone=a})"},
		{"max volumes", true, func(c *csitest.MemConfig) { c.MaxVolumes = 1 }, "max_volumes_per_node 1, was 0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) { c.Topology, c.CreateTopology = zoneA, zoneA })
			h.create(volume("v"))
			if c.other {
				h.create(volume("v0"))
				h.claim(ClaimRequest{VolumeID: "v0", Alloc: "a0"})
			}
			done, unlock := claimWaitingForTheControllerLock(t, h)
			h.restartWith(c.restart)
			unlock()
			err := <-done
			if err == nil || !strings.Contains(err.Error(), "restarted mid-operation stating other node limits ("+c.want) {
				t.Errorf("the claim after the plugin restarted with other node limits = %v; want it not sent, naming them (%s)", err, c.want)
			}
			if err != nil && !strings.Contains(err.Error(), "(the claim was rolled back)") {
				t.Errorf("the claim refused = %v; want it rolled back, as admission's refusal", err)
			}
			_, _ = h.e.Reconcile(h.ctx)
			for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
				if n := h.mem.CallCount(rpc); n != 0 {
					t.Errorf("%s sent %d times after the plugin stated limits the claim is outside of (RPCs: %v)", rpc, n, h.rpcs())
				}
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("v's claims = %+v, want it rolled back", live)
			}
		})
	}
}

// claimWaitingForTheControllerLock holds plugin mem's controller lock as another process, and
// starts a claim of volume v for alloc a, which waits for it: it returns once the claim says it
// waits, with the claim's outcome to come and the lock's release.
func claimWaitingForTheControllerLock(t *testing.T, h *harness) (<-chan error, func()) {
	t.Helper()
	unlock, err := h.otherProcess().locks.controller(h.ctx, "mem", h.socket)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	var once sync.Once
	ctx := WithProgress(h.ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on plugin") {
			once.Do(func() { close(waiting) })
		}
	})
	done := make(chan error, 1)
	go func() { _, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); done <- err }()
	select {
	case <-waiting:
	case err := <-done:
		unlock()
		t.Fatalf("the claim ended before it waited for the controller lock: %v", err)
	}
	return done, unlock
}
