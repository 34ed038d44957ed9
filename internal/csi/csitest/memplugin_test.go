package csitest_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

var (
	writer = csi.VolumeCapability{Capability: spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	reader = csi.VolumeCapability{Capability: spec.Capability{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}}
)

// env is a MemPlugin and a client on it, plus a directory for staging and target paths.
type env struct {
	mem    *csitest.MemPlugin
	c      *csi.Client
	socket string
	dir    string
	pctx   map[string]string
}

func newEnv(t *testing.T, cfg csitest.MemConfig) *env {
	t.Helper()
	mem := csitest.NewMemPlugin(cfg)
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	c := csitest.NewClient(t, csi.Config{ControllerSocket: socket, NodeSocket: socket})
	dir, err := os.MkdirTemp("", "mem")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Mkdir(filepath.Join(dir, "staging"), 0o700); err != nil {
		t.Fatal(err)
	}
	return &env{mem: mem, c: c, socket: socket, dir: dir}
}

// rawNode is a node client on the plugin straight over the CSI stubs, for the RPCs volctl's
// client does not send.
func (e *env) rawNode(t *testing.T) csipb.NodeClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+e.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return csipb.NewNodeClient(conn)
}

var ctx = context.Background()

func (e *env) create(t *testing.T, name string, size int64) csi.Volume {
	t.Helper()
	v, err := e.c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: name, CapacityMin: size, Capabilities: []csi.VolumeCapability{writer}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *env) attach(t *testing.T, id string) {
	t.Helper()
	pctx, err := e.c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: id, NodeID: "mem-node-1", Capability: writer})
	if err != nil {
		t.Fatal(err)
	}
	e.pctx = pctx
}

func (e *env) stage(id string, vc csi.VolumeCapability) error {
	return e.c.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: id, PublishContext: e.pctx, StagingPath: filepath.Join(e.dir, "staging"), Capability: vc})
}

// attached creates a volume and controller-publishes it.
func (e *env) attached(t *testing.T) csi.Volume {
	t.Helper()
	v := e.create(t, "v", 0)
	e.attach(t, v.ID)
	return v
}

// staged creates a volume, attaches it and stages it with vc.
func (e *env) staged(t *testing.T, vc csi.VolumeCapability) csi.Volume {
	t.Helper()
	v := e.attached(t)
	if err := e.stage(v.ID, vc); err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *env) publish(id, target string, vc csi.VolumeCapability, ro bool) error {
	return e.c.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: id, PublishContext: e.pctx,
		StagingPath: filepath.Join(e.dir, "staging"), TargetPath: filepath.Join(e.dir, target), Capability: vc, ReadOnly: ro})
}

