package csi_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

func TestFingerprintMonolith(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.MaxVolumes = 16
	cfg.Topology = &spec.Topology{Segments: map[string]string{"rack": "r1"}}
	cfg.Plugin.VolumeAccessibilityConstraints = true // as a node with a topology declares it (csitest.NewMemPlugin)
	cfg.Manifest = map[string]string{"commit": "abc"}
	h := newHarness(t, cfg)
	fp, err := h.client.Fingerprint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &csi.Fingerprint{
		Provider: cfg.Name, Version: cfg.Version, Manifest: cfg.Manifest,
		Capabilities: csi.Capabilities{Plugin: cfg.Plugin, Controller: cfg.Controller, Node: cfg.Node},
		NodeID:       cfg.NodeID, MaxVolumes: 16, AccessibleTopology: cfg.Topology,
		Controller: true, Node: true,
	}
	if !reflect.DeepEqual(fp, want) {
		t.Fatalf("Fingerprint =\n%+v\nwant\n%+v", fp, want)
	}
	for _, rpc := range []string{csi.RPCGetPluginInfo, csi.RPCGetPluginCapabilities, csi.RPCControllerGetCapabilities,
		csi.RPCNodeGetCapabilities, csi.RPCNodeGetInfo} {
		if n := h.faults.Calls(rpc); n != 1 {
			t.Errorf("Fingerprint called %s %d times, want once", rpc, n)
		}
	}
}

// serveSplit serves a MemPlugin's controller and node halves on two sockets, each with the
// identity service, as split plugins do.
func serveSplit(t *testing.T, ctrl, node *csitest.MemPlugin) (string, string) {
	ctrlSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) { ctrl.RegisterServices(s, csitest.Identity, csitest.Controller) }))
	nodeSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) { node.RegisterServices(s, csitest.Identity, csitest.Node) }))
	return ctrlSock, nodeSock
}

