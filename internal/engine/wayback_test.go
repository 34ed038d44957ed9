package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// serveLeavingMounts serves the harness's plugin again on its socket, with its faults, as a
// plugin that answers rpc (NodeUnpublishVolume or NodeUnstageVolume) as asked but leaves its
// mount where it was: after the call, the path it names holds a file again, as a mount point
// still showing the volume's data would (rmdir fails on it, and fakeMounts counts it mounted).
// The returned function makes the plugin well again.
func (h *harness) serveLeavingMounts(rpc string) (heal func()) {
	h.t.Helper()
	var (
		mu      sync.Mutex // the server's goroutines and the test's: no happens-before over a socket
		left    []string
		leaving = true
	)
	h.stopServe()
	h.stopServe = csitest.ServeAt(h.t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if !leaving || filepath.Base(info.FullMethod) != rpc {
				return resp, err
			}
			var path string
			switch r := req.(type) {
			case interface{ GetTargetPath() string }:
				path = r.GetTargetPath()
			case interface{ GetStagingTargetPath() string }:
				path = r.GetStagingTargetPath()
			}
			if path != "" {
				if err := os.MkdirAll(path, 0o700); err == nil {
					if os.WriteFile(filepath.Join(path, "data"), nil, 0o600) == nil {
						left = append(left, path)
					}
				}
			}
			return resp, err
		}))
	return func() {
		mu.Lock()
		defer mu.Unlock()
		leaving = false
		for _, p := range left {
			os.Remove(filepath.Join(p, "data"))
		}
	}
}

// A plugin that answers NodeUnpublishVolume or NodeUnstageVolume (OK, or NOT_FOUND) but leaves
// the mount in place does not get the claim freed, nor the staging forgotten: the release stops
// with an error naming the path still mounted and what to do, the claim stays on the release
// path for reconcile, and reconcile finishes it once the path is unmounted.
func TestReleaseKeepsWhatThePluginLeftMounted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rpc  string
		code codes.Code // the plugin's answer; OK or NOT_FOUND (ignorable: "already done")
	}{
		{csi.RPCNodeUnpublishVolume, codes.OK},
		{csi.RPCNodeUnpublishVolume, codes.NotFound},
		{csi.RPCNodeUnstageVolume, codes.OK},
		{csi.RPCNodeUnstageVolume, codes.NotFound},
	} {
		t.Run(tc.rpc+"/"+tc.code.String(), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			st, _ := h.staging("v")
			path := cl.TargetPath
			if tc.rpc == csi.RPCNodeUnstageVolume {
				path = st.StagingPath
			}
			heal := h.serveLeavingMounts(tc.rpc)
			if tc.code != codes.OK {
				h.faults.FailAlways(tc.rpc, tc.code)
			}
			_, err := h.e.Release(h.ctx, "v", "a")
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "still mounted") ||
				!strings.Contains(err.Error(), "volctl reconcile") {
				t.Fatalf("release with %s left mounted = %v, want an error naming it still mounted and reconcile", path, err)
			}
			live := h.liveClaims("v")
			if len(live) != 1 || !live[0].Releasing || !live[0].NeedsReconcile {
				t.Fatalf("claims after the release = %+v, want the claim held for reconcile", live)
			}
			if tc.rpc == csi.RPCNodeUnpublishVolume && live[0].State != store.ClaimUnpublishing {
				t.Errorf("claim state = %s, want %s (NodeUnpublishVolume is owed again)", live[0].State, store.ClaimUnpublishing)
			}
			if st, ok := h.staging("v"); !ok || st.StagingPath == "" || !st.ControllerPublished {
				t.Fatalf("staging after the release = %+v (found %v), want it kept", st, ok)
			}
			// Still mounted: reconcile keeps it too, and reports it.
			h.faults.Clear()
			rep, err := h.e.Reconcile(h.ctx)
			if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, path) {
				t.Fatalf("reconcile while %s is still mounted = %+v, %v; want it reported", path, rep, err)
			}
			if live := h.liveClaims("v"); len(live) != 1 {
				t.Fatalf("reconcile freed the claim while %s is still mounted: %+v", path, live)
			}
			// Unmounted by hand (and the plugin well): reconcile finishes the release.
			heal()
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile: %v %+v", err, rep.Problems)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("claims after reconcile = %+v, want none", live)
			}
			if st, ok := h.staging("v"); ok {
				t.Fatalf("staging after reconcile = %+v, want none", st)
			}
			if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
				t.Fatalf("still attached to %v", nodes)
			}
		})
	}
}

