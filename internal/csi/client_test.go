package csi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

var (
	fsWriter = csi.VolumeCapability{
		Capability:   spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"noatime", "nodev"}},
	}
	blockReader = csi.VolumeCapability{
		Capability: spec.Capability{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.BlockDevice},
	}
)

// checkReceived fetches what the MemPlugin received and checks it equals what was sent: the
// owned types survive the trip to the wire and back.
func checkReceived[T any](t *testing.T, mem *csitest.MemPlugin, sent T) {
	t.Helper()
	got, ok := csitest.LastRequest[T](mem)
	if !ok {
		t.Fatalf("the plugin received no %T", sent)
	}
	if !reflect.DeepEqual(got, sent) {
		t.Errorf("the plugin received\n%#v\nwant\n%#v", got, sent)
	}
}

// TestClientLifecycle drives every RPC through the client against MemPlugin over a real
// socket, checking the owned types on both sides.
func TestClientLifecycle(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	c, ctx := h.client, context.Background()
	dir := t.TempDir()

	create := csi.CreateVolumeRequest{
		Name:            "db",
		CapacityMin:     1 << 20,
		CapacityMax:     1 << 30,
		Capabilities:    []csi.VolumeCapability{fsWriter, blockReader},
		Parameters:      map[string]string{"tier": "fast"},
		Secrets:         spec.Secrets{"token": "t0ken"},
		TopologyRequest: &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}},
	}
	vol, err := c.CreateVolume(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, create)
	want := csi.Volume{ID: vol.ID, CapacityBytes: 1 << 20, Context: map[string]string{"name": "db"},
		AccessibleTopology: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	if vol.ID == "" || !reflect.DeepEqual(vol, want) {
		t.Fatalf("CreateVolume = %#v, want %#v", vol, want)
	}
	// Idempotent by name.
	if again, err := c.CreateVolume(ctx, create); err != nil || again.ID != vol.ID {
		t.Fatalf("CreateVolume again = %v, %v; want the same volume", again.ID, err)
	}

	validate := csi.ValidateVolumeCapabilitiesRequest{VolumeID: vol.ID, VolumeContext: vol.Context,
		Capabilities: []csi.VolumeCapability{fsWriter}, Parameters: create.Parameters, Secrets: create.Secrets}
	if err := c.ValidateVolumeCapabilities(ctx, validate); err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, validate)

	fp, err := c.Fingerprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cpub := csi.ControllerPublishVolumeRequest{VolumeID: vol.ID, NodeID: fp.NodeID, Capability: fsWriter,
		Secrets: create.Secrets, VolumeContext: vol.Context}
	pctx, err := c.ControllerPublishVolume(ctx, cpub)
	if err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, cpub)
	if pctx["device"] != "/dev/mem/"+vol.ID {
		t.Fatalf("publish context = %v", pctx)
	}

	staging := filepath.Join(dir, "staging")
	if err := os.Mkdir(staging, 0o700); err != nil {
		t.Fatal(err)
	}
	stage := csi.NodeStageVolumeRequest{VolumeID: vol.ID, PublishContext: pctx, StagingPath: staging,
		Capability: fsWriter, Secrets: create.Secrets, VolumeContext: vol.Context}
	if err := c.NodeStageVolume(ctx, stage); err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, stage)

	target := filepath.Join(dir, "target")
	pub := csi.NodePublishVolumeRequest{VolumeID: vol.ID, PublishContext: pctx, StagingPath: staging, TargetPath: target,
		Capability: fsWriter, ReadOnly: true, Secrets: create.Secrets, VolumeContext: vol.Context}
	if err := c.NodePublishVolume(ctx, pub); err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, pub)
	if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
		t.Fatalf("the plugin did not create the target %s: %v", target, err)
	}

	stats, err := c.NodeGetVolumeStats(ctx, csi.NodeGetVolumeStatsRequest{VolumeID: vol.ID, VolumePath: target, StagingPath: staging})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Bytes == nil || stats.Bytes.Total != 1<<20 || stats.Inodes == nil || stats.Inodes.Total == 0 {
		t.Fatalf("NodeGetVolumeStats = %+v %+v", stats.Bytes, stats.Inodes)
	}

	cexp := csi.ControllerExpandVolumeRequest{VolumeID: vol.ID, CapacityMin: 2 << 20, Secrets: create.Secrets, Capability: &fsWriter}
	expanded, err := c.ControllerExpandVolume(ctx, cexp)
	if err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, cexp)
	if expanded != (csi.ControllerExpandVolumeResponse{CapacityBytes: 2 << 20, NodeExpansionRequired: true}) {
		t.Fatalf("ControllerExpandVolume = %+v", expanded)
	}
	nexp := csi.NodeExpandVolumeRequest{VolumeID: vol.ID, VolumePath: target, StagingPath: staging, CapacityMin: 2 << 20, Capability: &fsWriter}
	if size, err := c.NodeExpandVolume(ctx, nexp); err != nil || size != 2<<20 {
		t.Fatalf("NodeExpandVolume = %d, %v", size, err)
	}
	checkReceived(t, h.mem, nexp)

	snapReq := csi.CreateSnapshotRequest{SourceVolumeID: vol.ID, Name: "db-snap", Secrets: create.Secrets, Parameters: map[string]string{"k": "v"}}
	snap, err := c.CreateSnapshot(ctx, snapReq)
	if err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, snapReq)
	if snap.ID == "" || snap.SourceVolumeID != vol.ID || snap.SizeBytes != 2<<20 || !snap.ReadyToUse || snap.CreatedAt.IsZero() {
		t.Fatalf("CreateSnapshot = %+v", snap)
	}
	snaps, err := c.ListSnapshots(ctx, csi.ListSnapshotsRequest{SourceVolumeID: vol.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps.Snapshots) != 1 || !reflect.DeepEqual(snaps.Snapshots[0], snap) {
		t.Fatalf("ListSnapshots = %+v, want [%+v]", snaps.Snapshots, snap)
	}

	fromSnap, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "restored", CapacityMin: 2 << 20,
		Capabilities: []csi.VolumeCapability{fsWriter}, SnapshotID: snap.ID})
	if err != nil {
		t.Fatal(err)
	}
	if fromSnap.SnapshotID != snap.ID || fromSnap.CloneID != "" {
		t.Fatalf("volume from snapshot has source %q/%q", fromSnap.SnapshotID, fromSnap.CloneID)
	}
	clone, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "clone", CapacityMin: 2 << 20,
		Capabilities: []csi.VolumeCapability{fsWriter}, CloneID: vol.ID})
	if err != nil {
		t.Fatal(err)
	}
	if clone.CloneID != vol.ID || clone.SnapshotID != "" {
		t.Fatalf("clone has source %q/%q", clone.SnapshotID, clone.CloneID)
	}

	page1, err := c.ListVolumes(ctx, csi.ListVolumesRequest{MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page1.Entries) != 2 || page1.NextToken == "" {
		t.Fatalf("ListVolumes page 1 = %+v", page1)
	}
	page2, err := c.ListVolumes(ctx, csi.ListVolumesRequest{MaxEntries: 2, StartingToken: page1.NextToken})
	if err != nil {
		t.Fatal(err)
	}
	if len(page2.Entries) != 1 || page2.NextToken != "" {
		t.Fatalf("ListVolumes page 2 = %+v", page2)
	}
	if e := page1.Entries[0]; e.Volume.ID != vol.ID || !reflect.DeepEqual(e.PublishedNodeIDs, []string{fp.NodeID}) {
		t.Fatalf("ListVolumes entry = %+v, want %s published on %s", e, vol.ID, fp.NodeID)
	}

	capReq := csi.GetCapacityRequest{Capabilities: []csi.VolumeCapability{fsWriter}, Parameters: map[string]string{"tier": "fast"},
		AccessibleTopology: &spec.Topology{Segments: map[string]string{"zone": "a"}}}
	capacity, err := c.GetCapacity(ctx, capReq)
	if err != nil {
		t.Fatal(err)
	}
	checkReceived(t, h.mem, capReq)
	if want := int64(1<<40 - 3*(2<<20)); capacity.AvailableBytes != want || capacity.MaximumVolumeSize != nil || capacity.MinimumVolumeSize != nil {
		t.Fatalf("GetCapacity = %+v, want %d available and no bounds", capacity, want)
	}

	// And all the way back.
	steps := []struct {
		name string
		do   func() error
		req  any
	}{
		{"NodeUnpublishVolume", func() error {
			return c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: vol.ID, TargetPath: target})
		}, csi.NodeUnpublishVolumeRequest{VolumeID: vol.ID, TargetPath: target}},
		{"NodeUnstageVolume", func() error {
			return c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: vol.ID, StagingPath: staging})
		}, csi.NodeUnstageVolumeRequest{VolumeID: vol.ID, StagingPath: staging}},
		{"ControllerUnpublishVolume", func() error {
			return c.ControllerUnpublishVolume(ctx, csi.ControllerUnpublishVolumeRequest{VolumeID: vol.ID, NodeID: fp.NodeID, Secrets: create.Secrets})
		}, csi.ControllerUnpublishVolumeRequest{VolumeID: vol.ID, NodeID: fp.NodeID, Secrets: create.Secrets}},
		{"DeleteSnapshot", func() error {
			return c.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: snap.ID, Secrets: create.Secrets})
		}, csi.DeleteSnapshotRequest{SnapshotID: snap.ID, Secrets: create.Secrets}},
		{"DeleteVolume", func() error {
			return c.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: vol.ID, Secrets: create.Secrets})
		}, csi.DeleteVolumeRequest{VolumeID: vol.ID, Secrets: create.Secrets}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		calls := h.mem.Calls()
		if last := calls[len(calls)-1]; last.RPC != s.name || !reflect.DeepEqual(last.Request, s.req) {
			t.Fatalf("%s: the plugin received %s %#v, want %#v", s.name, last.RPC, last.Request, s.req)
		}
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the plugin left the target %s behind: %v", target, err)
	}
	if _, ok := h.mem.Volume(vol.ID); ok {
		t.Fatalf("volume %s survived DeleteVolume", vol.ID)
	}
	// Teardown of a volume that is gone: NOT_FOUND, which the engine counts as done.
	err = c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: vol.ID, TargetPath: target})
	if !csi.IsIgnorable(err) || csi.CodeOf(err) != codes.NotFound {
		t.Fatalf("NodeUnpublishVolume of a deleted volume = %v, want an ignorable NotFound", err)
	}
}

