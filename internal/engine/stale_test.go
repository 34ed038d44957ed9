package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// Writes made without the volume lock must not put back a copy of a claim that someone holding
// the lock has moved on since: these tests make the holder move it in the window.

// A claim admitted while another volctl holds the volume, whose wait for the lock is then cut
// short (Ctrl-C, a deadline), while the holder (a reconcile, or a second claim of the alloc)
// publishes that very claim. Putting the admitted copy (taken) back over the published claim
// made its release skip NodeUnpublishVolume, and the plugin then refused NodeUnstageVolume for
// good.
func TestCancelledLockWaitLeavesAClaimThatMovedOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	unlock := h.lockVolume("v")
	defer func() {
		if unlock != nil {
			unlock()
		}
	}()
	// The waiting claim runs in its own engine, as another volctl process would.
	waiter, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts})
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
		done <- err
	}()
	var id int64
	for deadline := time.Now().Add(30 * time.Second); id == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiting claim was not admitted within 30s")
		}
		_ = h.e.store.View(h.ctx, func(tx *store.Tx) error {
			cl, err := tx.Claims().Find("v", "a")
			id = cl.ID
			return err
		})
	}
	// The holder publishes the claim, then the waiter gives up.
	if cl, err := h.e.drive(h.ctx, id, store.OutcomeRolledBack); err != nil || cl.State != store.ClaimPublished {
		t.Fatalf("the holder's drive = %+v, %v", cl, err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the claim whose lock wait was cancelled succeeded")
	}
	unlock()
	unlock = nil

	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimPublished || live[0].Releasing {
		t.Fatalf("claim after the cancelled wait = %+v, want it published as the holder left it", live)
	}
	h.mem.ResetCalls()
	h.release("v", "a")
	if n := h.mem.CallCount(csi.RPCNodeUnpublishVolume); n != 1 {
		t.Errorf("the release sent NodeUnpublishVolume %d times, want 1 (sent: %v)", n, h.rpcs())
	}
}

// When the waiting claim gives up while its claim is still as admitted, the failure is
// recorded on it, and reconcile publishes it.
func TestCancelledLockWaitRecordsTheFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	unlock := h.lockVolume("v")
	ctx, cancel := endWhenWaitingForLock(h.ctx)
	defer cancel()
	if _, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("a claim that could not get the lock succeeded")
	}
	unlock()
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimTaken || !live[0].NeedsReconcile || live[0].LastError == "" {
		t.Fatalf("claim after its lock wait was cut short = %+v, want taken, flagged, with its error", live)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() {
		t.Fatalf("claim after reconcile = %+v", live)
	}
}

// mountsFunc is a MountTable made of a function, for a test to act when reconcile reads it.
type mountsFunc func(dir string) (map[string]bool, error)

func (f mountsFunc) MountsUnder(dir string) (map[string]bool, error) { return f(dir) }

// Mounted, as fakeMounts: a target that exists is mounted.
func (f mountsFunc) Mounted(root, path string) (MountPoint, error) {
	return fakeMountPoint(path, func() bool { return true })
}

// Reconcile lists the claims and reads the mount table before it settles published claims. A
// release begun after the list (and left for reconcile, NodeUnstageVolume being unavailable)
// was undone by writing back the listed copy of the claim: published, not releasing, at rest,
// while its target was unpublished. The release must survive, and finish on a later pass.
func TestReconcileKeepsAReleaseBegunAfterItsList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	// A published claim flagged for reconcile (a volume_mount that failed to bind, say).
	h.update(func(tx *store.Tx) error {
		cl, err := tx.Claims().Find("v", "a")
		if err != nil {
			return err
		}
		cl.NeedsReconcile = true
		return tx.Claims().Update(&cl)
	})
	h.faults.FailAlways(csi.RPCNodeUnstageVolume, codes.Unavailable)
	inner := h.mounts
	releasedOnce := false
	h.open(Config{Mounts: mountsFunc(func(dir string) (map[string]bool, error) {
		m, err := inner.MountsUnder(dir)
		if !releasedOnce {
			releasedOnce = true
			if _, rerr := h.e.Release(h.ctx, "v", "a"); rerr == nil {
				t.Error("the release with NodeUnstageVolume unavailable succeeded")
			}
		}
		return m, err
	})})
	_, _ = h.e.Reconcile(h.ctx)
	live := h.liveClaims("v")
	if len(live) != 1 || !live[0].Releasing || live[0].State == store.ClaimPublished {
		t.Fatalf("claims after the reconcile = %+v, want the release kept", live)
	}
	h.faults.Clear()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the plugin well: %v %+v", err, rep)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the release finished = %+v", live)
	}
}

// A claim rolled back after a final error is committed as releasing before the rollback's first
// RPC: were the process to die during it, reconcile must finish the rollback, not publish the
// claim again for an alloc that was told it failed.
func TestRollbackIsCommittedBeforeItsFirstRPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.faults.FailOnce(csi.RPCNodeStageVolume, codes.InvalidArgument)
	h.faults.Inject(csi.RPCNodeUnstageVolume, csitest.Fault{Delay: 300 * time.Millisecond, Times: 1})
	done := make(chan error, 1)
	go func() {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
		done <- err
	}()
	// While the rollback's NodeUnstageVolume is in flight, the store must say where it is going.
	for deadline := time.Now().Add(30 * time.Second); h.faults.Calls(csi.RPCNodeUnstageVolume) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rollback sent no NodeUnstageVolume within 30s")
		}
	}
	live := h.liveClaims("v")
	if len(live) != 1 || !live[0].Releasing {
		t.Errorf("claim while the rollback's first RPC is in flight = %+v, want it committed as releasing", live)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("claim = %v, want it rolled back", err)
	}
}

// setGroupState writes a group's state directly, as a StopGroup cut short before releasing its
// claims (or a group run again) leaves it.
func setGroupState(t *testing.T, h *harness, name string, state store.GroupState) {
	t.Helper()
	h.update(func(tx *store.Tx) error {
		g, err := tx.Groups().Get(name)
		if err != nil {
			return err
		}
		g.State = state
		return tx.Groups().Put(&g)
	})
}

// Reconcile releases the claims of a stopped group as it read the groups at the start of the
// pass. A group run again after that read keeps its claims.
func TestReconcileKeepsTheClaimsOfAGroupRunAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
		t.Fatal(err)
	}
	setGroupState(t, h, "db", store.GroupStopped)
	inner := h.mounts
	h.open(Config{Mounts: mountsFunc(func(dir string) (map[string]bool, error) {
		setGroupState(t, h, "db", store.GroupRunning) // run again after the pass read the groups
		return inner.MountsUnder(dir)
	})})
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Fatalf("reconcile = %+v, %v; want nothing done", rep, err)
	}
	for _, vol := range []string{"data[0]", "shared"} {
		if live := h.liveClaims(vol); len(live) != 1 || !live[0].AtRest() {
			t.Errorf("claims of %s after reconcile = %+v, want the running group's claim kept", vol, live)
		}
	}
	if got := h.rpcs(); len(got) != 0 {
		t.Errorf("reconcile sent %v, want nothing", got)
	}

	// A group still stopped has its claims released.
	h.open(Config{})
	setGroupState(t, h, "db", store.GroupStopped)
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 2 {
		t.Fatalf("reconcile of the stopped group = %+v, %v; want its two claims released", rep, err)
	}
	for _, vol := range []string{"data[0]", "shared"} {
		if live := h.liveClaims(vol); len(live) != 0 {
			t.Errorf("claims of %s after reconcile = %+v, want none", vol, live)
		}
	}
}
