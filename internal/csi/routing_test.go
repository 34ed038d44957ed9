package csi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestEveryRPCGoesToItsServicesSocket sends every RPC the client has through a split plugin, a
// monolith, a controller-only and a node-only one, each socket served by a MemPlugin of its own
// that counts what it receives: a controller RPC reaches the controller socket and nothing else,
// a node RPC the node socket, an identity RPC the controller socket if there is one, else the
// node socket; an RPC whose socket is missing reaches none and says which socket is missing.
func TestEveryRPCGoesToItsServicesSocket(t *testing.T) {
	ctx := context.Background()
	calls := map[string]func(c *csi.Client) error{
		csi.RPCCreateVolume: func(c *csi.Client) error {
			_, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{fsWriter}})
			return err
		},
		csi.RPCDeleteVolume: func(c *csi.Client) error { return c.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: "v"}) },
		csi.RPCControllerPublishVolume: func(c *csi.Client) error {
			_, err := c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: "v", NodeID: "n", Capability: fsWriter})
			return err
		},
		csi.RPCControllerUnpublishVolume: func(c *csi.Client) error {
			return c.ControllerUnpublishVolume(ctx, csi.ControllerUnpublishVolumeRequest{VolumeID: "v", NodeID: "n"})
		},
		csi.RPCValidateVolumeCapabilities: func(c *csi.Client) error {
			return c.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{VolumeID: "v", Capabilities: []csi.VolumeCapability{fsWriter}})
		},
		csi.RPCControllerGetCapabilities: func(c *csi.Client) error { _, err := c.ControllerGetCapabilities(ctx); return err },
		csi.RPCCreateSnapshot: func(c *csi.Client) error {
			_, err := c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: "v", Name: "s"})
			return err
		},
		csi.RPCDeleteSnapshot: func(c *csi.Client) error { return c.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: "s"}) },
		csi.RPCListSnapshots:  func(c *csi.Client) error { _, err := c.ListSnapshots(ctx, csi.ListSnapshotsRequest{}); return err },
		csi.RPCControllerExpandVolume: func(c *csi.Client) error {
			_, err := c.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{VolumeID: "v", CapacityMin: 1 << 20})
			return err
		},
		csi.RPCGetPluginInfo:         func(c *csi.Client) error { _, err := c.GetPluginInfo(ctx); return err },
		csi.RPCGetPluginCapabilities: func(c *csi.Client) error { _, err := c.GetPluginCapabilities(ctx); return err },
		csi.RPCNodeStageVolume: func(c *csi.Client) error {
			return c.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: "v", StagingPath: t.TempDir(), Capability: fsWriter})
		},
		csi.RPCNodeUnstageVolume: func(c *csi.Client) error {
			return c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: "v", StagingPath: t.TempDir()})
		},
		csi.RPCNodePublishVolume: func(c *csi.Client) error {
			return c.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: "v", TargetPath: t.TempDir(), Capability: fsWriter})
		},
		csi.RPCNodeUnpublishVolume: func(c *csi.Client) error {
			return c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: "v", TargetPath: t.TempDir()})
		},
		csi.RPCNodeGetCapabilities: func(c *csi.Client) error { _, err := c.NodeGetCapabilities(ctx); return err },
		csi.RPCNodeGetInfo:         func(c *csi.Client) error { _, err := c.NodeGetInfo(ctx); return err },
		csi.RPCNodeExpandVolume: func(c *csi.Client) error {
			_, err := c.NodeExpandVolume(ctx, csi.NodeExpandVolumeRequest{VolumeID: "v", VolumePath: t.TempDir(), CapacityMin: 1 << 20})
			return err
		},
	}
	serve := func() (string, *csitest.Faults) {
		f := csitest.NewFaults()
		socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())), csitest.WithFaults(f))
		return socket, f
	}
	ctrlSock, ctrl := serve()
	nodeSock, node := serve()
	const none = ""
	for _, tt := range []struct {
		name       string
		cfg        csi.Config
		identityAt string // "controller", "node" or none
	}{
		{"split", csi.Config{ControllerSocket: ctrlSock, NodeSocket: nodeSock}, "controller"},
		{"monolith", csi.Config{ControllerSocket: ctrlSock, NodeSocket: ctrlSock}, "controller"},
		{"controller only", csi.Config{ControllerSocket: ctrlSock}, "controller"},
		{"node only", csi.Config{NodeSocket: nodeSock}, "node"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := csitest.NewClient(t, tt.cfg)
			for rpc, call := range calls {
				ctrl.ResetCounts()
				node.ResetCounts()
				err := call(c)
				svc := map[bool]string{true: "controller", false: "node"}[strings.HasPrefix(rpc, "Controller") ||
					rpc == csi.RPCCreateVolume || rpc == csi.RPCDeleteVolume || rpc == csi.RPCValidateVolumeCapabilities ||
					strings.HasSuffix(rpc, "Snapshot") || rpc == csi.RPCListSnapshots]
				if strings.HasPrefix(rpc, "GetPlugin") {
					svc = tt.identityAt
				}
				sockets := map[string]string{"controller": tt.cfg.ControllerSocket, "node": tt.cfg.NodeSocket}
				want := sockets[svc]
				if want == none {
					if err == nil || !strings.Contains(err.Error(), "the plugin has no "+svc+" socket configured") {
						t.Errorf("%s with no %s socket: %v, want the missing socket named", rpc, svc, err)
					}
				}
				gotCtrl, gotNode := ctrl.Calls(rpc), node.Calls(rpc)
				wantCtrl, wantNode := 0, 0
				switch want {
				case ctrlSock:
					wantCtrl = 1
				case nodeSock:
					wantNode = 1
				}
				if gotCtrl != wantCtrl || gotNode != wantNode {
					t.Errorf("%s (a %s RPC) reached the controller socket %d times and the node socket %d times, want %d and %d",
						rpc, svc, gotCtrl, gotNode, wantCtrl, wantNode)
				}
				if n := len(ctrl.Counts()) + len(node.Counts()); n > 1 {
					t.Errorf("%s: the plugin received other RPCs too: %v %v", rpc, ctrl.Counts(), node.Counts())
				}
			}
		})
	}
}