// A plugin that hangs NodeUnstageVolume past volctl's timeout and then does the unstage
// anyway, after volctl gave up: the claim is not freed on the timeout, the staging stays
// recorded, and reconcile's NodeUnstageVolume (which finds it done) finishes the release.
func TestNodeUnstageDoneAfterTheTimeout(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	done := make(chan error, 1)
	var once sync.Once
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if filepath.Base(info.FullMethod) != csi.RPCNodeUnstageVolume {
				return handler(ctx, req)
			}
			late := false
			once.Do(func() { late = true })
			if !late {
				return handler(ctx, req)
			}
			<-ctx.Done() // volctl gave up
			_, err := handler(context.WithoutCancel(ctx), req)
			done <- err
			return nil, status.FromContextError(ctx.Err()).Err()
		}))
	h.open(hungConfig())
	_, err := h.e.Release(h.ctx, "v", "a")
	checkTimedOut(t, err, csi.RPCNodeUnstageVolume)
	if err := <-done; err != nil {
		t.Fatalf("the late unstage: %v", err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimNodeDetached || !live[0].NeedsReconcile || live[0].LastRPC != csi.RPCNodeUnstageVolume {
		t.Fatalf("claim after the timed-out unstage = %+v", live)
	}
	if got, ok := h.staging("v"); !ok || got.StagingPath != st.StagingPath || !got.ControllerPublished {
		t.Fatalf("staging after the timed-out unstage = %+v (found %v)", got, ok)
	}
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if got, want := h.rpcs(), []string{csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume, csi.RPCListVolumes}; !slices.Equal(got, want) {
		t.Errorf("reconcile sent %v, want %v", got, want)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v", live)
	}
	if _, ok := h.staging("v"); ok {
		t.Fatal("staging left after reconcile")
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Fatalf("still attached to %v", nodes)
	}
}

// A plugin restarted between NodeUnpublishVolume and NodeUnstageVolume without
// STAGE_UNSTAGE_VOLUME: NodeUnstageVolume is not sent to it, the claim is not freed while the
// staging is mounted, and reconcile finishes once it is unmounted by hand.
func TestPluginRestartedWithoutStagingMidRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	var restarted *csitest.MemPlugin
	ctx := WithProgress(h.ctx, func(step string) {
		if step == csi.RPCNodeUnpublishVolume && restarted == nil {
			// The plugin restarts as NodeUnpublishVolume is sent: it answers it, and is
			// another process by the time NodeUnstageVolume would be.
			h.mem.ResetCalls()
			restarted = h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }, "v")
		}
	})
	_, err := h.e.Release(ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), "reconcile") {
		t.Fatalf("release across the restart = %v, want it left for reconcile", err)
	}
	if n := restarted.CallCount(csi.RPCNodeUnstageVolume); n != 0 {
		t.Fatalf("NodeUnstageVolume sent %d times to a plugin without STAGE_UNSTAGE_VOLUME", n)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing || !live[0].NeedsReconcile {
		t.Fatalf("claims after the release = %+v", live)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, st.StagingPath+" is still mounted") ||
		!strings.Contains(rep.Problems[0].Message, "STAGE_UNSTAGE_VOLUME") {
		t.Fatalf("reconcile with the staging mounted = %+v, %v", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Fatalf("claim freed over a mounted staging: %+v", live)
	}
	h.mounts.markGone(st.StagingPath)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once unmounted: %+v, %v", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v", live)
	}
	if nodes := restarted.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Fatalf("still attached to %v", nodes)
	}
}

