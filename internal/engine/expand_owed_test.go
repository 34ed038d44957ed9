package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

const mib = int64(1 << 20)

// nodeExpands returns the NodeExpandVolume requests the plugin received.
func (h *harness) nodeExpands() []csi.NodeExpandVolumeRequest {
	return csitest.Requests[csi.NodeExpandVolumeRequest](h.mem)
}

func (h *harness) owed(id string) int64 {
	h.t.Helper()
	return h.volumeInfo(id).NodeExpansionOwed
}

// node_expansion_required for a volume on no path here: NodeExpandVolume is owed and sent when
// a claim next publishes it.
func TestNodeExpansionOwedUntilNextPublish(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(h.nodeExpands()); n != 0 {
		t.Fatalf("NodeExpandVolume sent %d times for a volume on no path", n)
	}
	if got := h.owed("v"); got != 4*mib {
		t.Fatalf("node expansion owed = %d, want %d", got, 4*mib)
	}
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	reqs := h.nodeExpands()
	if len(reqs) != 1 || reqs[0].VolumePath != cl.TargetPath || reqs[0].CapacityMin != 4*mib || reqs[0].StagingPath == "" {
		t.Fatalf("NodeExpandVolume at publish: %+v, want one at %s for %d bytes with the staging path", reqs, cl.TargetPath, 4*mib)
	}
	if got := h.owed("v"); got != 0 {
		t.Errorf("node expansion still owed after the publish sent it: %d", got)
	}
}

// A node expansion that failed stays owed: the same expand run again sends it, and so does
// reconcile; the recorded size alone does not make it done.
func TestNodeExpansionFailedIsRedriven(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"expand", "reconcile"} {
		t.Run(via, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
			h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
			_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
			if err == nil || !strings.Contains(err.Error(), "it stays owed: run `volctl volume expand v --size 4MiB` again or `volctl reconcile`") {
				t.Fatalf("expand with a failing node = %v, want the node expansion left owed", err)
			}
			if got := h.owed("v"); got != 4*mib {
				t.Fatalf("node expansion owed = %d, want %d", got, 4*mib)
			}
			switch via {
			case "expand":
				if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
					t.Fatalf("expand again: %v", err)
				}
			case "reconcile":
				rep, err := h.e.Reconcile(h.ctx)
				if err != nil {
					t.Fatalf("reconcile: %v (%+v)", err, rep)
				}
				found := false
				for _, a := range rep.Actions {
					found = found || (a.Kind == "expanded" && a.VolumeID == "v")
				}
				if !found {
					t.Errorf("reconcile actions %+v, want the volume expanded", rep.Actions)
				}
			}
			// The fault injector answered the first one; the plugin saw the second.
			reqs := h.nodeExpands()
			if n := h.faults.Calls(csi.RPCNodeExpandVolume); n != 2 || len(reqs) != 1 ||
				reqs[0].VolumePath != cl.TargetPath || reqs[0].CapacityMin != 4*mib {
				t.Fatalf("NodeExpandVolume sent %d times, the plugin got %+v; want the failed one sent again at %s", n, reqs, cl.TargetPath)
			}
			if got := h.owed("v"); got != 0 {
				t.Errorf("node expansion still owed: %d", got)
			}
		})
	}
}

// A plugin that expands only on the node (node EXPAND_VOLUME, no controller EXPAND_VOLUME):
// the expansion is owed until the volume is published, then done by NodeExpandVolume alone.
func TestNodeOnlyExpansion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatal(err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d times to a plugin without the capability", n)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	if n := len(h.nodeExpands()); n != 1 {
		t.Fatalf("NodeExpandVolume sent %d times, want once at publish", n)
	}
	v := h.volumeInfo("v")
	if pv, _ := h.mem.Volume(v.ExternalID); pv.CapacityBytes != 4*mib {
		t.Errorf("plugin's volume is %d bytes, want %d", pv.CapacityBytes, 4*mib)
	}
	if v.NodeExpansionOwed != 0 || v.CapacityBytes != 4*mib {
		t.Errorf("volume after the node-only expansion: owed %d, capacity %d", v.NodeExpansionOwed, v.CapacityBytes)
	}
	// Expanding a published volume node-only goes to the node at once.
	if _, err := h.e.ExpandVolume(h.ctx, "v", 8*mib, 0); err != nil {
		t.Fatal(err)
	}
	if n := len(h.nodeExpands()); n != 2 {
		t.Errorf("NodeExpandVolume sent %d times in all, want twice", n)
	}
}

// A volume staged here but not published (its claim's NodePublishVolume keeps failing) is
// expanded at once, at its staging path.
func TestNodeExpansionAtStagingPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"}); err == nil {
		t.Fatal("claim with a failing NodePublishVolume succeeded")
	}
	st, ok := h.staging("v")
	if !ok || !st.Staged {
		t.Fatalf("staging %+v, want the volume staged", st)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatal(err)
	}
	reqs := h.nodeExpands()
	if len(reqs) != 1 || reqs[0].VolumePath != st.StagingPath || reqs[0].StagingPath != st.StagingPath || reqs[0].CapacityMin != 4*mib {
		t.Fatalf("NodeExpandVolume requests %+v, want one at the staging path %s", reqs, st.StagingPath)
	}
	if got := h.owed("v"); got != 0 {
		t.Errorf("node expansion still owed: %d", got)
	}
}
