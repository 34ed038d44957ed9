package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// hungTimeout is the long-RPC timeout the hung-plugin tests run their hung commands with: short,
// so that a test that waits it out a few times stays quick, yet room for a call to reach the
// plugin on a loaded machine (the tests count the calls the plugin received).
const hungTimeout = 500 * time.Millisecond

// hungConfig opens an engine as a command would against a plugin that may hang: the long
// timeout short, and as many attempts as a command's policy allows (DefaultRetry), waits aside,
// so that a hung RPC that were retried would be sent that many times.
func hungConfig() Config {
	return Config{
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: hungTimeout},
		Retry:    RetryPolicy{Attempts: DefaultRetry.Attempts, Base: time.Millisecond, Max: 2 * time.Millisecond},
	}
}

// callsAfterIdle is how many calls of rpc the plugin received, once no call is in flight.
func (h *harness) callsAfterIdle(t *testing.T, rpc string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	if err := h.faults.WaitIdle(ctx); err != nil {
		t.Fatalf("a call is still in flight: %v", err)
	}
	return h.faults.Calls(rpc)
}

// checkTimedOut requires err to be rpc cut off by our own timeout, saying so.
func checkTimedOut(t *testing.T, err error, rpc string) {
	t.Helper()
	if csi.CodeOf(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), rpc+": DeadlineExceeded") {
		t.Fatalf("error = %v, want %s: DeadlineExceeded", err, rpc)
	}
	if !strings.Contains(err.Error(), hungTimeout.String()) || !strings.Contains(err.Error(), "reconcile") {
		t.Fatalf("error %q does not name the timeout and what to do", err)
	}
}

// TestHungPublishRPCIsSentOnce: a plugin that hangs an RPC of the publish path gets it once per
// command, not once per retry: the claim fails after one timeout, not after one per attempt, left
// at its checkpoint for reconcile. A reconcile while the plugin still hangs sends it once more,
// and the one after the plugin recovers publishes the claim.
func TestHungPublishRPCIsSentOnce(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	for _, tc := range []struct {
		rpc  string
		left store.ClaimState // the checkpoint the claim is left at
	}{
		{csi.RPCControllerPublishVolume, store.ClaimTaken},
		{csi.RPCNodeStageVolume, store.ClaimControllerPublished},
		{csi.RPCNodePublishVolume, store.ClaimNodeStaged},
	} {
		t.Run(tc.rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.open(hungConfig())
			h.faults.Hang(tc.rpc)

			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			checkTimedOut(t, err, tc.rpc)
			if !strings.Contains(err.Error(), "left "+string(tc.left)+" for `volctl reconcile`") {
				t.Fatalf("claim error %q does not say the claim is left for reconcile", err)
			}
			h.leftAfterHang(t, "claim", tc.rpc, tc.left, false)
			live := h.liveClaims("v")
			if len(live) != 1 || live[0].State != store.ClaimPublished || live[0].NeedsReconcile {
				t.Fatalf("claim after reconcile = %+v", live)
			}
		})
	}
}

// leftAfterHang checks what a claim or release (verb) against a plugin hung in rpc leaves: rpc
// sent once, the claim at left (releasing or not) and marked for reconcile; a reconcile against
// the still hung plugin sends it once more. It then lets the plugin recover and runs a
// reconcile that must succeed, leaving the caller to check where that got the claim.
func (h *harness) leftAfterHang(t *testing.T, verb, rpc string, left store.ClaimState, releasing bool) {
	t.Helper()
	if n := h.callsAfterIdle(t, rpc); n != 1 {
		t.Fatalf("%s sent %d times by one %s against a hung plugin, want 1", rpc, n, verb)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != left || live[0].Releasing != releasing || !live[0].NeedsReconcile ||
		live[0].LastRPC != rpc || live[0].LastCode != "DeadlineExceeded" {
		t.Fatalf("claim after the timeout = %+v, want %s (releasing %v) marked for reconcile", live, left, releasing)
	}
	// Reconcile against the still hung plugin: one more call, not one per attempt.
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile against a hung plugin reported success")
	}
	if n := h.callsAfterIdle(t, rpc); n != 2 {
		t.Fatalf("%s sent %d times after a %s and a reconcile, want 2", rpc, n, verb)
	}
	h.faults.Clear()
	h.open(Config{})
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the plugin recovered: %v %+v", err, rep.Problems)
	}
}

// TestHungReleaseRPCIsSentOnce: likewise on the release path: a hung teardown RPC is sent once
// per command, the release is left where it got for reconcile, which frees the claim (and undoes
// the staging) once the plugin recovers.
func TestHungReleaseRPCIsSentOnce(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	for _, tc := range []struct {
		rpc  string
		left store.ClaimState
	}{
		{csi.RPCNodeUnpublishVolume, store.ClaimUnpublishing},
		{csi.RPCNodeUnstageVolume, store.ClaimNodeDetached},
		{csi.RPCControllerUnpublishVolume, store.ClaimNodeDetached},
	} {
		t.Run(tc.rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			h.open(hungConfig())
			h.faults.Hang(tc.rpc)

			_, err := h.e.Release(h.ctx, "v", "a")
			checkTimedOut(t, err, tc.rpc)
			h.leftAfterHang(t, "release", tc.rpc, tc.left, true)
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("claim not freed by reconcile: %+v", live)
			}
			if st, ok := h.staging("v"); ok {
				t.Fatalf("staging left behind: %+v", st)
			}
		})
	}
}