// TestMemPluginSemantics checks the CSI rules MemPlugin enforces, each from a fresh plugin.
func TestMemPluginSemantics(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*csitest.MemConfig)
		run  func(t *testing.T, e *env) error
		want codes.Code
	}{
		{"create without a name", nil, func(t *testing.T, e *env) error {
			_, err := e.c.CreateVolume(ctx, csi.CreateVolumeRequest{Capabilities: []csi.VolumeCapability{writer}})
			return err
		}, codes.InvalidArgument},
		{"create without capabilities", nil, func(t *testing.T, e *env) error {
			_, err := e.c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "v"})
			return err
		}, codes.InvalidArgument},
		{"create with an unsupported mode", func(c *csitest.MemConfig) { c.AccessModes = []spec.AccessMode{spec.MultiNodeReaderOnly} }, func(t *testing.T, e *env) error {
			_, err := e.c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{writer}})
			return err
		}, codes.InvalidArgument},
		{"same name, incompatible capacity", nil, func(t *testing.T, e *env) error {
			e.create(t, "v", 1<<20)
			_, err := e.c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "v", CapacityMin: 1 << 30, Capabilities: []csi.VolumeCapability{writer}})
			return err
		}, codes.AlreadyExists},
		{"above the maximum size", func(c *csitest.MemConfig) { c.MaxVolumeSize = 1 << 20 }, func(t *testing.T, e *env) error {
			_, err := e.c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "v", CapacityMin: 1 << 21, Capabilities: []csi.VolumeCapability{writer}})
			return err
		}, codes.OutOfRange},
		{"from an unknown snapshot", nil, func(t *testing.T, e *env) error {
			_, err := e.c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "v", SnapshotID: "nope", Capabilities: []csi.VolumeCapability{writer}})
			return err
		}, codes.NotFound},
		{"snapshot name reused for another volume", nil, func(t *testing.T, e *env) error {
			a, b := e.create(t, "a", 0), e.create(t, "b", 0)
			if _, err := e.c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: a.ID, Name: "s"}); err != nil {
				t.Fatal(err)
			}
			_, err := e.c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: b.ID, Name: "s"})
			return err
		}, codes.AlreadyExists},
		{"delete a volume in use", nil, func(t *testing.T, e *env) error {
			v := e.attached(t)
			return e.c.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: v.ID})
		}, codes.FailedPrecondition},
		{"delete an unknown volume is fine", nil, func(t *testing.T, e *env) error {
			return e.c.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: "nope"})
		}, codes.OK},
		{"publish an unknown volume", nil, func(t *testing.T, e *env) error {
			_, err := e.c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: "nope", NodeID: "mem-node-1", Capability: writer})
			return err
		}, codes.NotFound},
		{"publish to an unknown node", nil, func(t *testing.T, e *env) error {
			v := e.create(t, "v", 0)
			_, err := e.c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: v.ID, NodeID: "elsewhere", Capability: writer})
			return err
		}, codes.NotFound},
		{"republish with another read-only flag", nil, func(t *testing.T, e *env) error {
			v := e.attached(t)
			_, err := e.c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: v.ID, NodeID: "mem-node-1", Capability: writer, ReadOnly: true})
			return err
		}, codes.AlreadyExists},
		{"max volumes per node", func(c *csitest.MemConfig) { c.MaxVolumes = 1 }, func(t *testing.T, e *env) error {
			a, b := e.create(t, "a", 0), e.create(t, "b", 0)
			e.attach(t, a.ID)
			_, err := e.c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: b.ID, NodeID: "mem-node-1", Capability: writer})
			return err
		}, codes.ResourceExhausted},
		{"stage before controller publish", nil, func(t *testing.T, e *env) error {
			return e.stage(e.create(t, "v", 0).ID, writer)
		}, codes.FailedPrecondition},
		{"stage with the wrong publish context", nil, func(t *testing.T, e *env) error {
			v := e.attached(t)
			e.pctx = map[string]string{"device": "/dev/other"}
			return e.stage(v.ID, writer)
		}, codes.InvalidArgument},
		{"stage into a missing directory", nil, func(t *testing.T, e *env) error {
			v := e.attached(t)
			return e.c.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: v.ID, PublishContext: e.pctx, StagingPath: filepath.Join(e.dir, "nope"), Capability: writer})
		}, codes.FailedPrecondition},
		{"restage with another capability", nil, func(t *testing.T, e *env) error {
			v := e.staged(t, writer)
			return e.stage(v.ID, reader)
		}, codes.AlreadyExists},
		{"stage when the plugin does not stage", func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false }, func(t *testing.T, e *env) error {
			v := e.attached(t)
			return e.stage(v.ID, writer)
		}, codes.Unimplemented},
		{"publish without staging", nil, func(t *testing.T, e *env) error {
			v := e.attached(t)
			return e.publish(v.ID, "t", writer, false)
		}, codes.FailedPrecondition},
		{"publish a single-node volume twice", nil, func(t *testing.T, e *env) error {
			v := e.staged(t, writer)
			if err := e.publish(v.ID, "t1", writer, false); err != nil {
				t.Fatal(err)
			}
			return e.publish(v.ID, "t2", writer, false)
		}, codes.FailedPrecondition},
		{"publish a multi-node volume twice is fine", nil, func(t *testing.T, e *env) error {
			v := e.staged(t, writer)
			if err := e.publish(v.ID, "t1", reader, true); err != nil {
				t.Fatal(err)
			}
			return e.publish(v.ID, "t2", reader, true)
		}, codes.OK},
		{"republish with another read-only flag at the same target", nil, func(t *testing.T, e *env) error {
			v := e.staged(t, writer)
			if err := e.publish(v.ID, "t", writer, false); err != nil {
				t.Fatal(err)
			}
			return e.publish(v.ID, "t", writer, true)
		}, codes.AlreadyExists},
		{"publish under a missing parent", nil, func(t *testing.T, e *env) error {
			v := e.staged(t, writer)
			return e.publish(v.ID, "missing/t", writer, false)
		}, codes.FailedPrecondition},
		{"unstage while published", nil, func(t *testing.T, e *env) error {
			v := e.staged(t, writer)
			if err := e.publish(v.ID, "t", writer, false); err != nil {
				t.Fatal(err)
			}
			return e.c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: v.ID, StagingPath: filepath.Join(e.dir, "staging")})
		}, codes.FailedPrecondition},
		{"unpublish an unknown volume", nil, func(t *testing.T, e *env) error {
			return e.c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: "nope", TargetPath: "/t"})
		}, codes.NotFound},
		{"list with a bad token", nil, func(t *testing.T, e *env) error {
			_, err := csitest.VolumeIDs(ctx, e.socket, "garbage")
			return err
		}, codes.Aborted},
		{"expand beyond the maximum", func(c *csitest.MemConfig) { c.MaxVolumeSize = 1 << 30 }, func(t *testing.T, e *env) error {
			v := e.create(t, "v", 0)
			_, err := e.c.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{VolumeID: v.ID, CapacityMin: 1 << 31})
			return err
		}, codes.OutOfRange},
		{"expand a published volume offline-only", func(c *csitest.MemConfig) { c.Plugin.VolumeExpansionOnline = false }, func(t *testing.T, e *env) error {
			v := e.staged(t, writer)
			if err := e.publish(v.ID, "t", writer, false); err != nil {
				t.Fatal(err)
			}
			_, err := e.c.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{VolumeID: v.ID, CapacityMin: 2 << 30})
			return err
		}, codes.FailedPrecondition},
		{"stats of a path the volume is not at", nil, func(t *testing.T, e *env) error {
			v := e.create(t, "v", 0)
			_, err := e.rawNode(t).NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: v.ID, VolumePath: "/elsewhere"})
			return err
		}, codes.NotFound},
		{"snapshots off", func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = false }, func(t *testing.T, e *env) error {
			_, err := e.c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: "v", Name: "s"})
			return err
		}, codes.Unimplemented},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := csitest.DefaultMemConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			e := newEnv(t, cfg)
			err := tt.run(t, e)
			if got := csi.CodeOf(err); got != tt.want {
				t.Fatalf("code %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}

// TestMemPluginStateAndRecording walks a volume through its life and checks the state
// accessors and the recorded requests an engine test would assert on.
func TestMemPluginStateAndRecording(t *testing.T) {
	e := newEnv(t, csitest.DefaultMemConfig())
	v := e.create(t, "v", 1<<20)
	e.attach(t, v.ID)
	if got := e.mem.PublishedNodes(v.ID); !reflect.DeepEqual(got, []string{"mem-node-1"}) {
		t.Fatalf("PublishedNodes = %v", got)
	}
	withFlags := csi.VolumeCapability{Capability: writer.Capability, MountOptions: &spec.MountOptions{FSType: "xfs", MountFlags: spec.MountFlags{"noatime"}}}
	if err := e.stage(v.ID, withFlags); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(e.dir, "staging")
	if got, ok := e.mem.StagingPath(v.ID); !ok || got != staging {
		t.Fatalf("StagingPath = %q, %v", got, ok)
	}
	req := csi.NodePublishVolumeRequest{VolumeID: v.ID, PublishContext: e.pctx, StagingPath: staging, TargetPath: filepath.Join(e.dir, "t"),
		Capability: withFlags, ReadOnly: true, Secrets: spec.Secrets{"k": "s"}, VolumeContext: v.Context}
	if err := e.c.NodePublishVolume(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, ok := csitest.LastRequest[csi.NodePublishVolumeRequest](e.mem)
	if !ok || !reflect.DeepEqual(got, req) {
		t.Fatalf("recorded %#v, want %#v", got, req)
	}
	// What an engine test asserts, field by field.
	if got.PublishContext["device"] != "/dev/mem/"+v.ID || got.VolumeContext["name"] != "v" || got.Secrets.Plain()["k"] != "s" ||
		got.Capability.MountOptions.FSType != "xfs" || got.Capability.MountOptions.MountFlags.Plain()[0] != "noatime" ||
		!got.ReadOnly || got.StagingPath != staging || got.TargetPath != req.TargetPath {
		t.Fatalf("recorded fields differ: %+v", got)
	}
	if targets := e.mem.Targets(v.ID); !reflect.DeepEqual(targets, []string{req.TargetPath}) {
		t.Fatalf("Targets = %v", targets)
	}
	if fi, err := os.Stat(req.TargetPath); err != nil || !fi.IsDir() {
		t.Fatalf("target not created: %v", err)
	}
	if err := e.c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: v.ID, TargetPath: req.TargetPath}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(req.TargetPath); !os.IsNotExist(err) {
		t.Fatalf("target not removed: %v", err)
	}

	calls := e.mem.Calls()
	var rpcs []string
	for _, c := range calls {
		rpcs = append(rpcs, c.RPC)
	}
	want := []string{csi.RPCCreateVolume, csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume}
	if !reflect.DeepEqual(rpcs, want) {
		t.Fatalf("calls = %v, want %v", rpcs, want)
	}
	// Failed calls are recorded with their code.
	_ = e.c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: "nope", StagingPath: staging})
	if last := e.mem.Calls()[len(e.mem.Calls())-1]; last.Code != codes.NotFound {
		t.Fatalf("last call recorded with %v", last.Code)
	}
	if n := len(csitest.Requests[csi.NodeStageVolumeRequest](e.mem)); n != 1 {
		t.Fatalf("%d NodeStageVolume requests recorded", n)
	}
	e.mem.ResetCalls()
	if len(e.mem.Calls()) != 0 {
		t.Fatal("ResetCalls kept calls")
	}
	if _, ok := csitest.LastRequest[csi.NodePublishVolumeRequest](e.mem); ok {
		t.Fatal("LastRequest found a request after ResetCalls")
	}
}

