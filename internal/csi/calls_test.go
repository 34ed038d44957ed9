package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// world is a MemPlugin with one volume controller-published, staged and published, and a
// snapshot, so that every RPC has something valid (and idempotent) to act on.
type world struct {
	*harness
	vol             csi.Volume
	nodeID          string
	pctx            map[string]string
	staging, target string
	snap            string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	// Off by default, so that the engine's tests ask by ListVolumes and ListSnapshots.
	cfg.Controller.GetVolume, cfg.Controller.GetSnapshot = true, true
	h := newHarness(t, cfg)
	w := &world{harness: h}
	ctx := context.Background()
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	w.vol, err = h.client.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "w", CapacityMin: 1 << 20, Capabilities: []csi.VolumeCapability{fsWriter}})
	must(err)
	info, err := h.client.NodeGetInfo(ctx)
	must(err)
	w.nodeID = info.NodeID
	w.pctx, err = h.client.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: w.vol.ID, NodeID: w.nodeID, Capability: fsWriter})
	must(err)
	dir, err := os.MkdirTemp("", "csiw")
	must(err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	w.staging, w.target = filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	must(os.Mkdir(w.staging, 0o700))
	must(h.client.NodeStageVolume(ctx, w.stageReq()))
	must(h.client.NodePublishVolume(ctx, w.publishReq()))
	snap, err := h.client.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: w.vol.ID, Name: "w-snap"})
	must(err)
	w.snap = snap.ID
	h.mem.ResetCalls()
	h.faults.ResetCounts()
	return w
}

func (w *world) stageReq() csi.NodeStageVolumeRequest {
	return csi.NodeStageVolumeRequest{VolumeID: w.vol.ID, PublishContext: w.pctx, StagingPath: w.staging, Capability: fsWriter}
}

func (w *world) publishReq() csi.NodePublishVolumeRequest {
	return csi.NodePublishVolumeRequest{VolumeID: w.vol.ID, PublishContext: w.pctx, StagingPath: w.staging, TargetPath: w.target, Capability: fsWriter}
}

// calls returns one call per RPC, each valid and repeatable against the world: the creates
// and publishes are idempotent, the deletes and unpublishes act on things already gone.
func (w *world) calls() map[string]func(context.Context) error {
	c := w.client
	gone := "/nonexistent/volctl-target"
	return map[string]func(context.Context) error{
		csi.RPCGetPluginInfo:         func(ctx context.Context) error { _, err := c.GetPluginInfo(ctx); return err },
		csi.RPCGetPluginCapabilities: func(ctx context.Context) error { _, err := c.GetPluginCapabilities(ctx); return err },
		csi.RPCProbe:                 func(ctx context.Context) error { _, err := c.Probe(ctx); return err },
		csi.RPCCreateVolume: func(ctx context.Context) error {
			_, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "w", CapacityMin: 1 << 20, Capabilities: []csi.VolumeCapability{fsWriter}})
			return err
		},
		csi.RPCDeleteVolume: func(ctx context.Context) error {
			return c.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: "already-deleted"})
		},
		csi.RPCControllerPublishVolume: func(ctx context.Context) error {
			_, err := c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: w.vol.ID, NodeID: w.nodeID, Capability: fsWriter})
			return err
		},
		csi.RPCControllerUnpublishVolume: func(ctx context.Context) error {
			return c.ControllerUnpublishVolume(ctx, csi.ControllerUnpublishVolumeRequest{VolumeID: w.vol.ID, NodeID: "other-node"})
		},
		csi.RPCValidateVolumeCapabilities: func(ctx context.Context) error {
			return c.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{VolumeID: w.vol.ID, Capabilities: []csi.VolumeCapability{fsWriter}})
		},
		csi.RPCListVolumes: func(ctx context.Context) error { _, err := c.ListVolumes(ctx, csi.ListVolumesRequest{}); return err },
		csi.RPCControllerGetVolume: func(ctx context.Context) error {
			_, err := c.ControllerGetVolume(ctx, csi.ControllerGetVolumeRequest{VolumeID: w.vol.ID})
			return err
		},
		csi.RPCGetCapacity: func(ctx context.Context) error {
			_, err := c.GetCapacity(ctx, csi.GetCapacityRequest{Capabilities: []csi.VolumeCapability{fsWriter}})
			return err
		},
		csi.RPCControllerGetCapabilities: func(ctx context.Context) error { _, err := c.ControllerGetCapabilities(ctx); return err },
		csi.RPCCreateSnapshot: func(ctx context.Context) error {
			_, err := c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: w.vol.ID, Name: "w-snap"})
			return err
		},
		csi.RPCDeleteSnapshot: func(ctx context.Context) error {
			return c.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: "already-deleted"})
		},
		csi.RPCListSnapshots: func(ctx context.Context) error {
			_, err := c.ListSnapshots(ctx, csi.ListSnapshotsRequest{})
			return err
		},
		csi.RPCGetSnapshot: func(ctx context.Context) error {
			_, err := c.GetSnapshot(ctx, csi.GetSnapshotRequest{SnapshotID: w.snap})
			return err
		},
		csi.RPCControllerExpandVolume: func(ctx context.Context) error {
			_, err := c.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{VolumeID: w.vol.ID, CapacityMin: 1 << 20})
			return err
		},
		csi.RPCNodeStageVolume: func(ctx context.Context) error { return c.NodeStageVolume(ctx, w.stageReq()) },
		csi.RPCNodeUnstageVolume: func(ctx context.Context) error {
			return c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: w.vol.ID, StagingPath: gone})
		},
		csi.RPCNodePublishVolume: func(ctx context.Context) error { return c.NodePublishVolume(ctx, w.publishReq()) },
		csi.RPCNodeUnpublishVolume: func(ctx context.Context) error {
			return c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: w.vol.ID, TargetPath: gone})
		},
		csi.RPCNodeGetCapabilities: func(ctx context.Context) error { _, err := c.NodeGetCapabilities(ctx); return err },
		csi.RPCNodeGetInfo:         func(ctx context.Context) error { _, err := c.NodeGetInfo(ctx); return err },
		csi.RPCNodeExpandVolume: func(ctx context.Context) error {
			_, err := c.NodeExpandVolume(ctx, csi.NodeExpandVolumeRequest{VolumeID: w.vol.ID, VolumePath: w.target, CapacityMin: 1 << 20})
			return err
		},
		csi.RPCNodeGetVolumeStats: func(ctx context.Context) error {
			_, err := c.NodeGetVolumeStats(ctx, csi.NodeGetVolumeStatsRequest{VolumeID: w.vol.ID, VolumePath: w.target})
			return err
		},
	}
}

// TestEveryRPCSucceedsAgainstMemPlugin is the baseline the error and benchmark tests build on.
func TestEveryRPCSucceedsAgainstMemPlugin(t *testing.T) {
	w := newWorld(t)
	calls := w.calls()
	if len(calls) != len(csi.RPCs) {
		t.Fatalf("%d calls for %d RPCs", len(calls), len(csi.RPCs))
	}
	for _, rpc := range csi.RPCs {
		if err := calls[rpc](context.Background()); err != nil {
			t.Errorf("%s: %v", rpc, err)
		}
		if n := w.faults.Calls(rpc); n == 0 {
			t.Errorf("%s did not reach the plugin", rpc)
		}
	}
}
