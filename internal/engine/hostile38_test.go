package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin answers NodeUnstageVolume OK and leaves the staging mounted (its unmount failed
// quietly, or it logged out of the device under a file system still mounted on it): the
// release stops there, left for reconcile, as TestReleaseKeepsWhatThePluginLeftMounted holds.
// Meanwhile another alloc claims the (multi-writer) volume. The plugin has said the volume is
// unstaged, so what is mounted at the staging path is no staging of its: the new claim must not
// be published from it. Before, the staging row still said staged, and the claim sent
// NodePublishVolume from the mount the plugin had disowned (a plugin that binds the staging
// path without looking would hand the alloc a file system on a device it had let go; this one
// refused, "not staged", and the rollback failed on the same mount). Now the claim stages anew,
// finds the mount left (unstageUnrecorded), and stops naming it, with no NodePublishVolume
// sent; once it is unmounted, reconcile finishes the release and publishes the claim from a
// staging the plugin made again.
func TestClaimAfterNodeUnstageAnsweredOKIsNotPublishedFromTheMountLeft(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a", AccessMode: spec.MultiNodeMultiWriter})
	staging, _ := h.staging("v")
	heal := h.serveLeavingMounts(csi.RPCNodeUnstageVolume)
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil || !strings.Contains(err.Error(), "still mounted") {
		t.Fatalf("release through a plugin that leaves the staging mounted = %v, want it left for reconcile", err)
	}
	h.faults.ResetCounts()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b", AccessMode: spec.MultiNodeMultiWriter})
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 0 {
		t.Fatalf("NodePublishVolume sent %d time(s) from the staging at %s, which the plugin had answered NodeUnstageVolume OK for (claim: %v)", n, staging.StagingPath, err)
	}
	if err == nil || !strings.Contains(err.Error(), staging.StagingPath) || !strings.Contains(err.Error(), "still mounted") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Fatalf("claim over a staging mount the plugin disowned = %v, want an error naming %s still mounted and reconcile", err, staging.StagingPath)
	}

	// Unmounted by hand: reconcile finishes a's release and publishes b, staged anew.
	heal()
	h.faults.ResetCounts()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the staging is unmounted: %v", err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].Alloc != "b" || !live[0].AtRest() {
		t.Fatalf("claims after reconcile = %+v, want b's alone, published", live)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != 1 {
		t.Errorf("NodeStageVolume sent %d time(s) by reconcile, want once: b is published from a staging the plugin made again", n)
	}
	if at, ok := h.mem.StagingPath(h.externalID("v")); !ok || at != staging.StagingPath {
		t.Errorf("plugin's staging of v = %q (%v), want it staged at %s", at, ok, staging.StagingPath)
	}
	h.release("v", "b")
}

// The honest case beside it: a multi-writer volume's claim released while another claim is
// published from the same staging leaves the staging as it is (no NodeUnstageVolume), and a
// third claim is published from it without staging it again.
func TestClaimJoiningAStagingAfterAnotherClaimsReleaseIsPublishedFromIt(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	for _, alloc := range []string{"a", "b"} {
		h.claim(ClaimRequest{VolumeID: "v", Alloc: alloc, AccessMode: spec.MultiNodeMultiWriter})
	}
	h.release("v", "a")
	h.faults.ResetCounts()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "c", AccessMode: spec.MultiNodeMultiWriter})
	if n, m := h.faults.Calls(csi.RPCNodeStageVolume), h.faults.Calls(csi.RPCNodeUnstageVolume); n != 0 || m != 0 {
		t.Errorf("NodeStageVolume sent %d time(s), NodeUnstageVolume %d, joining a staging b is published from; want none", n, m)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 1 {
		t.Errorf("NodePublishVolume sent %d time(s), want once", n)
	}
	h.release("v", "b")
	h.release("v", "c")
	if _, ok := h.staging("v"); ok {
		t.Errorf("staging of v recorded after every claim was released")
	}
}

// serveMountingOver serves the harness's plugin again on its socket, with its faults, as a
// plugin whose rpc (NodeStageVolume or NodePublishVolume), once it answered OK, also mounts a
// tmpfs over the directory holding the path it was given (the path's parent, or its
// grandparent with up) and another at the path, made inside it: the path is a mount point, as
// the plugin was asked, while the mount over the directory hides what volctl keeps there. It
// returns the directory, known once the RPC came, and what unmounts both by hand (also run at
// the test's end).
func (h *harness) serveMountingOver(rpc string, up int) (dir func() string, unmountByHand func()) {
	h.t.Helper()
	return h.serveMounting(rpc, up, true)
}

// claimVBesideW creates volumes v and w, claims w for alloc a and writes a file (data) in its
// target (wTarget), then claims v for a through a plugin that mounts over the directory up
// levels above rpc's path (serveMountingOver), returning the claim's error.
func (h *harness) claimVBesideW(rpc string, up int) (wTarget, data string, over func() string, unmountByHand func(), err error) {
	h.t.Helper()
	h.create(volume("v"))
	h.create(volume("w"))
	wTarget = h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"}).TargetPath
	data = filepath.Join(wTarget, "w-data")
	if err := os.WriteFile(data, []byte("w"), 0o600); err != nil {
		h.t.Fatal(err)
	}
	over, unmountByHand = h.serveMountingOver(rpc, up)
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	return wTarget, data, over, unmountByHand, err
}

// onlyWPublished checks, after claimVBesideW's refusal and a reconcile, that v has no claim
// and w's one claim is published still, its file (data) read through its target.
func (h *harness) onlyWPublished(data string) {
	h.t.Helper()
	if live := h.liveClaims("v"); len(live) != 0 {
		h.t.Fatalf("v's claims after reconcile = %+v, want none", live)
	}
	if got, err := os.ReadFile(data); err != nil || string(got) != "w" {
		h.t.Fatalf("w's data through its target after reconcile = %q, %v", got, err)
	}
	if live := h.liveClaims("w"); len(live) != 1 || !live[0].AtRest() {
		h.t.Fatalf("w's claims = %+v, want its one claim published still", live)
	}
}

