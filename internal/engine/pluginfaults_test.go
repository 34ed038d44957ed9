package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestEveryCodeOnEveryRPC returns each gRPC error code from each RPC of both paths and checks
// that the engine does what the code's class calls for: on the publish path, final codes roll
// the claim back and the others leave it for reconcile; on the release path, NOT_FOUND counts
// as done and the rest leave the release for reconcile. In every case the next reconcile, with
// the plugin well again, settles everything.
func TestEveryCodeOnEveryRPC(t *testing.T) {
	t.Parallel()
	publish := []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}
	release := []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume}
	for code := codes.Canceled; code <= codes.Unauthenticated; code++ {
		t.Run(code.String(), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v"))
			for _, rpc := range publish {
				h.faults.FailAlways(rpc, code)
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				h.faults.Clear()
				if err == nil || !strings.Contains(err.Error(), rpc+": "+code.String()) {
					t.Fatalf("%s: claim error %v", rpc, err)
				}
				live := h.liveClaims("v")
				retryable := csi.IsRetryable(err)
				switch {
				case retryable && (len(live) != 1 || !live[0].NeedsReconcile):
					t.Fatalf("%s/%s (retryable): claims %+v", rpc, code, live)
				case !retryable && len(live) != 0:
					t.Fatalf("%s/%s (final): phantom claim %+v", rpc, code, live)
				}
				h.settle(t)
				if retryable {
					h.release("v", "a")
				}
			}
			if code == codes.NotFound {
				// NOT_FOUND on the release path is "already done" and skips a step the in-memory
				// plugin still holds; TestReleasePathFaults covers it.
				return
			}
			for _, rpc := range release {
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
				h.faults.FailAlways(rpc, code)
				_, err := h.e.Release(h.ctx, "v", "a")
				h.faults.Clear()
				if err == nil || !strings.Contains(err.Error(), rpc+": "+code.String()) {
					t.Fatalf("%s/%s: release error %v", rpc, code, err)
				}
				h.settle(t)
				if n := len(h.liveClaims("v")); n != 0 {
					t.Fatalf("%s/%s: %d claims left after reconcile", rpc, code, n)
				}
			}
		})
	}
}

// settle runs reconcile and requires that nothing is left unsettled and no staging is leaked.
func (h *harness) settle(t *testing.T) {
	t.Helper()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep.Problems)
	}
	for _, c := range h.liveClaims("v") {
		if !c.AtRest() {
			t.Fatalf("claim left unsettled after reconcile: %+v", c)
		}
	}
	if len(h.liveClaims("v")) == 0 {
		if st, ok := h.staging("v"); ok {
			t.Fatalf("staging leaked: %+v", st)
		}
	}
}

// TestPluginKilledMidRPC: the plugin dies while NodeStageVolume is in flight; the claim is left
// at its checkpoint with the error, and once the plugin is back, reconcile publishes it.
func TestPluginKilledMidRPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.Delay(csi.RPCNodeStageVolume, 5*time.Second)

	// Stop the server as soon as NodeStageVolume arrives (it is then held by its delay): in-flight
	// calls are dropped, as when a plugin process is killed. Waiting for that call, not for any
	// call in flight: the claim's fingerprint RPCs come first, and stopping during those killed
	// the plugin before NodeStageVolume was ever sent.
	stop := h.restartable(t)
	go func() {
		for h.faults.Calls(csi.RPCNodeStageVolume) == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		stop()
	}()
	h.open(Config{Retry: RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond}})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if !csi.IsRetryable(err) || !strings.Contains(err.Error(), "reconcile") {
		t.Fatalf("claim while the plugin died: %v", err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimControllerPublished || live[0].LastRPC != csi.RPCNodeStageVolume {
		t.Fatalf("claim after the plugin died = %+v", live)
	}
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("reconcile with the plugin gone reported success")
	}
	h.faults.Clear()
	h.serveAgain(t)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the plugin came back: %v %+v", err, rep)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() {
		t.Fatalf("after reconcile = %+v", live)
	}
}

// TestPluginRestartIsFingerprintedAgain: a plugin that restarts on its socket with different
// capabilities is fingerprinted again: capabilities never outlive a restart.
func TestPluginRestartIsFingerprintedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.release("v", "a")

	stop := h.restartable(t)
	stop()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	cfg.Node.StageUnstageVolume = false
	cfg.Controller.PublishUnpublishVolume = false
	restarted := csitest.NewMemPlugin(cfg)
	csitest.ServeAt(t, h.socket, csitest.WithServer(restarted))
	restarted.AddVolume(csi.Volume{ID: h.externalID("v")})

	// The same engine (same process, cached connection) must notice the restart.
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	if n := restarted.CallCount(csi.RPCNodeStageVolume) + restarted.CallCount(csi.RPCControllerPublishVolume); n != 0 {
		t.Fatalf("the engine used capabilities from before the restart (%d stage/attach calls)", n)
	}
	if restarted.CallCount(csi.RPCGetPluginCapabilities) == 0 {
		t.Fatal("the restarted plugin was not fingerprinted")
	}
	info, _ := h.e.PluginStatus(h.ctx, "mem")
	if len(info) != 1 || strings.Contains(strings.Join(info[0].Capabilities.Node, ","), "STAGE_UNSTAGE_VOLUME") {
		t.Fatalf("stored capabilities after the restart = %+v", info)
	}
}

// restartable returns a function that stops the plugin's server the way a killed plugin
// process stops: in-flight calls are dropped and the socket goes away.
func (h *harness) restartable(t *testing.T) (stop func()) {
	t.Helper()
	return h.stopServe
}

