package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// The error classes the fault matrix injects, one code each (docs/architecture.md, Error classes).
var faultClasses = []struct {
	name string
	code codes.Code
}{
	{"final", codes.FailedPrecondition},
	{"final-not-found", codes.NotFound}, // final on the publish path, ignorable on the release path
	{"retryable", codes.Unavailable},
	{"retryable-aborted", codes.Aborted},
}

// TestPublishPathFaults injects every error class into every RPC of the publish path. Final
// errors roll the claim back (no phantom claim, nothing left staged or attached); retryable ones
// are retried, then leave the claim where it got, marked for reconcile, which finishes it once
// the plugin recovers; a single retryable failure is absorbed by the retry.
func TestPublishPathFaults(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		for _, fc := range faultClasses {
			t.Run(rpc+"/"+fc.name, func(t *testing.T) {
				h := newHarness(t, nil)
				h.create(volume("v"))
				h.faults.FailAlways(rpc, fc.code)
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				if err == nil || !strings.Contains(err.Error(), rpc+": "+fc.code.String()) {
					t.Fatalf("claim error = %v, want %s: %s", err, rpc, fc.code)
				}
				if csi.IsRetryable(err) {
					if n := h.faults.Calls(rpc); n != fastRetry.Attempts {
						t.Errorf("%s called %d times, want %d (the retry bound)", rpc, n, fastRetry.Attempts)
					}
					live := h.liveClaims("v")
					if len(live) != 1 || !live[0].NeedsReconcile || live[0].Releasing || live[0].LastRPC != rpc {
						t.Fatalf("after retryable failure, live claims = %+v", live)
					}
					h.faults.Clear()
					rep, err := h.e.Reconcile(h.ctx)
					if err != nil {
						t.Fatalf("reconcile: %v (%+v)", err, rep)
					}
					live = h.liveClaims("v")
					if len(live) != 1 || live[0].State != store.ClaimPublished || live[0].NeedsReconcile {
						t.Fatalf("after reconcile, claim = %+v", live)
					}
					return
				}
				if n := h.faults.Calls(rpc); n != 1 {
					t.Errorf("final error retried: %s called %d times", rpc, n)
				}
				if !strings.Contains(err.Error(), "rolled back") {
					t.Errorf("error does not say the claim was rolled back: %v", err)
				}
				if live := h.liveClaims("v"); len(live) != 0 {
					t.Fatalf("phantom claim after a final error: %+v", live)
				}
				if _, ok := h.staging("v"); ok {
					t.Fatal("staging row left after rollback")
				}
				if pub := h.mem.PublishedNodes(h.externalID("v")); len(pub) != 0 {
					t.Fatalf("volume still controller-published to %v after rollback", pub)
				}
				hist, _ := h.e.History(h.ctx, "v", 0)
				if len(hist) != 1 || hist[0].Outcome != "rolled-back" {
					t.Fatalf("history = %+v", hist)
				}
			})
		}
		t.Run(rpc+"/retryable-once", func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.faults.FailOnce(rpc, codes.Unavailable)
			cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			if cl.State != "published" || h.faults.Calls(rpc) != 2 {
				t.Fatalf("claim %+v, %s calls %d", cl, rpc, h.faults.Calls(rpc))
			}
		})
	}
}