// serveMounting is serveMountingOver, with a mount made at the path too when atPath.
func (h *harness) serveMounting(rpc string, up int, atPath bool) (dir func() string, unmountByHand func()) {
	h.t.Helper()
	var (
		mu   sync.Mutex
		over string
		at   string
	)
	h.stopServe()
	h.stopServe = csitest.ServeAt(h.t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			if err != nil || filepath.Base(info.FullMethod) != rpc {
				return resp, err
			}
			var path string
			switch r := req.(type) {
			case interface{ GetTargetPath() string }:
				path = r.GetTargetPath()
			case interface{ GetStagingTargetPath() string }:
				path = r.GetStagingTargetPath()
			}
			mu.Lock()
			defer mu.Unlock()
			if over != "" {
				return resp, err
			}
			d := path
			for range up {
				d = filepath.Dir(d)
			}
			if merr := unix.Mount("tmpfs", d, "tmpfs", 0, "size=1m"); merr != nil {
				return nil, merr
			}
			over = d
			if !atPath {
				return resp, err
			}
			at = path
			if merr := os.MkdirAll(path, 0o750); merr != nil {
				return nil, merr
			}
			if merr := unix.Mount("tmpfs", path, "tmpfs", 0, "size=1m"); merr != nil {
				return nil, merr
			}
			return resp, err
		}))
	unmountByHand = func() {
		mu.Lock()
		defer mu.Unlock()
		if over != "" {
			_ = unix.Unmount(over, unix.MNT_DETACH) // and the mount inside it
		}
		if at != "" {
			_ = unix.Unmount(at, unix.MNT_DETACH) // the plugin's own mount at the path, hidden under it
		}
	}
	h.t.Cleanup(unmountByHand)
	return func() string { mu.Lock(); defer mu.Unlock(); return over }, unmountByHand
}

// A plugin whose NodePublishVolume mounts over the alloc's publish directory (publish/<alloc>,
// shared by the alloc's claims on several volumes) and makes the target inside it, mounted:
// the target is a mount point, so checkTarget passed it, and the claim was published while the
// alloc's other volume's target was hidden under the plugin's mount, the path the alloc writes
// that volume's data to now leading into the plugin's file system (a tmpfs here: its data gone
// with it). So with the claim's own publish directory (publish/<alloc>/<volume>), which hides
// the plugin's first mount at the target. Now the claim is refused naming the directory,
// rolled back (the rollback stopping on the mount left, named, for reconcile), and once the
// mount is undone by hand, reconcile finishes it, the other volume's claim and data untouched.
// Real mounts, as root.
func TestPluginMountingOverTheAllocsPublishDirectoryIsRefused(t *testing.T) {
	for _, tc := range []struct {
		what string
		up   int // the directory mounted over: the target's parent (1) or grandparent (2)
	}{
		{"the claim's publish directory", 1},
		{"the alloc's publish directory", 2},
	} {
		t.Run(tc.what, func(t *testing.T) {
			h := kernelHarness(t, nil)
			wTarget, data, over, unmountByHand, err := h.claimVBesideW(csi.RPCNodePublishVolume, tc.up)
			dir := filepath.Join(filepath.Dir(filepath.Dir(wTarget)), "v")
			if tc.up == 2 {
				dir = filepath.Dir(dir)
			}
			if over() != dir {
				t.Fatalf("the plugin mounted over %q, want %s", over(), dir)
			}
			if err == nil || !strings.Contains(err.Error(), tc.what+" "+dir+" is a mount point now") {
				t.Fatalf("claim through a plugin that mounted over %s = %v\nwant it refused naming %s", dir, err, tc.what)
			}
			for _, cl := range h.liveClaims("v") {
				if cl.AtRest() || !cl.Releasing {
					t.Fatalf("v's claim after the refusal = %+v, want it on its way back", cl)
				}
			}
			unmountByHand()
			if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
				t.Fatalf("reconcile once the mount over %s is undone: %+v, %v", dir, rep, err)
			}
			h.onlyWPublished(data)
		})
	}
}

// The same at NodeStageVolume: a plugin that mounts over its staging directory (staging/<plugin>,
// which holds every staging of its volumes) and stages the volume inside it hides its other
// volumes' stagings, which their claims are published from. Refused naming the directory, as
// above. Real mounts, as root.
func TestPluginMountingOverItsStagingDirectoryIsRefused(t *testing.T) {
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	h.create(volume("w"))
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	wStaging, _ := h.staging("w")
	over, unmountByHand := h.serveMountingOver(csi.RPCNodeStageVolume, 1)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	pluginDir := filepath.Dir(wStaging.StagingPath)
	if over() != pluginDir {
		t.Fatalf("the plugin mounted over %q, want its staging directory %s", over(), pluginDir)
	}
	if err == nil || !strings.Contains(err.Error(), "the plugin's staging directory "+pluginDir+" is a mount point now") {
		t.Fatalf("claim through a plugin that mounted over %s = %v\nwant it refused naming the plugin's staging directory", pluginDir, err)
	}
	unmountByHand()
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile once the mount over %s is undone: %+v, %v", pluginDir, rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("v's claims after reconcile = %+v, want none", live)
	}
	if live := h.liveClaims("w"); len(live) != 1 || !live[0].AtRest() {
		t.Fatalf("w's claims = %+v, want its one claim published still", live)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}) // the plugin well again: the honest claim
}