// TestHungCreateVolumeIsSentOnce: a hung CreateVolume is sent once by `volume create`, which
// leaves the create recorded for reconcile; reconcile finishes it once the plugin recovers.
func TestHungCreateVolumeIsSentOnce(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	h := newHarness(t, nil)
	h.open(hungConfig())
	h.faults.Hang(csi.RPCCreateVolume)
	_, err := h.e.CreateVolume(h.ctx, volume("v"))
	checkTimedOut(t, err, csi.RPCCreateVolume)
	if n := h.callsAfterIdle(t, csi.RPCCreateVolume); n != 1 {
		t.Fatalf("CreateVolume sent %d times by one create against a hung plugin, want 1", n)
	}
	if v, err := h.e.Volume(h.ctx, "v"); err != nil || v.State != string(store.VolumeCreating) {
		t.Fatalf("volume after the timeout = %+v, %v; want it recorded as creating", v.VolumeSummary, err)
	}
	h.faults.Clear()
	h.open(Config{})
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the plugin recovered: %v %+v", err, rep.Problems)
	}
	if v, err := h.e.Volume(h.ctx, "v"); err != nil || v.State != string(store.VolumeReady) {
		t.Fatalf("volume after reconcile = %+v, %v", v.VolumeSummary, err)
	}
}

// TestHungRPCUsesThePluginsOwnTimeout: a plugin registered with its own timeout, shorter than
// the engine's, has its hung RPC cut off by that timeout, and the engine knows it for its own:
// it does not retry it. The plugin's timeout is 1s, the least a plugin's may be
// (spec.CheckPluginTimeout): one below it is used as 1s (TestStoredPluginTimeoutOutsideItsBoundsIsClamped).
func TestHungRPCUsesThePluginsOwnTimeout(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	h := newHarness(t, nil)
	cfg := hungConfig()
	cfg.Timeouts.Long = time.Minute // the engine's default: not what the plugin runs with
	h.open(cfg)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	h.create(volume("v"))
	h.faults.Hang(csi.RPCNodePublishVolume)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if csi.CodeOf(err) != codes.DeadlineExceeded || !strings.Contains(err.Error(), "did not answer within 1s") || !strings.Contains(err.Error(), "reconcile") {
		t.Fatalf("error = %v, want NodePublishVolume: DeadlineExceeded after the plugin's own 1s, saying what to do", err)
	}
	if n := h.callsAfterIdle(t, csi.RPCNodePublishVolume); n != 1 {
		t.Fatalf("NodePublishVolume sent %d times against a hung plugin with its own timeout, want 1", n)
	}
}

// TestPluginDeadlineExceededIsRetried pins the other side of the distinction: DEADLINE_EXCEEDED
// that the plugin itself returns at once (its backend timed out) is not our timeout, and is
// retried like any retryable code; once is absorbed by the retry, always leaves the claim for
// reconcile after the retry bound.
func TestPluginDeadlineExceededIsRetried(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	// A command's retry policy, as the hung tests run with, but nothing here hangs: every answer
	// comes at once, so no timeout of volctl's is to run out, however loaded the machine. At
	// hungTimeout, a loaded -race run got the plugin's DEADLINE_EXCEEDED after 500ms and took it
	// for its own timeout, which it rightly does not retry.
	answered := hungConfig()
	answered.Timeouts.Long = time.Minute
	attempts := answered.Retry.Attempts
	for _, rpc := range []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		t.Run(rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.open(answered)

			h.faults.FailOnce(rpc, codes.DeadlineExceeded)
			if cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}); cl.State != string(store.ClaimPublished) {
				t.Fatalf("claim = %+v", cl)
			}
			if n := h.callsAfterIdle(t, rpc); n != 2 {
				t.Fatalf("%s sent %d times, want 2: a plugin's DEADLINE_EXCEEDED is retried", rpc, n)
			}
			h.release("v", "a")

			h.faults.Reset()
			h.faults.FailAlways(rpc, codes.DeadlineExceeded)
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
			if csi.CodeOf(err) != codes.DeadlineExceeded || !csi.IsRetryable(err) {
				t.Fatalf("claim error = %v, want a retryable DeadlineExceeded", err)
			}
			if n := h.callsAfterIdle(t, rpc); n != attempts {
				t.Fatalf("%s sent %d times, want %d (the retry bound)", rpc, n, attempts)
			}
			live := h.liveClaims("v")
			if len(live) != 1 || !live[0].NeedsReconcile || live[0].Releasing || live[0].LastRPC != rpc {
				t.Fatalf("claim after the retries = %+v", live)
			}
			h.faults.Clear()
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile: %v %+v", err, rep.Problems)
			}
		})
	}
	t.Run(csi.RPCNodeUnpublishVolume, func(t *testing.T) {
		h := newHarness(t, nil)
		h.create(volume("v"))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		h.open(answered)
		h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.DeadlineExceeded)
		if _, err := h.e.Release(h.ctx, "v", "a"); csi.CodeOf(err) != codes.DeadlineExceeded {
			t.Fatalf("release error = %v, want DeadlineExceeded", err)
		}
		if n := h.callsAfterIdle(t, csi.RPCNodeUnpublishVolume); n != attempts {
			t.Fatalf("NodeUnpublishVolume sent %d times, want %d (the retry bound)", n, attempts)
		}
	})
	t.Run(csi.RPCCreateVolume, func(t *testing.T) {
		h := newHarness(t, nil)
		h.open(answered)
		h.faults.FailOnce(csi.RPCCreateVolume, codes.DeadlineExceeded)
		h.create(volume("v"))
		if n := h.callsAfterIdle(t, csi.RPCCreateVolume); n != 2 {
			t.Fatalf("CreateVolume sent %d times, want 2: a plugin's DEADLINE_EXCEEDED is retried", n)
		}
	})
}