func TestCreateVolumeCapacityBelowMinimumIsAnError(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCCreateVolume, func(req any) (any, error) {
		return createVolumeResponse("small", 1<<10), nil
	}))
	vol, err := h.client.CreateVolume(context.Background(), csi.CreateVolumeRequest{Name: "v", CapacityMin: 1 << 20,
		Capabilities: []csi.VolumeCapability{fsWriter}})
	if err == nil || !strings.Contains(err.Error(), `the plugin created volume "small" with 1KiB, below the requested minimum of 1MiB`) {
		t.Fatalf("CreateVolume = %v, want an error about the capacity, its sizes written as a spec writes them", err)
	}
	if vol.ID != "small" {
		t.Fatalf("CreateVolume returned %q with its error; the caller needs the ID to delete it", vol.ID)
	}
}

func TestCreateVolumeRejectsBadRequestsBeforeSending(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	tests := []struct {
		name string
		req  csi.CreateVolumeRequest
		want string
	}{
		{"two sources", csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{fsWriter}, SnapshotID: "s", CloneID: "c"}, "one source at most"},
		{"inverted range", csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{fsWriter}, CapacityMin: 10, CapacityMax: 5}, "above maximum"},
		{"unknown mode", csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{{Capability: spec.Capability{AccessMode: "everyone", AttachmentMode: spec.FileSystem}}}}, `unknown access mode "everyone"`},
		{"block with mount options", csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{{Capability: blockReader.Capability, MountOptions: &spec.MountOptions{FSType: "xfs"}}}}, "cannot carry mount options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.client.CreateVolume(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "CreateVolume: ") {
				t.Fatalf("CreateVolume = %v, want CreateVolume: ...%s", err, tt.want)
			}
		})
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != 0 {
		t.Fatalf("%d bad requests reached the plugin", n)
	}
}