func TestMemPluginSnapshotsAndListing(t *testing.T) {
	e := newEnv(t, csitest.DefaultMemConfig())
	a := e.create(t, "a", 1<<20)
	b := e.create(t, "b", 1<<20)
	for _, name := range []string{"s1", "s2"} {
		if _, err := e.c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: a.ID, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: b.ID, Name: "s3"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  csi.ListSnapshotsRequest
		want []string
	}{
		{"all", csi.ListSnapshotsRequest{}, []string{"s1", "s2", "s3"}},
		{"of a", csi.ListSnapshotsRequest{SourceVolumeID: a.ID}, []string{"s1", "s2"}},
		{"by id", csi.ListSnapshotsRequest{SnapshotID: "s3"}, []string{"s3"}},
		{"unknown id", csi.ListSnapshotsRequest{SnapshotID: "nope"}, nil},
		{"first page", csi.ListSnapshotsRequest{MaxEntries: 2}, []string{"s1", "s2"}},
		{"second page", csi.ListSnapshotsRequest{MaxEntries: 2, StartingToken: "2"}, []string{"s3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := e.c.ListSnapshots(ctx, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range resp.Snapshots {
				ids = append(ids, s.ID)
			}
			if !reflect.DeepEqual(ids, tt.want) {
				t.Fatalf("snapshots = %v, want %v", ids, tt.want)
			}
		})
	}
	if err := e.c.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.mem.Snapshots()); n != 2 {
		t.Fatalf("%d snapshots after delete, want 2", n)
	}
	if vols := e.mem.Volumes(); len(vols) != 2 || vols[0].ID != a.ID {
		t.Fatalf("Volumes = %+v", vols)
	}
}

func TestMemPluginSetReady(t *testing.T) {
	e := newEnv(t, csitest.DefaultMemConfig())
	no := false
	e.mem.SetReady(&no)
	if ready, err := e.c.Probe(ctx); err != nil || ready {
		t.Fatalf("Probe = %v, %v; want not ready", ready, err)
	}
	e.mem.SetReady(nil)
	if ready, err := e.c.Probe(ctx); err != nil || !ready {
		t.Fatalf("Probe = %v, %v; want ready", ready, err)
	}
}
