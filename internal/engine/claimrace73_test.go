package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestReleaseInNFCThatWaitedForAnotherReleaseOfADecomposedClaimSaysSo: a claim whose alloc an
// older volctl stored decomposed ("web-cafe\u0301") was released by one volctl while a second
// `volume release` of the same alloc, typed as the command line now reads it (NFC,
// "web-caf\u00e9"), waited for the volume's lock. The second found the claim freed under the
// lock and answered a plain no-op (Released and ReleasedMeanwhile both false: "holds no claim:
// nothing to release") of a claim held as it began: the look before the wait
// (lockVolumeNotingClaim) matched the alloc byte for byte, where the release itself matches it
// in NFC (sameAlloc). docs/architecture.md promises both: "A claim's alloc, which an older
// volctl stored as typed, is matched in NFC by claim and release (engine `sameAlloc`)", and "A
// `volume release` that waits for the volume's lock reads whether the alloc held the claim
// before it waits ... and, finding it freed under the lock, says another volctl released it
// meanwhile (`ReleaseResult.ReleasedMeanwhile`)". Found by helper review73.
func TestReleaseInNFCThatWaitedForAnotherReleaseOfADecomposedClaimSaysSo(t *testing.T) {
	t.Parallel()
	const pre, dec = "web-caf\u00e9", "web-cafe\u0301"
	h := newHarness(t, nil)
	h.create(volume("db"))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: dec})
	first := h.otherProcess()
	var firstRes, second ReleaseResult
	firstErr, secondErr := h.whileHeld(csi.RPCNodeUnpublishVolume, "second release", true,
		func() error { var err error; firstRes, err = first.Release(h.ctx, "db", dec); return err },
		func(ctx context.Context) error {
			var err error
			second, err = h.e.Release(ctx, "db", pre)
			return err
		})
	if firstErr != nil || secondErr != nil {
		t.Fatalf("releases: %v; %v", firstErr, secondErr)
	}
	if !firstRes.Released {
		t.Fatalf("first release of %+q = %+v, want it released", dec, firstRes)
	}
	if second.Released || !second.ReleasedMeanwhile {
		t.Errorf("release of %+q that waited for another volctl's release of the claim stored as %+q = %+v; "+
			"want ReleasedMeanwhile (the alloc held the claim as it began, matched in NFC as the release matches it), not a plain no-op",
			pre, dec, second)
	}
}

// TestClaimWhoseAdmittedClaimAnotherVolctlLeftReleasingIsNotReportedPublished: `volume claim v
// --alloc b` was admitted while another volctl held volume v's lock, and waited for it. That
// other volctl was a `volume release v --alloc b` (or a detach) which marked the waiting claim
// releasing, its first checkpoint, and was killed before it freed it. The claim command then
// took the lock and drove the claim it read: a releasing claim, which drive takes along the
// release path. It freed the claim and answered as a claim that succeeded, with the target
// path, while no claim was held and nothing was mounted there: the caller (a job's prestart
// hook) went on with an empty directory. docs/architecture.md ("Claim state machine"; and
// TestClaimOvertakenByRelease's rule) has a claim another volctl frees meanwhile "reported by
// how (`claimGone`): released, a conflict", and "An alloc claiming again gets the claim it
// holds only when that is the same claim"; a claim command must never report a claim freed. Found by helper review73.
func TestClaimWhoseAdmittedClaimAnotherVolctlLeftReleasingIsNotReportedPublished(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	unlock := h.lockVolume("v") // the other volctl's release of alloc b, holding the volume
	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	done := make(chan struct {
		cl  ClaimInfo
		err error
	}, 1)
	go func() {
		cl, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
		done <- struct {
			cl  ClaimInfo
			err error
		}{cl, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		unlock()
		t.Fatalf("the claim returned before waiting for the volume's lock: %+v, %v", r.cl, r.err)
	case <-time.After(30 * time.Second):
		unlock()
		t.Fatal("the claim never waited for the volume's lock")
	}
	// The other volctl's release: its first checkpoint marks alloc b's claim releasing; then it
	// is killed, its lock let go by the kernel.
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].Alloc != "b" {
		unlock()
		t.Fatalf("live claims while the claim waits = %+v, want alloc b's, admitted", live)
	}
	h.update(func(tx *store.Tx) error {
		cl := live[0]
		cl.Releasing = true
		return tx.Claims().Update(&cl)
	})
	unlock()
	r := <-done
	t.Logf("claim: %+v, %v", r.cl, r.err)
	live = h.liveClaims("v")
	if r.err == nil && len(live) == 0 {
		_, statErr := os.Stat(r.cl.TargetPath)
		t.Fatalf("claim of v for alloc b answered published at %s (state %q; the target: %v) while the claim was freed (no live claim): "+
			"the claim command finished another volctl's release of it and reported success", r.cl.TargetPath, r.cl.State, statErr)
	}
	if r.err == nil && (len(live) != 1 || live[0].State != store.ClaimPublished || live[0].Releasing) {
		t.Fatalf("claim answered success, live claims %+v: want the answer to match a published claim", live)
	}
	if !errors.Is(r.err, ErrConflict) || !strings.Contains(r.err.Error(), "`volctl reconcile`") {
		t.Fatalf("claim = %v; want a conflict saying the release is to be finished first", r.err)
	}
	// Its advice: finish the release, then claim again.
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile finishing the release: %v", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v; want the release finished", live)
	}
	if cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"}); cl.State != string(store.ClaimPublished) {
		t.Fatalf("claim again after the release finished: %+v", cl)
	}
}

// TestClaimInfoOfADecomposedAllocFindsItInNFC: ClaimInfo (what groups and quickstart read a
// claim back with) of an alloc typed in NFC whose claim an older volctl stored decomposed found
// the claim, as claim and release match it (sameAlloc), where a byte-for-byte look said "alloc
// has no claim".
func TestClaimInfoOfADecomposedAllocFindsItInNFC(t *testing.T) {
	t.Parallel()
	const pre, dec = "web-caf\u00e9", "web-cafe\u0301"
	h := newHarness(t, nil)
	h.create(volume("db"))
	held := h.claim(ClaimRequest{VolumeID: "db", Alloc: dec})
	got, err := h.e.ClaimInfo(h.ctx, "db", pre)
	if err != nil || got.ID != held.ID {
		t.Fatalf("ClaimInfo(db, %+q) of the claim stored as %+q = %+v, %v; want claim %d", pre, dec, got, err, held.ID)
	}
}