func TestMissingServiceSocket(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	ctrl := csitest.NewClient(t, csi.Config{ControllerSocket: h.socket})
	err := ctrl.NodePublishVolume(context.Background(), csi.NodePublishVolumeRequest{VolumeID: "v", TargetPath: "/x", Capability: fsWriter})
	if err == nil || err.Error() != "NodePublishVolume: the plugin has no node socket configured" {
		t.Fatalf("NodePublishVolume on a controller-only client = %v", err)
	}
	// The missing socket is reported before a bad request.
	bad := csi.VolumeCapability{Capability: spec.Capability{AccessMode: "everyone", AttachmentMode: spec.FileSystem}}
	err = ctrl.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{VolumeID: "v", StagingPath: "/s", Capability: bad})
	if err == nil || err.Error() != "NodeStageVolume: the plugin has no node socket configured" {
		t.Fatalf("NodeStageVolume with a bad capability on a controller-only client = %v, want the missing socket", err)
	}
	if _, err := csi.New(csi.Config{}); err == nil {
		t.Fatal("New with no socket succeeded")
	}
}

func TestConfigFromSpec(t *testing.T) {
	tests := []struct {
		name       string
		plugin     spec.Plugin
		ctrl, node string
	}{
		{"monolith", spec.Plugin{Type: spec.PluginMonolith, Socket: "/s"}, "/s", "/s"},
		{"monolith split", spec.Plugin{Type: spec.PluginMonolith, ControllerSocket: "/c", NodeSocket: "/n"}, "/c", "/n"},
		{"controller", spec.Plugin{Type: spec.PluginController, Socket: "/c"}, "/c", ""},
		{"node", spec.Plugin{Type: spec.PluginNode, NodeSocket: "/n"}, "", "/n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := csi.ConfigFromSpec(&tt.plugin)
			if cfg.ControllerSocket != tt.ctrl || cfg.NodeSocket != tt.node {
				t.Fatalf("sockets = %q, %q; want %q, %q", cfg.ControllerSocket, cfg.NodeSocket, tt.ctrl, tt.node)
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	var zero csi.Timeouts
	for _, rpc := range csi.RPCs {
		want := csi.DefaultShortTimeout
		if csi.IsLong(rpc) {
			want = csi.DefaultLongTimeout
		}
		if got := zero.For(rpc); got != want {
			t.Errorf("default timeout of %s = %v, want %v", rpc, got, want)
		}
	}
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCDeleteVolume, csi.RPCControllerPublishVolume, csi.RPCControllerUnpublishVolume,
		csi.RPCNodeStageVolume, csi.RPCNodeUnstageVolume, csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume,
		csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume, csi.RPCCreateSnapshot, csi.RPCDeleteSnapshot} {
		if !csi.IsLong(rpc) {
			t.Errorf("%s should get the long timeout", rpc)
		}
	}
	for _, rpc := range []string{csi.RPCGetPluginInfo, csi.RPCGetPluginCapabilities, csi.RPCProbe, csi.RPCControllerGetCapabilities,
		csi.RPCNodeGetCapabilities, csi.RPCNodeGetInfo, csi.RPCListVolumes, csi.RPCListSnapshots, csi.RPCGetCapacity, csi.RPCNodeGetVolumeStats} {
		if csi.IsLong(rpc) {
			t.Errorf("%s should get the short timeout", rpc)
		}
	}
}

// An ID past volctl's bound (4 KiB; CSI's strings are 128 bytes) in CreateVolume's answer is an
// error, the volume returned with it for the caller to delete (the plugin made it); one at the
// bound is taken. CreateSnapshot's is an answer not read (IsAnswerUnread): its name finds it.
func TestCreateAnswersWithAnIDPastTheBoundAreRefused(t *testing.T) {
	for _, n := range []int{4096, 4097} {
		id := strings.Repeat("v", n)
		h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCCreateVolume, func(req any) (any, error) {
			return createVolumeResponse(id, 1<<20), nil
		}))
		vol, err := h.client.CreateVolume(context.Background(), csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{fsWriter}})
		if n == 4096 {
			if err != nil || vol.ID != id {
				t.Errorf("CreateVolume answered with an ID of 4096 bytes = %.200v; want it taken", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "volume ID of 4097 bytes") || len(err.Error()) > 1024 {
			t.Errorf("CreateVolume answered with an ID of 4097 bytes = %.300v; want a short error naming its size", err)
		}
		if vol.ID != id {
			t.Errorf("CreateVolume returned %.40q with its error; the caller needs the whole ID to delete the volume", vol.ID)
		}
	}
	id := strings.Repeat("s", 4097)
	h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCCreateSnapshot, func(req any) (any, error) {
		return &csipb.CreateSnapshotResponse{Snapshot: &csipb.Snapshot{SnapshotId: id, SourceVolumeId: "src", ReadyToUse: true}}, nil
	}))
	snap, err := h.client.CreateSnapshot(context.Background(), csi.CreateSnapshotRequest{Name: "s", SourceVolumeID: "src"})
	if !csi.IsAnswerUnread(err) || !strings.Contains(fmt.Sprint(err), "snapshot ID of 4097 bytes") || snap.ID != "" {
		t.Errorf("CreateSnapshot answered with an ID of 4097 bytes = %q, %.300v; want an answer not read, naming its size", snap.ID, err)
	}
}
