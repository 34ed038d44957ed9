package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// After a reboot, an alloc claims its volume again (its task restarting) while another volctl
// holds the volume's lock, claiming it for a second alloc, which stages the volume again. The
// claim again read the mount table before it waited for the lock: the staging was gone then.
// Before, once it had the lock, it restored the claim from that table: it marked the staging
// the other volctl had just made unstaged and sent NodeStageVolume again over it (a plugin that
// mounts without looking stacks a second mount there). It reads the table again under the lock,
// and publishes onto the staging as it is.
func TestClaimAgainDoesNotStageAgainAStagingMadeWhileItWaited(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.MultiNodeMultiWriter)
	table := &republishedMounts{fakeMounts: h.mounts, mem: h.mem, since: len(h.mem.Calls())}
	agent, cli := h.processWith(table), h.processWith(table)
	h.faults.ResetCounts()
	otherErr, againErr := h.whileHeld(csi.RPCNodeStageVolume, "claim again", true,
		func() error { _, err := agent.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"}); return err },
		func(ctx context.Context) error {
			_, err := cli.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			return err
		})
	if otherErr != nil {
		t.Fatalf("the second alloc's claim: %v", otherErr)
	}
	if againErr != nil {
		t.Fatalf("the claim again: %v", againErr)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != 1 {
		t.Errorf("NodeStageVolume sent %d times; want once, by the second alloc's claim: the claim again staged the volume over that staging", n)
	}
	if st, ok := h.staging("v"); !ok || !st.Staged {
		t.Errorf("staging of v = %+v (found %v); want staged", st, ok)
	}
	for _, cl := range h.liveClaims("v") {
		if !cl.AtRest() || cl.Degraded {
			t.Errorf("claim of %q = %+v; want it published", cl.Alloc, cl)
		}
	}
}

// gatedTable is a mount table whose reads, once armed, wait at a gate: the first read after
// arm says so on reached, then blocks until the gate is closed.
type gatedTable struct {
	MountTable
	mu      sync.Mutex
	armed   bool
	reached chan struct{}
	gate    chan struct{}
}

func (g *gatedTable) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.reached, g.gate = true, make(chan struct{}), make(chan struct{})
}

func (g *gatedTable) MountsUnder(dir string) (map[string]bool, error) {
	g.mu.Lock()
	armed, reached, gate := g.armed, g.reached, g.gate
	g.armed = false
	g.mu.Unlock()
	if armed {
		close(reached)
		<-gate
	}
	return g.MountTable.MountsUnder(dir)
}

// The same when what the other volctl does while holding the lock is to restore this very
// claim (the alloc claiming again from two processes at once, a task restarted twice): the
// claim again, from its table read before the lock, published the claim again onto its target
// mounted meanwhile. Against a plugin that answers that NodePublishVolume with ALREADY_EXISTS,
// the claim was left degraded and the command failed, though the claim was published and in
// use. It reads the table again under the lock and hands back the claim as it is.
func TestClaimAgainDoesNotRestoreAClaimRestoredWhileItWaited(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	table := &republishedMounts{fakeMounts: h.mounts, mem: h.mem, since: len(h.mem.Calls())}
	held := &gatedTable{MountTable: table}
	agent, cli := h.processWith(held), h.processWith(table)
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Times: 1})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Code: codes.AlreadyExists, Message: "already published"})
	h.faults.ResetCounts()
	held.arm()
	first := make(chan error, 1)
	go func() { _, err := agent.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); first <- err }()
	select {
	case <-held.reached:
	case err := <-first:
		t.Fatalf("the first claim again returned before reading the mount table: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first claim again never read the mount table")
	}
	// The first holds the volume's lock now, its restore not begun.
	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	second := make(chan error, 1)
	go func() { _, err := cli.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); second <- err }()
	select {
	case <-waiting:
	case err := <-second:
		close(held.gate)
		t.Fatalf("the second claim again returned before waiting for the volume's lock: %v", err)
	case <-time.After(30 * time.Second):
		close(held.gate)
		t.Fatal("the second claim again never waited for the volume's lock")
	}
	close(held.gate)
	if err := <-first; err != nil {
		t.Fatalf("the first claim again: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("the second claim again: %v; want the claim handed back, restored by the first", err)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 1 {
		t.Errorf("NodePublishVolume sent %d times; want once: the second claim again published a claim restored meanwhile", n)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimPublished || live[0].Degraded {
		t.Errorf("claims = %+v; want the one claim published, as the first left it", live)
	}
}