// serveAgain serves the harness's plugin (with its state) on its socket again, as a restarted
// plugin process would.
func (h *harness) serveAgain(t *testing.T) {
	t.Helper()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
}

// TestRestoreStagesAVolumeOnceForAllItsClaims: after a reboot (every mount gone), a volume with
// two claims published with different mount options is staged again once, for the first
// claim, and shared by the second, which must not stage it again with its own capability (a
// plugin refuses that as incompatible, and the claim would be lost).
func TestRestoreStagesAVolumeOnceForAllItsClaims(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	b := h.claim(ClaimRequest{VolumeID: "v", Alloc: "b", ReadOnly: true,
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}})
	st, _ := h.staging("v")
	for _, p := range []string{a.TargetPath, b.TargetPath, st.StagingPath} {
		h.mounts.markGone(p)
	}
	h.mem.ResetCalls()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 2 {
		t.Fatalf("reconcile = %+v, %v", rep, err)
	}
	if n := h.mem.CallCount(csi.RPCNodeStageVolume); n != 1 {
		t.Fatalf("NodeStageVolume sent %d times for one volume", n)
	}
	if live := h.liveClaims("v"); len(live) != 2 || !live[0].AtRest() || !live[1].AtRest() {
		t.Fatalf("claims after restore = %+v", live)
	}
}

// interruptRestore publishes a claim of a new volume v for alloc a, takes its mounts away (a
// reboot) and runs a reconcile whose restore fails at NodeStageVolume. The plugin is well
// again afterwards.
func interruptRestore(t *testing.T, h *harness) {
	t.Helper()
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	h.mounts.markGone(cl.TargetPath)
	h.mounts.markGone(st.StagingPath)
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.Internal)
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("reconcile with NodeStageVolume failing = %+v, %v; want one problem", rep, err)
	}
	h.faults.Clear()
}

// claimLeftNodeStaged claims volume v for alloc while NodePublishVolume is unavailable, which
// leaves the claim node-staged for reconcile.
func claimLeftNodeStaged(t *testing.T, h *harness, alloc string) {
	t.Helper()
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: alloc}); err == nil {
		t.Fatal("claim with NodePublishVolume unavailable succeeded")
	}
	h.faults.Clear()
}

// TestInterruptedRestoreIsReleasedInFull: a restore cut short (here NodeStageVolume fails;
// a killed agent does the same) must not leave the claim in a state whose release skips
// NodeUnpublishVolume. The plugin may still hold the publication from before the reboot, and
// refuses NodeUnstageVolume while it does, which would leave the claim stuck for good.
func TestInterruptedRestoreIsReleasedInFull(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	interruptRestore(t, h)

	h.mem.ResetCalls()
	h.release("v", "a")
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		if n := h.mem.CallCount(rpc); n != 1 {
			t.Errorf("release after the failed restore sent %s %d times, want 1 (sent: %v)", rpc, n, h.rpcs())
		}
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims left after the release: %+v", live)
	}
}

// TestReconcileFinishesAnInterruptedRestore: the next pass after a failed restore stages the
// volume again before publishing it, and the claim is at rest.
func TestReconcileFinishesAnInterruptedRestore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	interruptRestore(t, h)

	h.mem.ResetCalls()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("second reconcile = %+v, %v", rep, err)
	}
	if got, want := h.rpcs(), []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}; !slices.Equal(filterNode(got), want) {
		t.Errorf("second reconcile sent %v, want %v among them", got, want)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() || live[0].State != store.ClaimPublished {
		t.Fatalf("claim after the second reconcile = %+v", live)
	}
	if st, _ := h.staging("v"); !st.Staged {
		t.Fatalf("staging after the second reconcile = %+v, want staged", st)
	}
}

// filterNode keeps the node RPCs that change what is mounted.
func filterNode(rpcs []string) []string {
	var out []string
	for _, r := range rpcs {
		switch r {
		case csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCNodeUnstageVolume, csi.RPCNodeUnpublishVolume:
			out = append(out, r)
		}
	}
	return out
}

// TestReconcileStagesAgainForAClaimLeftMidway: a claim left node-staged (NodePublishVolume
// unavailable) when the machine reboots. Its staging row still says staged, but the staging is
// no longer mounted: reconcile must stage it again before publishing, not publish onto an empty
// directory (which a real plugin turns into a bind of nothing).
func TestReconcileStagesAgainForAClaimLeftMidway(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	claimLeftNodeStaged(t, h, "a")
	st, _ := h.staging("v")
	h.mounts.markGone(st.StagingPath)
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if got, want := filterNode(h.rpcs()), []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}; !slices.Equal(got, want) {
		t.Errorf("reconcile sent %v, want %v", got, want)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() {
		t.Fatalf("claim after reconcile = %+v", live)
	}
}

// TestReconcileStagesALostStagingOnceForAllItsClaims: after a reboot, a volume with one claim
// published and another left controller-published is staged again once, by the first claim
// reconcile drives, and the published claim is restored onto that staging.
func TestReconcileStagesALostStagingOnceForAllItsClaims(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	claimLeftNodeStaged(t, h, "b")
	st, _ := h.staging("v")
	h.mounts.markGone(st.StagingPath)
	h.mounts.markGone(a.TargetPath)
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	// Staged first, once; then each claim published.
	want := []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCNodePublishVolume}
	if got := filterNode(h.rpcs()); !slices.Equal(got, want) {
		t.Errorf("reconcile sent %v, want %v", got, want)
	}
	if live := h.liveClaims("v"); len(live) != 2 || !live[0].AtRest() || !live[1].AtRest() {
		t.Fatalf("claims after reconcile = %+v", live)
	}
}