func TestFingerprintSplitAndPartialPlugins(t *testing.T) {
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	ctrlSock, nodeSock := serveSplit(t, mem, mem)
	other := csitest.DefaultMemConfig()
	other.Name = "someone.else"
	_, otherNode := serveSplit(t, mem, csitest.NewMemPlugin(other))

	noController := csitest.DefaultMemConfig()
	noController.Plugin.ControllerService = false
	ncSock, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(noController)))

	tests := []struct {
		name                 string
		cfg                  csi.Config
		wantErr              string
		wantNodeID           string
		wantController, node bool
	}{
		{name: "split", cfg: csi.Config{ControllerSocket: ctrlSock, NodeSocket: nodeSock}, wantNodeID: "mem-node-1", wantController: true, node: true},
		{name: "controller only has no node ID", cfg: csi.Config{ControllerSocket: ctrlSock}, wantController: true},
		{name: "node only", cfg: csi.Config{NodeSocket: nodeSock}, wantNodeID: "mem-node-1", node: true},
		{name: "no CONTROLLER_SERVICE skips the controller", cfg: csi.Config{ControllerSocket: ncSock, NodeSocket: ncSock}, wantNodeID: "mem-node-1", node: true},
		{name: "sockets of two plugins", cfg: csi.Config{ControllerSocket: ctrlSock, NodeSocket: otherNode},
			wantErr: `serves plugin "mem.csi.volctl.test" but node socket ` + otherNode + ` serves "someone.else"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := csitest.NewClient(t, tt.cfg)
			fp, err := c.Fingerprint(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Fingerprint = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fp.NodeID != tt.wantNodeID || fp.Controller != tt.wantController || fp.Node != tt.node {
				t.Fatalf("Fingerprint = node %q controller %v node %v; want %q %v %v", fp.NodeID, fp.Controller, fp.Node,
					tt.wantNodeID, tt.wantController, tt.node)
			}
			if !tt.wantController && len(fp.Capabilities.Controller.Names()) != 0 {
				t.Fatalf("controller capabilities %v without a controller", fp.Capabilities.Controller.Names())
			}
		})
	}
}

func TestFingerprintRefusesEmptyNames(t *testing.T) {
	noName := csitest.DefaultMemConfig()
	noName.Name = ""
	noNode := csitest.DefaultMemConfig()
	noNode.NodeID = ""
	tests := []struct {
		name string
		cfg  csitest.MemConfig
		want string
	}{
		// Each says what is wrong and what to do (the rule every refusal of a plugin follows):
		// before, neither said what to do, nor the node ID's refusal which driver it came from.
		{"empty plugin name", noName, "fingerprint: GetPluginInfo: the plugin reported an empty name, which the CSI spec requires " +
			"(volctl pins a plugin to its driver's name): fix the plugin"},
		{"empty node ID", noNode, `fingerprint: NodeGetInfo: plugin "mem.csi.volctl.test" reported an empty node ID, which the CSI spec requires of a node service ` +
			"(the node every ControllerPublishVolume names): set its node ID in its configuration or flags and restart it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.cfg)
			_, err := h.client.Fingerprint(context.Background())
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Fingerprint = %v, want %q", err, tt.want)
			}
		})
	}
	// A controller-only plugin has no node ID and that is fine.
	h := newHarness(t, noNode)
	c := csitest.NewClient(t, csi.Config{ControllerSocket: h.socket})
	if _, err := c.Fingerprint(context.Background()); err != nil {
		t.Fatalf("controller-only Fingerprint = %v", err)
	}
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name      string
		ready     *bool
		fail      codes.Code
		wantReady bool
		wantCode  codes.Code
	}{
		{name: "ready absent means ready", wantReady: true},
		{name: "ready true", ready: ptr(true), wantReady: true},
		{name: "not ready", ready: ptr(false), wantReady: false},
		{name: "unhealthy", fail: codes.FailedPrecondition, wantCode: codes.FailedPrecondition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := csitest.DefaultMemConfig()
			cfg.Ready = tt.ready
			h := newHarness(t, cfg)
			if tt.fail != codes.OK {
				h.faults.FailAlways(csi.RPCProbe, tt.fail)
			}
			ready, err := h.client.Probe(context.Background())
			if csi.CodeOf(err) != tt.wantCode {
				t.Fatalf("Probe error = %v, want code %v", err, tt.wantCode)
			}
			if err == nil && ready != tt.wantReady {
				t.Fatalf("Probe ready = %v, want %v", ready, tt.wantReady)
			}
			if err != nil && !strings.Contains(err.Error(), "unhealthy") {
				t.Fatalf("Probe error %q has no hint about health", err)
			}
		})
	}
}

// TestProbeSplitAsksBothSockets: a split plugin is ready only when both halves are.
func TestProbeSplitAsksBothSockets(t *testing.T) {
	ctrl := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	nodeCfg := csitest.DefaultMemConfig()
	nodeCfg.Ready = ptr(false)
	ctrlSock, nodeSock := serveSplit(t, ctrl, csitest.NewMemPlugin(nodeCfg))
	c := csitest.NewClient(t, csi.Config{ControllerSocket: ctrlSock, NodeSocket: nodeSock})
	if ready, err := c.Probe(context.Background()); err != nil || ready {
		t.Fatalf("Probe = %v, %v; want not ready from the node half", ready, err)
	}
}

// TestProbeReadyOverride checks the wrapper handling directly: ready=false from a raw server.
func TestProbeReadyOverride(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCProbe, func(any) (any, error) {
		return &csipb.ProbeResponse{Ready: wrapperspb.Bool(false)}, nil
	}))
	if ready, err := h.client.Probe(context.Background()); err != nil || ready {
		t.Fatalf("Probe = %v, %v; want not ready", ready, err)
	}
	h2 := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCProbe, func(any) (any, error) {
		return nil, status.Error(codes.Unavailable, "starting")
	}))
	if _, err := h2.client.Probe(context.Background()); !csi.IsRetryable(err) {
		t.Fatalf("Probe = %v, want a retryable error", err)
	}
}

// TestFingerprintBoundsThePluginsIdentity: a plugin whose GetPluginInfo name or NodeGetInfo
// node ID is far past the CSI spec's bounds (63 characters; 256 bytes), up to gRPC's 4 MiB, had
// it recorded, sent back in every RPC naming the node and printed in full: every `plugin ls`
// row padded to its width (every other plugin's too), every refusal naming the driver a
// megabyte long. Past 256 bytes and 1 KiB, four times what CSI allows, it is refused, naming
// the plugin, the size and what to do; up to them it is taken as it is. vendor_version, which
// CSI leaves unbounded and volctl only shows, is kept cut to 256 bytes, saying how much more.
func TestFingerprintBoundsThePluginsIdentity(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*csitest.MemConfig)
		want []string // in the error; none: no error
	}{
		{"name at the bound", func(c *csitest.MemConfig) { c.Name = strings.Repeat("n", 256) }, nil},
		{"name past it", func(c *csitest.MemConfig) { c.Name = strings.Repeat("n", 257) }, []string{"GetPluginInfo", "name of 257 bytes", "63 characters", "fix the plugin"}},
		{"name of 1 MiB", func(c *csitest.MemConfig) { c.Name = strings.Repeat("n", 1<<20) }, []string{"name of 1048576 bytes"}},
		{"node ID at the bound", func(c *csitest.MemConfig) { c.NodeID = strings.Repeat("i", 1024) }, nil},
		{"node ID past it", func(c *csitest.MemConfig) { c.NodeID = strings.Repeat("i", 1025) }, []string{"NodeGetInfo", `plugin "mem.csi.volctl.test"`, "node ID of 1025 bytes", "256 bytes", "fix the plugin"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := csitest.DefaultMemConfig()
			tt.edit(&cfg)
			h := newHarness(t, cfg)
			fp, err := h.client.Fingerprint(context.Background())
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Fingerprint = %v, want it taken", err)
				}
				if fp.Provider != cfg.Name || fp.NodeID != cfg.NodeID {
					t.Errorf("fingerprint = %q, node %q; want them as the plugin said", fp.Provider, fp.NodeID)
				}
				return
			}
			if err == nil {
				t.Fatalf("Fingerprint took %s", tt.name)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %s", err, w)
				}
			}
			if len(err.Error()) > 1024 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
		})
	}
	cfg := csitest.DefaultMemConfig()
	cfg.Version = strings.Repeat("v", 1<<20)
	fp, err := newHarness(t, cfg).client.Fingerprint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(fp.Version, strings.Repeat("v", 256)+"…") || !strings.Contains(fp.Version, "1048320 bytes more") || len(fp.Version) > 300 {
		t.Errorf("a vendor_version of 1 MiB is kept as %d bytes: %.300q", len(fp.Version), fp.Version)
	}
}
