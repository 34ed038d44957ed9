package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A reconcile (the agent's, or a user's) lists a claim whose `volume release` is in flight (the
// release marks it releasing, then holds the volume's lock through its RPCs) and waits for the
// lock; the release frees the claim. The claim gone meanwhile is nothing left to do: the pass
// must neither report it as a problem nor fail (a reconcile run beside a release exited 1 with
// "claim N: not found", telling the user to fix something that was fine).
func TestReconcileLeavesAClaimReleasedMeanwhile(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	relDone := make(chan error, 1)
	go func() { _, err := h.e.Release(h.ctx, "v", "web-0"); relDone <- err }()
	h.waitInFlight(gate, relDone)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	recDone := make(chan error, 1)
	var rep ReconcileReport
	go func() { var err error; rep, err = other.Reconcile(ctx); recDone <- err }()
	waitFor(t, waiting, "the reconcile to wait for v's lock")
	close(gate)
	if err := <-relDone; err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-recDone; err != nil {
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

// An alloc claims a volume again while its earlier claim's `volume release` is in flight in
// another process (holding the volume's lock through its RPCs). The release is not stuck: it
// ends in a moment, so the claim waits for it, as for any operation holding the volume, and then
// claims anew. It said "the claim is being released (finish it with `volctl reconcile`)",
// exit 4, sending the user to run a reconcile beside the live release.
func TestClaimWaitsForTheAllocsReleaseInFlight(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	relDone := make(chan error, 1)
	go func() { _, err := h.e.Release(h.ctx, "v", "web-0"); relDone <- err }()
	h.waitInFlight(gate, relDone)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	claimDone := make(chan error, 1)
	var info ClaimInfo
	go func() {
		var err error
		info, err = other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"})
		claimDone <- err
	}()
	select {
	case <-waiting:
	case err := <-claimDone:
		close(gate)
		t.Fatalf("the claim returned while the alloc's release was in flight, without waiting for it: %v", err)
	}
	close(gate)
	if err := <-relDone; err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-claimDone; err != nil {
		t.Fatalf("claim after the release in flight: %v", err)
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
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Gate: gate, Times: 1})
	relDone := make(chan error, 1)
	go func() { _, err := h.e.Release(h.ctx, "v", "web-0"); relDone <- err }()
	h.waitInFlight(gate, relDone)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	claimDone := make(chan error, 1)
	go func() { _, err := other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "web-1"}); claimDone <- err }()
	select {
	case <-waiting:
	case err := <-claimDone:
		close(gate)
		t.Fatalf("the claim returned while the holder's release was in flight, without waiting for it: %v", err)
	}
	close(gate)
	if err := <-relDone; err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-claimDone; err != nil {
		t.Fatalf("claim after the holder's release: %v", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "web-1" || !live[0].AtRest() {
		t.Errorf("live claims = %+v, want web-1's alone, published", live)
	}

	// The holder's release interrupted: refused, naming the way out.
	h.faults.FailNext(csi.RPCNodeUnpublishVolume, codes.Unavailable, fastRetry.Attempts)
	if _, err := h.e.Release(h.ctx, "v", "web-1"); err == nil {
		t.Fatal("release succeeded through NodeUnpublishVolume failing UNAVAILABLE")
	}
	_, err := other.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-2"})
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
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCDeleteVolume} {
		t.Run(rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			if rpc == csi.RPCDeleteVolume {
				h.create(volume("v"))
			}
			other := h.otherProcess()
			gate := make(chan struct{})
			h.faults.Inject(rpc, csitest.Fault{Gate: gate, Times: 1})
			opDone := make(chan error, 1)
			go func() {
				if rpc == csi.RPCCreateVolume {
					_, err := h.e.CreateVolume(h.ctx, volume("v"))
					opDone <- err
					return
				}
				opDone <- h.e.DeleteVolume(h.ctx, "v")
			}()
			h.waitInFlight(gate, opDone)

			ctx, waiting := whenWaitingForLock(h.ctx, "v")
			claimDone := make(chan error, 1)
			go func() { _, err := other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"}); claimDone <- err }()
			select {
			case <-waiting:
			case err := <-claimDone:
				close(gate)
				t.Fatalf("the claim returned while %s was in flight, without waiting for it: %v", rpc, err)
			}
			close(gate)
			if err := <-opDone; err != nil {
				t.Fatalf("the operation: %v", err)
			}
			err := <-claimDone
			if rpc == csi.RPCCreateVolume {
				if err != nil {
					t.Errorf("claim after the create in flight: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("claim after the delete in flight = %v, want not found", err)
			}
		})
	}
}
