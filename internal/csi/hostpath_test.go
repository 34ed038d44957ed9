package csi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestHostpathFullSequence runs the whole RPC sequence through the client against volctl's
// own plugin, with real bind mounts, and checks what a consumer of the target sees.
func TestHostpathFullSequence(t *testing.T) {
	hostpathtest.RequireMount(t)
	for _, attach := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "enable-attach"}[attach]
		t.Run(name, func(t *testing.T) { hostpathSequence(t, attach) })
	}
}

func hostpathSequence(t *testing.T, attach bool) {
	srv := hostpathtest.Start(t, hostpath.Config{NodeID: "n1", EnableAttach: attach})
	c := csitest.NewClient(t, csi.Config{ControllerSocket: srv.Socket, NodeSocket: srv.Socket})
	ctx := context.Background()

	fp, err := c.Fingerprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fp.Provider != hostpath.PluginName || fp.NodeID != "n1" || !fp.Controller || !fp.Node ||
		fp.Capabilities.Controller.PublishUnpublishVolume != attach || !fp.Capabilities.Node.StageUnstageVolume {
		t.Fatalf("Fingerprint = %+v", fp)
	}
	if ready, err := c.Probe(ctx); err != nil || !ready {
		t.Fatalf("Probe = %v, %v", ready, err)
	}

	rw := csi.VolumeCapability{Capability: spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	ro := csi.VolumeCapability{Capability: spec.Capability{AccessMode: spec.MultiNodeReaderOnly, AttachmentMode: spec.FileSystem}}
	vol, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20, Capabilities: []csi.VolumeCapability{rw, ro}})
	if err != nil {
		t.Fatal(err)
	}
	if vol.ID == "" || vol.CapacityBytes < 1<<20 {
		t.Fatalf("CreateVolume = %+v", vol)
	}
	if err := c.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{VolumeID: vol.ID, VolumeContext: vol.Context,
		Capabilities: []csi.VolumeCapability{rw}}); err != nil {
		t.Fatal(err)
	}

	var pctx map[string]string
	if fp.Capabilities.Controller.PublishUnpublishVolume {
		if pctx, err = c.ControllerPublishVolume(ctx, csi.ControllerPublishVolumeRequest{VolumeID: vol.ID, NodeID: fp.NodeID,
			Capability: rw, VolumeContext: vol.Context}); err != nil {
			t.Fatal(err)
		}
	}
	dir := hostpathtest.MountDir(t)
	staging := filepath.Join(dir, "staging", vol.ID)
	if err := os.MkdirAll(staging, 0o700); err != nil { // the CO creates the staging dir
		t.Fatal(err)
	}
	if err := c.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: vol.ID, PublishContext: pctx, StagingPath: staging,
		Capability: rw, VolumeContext: vol.Context}); err != nil {
		t.Fatal(err)
	}
	targetRW, targetRO := filepath.Join(dir, "publish", "a", "rw"), filepath.Join(dir, "publish", "b", "ro")
	for _, p := range []string{targetRW, targetRO} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil { // the CO creates the parent
			t.Fatal(err)
		}
	}
	if err := c.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: vol.ID, PublishContext: pctx, StagingPath: staging,
		TargetPath: targetRW, Capability: rw, VolumeContext: vol.Context}); err != nil {
		t.Fatal(err)
	}
	if err := c.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: vol.ID, PublishContext: pctx, StagingPath: staging,
		TargetPath: targetRO, Capability: ro, ReadOnly: true, VolumeContext: vol.Context}); err != nil {
		t.Fatal(err)
	}

	// The data path: a write through one target is on the volume and visible through the other,
	// which refuses writes.
	if err := os.WriteFile(filepath.Join(targetRW, "hello"), []byte("world"), 0o600); err != nil {
		t.Fatal(err)
	}
	volDir, _ := srv.Plugin.VolumePath(vol.ID)
	if b, err := os.ReadFile(filepath.Join(volDir, "hello")); err != nil || string(b) != "world" {
		t.Fatalf("volume has %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(targetRO, "hello")); err != nil || string(b) != "world" {
		t.Fatalf("read-only target has %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(targetRO, "nope"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("writing through the read-only target = %v, want EROFS", err)
	}

	if _, err := c.NodeGetVolumeStats(ctx, csi.NodeGetVolumeStatsRequest{VolumeID: vol.ID, VolumePath: targetRW, StagingPath: staging}); err != nil {
		t.Fatal(err)
	}
	exp, err := c.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{VolumeID: vol.ID, CapacityMin: 2 << 20, Capability: &rw})
	if err != nil || exp.CapacityBytes < 2<<20 {
		t.Fatalf("ControllerExpandVolume = %+v, %v", exp, err)
	}
	if exp.NodeExpansionRequired {
		if _, err := c.NodeExpandVolume(ctx, csi.NodeExpandVolumeRequest{VolumeID: vol.ID, VolumePath: targetRW, StagingPath: staging,
			CapacityMin: 2 << 20, Capability: &rw}); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := c.CreateSnapshot(ctx, csi.CreateSnapshotRequest{SourceVolumeID: vol.ID, Name: "data-snap"})
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := c.ListSnapshots(ctx, csi.ListSnapshotsRequest{SnapshotID: snap.ID})
	if err != nil || len(snaps.Snapshots) != 1 || snaps.Snapshots[0].ID != snap.ID {
		t.Fatalf("ListSnapshots = %+v, %v", snaps, err)
	}
	restored, err := c.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "restored", SnapshotID: snap.ID, CapacityMin: 2 << 20,
		Capabilities: []csi.VolumeCapability{rw}})
	if err != nil || restored.SnapshotID != snap.ID {
		t.Fatalf("CreateVolume from snapshot = %+v, %v", restored, err)
	}
	restoredDir, _ := srv.Plugin.VolumePath(restored.ID)
	if b, err := os.ReadFile(filepath.Join(restoredDir, "hello")); err != nil || string(b) != "world" {
		t.Fatalf("restored volume has %q, %v", b, err)
	}
	list, err := c.ListVolumes(ctx, csi.ListVolumesRequest{})
	if err != nil || len(list.Entries) != 2 {
		t.Fatalf("ListVolumes = %+v, %v", list, err)
	}
	if _, err := c.GetCapacity(ctx, csi.GetCapacityRequest{Capabilities: []csi.VolumeCapability{rw}}); err != nil {
		t.Fatal(err)
	}

	// And back; every teardown twice, as a retried release would.
	for range 2 {
		for _, target := range []string{targetRW, targetRO} {
			if err := c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: vol.ID, TargetPath: target}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: vol.ID, StagingPath: staging}); err != nil {
			t.Fatal(err)
		}
		if attach {
			if err := c.ControllerUnpublishVolume(ctx, csi.ControllerUnpublishVolumeRequest{VolumeID: vol.ID, NodeID: fp.NodeID}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, target := range []string{targetRW, targetRO} {
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("target %s left behind: %v", target, err)
		}
	}
	for _, id := range []string{restored.ID, vol.ID} {
		if err := c.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: snap.ID}); err != nil {
		t.Fatal(err)
	}
	// A volume that is gone: teardown comes back ignorable or succeeds, never final.
	err = c.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: vol.ID, TargetPath: targetRW})
	if err != nil && !csi.IsIgnorable(err) {
		t.Fatalf("NodeUnpublishVolume of a deleted volume = %v", err)
	}
	list, err = c.ListVolumes(ctx, csi.ListVolumesRequest{})
	if err != nil || len(list.Entries) != 0 {
		t.Fatalf("ListVolumes after delete = %+v, %v", list, err)
	}
}

