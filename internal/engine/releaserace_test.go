package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A reconcile (the agent's, or a user's) lists a claim whose `volume release` is in flight (the
// release marks it releasing, then holds the volume's lock through its RPCs) and waits for the
// lock; the release frees the claim. The claim gone meanwhile is nothing left to do: the pass
// must neither report it as a problem nor fail (a reconcile run beside a release exited 1 with
// "claim N: not found", telling the user to fix something that was fine).
func TestReconcileLeavesAClaimReleasedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	relErr, err, rep := h.reconcileBeside(h.otherProcess(), csi.RPCNodeUnpublishVolume, h.releaseOf("v", "web-0"), "v")
	if relErr != nil {
		t.Fatalf("release: %v", relErr)
	}
	if err != nil {
		t.Errorf("reconcile beside a release that freed the claim: %v (problems %+v)", err, rep.Problems)
	}
	for _, a := range rep.Actions {
		if a.VolumeID == "v" {
			t.Errorf("reconcile reports %q for a claim another volctl released", a.Message)
		}
	}
	if n := h.faults.Calls(csi.RPCNodeUnpublishVolume); n != 1 {
		t.Errorf("NodeUnpublishVolume sent %d times, want once (the release's)", n)
	}
}

// beside runs op in this process with rpc held at the plugin, then then(ctx) (another
// process's operation on vol), which must wait for vol's lock (it failed the test if it
// answered before); then lets the RPC go and returns op's result and then's.
func (h *harness) beside(rpc string, op func() error, vol string, then func(context.Context) error) (opErr, thenErr error) {
	h.t.Helper()
	gate := make(chan struct{})
	h.faults.Inject(rpc, csitest.Fault{Gate: gate, Times: 1})
	opDone := make(chan error, 1)
	go func() { opDone <- op() }()
	h.waitInFlight(gate, opDone)

	ctx, waiting := whenWaitingForLock(h.ctx, vol)
	thenDone := make(chan error, 1)
	go func() { thenDone <- then(ctx) }()
	select {
	case <-waiting:
	case err := <-thenDone:
		close(gate)
		<-opDone
		h.t.Fatalf("the operation beside %s returned while it was in flight, without waiting for it: %v", rpc, err)
	}
	close(gate)
	opErr = <-opDone
	return opErr, <-thenDone
}

// claimBeside is beside with other's claim of req, returning the claim's answer too.
func (h *harness) claimBeside(other *Engine, rpc string, op func() error, req ClaimRequest) (opErr, claimErr error, info ClaimInfo) {
	h.t.Helper()
	opErr, claimErr = h.beside(rpc, op, req.VolumeID, func(ctx context.Context) error {
		var err error
		info, err = other.Claim(ctx, req)
		return err
	})
	return opErr, claimErr, info
}

// reconcileBeside is beside with other's reconcile, returning its report too.
func (h *harness) reconcileBeside(other *Engine, rpc string, op func() error, vol string) (opErr, recErr error, rep ReconcileReport) {
	h.t.Helper()
	opErr, recErr = h.beside(rpc, op, vol, func(ctx context.Context) error {
		var err error
		rep, err = other.Reconcile(ctx)
		return err
	})
	return opErr, recErr, rep
}

// releaseOf is a `volume release` of alloc's claim on vol, for claimBeside.
func (h *harness) releaseOf(vol, alloc string) func() error {
	return func() error { _, err := h.e.Release(h.ctx, vol, alloc); return err }
}

// An alloc claims a volume again while its earlier claim's `volume release` is in flight in
// another process (holding the volume's lock through its RPCs). The release is not stuck: it
// ends in a moment, so the claim waits for it, as for any operation holding the volume, and then
// claims anew. It said "the claim is being released (finish it with `volctl reconcile`)",
// exit 4, sending the user to run a reconcile beside the live release.
func TestClaimWaitsForTheAllocsReleaseInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	relErr, err, info := h.claimBeside(h.otherProcess(), csi.RPCNodeUnpublishVolume, h.releaseOf("v", "web-0"), ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	if relErr != nil || err != nil {
		t.Fatalf("release: %v; the claim after it: %v", relErr, err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].Alloc != "web-0" || live[0].Releasing || !live[0].AtRest() || live[0].TargetPath != info.TargetPath {
		t.Errorf("live claims = %+v (claim answered %+v), want web-0's new claim, published", live, info)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 2 {
		t.Errorf("NodePublishVolume sent %d times, want twice (the first claim's and the new one's)", n)
	}
}

// The same claim when the release was interrupted (its process gone, the claim left releasing
// with nobody working on it): under the volume's lock it is still releasing, and the claim is
// refused naming the way out, `volctl reconcile`, at once.
func TestClaimOfAnInterruptedReleaseNamesReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	h.faults.FailNext(csi.RPCNodeUnpublishVolume, codes.Unavailable, fastRetry.Attempts)
	if _, err := h.e.Release(h.ctx, "v", "web-0"); err == nil {
		t.Fatal("release succeeded through NodeUnpublishVolume failing UNAVAILABLE")
	}
	_, err := h.otherProcess().Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	if err == nil || !strings.Contains(err.Error(), "being released") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("claim of a claim left releasing = %v, want it refused naming `volctl reconcile`", err)
	}
}