// ControllerUnpublishVolume failing for good: the claim is never freed while the volume may
// still be attached, whatever the class; status shows it needs reconcile and why; a claim of
// another alloc is refused; the volume cannot be deleted; and reconcile finishes it once the
// plugin detaches.
func TestControllerUnpublishFailingForever(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.Internal, codes.FailedPrecondition, codes.Unavailable} {
		t.Run(code.String(), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			h.faults.FailAlways(csi.RPCControllerUnpublishVolume, code)
			_, err := h.e.Release(h.ctx, "v", "a")
			if err == nil || !strings.Contains(err.Error(), `release "v" for alloc "a"`) ||
				!strings.Contains(err.Error(), csi.RPCControllerUnpublishVolume+": "+code.String()) || !strings.Contains(err.Error(), "volctl reconcile") {
				t.Fatalf("release = %v", err)
			}
			for range 2 {
				if _, err := h.e.Reconcile(h.ctx); err == nil {
					t.Fatal("reconcile reported success while ControllerUnpublishVolume fails")
				}
			}
			info := h.volumeInfo("v")
			if len(info.Claims) != 1 {
				t.Fatalf("claims shown = %+v", info.Claims)
			}
			cl := info.Claims[0]
			if cond := cl.Condition().String(); cond != "node-detached (needs reconcile)" || cl.LastRPC != csi.RPCControllerUnpublishVolume ||
				!strings.Contains(cl.LastErrorText(), csi.RPCControllerUnpublishVolume) {
				t.Fatalf("status shows %q, last error %q", cond, cl.LastErrorText())
			}
			// The refusal names the holder and says its release is what to finish.
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"}); !errors.Is(err, ErrConflict) ||
				!strings.Contains(err.Error(), `alloc "a"`) || !strings.Contains(err.Error(), "its release has not finished") ||
				!strings.Contains(err.Error(), "volctl reconcile") {
				t.Fatalf("claim while the release is unfinished: %v", err)
			}
			if err := h.e.DeleteVolume(h.ctx, "v"); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "a"`) {
				t.Fatalf("delete while the release is unfinished: %v", err)
			}
			if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 1 {
				t.Fatalf("attachments = %v", nodes)
			}
			h.faults.Clear()
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile: %+v, %v", rep, err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("claims after reconcile = %+v", live)
			}
			if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
				t.Fatalf("still attached to %v", nodes)
			}
		})
	}
}

// openSecond opens another engine on the harness's state dir, as a second volctl process.
func (h *harness) openSecond() *Engine {
	h.t.Helper()
	e, err := Open(h.ctx, Config{StateDir: h.dir, Mounts: h.mounts, Retry: fastRetry,
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { e.Close() })
	return e
}

// Two processes releasing one claim at once: one releases it, the other finds nothing to
// release; each teardown RPC is sent once.
func TestTwoReleasesOfOneClaimRace(t *testing.T) {
	t.Parallel()
	for i := range 5 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			h.mem.ResetCalls()
			engines := []*Engine{h.e, h.openSecond()}
			results := make([]ReleaseResult, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for j, e := range engines {
				wg.Add(1)
				go func() { defer wg.Done(); results[j], errs[j] = e.Release(h.ctx, "v", "a") }()
			}
			wg.Wait()
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("releases: %v / %v", errs[0], errs[1])
			}
			if results[0].Released == results[1].Released {
				t.Fatalf("released = %v / %v, want exactly one", results[0].Released, results[1].Released)
			}
			if got, want := h.rpcs(), []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume, csi.RPCListVolumes}; !slices.Equal(got, want) {
				t.Fatalf("RPCs = %v, want %v", got, want)
			}
			if hist, _ := h.e.History(h.ctx, "v", 0); len(hist) != 1 {
				t.Fatalf("history = %+v, want one freed claim", hist)
			}
		})
	}
}

// A delete and a claim of one volume racing from two processes: one wins, and the other is
// refused naming why; never a claim on a deleted volume, nor a volume deleted under a claim.
func TestDeleteRacesAClaim(t *testing.T) {
	t.Parallel()
	for i := range 5 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			ext := h.externalID("v")
			second := h.openSecond()
			var (
				wg        sync.WaitGroup
				delErr    error
				claimErr  error
				claimInfo ClaimInfo
			)
			wg.Add(2)
			go func() { defer wg.Done(); delErr = h.e.DeleteVolume(h.ctx, "v") }()
			go func() {
				defer wg.Done()
				claimInfo, claimErr = second.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			}()
			wg.Wait()
			ids, err := csitest.VolumeIDs(h.ctx, h.socket, "")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case delErr == nil && claimErr != nil:
				if !errors.Is(claimErr, ErrNotFound) && !errors.Is(claimErr, ErrConflict) || !strings.Contains(claimErr.Error(), `"v"`) {
					t.Fatalf("claim after the delete: %v", claimErr)
				}
				if slices.Contains(ids, ext) {
					t.Fatalf("plugin still has %s after the delete", ext)
				}
			case claimErr == nil && delErr != nil:
				if !errors.Is(delErr, ErrConflict) || !strings.Contains(delErr.Error(), `alloc "a"`) {
					t.Fatalf("delete under a claim: %v", delErr)
				}
				if !slices.Contains(ids, ext) || claimInfo.State != "published" {
					t.Fatalf("claim %+v; plugin volumes %v", claimInfo, ids)
				}
			default:
				t.Fatalf("delete: %v; claim: %v; want exactly one to succeed", delErr, claimErr)
			}
		})
	}
}

// The same with real mounts, as root: volctl's own plugin answers NOT_FOUND to
// NodeUnpublishVolume or NodeUnstageVolume while its mount is still there. The kernel's table
// keeps the claim held until reconcile, with the plugin well again, has it unmounted.
func TestHostpathReleaseKeepsWhatThePluginLeftMounted(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume} {
		t.Run(rpc, func(t *testing.T) {
			h := newHostpathEngine(t)
			cl := h.claimNew(t, "v", "a", spec.SingleNodeWriter)
			path := cl.TargetPath
			if rpc == csi.RPCNodeUnstageVolume {
				path = stagingPath(h.e.StateDir(), "hp", "v")
			}
			h.faults.FailAlways(rpc, codes.NotFound)
			_, err := h.e.Release(h.ctx, "v", "a")
			if err == nil || !strings.Contains(err.Error(), path+" is still mounted") {
				t.Fatalf("release with %s mounted = %v", path, err)
			}
			if m, err := mountinfo.Mounted(path); err != nil || !m {
				t.Fatalf("%s mounted = %v, %v; the test wants it left mounted", path, m, err)
			}
			claims, err := h.e.Claims(h.ctx)
			if err != nil || len(claims) != 1 || !claims[0].Releasing || !claims[0].NeedsReconcile {
				t.Fatalf("claims = %+v, %v; want the claim held for reconcile", claims, err)
			}
			h.faults.Clear()
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile: %+v, %v", rep, err)
			}
			if claims, err := h.e.Claims(h.ctx); err != nil || len(claims) != 0 {
				t.Fatalf("claims after reconcile = %+v, %v", claims, err)
			}
			if m, _ := mountinfo.Mounted(path); m {
				t.Fatalf("%s still mounted after reconcile", path)
			}
		})
	}
}

// A plugin that answers DeleteVolume OK but keeps the volume (it still lists it): volctl
// does not forget a volume whose storage is still there (docs/architecture.md, a delete is
// finished when the plugin no longer has the volume). The delete fails saying so, with an
// event, and the volume stays recorded, deleting (a create of it meanwhile is refused, rather
// than making a second volume); once the plugin deletes, deleting it again finishes.
func TestDeleteVolumeAnsweredOKButKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var lying atomic.Bool // set by the test, read by the server's goroutines
	lying.Store(true)
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if lying.Load() && filepath.Base(info.FullMethod) == csi.RPCDeleteVolume {
				return &csipb.DeleteVolumeResponse{}, nil
			}
			return handler(ctx, req)
		}))
	sv := volume("v")
	ext := h.create(sv).ExternalID
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil || !strings.Contains(err.Error(), "still lists volume "+strconv.Quote(ext)) {
		t.Fatalf("delete: %v; want it to fail, the plugin still listing %s", err, ext)
	}
	if ids, err := csitest.VolumeIDs(h.ctx, h.socket, ""); err != nil || !slices.Contains(ids, ext) {
		t.Fatalf("plugin volumes = %v, %v; the test wants %s kept", ids, err, ext)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "volume-delete"})
	if err != nil || len(evs) != 1 || evs[0].VolumeID != "v" || !strings.Contains(evs[0].Message, "not finished") {
		t.Fatalf("delete events = %+v, %v", evs, err)
	}
	if v := h.volumeInfo("v"); v.State != string(store.VolumeDeleting) || v.ExternalID != ext {
		t.Fatalf("volume v = %+v, want it kept, deleting %s", v, ext)
	}
	if _, err := h.e.CreateVolume(h.ctx, sv); !errors.Is(err, ErrConflict) {
		t.Fatalf("create of a volume being deleted: %v, want a conflict", err)
	}
	lying.Store(false)
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete again: %v", err)
	}
	if n := h.pluginVolumeCount(); n != 0 {
		t.Fatalf("plugin still has %d volume(s)", n)
	}
}

// A plugin that unstages but leaves a mount below the staging path (some mount the device at
// a subdirectory of it): the kernel's table shows it, and the claim is held until it is gone.
// Real mounts, as root.
func TestReleaseKeepsAMountLeftBelowTheStaging(t *testing.T) {
	t.Parallel()
	h, staging, sub := claimedOnKernelMounts(t)
	h.afterFirstUnstage(func() {
		if err := mountTmpfsAt(sub); err != nil {
			t.Errorf("mount %s: %v", sub, err)
		}
	})
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), staging+" is still mounted") || !strings.Contains(err.Error(), "unmount "+sub) {
		t.Fatalf("release with %s mounted = %v", sub, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claims = %+v, want the claim held", live)
	}
	if err := unix.Unmount(sub, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v", live)
	}
}

// A forced detach whose ControllerUnpublishVolume failed leaves the volume with no claim but
// still attached: status says so (attached_to in JSON, the node it is recorded attached to)
// until reconcile detaches it.
func TestStatusShowsAnAttachmentLeftWithoutClaims(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	b, err := json.Marshal(h.volumeInfo("v"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"attached_to":"node-1"`) {
		t.Fatalf("status of a volume left attached:\n%s\nwant attached_to node-1", b)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if b, _ := json.Marshal(h.volumeInfo("v")); strings.Contains(string(b), `"attached_to"`) {
		t.Fatalf("status after reconcile detached it:\n%s", b)
	}
}

// A forced detach unmounts volctl's own paths; a mount the plugin made below the staging path
// is not one it can take for its own, but it is not dropped silently either: the warning names
// it and says to unmount it. Real mounts, as root.
func TestForceDetachWarnsOfAMountLeftBelowTheStaging(t *testing.T) {
	t.Parallel()
	h, _, sub := claimedOnKernelMounts(t)
	if err := mountTmpfsAt(sub); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("Detach(force): %v", err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, sub) || !strings.Contains(w, "still mounted") {
		t.Fatalf("warnings = %q, want %s named still mounted", res.Warnings, sub)
	}
}

// claimedOnKernelMounts is a harness reading the kernel's mount table, with volume "v" of the
// in-memory plugin (mounting for real) claimed by alloc "a" under a state dir where mounts are allowed (root), and
// its staging path and a directory below it where a misbehaving plugin leaves a mount.
func claimedOnKernelMounts(t *testing.T) (h *harness, staging, sub string) {
	t.Helper()
	// The plugin mounts its targets for real (the kernel's table is asked whether a target is
	// mounted), not its staging path: it mounts below it.
	h = kernelHarness(t, func(c *csitest.MemConfig) { c.MountTargetsOnly = true })
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	return h, st.StagingPath, filepath.Join(st.StagingPath, "globalmount")
}

// afterFirstUnstage serves the harness's plugin again, running leave after the first
// NodeUnstageVolume it answers with success: a plugin that says it unstaged and leaves a mount.
func (h *harness) afterFirstUnstage(leave func()) {
	h.t.Helper()
	h.afterFirst(csi.RPCNodeUnstageVolume, leave)
}

// afterFirst serves the harness's plugin again, running leave after the first rpc it answers
// with success: a plugin that says it did the work and leaves something behind.
func (h *harness) afterFirst(rpc string, leave func()) {
	h.t.Helper()
	var first atomic.Bool
	h.stopServe()
	h.stopServe = csitest.ServeAt(h.t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			if filepath.Base(info.FullMethod) == rpc && err == nil && first.CompareAndSwap(false, true) {
				leave()
			}
			return resp, err
		}))
}

// mountTmpfsAt mounts a tmpfs at dir, making it first: a mount volctl did not make.
func mountTmpfsAt(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return unix.Mount("tmpfs", dir, "tmpfs", 0, "")
}