// TestHostpathWithFaults wraps the real plugin in Faults, as the engine's fault tests will.
func TestHostpathWithFaults(t *testing.T) {
	plugin, err := hostpath.New(hostpath.Config{Root: t.TempDir(), NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	faults := csitest.NewFaults()
	socket, _ := csitest.Serve(t, csitest.WithServer(plugin), csitest.WithFaults(faults))
	c := csitest.NewClient(t, csi.Config{ControllerSocket: socket, NodeSocket: socket})
	faults.FailNext(csi.RPCCreateVolume, codes.Unavailable, 2)
	req := csi.CreateVolumeRequest{Name: "v", Capabilities: []csi.VolumeCapability{{Capability: spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}}
	var codesSeen []codes.Code
	for range 3 {
		_, err := c.CreateVolume(context.Background(), req)
		codesSeen = append(codesSeen, csi.CodeOf(err))
	}
	if want := []codes.Code{codes.Unavailable, codes.Unavailable, codes.OK}; !reflect.DeepEqual(codesSeen, want) {
		t.Fatalf("codes = %v, want %v", codesSeen, want)
	}
	if got := faults.Count(csi.RPCCreateVolume); got != (csitest.Count{Calls: 3, Failed: 2}) {
		t.Fatalf("Count = %+v", got)
	}
}

// TestHostpathWithoutMountPrivilegeSaysSo: volctl's own plugin, run by a user who may not
// mount, answers a stage or publish with FAILED_PRECONDITION and says why in its message. The
// hint for the code, from the CSI spec's tables, guessed otherwise ("the volume does not
// support the requested capability, or is still in use elsewhere"): `volume claim` run by a
// newcomer without root told them to look at the volume's capabilities, and nothing of
// running the plugin as root. The hint says what to do.
func TestHostpathWithoutMountPrivilegeSaysSo(t *testing.T) {
	fail := &hostpathtest.FakeMounter{Fail: syscall.EPERM}
	c, vol, staging, target := startHostpathWithoutMount(t, fail, 1000)
	ctx := context.Background()
	rw := csi.VolumeCapability{Capability: spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	check := func(rpc string, err error) {
		t.Helper()
		var e *csi.Error
		if !errors.As(err, &e) || e.Code != codes.FailedPrecondition {
			t.Fatalf("%s: %v, want a FailedPrecondition *csi.Error", rpc, err)
		}
		if !strings.Contains(e.Message, "bind-mounting needs root") {
			t.Errorf("%s: the plugin's message is lost: %v", rpc, err)
		}
		if csi.InUse(err) {
			t.Errorf("%s: taken for a volume something else holds (a conflict, exit 4): %v", rpc, err)
		}
		for _, w := range []string{`plugin "hostpath"`, "CAP_SYS_ADMIN", "as root", "volctl plugin serve hostpath"} {
			if !strings.Contains(e.Hint, w) {
				t.Errorf("%s: hint %q lacks %q", rpc, e.Hint, w)
			}
		}
		for _, wrong := range []string{"capability", "in use elsewhere", "published elsewhere", "not staged"} {
			if strings.Contains(e.Hint, wrong) {
				t.Errorf("%s: hint guesses another cause (%q): %v", rpc, wrong, err)
			}
		}
	}
	check("NodeStageVolume", c.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: vol.ID, StagingPath: staging,
		Capability: rw, VolumeContext: vol.Context}))
	fail.Fail = nil
	if err := c.NodeStageVolume(ctx, csi.NodeStageVolumeRequest{VolumeID: vol.ID, StagingPath: staging,
		Capability: rw, VolumeContext: vol.Context}); err != nil {
		t.Fatal(err)
	}
	fail.Fail = syscall.EACCES
	check("NodePublishVolume", c.NodePublishVolume(ctx, csi.NodePublishVolumeRequest{VolumeID: vol.ID, StagingPath: staging,
		TargetPath: target, Capability: rw, VolumeContext: vol.Context}))
}

// startHostpathWithoutMount starts volctl's own plugin mounting with m, as effective user euid,
// and creates a volume: the client, the volume, and a staging path (made) and target path.
func startHostpathWithoutMount(t *testing.T, m *hostpathtest.FakeMounter, euid int) (c *csi.Client, vol csi.Volume, staging, target string) {
	t.Helper()
	srv := hostpathtest.Start(t, hostpath.Config{NodeID: "n1", Mounter: m, Euid: func() int { return euid }})
	c = csitest.NewClient(t, csi.Config{Name: "hostpath", ControllerSocket: srv.Socket, NodeSocket: srv.Socket})
	rw := csi.VolumeCapability{Capability: spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	vol, err := c.CreateVolume(context.Background(), csi.CreateVolumeRequest{Name: "data", Capabilities: []csi.VolumeCapability{rw}})
	if err != nil {
		t.Fatal(err)
	}
	dir := hostpathtest.ShortDir(t)
	staging, target = filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	if err := os.MkdirAll(staging, 0o700); err != nil {
		t.Fatal(err)
	}
	return c, vol, staging, target
}

// TestHostpathWithoutMountPrivilegeSaysWhetherRoot: volctl's own plugin run as root without
// CAP_SYS_ADMIN (a container without --privileged, a user namespace: `unshare -U -r volctl
// plugin serve hostpath`) was told to start as root (sudo), which it was: the advice could not
// help. The plugin says whether it runs as root, and the hint gives the advice that fits: the
// capability (--privileged) for root, sudo for a user who is not root.
func TestHostpathWithoutMountPrivilegeSaysWhetherRoot(t *testing.T) {
	rw := csi.VolumeCapability{Capability: spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	for _, tt := range []struct {
		euid               int
		message, hint, not []string
	}{
		{0, []string{"runs as root (uid 0) without CAP_SYS_ADMIN", "operation not permitted"},
			[]string{`plugin "hostpath"`, "runs as root without it", "--privileged", "--cap-add SYS_ADMIN", "user namespace"}, []string{"sudo"}},
		{1000, []string{"runs as uid 1000, not root", "operation not permitted"},
			[]string{`plugin "hostpath"`, "as root (sudo)", "volctl plugin serve hostpath"}, []string{"--privileged", "runs as root"}},
	} {
		c, vol, staging, _ := startHostpathWithoutMount(t, &hostpathtest.FakeMounter{Fail: syscall.EPERM}, tt.euid)
		err := c.NodeStageVolume(context.Background(), csi.NodeStageVolumeRequest{VolumeID: vol.ID, StagingPath: staging,
			Capability: rw, VolumeContext: vol.Context})
		var e *csi.Error
		if !errors.As(err, &e) || e.Code != codes.FailedPrecondition {
			t.Fatalf("euid %d: %v, want a FailedPrecondition *csi.Error", tt.euid, err)
		}
		for _, w := range tt.message {
			if !strings.Contains(e.Message, w) {
				t.Errorf("euid %d: message %q lacks %q", tt.euid, e.Message, w)
			}
		}
		for _, w := range tt.hint {
			if !strings.Contains(e.Hint, w) {
				t.Errorf("euid %d: hint %q lacks %q", tt.euid, e.Hint, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(e.Hint, w) {
				t.Errorf("euid %d: hint %q gives advice that cannot help (%q)", tt.euid, e.Hint, w)
			}
		}
	}
}
