package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// serveLeavingMounts serves the harness's plugin again on its socket, with its faults, as a
// plugin that answers rpc (NodeUnpublishVolume or NodeUnstageVolume) as asked but leaves its
// mount where it was: after the call, the path it names holds a file again, as a mount point
// still showing the volume's data would (rmdir fails on it, and fakeMounts counts it mounted).
// The returned function makes the plugin well again.
func (h *harness) serveLeavingMounts(rpc string) (heal func()) {
	h.t.Helper()
	var left []string
	leaving := true
	h.stopServe()
	h.stopServe = csitest.ServeAt(h.t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
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
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile: %v", err)
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
