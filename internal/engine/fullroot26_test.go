package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// A consumer fills the plugin's root through its own volume; then another alloc claims a
// second volume, and that volume is expanded. The plugin cannot record NodeStageVolume's
// staging nor ControllerExpandVolume's size. Round 26 first answered RESOURCE_EXHAUSTED for
// every record save that found no room, which CSI gives neither RPC and volctl retries as a
// passing condition: the claim was left controller-published for reconcile (the single-writer
// volume held, NodeStageVolume sent 3 more times each pass until someone freed space), and the
// expand left pending, saying the plugin "may have expanded" it unread (review26e). Now only
// ControllerPublishVolume's attachment (and a create's or a snapshot's copy) answers
// RESOURCE_EXHAUSTED; the rest INTERNAL, naming the root and what to free: the claim is rolled
// back and nothing is pending.
func TestClaimAndExpandOnAFullRootAreNotHeldForReconcile(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	root := hostpathtest.Tmpfs(t, "size=2m,mode=0700")
	h := newHostpathEngineWith(t, hostpath.Config{Root: root, NodeID: "n1"})
	ctx, e, faults := h.ctx, h.e, h.faults
	for _, id := range []string{"x", "b"} {
		sv := spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", CapacityMin: 64 << 10,
			Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
		if _, err := e.CreateVolume(ctx, sv); err != nil {
			t.Fatal(err)
		}
	}
	x, err := e.Claim(ctx, ClaimRequest{VolumeID: "x", Alloc: "a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Release(context.Background(), "x", "a") })
	hostpathtest.Fill(t, filepath.Join(x.TargetPath, "fill"))
	staged := faults.Calls(csi.RPCNodeStageVolume) // x's

	_, err = e.Claim(ctx, ClaimRequest{VolumeID: "b", Alloc: "y"})
	if err == nil || !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("claim of b on a full root: %v; want it failed naming the root %s, the claim rolled back", err, root)
	}
	if v, verr := e.Volume(ctx, "b"); verr != nil || len(v.Claims) != 0 {
		t.Errorf("claims left on b after a claim on a full root: %+v, %v; want none, rolled back", v.Claims, verr)
	}
	if n := faults.Calls(csi.RPCNodeStageVolume) - staged; n != 1 {
		t.Errorf("NodeStageVolume sent %d times to a plugin that could not record it for want of room; want once", n)
	}

	_, err = e.ExpandVolume(ctx, "b", 1<<20, 0)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "may have expanded") {
		t.Errorf("expand of b on a full root: %v; want it failed, the plugin's answer read", err)
	}
	if v, verr := e.Volume(ctx, "b"); verr != nil || v.ExpansionPending != 0 {
		t.Errorf("expand of b on a full root left pending (%d), %v; want nothing pending: the plugin answered", v.ExpansionPending, verr)
	}
}