// Another alloc claims a single-node-writer volume while the holder's release is in flight in
// another process: the holder in the way is going away, so the claim waits for the release and
// is admitted after it. It was refused at once (exit 4), naming the holder "being released: its
// release has not finished; `volctl reconcile` finishes it" while that release was running.
// A holder left releasing by an interrupted release still refuses it under the lock.
func TestClaimWaitsForTheHoldersReleaseInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	other := h.otherProcess()
	relErr, err, _ := h.claimBeside(other, csi.RPCNodeUnpublishVolume, h.releaseOf("v", "web-0"), ClaimRequest{VolumeID: "v", Alloc: "web-1"})
	if relErr != nil || err != nil {
		t.Fatalf("release: %v; the claim after it: %v", relErr, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "web-1" || !live[0].AtRest() {
		t.Errorf("live claims = %+v, want web-1's alone, published", live)
	}

	// The holder's release interrupted: refused, naming the way out.
	h.faults.FailNext(csi.RPCNodeUnpublishVolume, codes.Unavailable, fastRetry.Attempts)
	if _, err := h.e.Release(h.ctx, "v", "web-1"); err == nil {
		t.Fatal("release succeeded through NodeUnpublishVolume failing UNAVAILABLE")
	}
	_, err = other.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-2"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("claim beside a holder left releasing = %v, want a conflict naming `volctl reconcile`", err)
	}
}

// A claim of a volume whose `volume create` is in flight in another process (its CreateVolume
// held at the plugin) waits for the create and claims the volume it made; one whose `volume
// delete` is in flight waits and says the volume is not found. Both answered at once "volume
// "v" is creating (deleting), not ready (run `volctl reconcile`)": a reconcile run then, beside
// the live create or delete, can only wait for the same lock.
func TestClaimWaitsForACreateOrDeleteInFlight(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCDeleteVolume} {
		t.Run(rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			op := func() error { _, err := h.e.CreateVolume(h.ctx, volume("v")); return err }
			if rpc == csi.RPCDeleteVolume {
				h.create(volume("v"))
				op = func() error { return h.e.DeleteVolume(h.ctx, "v") }
			}
			opErr, err, _ := h.claimBeside(h.otherProcess(), rpc, op, ClaimRequest{VolumeID: "v", Alloc: "web-0"})
			if opErr != nil {
				t.Fatalf("the operation: %v", opErr)
			}
			if rpc == csi.RPCCreateVolume && err != nil {
				t.Errorf("claim after the create in flight: %v", err)
			}
			if rpc == csi.RPCDeleteVolume && !errors.Is(err, ErrNotFound) {
				t.Errorf("claim after the delete in flight = %v, want not found", err)
			}
		})
	}
}

// A claim that waited for a `volume delete` in flight in another process says the volume was
// deleted by another volctl meanwhile, not only "not found", which (the command line adds) sends
// the user to look in another state dir or for another user's volume: the claim saw the volume,
// being deleted, a moment before.
func TestClaimAfterADeleteInFlightSaysTheVolumeWasDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	opErr, err, _ := h.claimBeside(h.otherProcess(), csi.RPCDeleteVolume, func() error { return h.e.DeleteVolume(h.ctx, "v") }, ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	if opErr != nil {
		t.Fatalf("the delete: %v", opErr)
	}
	want := `volume "v" was deleted by another volctl meanwhile`
	if !errors.Is(err, ErrNotFound) || !IsGoneMeanwhile(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "volctl volume delete") {
		t.Errorf("claim after the delete in flight = %v; want not found, saying %s and naming the delete", err, want)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"}); !errors.Is(err, ErrNotFound) || IsGoneMeanwhile(err) {
		t.Errorf("claim of the volume deleted before it began = %v; want a plain not found", err)
	}
}

// A volume left creating or deleting by an interrupted command (nobody holds its lock): a
// claim, an expand and a snapshot are each refused as a conflict that names the way out. The
// expand and the snapshot said only "volume "v" is deleting".
func TestOperationsOnAnInterruptedVolumeNameReconcile(t *testing.T) {
	t.Parallel()
	for _, state := range []store.VolumeState{store.VolumeCreating, store.VolumeDeleting} {
		t.Run(string(state), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.update(func(tx *store.Tx) error {
				v, err := tx.Volumes().Get("v")
				if err != nil {
					return err
				}
				v.State = state
				return tx.Volumes().Update(&v)
			})
			ops := map[string]func() error{
				"claim":    func() error { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"}); return err },
				"expand":   func() error { _, err := h.e.ExpandVolume(h.ctx, "v", 2<<20, 0); return err },
				"snapshot": func() error { _, err := h.e.CreateSnapshot(h.ctx, "v", "s1", nil); return err },
			}
			for name, op := range ops {
				err := op()
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "run `volctl reconcile`") || !strings.Contains(err.Error(), string(state)) {
					t.Errorf("%s of a volume left %s = %v, want a conflict naming its state and `volctl reconcile`", name, state, err)
				}
			}
		})
	}
}

// A claim that waited for a `volume create` in flight in another process whose CreateVolume
// then failed for good (the volume forgotten) says so: not that a `volctl volume delete` nobody
// ran deleted it. It is no plain "not found" either (the volume was there a moment before).
func TestClaimAfterAFailedCreateInFlightSaysTheCreateFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Gate: gate, Code: codes.InvalidArgument, Times: 1})
	opDone := make(chan error, 1)
	go func() { _, err := h.e.CreateVolume(h.ctx, volume("v")); opDone <- err }()
	h.waitInFlight(gate, opDone)
	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	claimDone := make(chan error, 1)
	other := h.otherProcess()
	go func() { _, err := other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); claimDone <- err }()
	<-waiting
	close(gate)
	if err := <-opDone; err == nil {
		t.Fatal("the create succeeded; the test's premise is a CreateVolume failing for good")
	}
	err := <-claimDone
	want := `volume "v" is gone: it was being created by another volctl while this command waited, and that create failed and was forgotten`
	if !errors.Is(err, ErrNotFound) || !IsGoneMeanwhile(err) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "volume delete") {
		t.Errorf("claim after a failed create in flight = %v; want not found, saying %s, naming no `volctl volume delete`", err, want)
	}
}