// TestReleasePathFaults injects every error class into every RPC of the release path. NOT_FOUND
// counts as done; other failures leave the claim on the release path, marked for reconcile,
// which frees it once the plugin recovers.
func TestReleasePathFaults(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		for _, fc := range faultClasses {
			t.Run(rpc+"/"+fc.name, func(t *testing.T) {
				h := newHarness(t, nil)
				h.create(volume("v"))
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
				h.faults.FailAlways(rpc, fc.code)
				if fc.code == codes.NotFound && rpc == csi.RPCControllerUnpublishVolume {
					// A NOT_FOUND the plugin's listing agrees with: the volume is gone. One it
					// contradicts, listing the volume still published to the node, is not done
					// (TestControllerUnpublishAnsweredWhileStillPublishedKeepsTheAttachment).
					h.mem.DropVolume(h.externalID("v"))
				}
				_, err := h.e.Release(h.ctx, "v", "a")
				if fc.code == codes.NotFound {
					// NOT_FOUND counts as done: the release goes on to the next step. (The
					// in-memory plugin still holds what the injected NOT_FOUND skipped, so
					// the step after may fail on its account; that is not under test.)
					if next, ok := nextReleaseRPC[rpc]; ok {
						if h.faults.Calls(next) == 0 {
							t.Fatalf("release stopped at %s's NOT_FOUND (err %v): %s never sent", rpc, err, next)
						}
						return
					}
					if err != nil {
						t.Fatalf("NOT_FOUND on %s must count as done: %v", rpc, err)
					}
					if live := h.liveClaims("v"); len(live) != 0 {
						t.Fatalf("claim not freed: %+v", live)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), rpc+": "+fc.code.String()) {
					t.Fatalf("release error = %v", err)
				}
				live := h.liveClaims("v")
				if len(live) != 1 || !live[0].Releasing || !live[0].NeedsReconcile || live[0].State.IsPublishPath() {
					t.Fatalf("after a failed release, claims = %+v", live)
				}
				// A new claim is refused while the release is unfinished.
				if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"}); !errors.Is(err, ErrConflict) {
					t.Fatalf("claim during an unfinished release: %v", err)
				}
				h.faults.Clear()
				if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) == 0 {
					t.Fatalf("reconcile = %+v, %v", rep, err)
				}
				if live := h.liveClaims("v"); len(live) != 0 {
					t.Fatalf("claim not freed by reconcile: %+v", live)
				}
				if _, ok := h.staging("v"); ok {
					t.Fatal("staging left behind")
				}
			})
		}
	}
}

// TestHungPluginHitsTheTimeout: a plugin that never answers NodeStageVolume makes the RPC time
// out (DeadlineExceeded, retryable); the claim stays at its last checkpoint with the staging
// intent recorded, so reconcile can finish it, and nothing hangs.
func TestHungPluginHitsTheTimeout(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	h := newHarness(t, nil)
	// The long timeout bounds the hung NodeStageVolume, and the ControllerPublishVolume before it
	// too: hungTimeout leaves that one room on a loaded machine (at 150ms, calls timed out that
	// the plugin answered at once).
	h.open(Config{Timeouts: csi.Timeouts{Short: time.Second, Long: hungTimeout},
		Retry: RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond}})
	h.create(volume("v"))
	h.faults.Hang(csi.RPCNodeStageVolume)
	start := time.Now()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if csi.CodeOf(err) != codes.DeadlineExceeded {
		t.Fatalf("claim against a hung plugin: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Fatalf("the timeout did not bound the claim: %v", elapsed)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimControllerPublished || !live[0].NeedsReconcile || live[0].LastCode != "DeadlineExceeded" {
		t.Fatalf("claim after the timeout = %+v", live)
	}
	if st, ok := h.staging("v"); !ok || st.StagingPath == "" || !st.ControllerPublished {
		t.Fatalf("staging intent not recorded: %+v %v", st, ok)
	}
	h.faults.Clear()
	// The plugin answers again: a reconcile, a command of its own with the usual timeouts,
	// finishes the claim (with the hung command's, its RPCs timed out on a loaded machine).
	h.open(Config{})
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	if rep, err := h.e.Reconcile(ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimPublished {
		t.Fatalf("after reconcile = %+v", live)
	}
}

// nextReleaseRPC is the RPC the release path sends after each one, for a single claim.
var nextReleaseRPC = map[string]string{
	csi.RPCNodeUnpublishVolume: csi.RPCNodeUnstageVolume,
	csi.RPCNodeUnstageVolume:   csi.RPCControllerUnpublishVolume,
}

func (h *harness) externalID(vol string) string {
	h.t.Helper()
	return h.volumeInfo(vol).ExternalID
}
