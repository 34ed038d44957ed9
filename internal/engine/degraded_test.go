package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestFailedRestoreNeverFreesTheClaim: a published claim loses its mounts (a reboot) and the
// plugin fails its restore with a final code, pass after pass. The claim stays held, degraded,
// with the plugin's error; a second writer is refused naming it; and once the plugin is well,
// reconcile restores it. Freeing it would let another alloc take a volume the first may still
// be using.
func TestFailedRestoreNeverFreesTheClaim(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rpc  string
		code codes.Code
	}{
		{csi.RPCNodeStageVolume, codes.Internal},
		{csi.RPCNodePublishVolume, codes.FailedPrecondition},
		{csi.RPCNodePublishVolume, codes.Unavailable},
	} {
		t.Run(tc.rpc+"/"+tc.code.String(), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.claimThenReboot("v", "a", spec.SingleNodeWriter)
			h.faults.FailAlways(tc.rpc, tc.code)

			// Several passes, as the agent runs them: the first restores, the next re-drive.
			for pass := 1; pass <= 3; pass++ {
				rep, err := h.e.Reconcile(h.ctx)
				if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, tc.rpc) {
					t.Fatalf("pass %d with %s failing = %+v, %v; want one problem naming it", pass, tc.rpc, rep, err)
				}
				if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "a" || live[0].Releasing {
					t.Fatalf("pass %d: the claim was freed or released by a failed restore: %+v", pass, live)
				}
			}
			live := h.liveClaims("v")
			if !live[0].Degraded || !live[0].NeedsReconcile || live[0].LastRPC != tc.rpc || live[0].LastCode != tc.code.String() || live[0].LastError == "" {
				t.Fatalf("claim = %+v; want degraded with the last error of %s", live[0], tc.rpc)
			}
			info, err := h.e.ClaimInfo(h.ctx, "v", "a")
			if err != nil || !info.Degraded || info.LastError == "" {
				t.Fatalf("ClaimInfo = %+v, %v; want degraded with its last error", info, err)
			}

			// The alloc claiming again (a restarted task) does not free it either.
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil || !strings.Contains(err.Error(), "degraded") {
				t.Fatalf("claim again by its alloc while the plugin fails = %v; want an error saying it is held degraded", err)
			}
			if live := h.liveClaims("v"); len(live) != 1 || !live[0].Degraded {
				t.Fatalf("after the alloc claimed again: %+v", live)
			}

			_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "a"`) {
				t.Fatalf("second writer while the first is degraded = %v; want a conflict naming alloc \"a\"", err)
			}
			if h.mem.CallCount(csi.RPCControllerUnpublishVolume) != 0 || h.mem.CallCount(csi.RPCNodeUnstageVolume) != 0 {
				t.Fatalf("the failed restore sent teardown RPCs: %v", h.rpcs())
			}

			h.faults.Clear()
			if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
				t.Fatalf("reconcile once the plugin is well = %+v, %v; want the claim restored", rep, err)
			}
			live = h.liveClaims("v")
			if len(live) != 1 || !live[0].AtRest() || live[0].Degraded || live[0].LastError != "" || live[0].State != store.ClaimPublished {
				t.Fatalf("after the plugin healed: %+v; want published, at rest, not degraded", live)
			}
		})
	}
}

// TestDegradedClaimIsFreedByARelease: a degraded claim is freed by an explicit release, through
// the whole release path.
func TestDegradedClaimIsFreedByARelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mounts.markGone(cl.TargetPath)
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Internal)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile with NodePublishVolume failing reported success")
	}
	h.faults.Clear()
	h.release("v", "a")
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the release: %+v", live)
	}
	past, err := h.e.History(h.ctx, "v", 1)
	if err != nil || len(past) != 1 || past[0].Outcome != string(store.OutcomeReleased) || !past[0].Degraded {
		t.Fatalf("history = %+v, %v; want the degraded claim released", past, err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
}

// TestRestoreWithThePluginDownMarksTheClaimDegraded: after a reboot the plugin is not back yet
// (it does not answer its identity calls), so the restore cannot even connect. The claim, whose
// mount is gone, must still be shown as held and degraded with the error, and flagged for the
// agent's re-drive; once the plugin answers, reconcile restores it.
func TestRestoreWithThePluginDownMarksTheClaimDegraded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	h.open(Config{}) // a new process: no cached connection
	h.stopServe()    // the plugin is not back yet: its socket is gone

	for pass := 1; pass <= 2; pass++ {
		if rep, err := h.e.Reconcile(h.ctx); err == nil || len(rep.Problems) != 1 {
			t.Fatalf("pass %d with the plugin down = %+v, %v; want one problem", pass, rep, err)
		}
		live := h.liveClaims("v")
		if len(live) != 1 || live[0].Releasing {
			t.Fatalf("pass %d: %+v; want the claim held", pass, live)
		}
		if !live[0].Degraded || !live[0].NeedsReconcile || live[0].LastError == "" {
			t.Fatalf("pass %d: claim = %+v; want it degraded, flagged for reconcile, with its last error", pass, live[0])
		}
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "degraded") {
		t.Fatalf("second writer while the restore waits for the plugin = %v; want a conflict naming the degraded claim", err)
	}

	h.serveAgain(t)
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
		t.Fatalf("reconcile once the plugin is back = %+v, %v; want the claim restored", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimPublished || live[0].Degraded || live[0].NeedsReconcile {
		t.Fatalf("after the plugin came back: %+v; want published, not degraded", live)
	}
}

// TestReconcileReportsClaimsOfAnUnregisteredPlugin: a plugin deregistered with --force while a
// claim is left for reconcile (here a release cut short). Reconcile cannot drive the claim, and
// must say so rather than take "plugin not registered" for "claim released meanwhile" and
// report nothing wrong.
func TestReconcileReportsClaimsOfAnUnregisteredPlugin(t *testing.T) {
	t.Parallel()
	h := releaseLeftForReconcile(t)
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatal(err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "not registered") {
		t.Fatalf("reconcile with the claim's plugin deregistered = %+v, %v; want one problem saying the plugin is not registered", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Fatalf("claims = %+v; want the claim kept", live)
	}
}

// A claim that fails the same way pass after pass (the agent reconciles every few seconds) gets
// one "left for reconcile" event for that failure, not one per pass: the event log is bounded,
// and a flood of repeats pushes out what an operator needs. A different failure is recorded.
func TestRepeatedFailureIsOneEvent(t *testing.T) {
	t.Parallel()
	h := releaseLeftForReconcile(t)
	for range 3 {
		if _, err := h.e.Reconcile(h.ctx); err == nil {
			t.Fatal("reconcile with NodeUnpublishVolume unavailable reported nothing wrong")
		}
	}
	left := func() int {
		evs, err := h.e.Events(h.ctx, 100, EventFilter{VolumeID: "v", Kind: "claim"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if strings.Contains(ev.Message, "for reconcile") {
				n++
			}
		}
		return n
	}
	if n := left(); n != 1 {
		t.Fatalf("%d \"left for reconcile\" events after a release and 3 reconcile passes failing the same way; want 1", n)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Attempts < 4 {
		t.Fatalf("claims = %+v; want the claim kept, its attempts counted", live)
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Internal)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile with NodeUnpublishVolume failing reported nothing wrong")
	}
	if n := left(); n != 2 {
		t.Fatalf("%d \"left for reconcile\" events after the failure changed; want 2", n)
	}
}

// A restore that failed once and succeeds at a later pass (the plugin was not back yet after a
// reboot) records the same "restore" event as one that succeeds at once: the event log, the
// agent and its operators see every mount restored, whichever pass did it.
func TestDegradedClaimRestoredLaterRecordsTheRestore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	h.faults.FailNext(csi.RPCNodeStageVolume, codes.Unavailable, 100)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile with NodeStageVolume failing reported nothing wrong")
	}
	h.faults.Clear()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
		t.Fatalf("second pass = %+v, %v; want the claim restored", rep, err)
	}
	evs, err := h.e.Events(h.ctx, 100, EventFilter{Kind: "restore", VolumeID: "v"})
	if err != nil || len(evs) != 1 || evs[0].Alloc != "a" || evs[0].PluginID != "mem" {
		t.Fatalf("restore events = %+v, %v; want one, for alloc a through plugin mem", evs, err)
	}
}

// releaseLeftForReconcile claims volume "v" for alloc "a" and releases it through a plugin whose
// NodeUnpublishVolume stays unavailable: the claim is left unpublishing for reconcile.
func releaseLeftForReconcile(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil {
		t.Fatal("release with NodeUnpublishVolume unavailable succeeded")
	}
	return h
}
