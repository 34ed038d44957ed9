package hostpath_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// paths are a staging path and a target whose parents exist and which do not, as an
// orchestrator hands them over.
type paths struct{ staging, target string }

func newPaths(t *testing.T) paths {
	dir := hostpathtest.MountDir(t)
	return paths{staging: filepath.Join(dir, "staging"), target: filepath.Join(dir, "target")}
}

// staged creates a volume and stages it at fresh paths, where most node tests begin.
func (c *client) staged(t *testing.T, name string) (*csi.Volume, paths) {
	t.Helper()
	v := c.createVolume(t, name)
	p := newPaths(t)
	mustOK(t, c.stage(v, p, nil))
	return v, p
}

func (c *client) stage(v *csi.Volume, p paths, pc map[string]string) error {
	_, err := c.nd.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, VolumeCapability: snw, PublishContext: pc,
	})
	return err
}

func (c *client) publish(v *csi.Volume, p paths, target string, readonly bool, pc map[string]string) error {
	_, err := c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: target,
		VolumeCapability: snw, Readonly: readonly, PublishContext: pc,
	})
	return err
}

func (c *client) unpublish(v *csi.Volume, target string) error {
	_, err := c.nd.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), TargetPath: target})
	return err
}

func (c *client) unstage(v *csi.Volume, p paths) error {
	_, err := c.nd.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging})
	return err
}

func TestNodeGetInfo(t *testing.T) {
	c := start(t, hostpath.Config{NodeID: "n7", MaxVolumes: 9})
	info, err := c.nd.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	mustOK(t, err)
	if info.GetNodeId() != "n7" || info.GetMaxVolumesPerNode() != 9 ||
		info.GetAccessibleTopology().GetSegments()["topology.hostpath.volctl.dev/node"] != "n7" {
		t.Errorf("NodeGetInfo = %v", info)
	}
}

// TestNodeLifecycleBookkeeping drives stage, publish and back with a fake mounter: idempotency,
// incompatible republish, directory creation and removal, and the orders the plugin refuses.
func TestNodeLifecycleBookkeeping(t *testing.T) {
	c, m := startFake(t, hostpath.Config{})
	ctx := context.Background()
	v := c.createVolume(t, "v")
	p := newPaths(t)
	ro := p.target + "-ro"

	err := c.publish(v, p, p.target, false, nil)
	wantCode(t, err, codes.FailedPrecondition, "not staged")

	for range 2 {
		mustOK(t, c.stage(v, p, nil))
	}
	if got := m.Mounts(); len(got) != 1 || got[0] != p.staging {
		t.Fatalf("mounts after staging: %v", got)
	}
	_, err = c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)})
	wantCode(t, err, codes.AlreadyExists, "different volume capability")
	other := p.staging + "-2"
	_, err = c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: other, VolumeCapability: snw})
	wantCode(t, err, codes.FailedPrecondition, "already staged at")

	for range 2 {
		mustOK(t, c.publish(v, p, p.target, false, nil))
	}
	mustOK(t, c.publish(v, p, ro, true, nil))
	if flags, _ := m.Flags(ro); flags&unix.MS_RDONLY == 0 {
		t.Errorf("read-only target mounted with flags %#x", flags)
	}
	err = c.publish(v, p, p.target, true, nil)
	wantCode(t, err, codes.AlreadyExists, "different options")

	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.FailedPrecondition, "in use")
	err = c.unstage(v, p)
	wantCode(t, err, codes.FailedPrecondition, "still published")

	for _, target := range []string{p.target, ro} {
		for range 2 {
			mustOK(t, c.unpublish(v, target))
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("target %s not removed after unpublish: %v", target, err)
		}
	}
	for range 2 {
		mustOK(t, c.unstage(v, p))
	}
	if got := m.Mounts(); len(got) != 0 {
		t.Errorf("mounts left: %v", got)
	}
	if _, err := os.Stat(p.staging); err != nil {
		t.Errorf("staging directory belongs to the orchestrator and must stay: %v", err)
	}
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
}

func TestNodeRestageAfterMountVanished(t *testing.T) {
	c, m := startFake(t, hostpath.Config{})
	v, p := c.staged(t, "v")
	m.Forget(p.staging) // a reboot
	err := c.publish(v, p, p.target, false, nil)
	wantCode(t, err, codes.FailedPrecondition, "no longer mounted")
	mustOK(t, c.stage(v, p, nil))
	mustOK(t, c.publish(v, p, p.target, false, nil))
}

func TestNodeRequestValidation(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	ctx := context.Background()
	v := c.createVolume(t, "v")
	p := newPaths(t)
	id := v.GetVolumeId()
	tests := []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"stage without volume ID", func() error {
			_, err := c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{StagingTargetPath: p.staging, VolumeCapability: snw})
			return err
		}, codes.InvalidArgument, "volume_id"},
		{"stage without path", func() error {
			_, err := c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, VolumeCapability: snw})
			return err
		}, codes.InvalidArgument, "staging_target_path"},
		{"stage with a relative path", func() error {
			_, err := c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: "rel/path", VolumeCapability: snw})
			return err
		}, codes.InvalidArgument, "absolute"},
		{"stage with ..", func() error {
			_, err := c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: p.staging + "/../../x", VolumeCapability: snw})
			return err
		}, codes.InvalidArgument, ".."},
		{"stage without capability", func() error {
			_, err := c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: p.staging})
			return err
		}, codes.InvalidArgument, "volume_capability"},
		{"stage unknown volume", func() error {
			_, err := c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "../" + id, StagingTargetPath: p.staging, VolumeCapability: snw})
			return err
		}, codes.NotFound, "not found"},
		{"stage where the parent is missing", func() error {
			_, err := c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: p.staging + "/no/such", VolumeCapability: snw})
			return err
		}, codes.FailedPrecondition, "parent"},
		{"publish without staging path", func() error {
			_, err := c.nd.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: p.target, VolumeCapability: snw})
			return err
		}, codes.InvalidArgument, "staging_target_path"},
		{"publish block", func() error {
			_, err := c.nd.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: p.target, StagingTargetPath: p.staging,
				VolumeCapability: &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
					AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}})
			return err
		}, codes.InvalidArgument, "block volumes are not supported"},
		{"unpublish unknown volume", func() error {
			_, err := c.nd.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "vol-unknown", TargetPath: p.target})
			return err
		}, codes.NotFound, "vol-unknown"},
		{"unstage unknown volume", func() error {
			_, err := c.nd.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: "vol-unknown", StagingTargetPath: p.staging})
			return err
		}, codes.NotFound, "vol-unknown"},
		{"stats at a path the volume is not at", func() error {
			_, err := c.nd.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: "some/path"})
			return err
		}, codes.NotFound, "not staged or published"},
		{"expand without path", func() error {
			_, err := c.nd.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id})
			return err
		}, codes.InvalidArgument, "volume_path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.call(), tt.code, tt.msg)
		})
	}
}

func TestMountFlags(t *testing.T) {
	c, m := startFake(t, hostpath.Config{})
	v, p := c.staged(t, "v")
	_, err := c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "noexec", "nosuid", "rw"),
	})
	mustOK(t, err)
	if flags, _ := m.Flags(p.target); flags != unix.MS_NOEXEC|unix.MS_NOSUID {
		t.Errorf("flags %#x, want noexec|nosuid", flags)
	}
	// Publishing again with other flags is a different capability.
	_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target, VolumeCapability: snw,
	})
	wantCode(t, err, codes.AlreadyExists)

	// An unknown flag is refused without echoing it: mount flags may carry credentials.
	_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target + "2",
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "noexec", "password=hunter2"),
	})
	wantCode(t, err, codes.InvalidArgument, "mount flag 2 of 2")
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error leaks the mount flag: %v", err)
	}
}

func TestNoMountPrivileges(t *testing.T) {
	c, m := startFake(t, hostpath.Config{})
	m.Fail = unix.EPERM
	v := c.createVolume(t, "v")
	p := newPaths(t)
	err := c.stage(v, p, nil)
	wantCode(t, err, codes.FailedPrecondition, "bind-mounting needs root (CAP_SYS_ADMIN)", "operation not permitted")
	if _, err := os.Stat(p.staging); !os.IsNotExist(err) {
		t.Errorf("staging directory the plugin created is left behind: %v", err)
	}
	// The failed stage left no record: the volume can be deleted, and staging works once the
	// privileges are there.
	m.Fail = nil
	mustOK(t, c.stage(v, p, nil))
	m.Fail = unix.EACCES
	err = c.publish(v, p, p.target, false, nil)
	wantCode(t, err, codes.FailedPrecondition, "bind-mounting needs root")
	err = c.unstage(v, p)
	wantCode(t, err, codes.FailedPrecondition, "bind-mounting needs root")
}

func TestPublishContextRequiredWithAttach(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{NodeID: "n1", EnableAttach: true})
	ctx := context.Background()
	v := c.createVolume(t, "v")
	p := newPaths(t)

	err := c.stage(v, p, nil)
	wantCode(t, err, codes.FailedPrecondition, "not controller-published")

	pub, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	pc := pub.GetPublishContext()

	err = c.stage(v, p, nil)
	wantCode(t, err, codes.FailedPrecondition, "publish_context is missing")
	err = c.stage(v, p, map[string]string{hostpath.PublishContextNode: "n1", hostpath.PublishContextAttachment: "stale"})
	wantCode(t, err, codes.FailedPrecondition, "does not match")
	mustOK(t, c.stage(v, p, pc))
	err = c.publish(v, p, p.target, false, nil)
	wantCode(t, err, codes.FailedPrecondition, "publish_context is missing")
	mustOK(t, c.publish(v, p, p.target, false, pc))
}

func TestNodeExpandAndStats(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	ctx := context.Background()
	v, p := c.staged(t, "v")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, v.GetVolumeId()), "blob"), bytes.Repeat([]byte("x"), 64<<10), 0o644))

	stats, err := c.nd.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: p.target})
	mustOK(t, err)
	var b, in *csi.VolumeUsage
	for _, u := range stats.GetUsage() {
		switch u.GetUnit() {
		case csi.VolumeUsage_BYTES:
			b = u
		case csi.VolumeUsage_INODES:
			in = u
		}
	}
	if b == nil || in == nil {
		t.Fatalf("usage %v lacks bytes or inodes", stats.GetUsage())
	}
	if b.GetTotal() != mib || b.GetUsed() < 64<<10 || b.GetAvailable() > mib-b.GetUsed() {
		t.Errorf("bytes usage %v, want total 1MiB and the 64KiB blob counted", b)
	}
	if in.GetUsed() != 2 || in.GetTotal() <= 0 {
		t.Errorf("inode usage %v, want 2 used (the directory and the blob)", in)
	}

	exp, err := c.nd.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: v.GetVolumeId(), VolumePath: p.target,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 4 * mib}})
	mustOK(t, err)
	if exp.GetCapacityBytes() != 4*mib {
		t.Errorf("NodeExpandVolume capacity %d, want %d", exp.GetCapacityBytes(), 4*mib)
	}
	stats, err = c.nd.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: p.staging})
	mustOK(t, err)
	if got := stats.GetUsage()[0].GetTotal(); got != 4*mib {
		t.Errorf("total after node expansion %d, want %d", got, 4*mib)
	}
	_, err = c.nd.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: v.GetVolumeId(), VolumePath: p.target,
		CapacityRange: &csi.CapacityRange{LimitBytes: 2 * mib}})
	wantCode(t, err, codes.OutOfRange)
}

// A volume whose files are hard-linked to one another (a package manager's store, a backup
// tool's snapshots, git's objects): NodeGetVolumeStats counted each link's blocks and inode
// again, so a Nomad agent or csi-sanity saw a volume of one 64 KiB file and its 15 links use
// 1 MiB and 17 inodes, its Available down to nothing. du counts an inode once: so does the walk.
func TestNodeGetVolumeStatsCountsAHardLinkedFileOnce(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	v, p := c.staged(t, "v")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	dir := c.volumeDir(t, v.GetVolumeId())
	blob := filepath.Join(dir, "blob")
	mustOK(t, os.WriteFile(blob, bytes.Repeat([]byte("x"), 64<<10), 0o644))
	var st unix.Stat_t
	mustOK(t, unix.Stat(blob, &st))
	mustOK(t, os.Mkdir(filepath.Join(dir, "links"), 0o755))
	for i := range 15 {
		mustOK(t, os.Link(blob, filepath.Join(dir, "links", fmt.Sprint(i))))
	}
	stats, err := c.nd.NodeGetVolumeStats(context.Background(), &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: p.target})
	mustOK(t, err)
	for _, u := range stats.GetUsage() {
		switch u.GetUnit() {
		case csi.VolumeUsage_BYTES:
			if u.GetUsed() > st.Blocks*512+64<<10 {
				t.Errorf("bytes used %d, want the blob's %d and its directories' once, not once per link", u.GetUsed(), st.Blocks*512)
			}
		case csi.VolumeUsage_INODES:
			if u.GetUsed() != 3 {
				t.Errorf("inodes used %d, want 3 (the volume's directory, links and the blob, once)", u.GetUsed())
			}
		}
	}
}

func TestNodeGetVolumeHealth(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	ctx := context.Background()
	v, p := c.staged(t, "v")
	h, err := c.nd.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging})
	mustOK(t, err)
	if h.GetVolumeHealth().GetVolumeId() != v.GetVolumeId() || len(h.GetVolumeHealth().GetHealthStatuses()) != 0 {
		t.Errorf("healthy volume reported %v", h.GetVolumeHealth())
	}
	mustOK(t, os.RemoveAll(c.volumeDir(t, v.GetVolumeId())))
	h, err = c.nd.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.GetVolumeId(), VolumePublishPath: p.target})
	mustOK(t, err)
	var reasons []string
	for _, s := range h.GetVolumeHealth().GetHealthStatuses() {
		if s.GetStatus() != csi.VolumeHealthErrorType_INACCESSIBLE {
			t.Errorf("status %v, want INACCESSIBLE", s.GetStatus())
		}
		reasons = append(reasons, s.GetReason())
	}
	if strings.Join(reasons, ",") != "VolumeDirectoryMissing,NotPublished" {
		t.Errorf("reasons %v", reasons)
	}
}

func TestRPCLogRedactsSecrets(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, _ := startFake(t, hostpath.Config{Logger: logger})
	v := c.createVolume(t, "v")
	p := newPaths(t)
	_, err := c.nd.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "password=hunter3"),
		Secrets:          map[string]string{"token": "hunter2"},
	})
	wantCode(t, err, codes.InvalidArgument)
	out := buf.String()
	if !strings.Contains(out, "NodeStageVolume") || !strings.Contains(out, "InvalidArgument") {
		t.Errorf("no debug line for the RPC in %q", out)
	}
	for _, secret := range []string{"hunter2", "hunter3"} {
		if strings.Contains(out, secret) {
			t.Errorf("log leaks %q: %s", secret, out)
		}
	}
}

// TestRealMounts stages and publishes with the kernel: a file written through the target lands
// in the volume's directory, and a read-only target refuses writes with EROFS.
func TestRealMounts(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v, p := c.staged(t, "real")
	ro := p.target + "-ro"
	mustOK(t, c.publish(v, p, p.target, false, nil))
	mustOK(t, c.publish(v, p, ro, true, nil))

	mustOK(t, os.WriteFile(filepath.Join(p.target, "hello"), []byte("through the target"), 0o644))
	got, err := os.ReadFile(filepath.Join(c.volumeDir(t, v.GetVolumeId()), "hello"))
	mustOK(t, err)
	if string(got) != "through the target" {
		t.Errorf("volume directory holds %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(ro, "hello")); err != nil || string(got) != "through the target" {
		t.Errorf("read-only target reads %q, %v", got, err)
	}
	err = os.WriteFile(filepath.Join(ro, "nope"), []byte("x"), 0o644)
	if !errors.Is(err, unix.EROFS) {
		t.Errorf("writing through the read-only target: %v, want EROFS", err)
	}

	for _, target := range []string{p.target, ro} {
		mustOK(t, c.unpublish(v, target))
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("target %s still there after unpublish: %v", target, err)
		}
	}
	mustOK(t, c.unstage(v, p))
	if mounted, err := (hostpath.SystemMounter{}).IsMountPoint(p.staging); err != nil || mounted {
		t.Errorf("staging path still mounted: %t, %v", mounted, err)
	}
	_, err = c.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
}

// TestDeleteRefusesNestedMount: a mount inside a volume's directory (one a consumer made inside
// its target, propagated back) must stop DeleteVolume from deleting through it.
func TestDeleteRefusesNestedMount(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v := c.createVolume(t, "nested")
	inside := filepath.Join(c.volumeDir(t, v.GetVolumeId()), "mnt")
	mustOK(t, os.Mkdir(inside, 0o755))
	elsewhere := filepath.Join(hostpathtest.MountDir(t), "precious")
	mustOK(t, os.MkdirAll(elsewhere, 0o755))
	mustOK(t, os.WriteFile(filepath.Join(elsewhere, "keep"), []byte("x"), 0o644))
	mustOK(t, (hostpath.SystemMounter{}).BindMount(elsewhere, inside, "", 0))
	t.Cleanup(func() { _ = (hostpath.SystemMounter{}).Unmount(inside) })

	_, err := c.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.FailedPrecondition, "mounted inside")
	if _, err := os.Stat(filepath.Join(elsewhere, "keep")); err != nil {
		t.Fatalf("DeleteVolume deleted through a mount: %v", err)
	}
	mustOK(t, (hostpath.SystemMounter{}).Unmount(inside))
	_, err = c.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
}

// TestIsNoMountPrivilege: a mount refused for want of privileges is told by its errno, however
// wrapped, not by any message; quickstart relies on it to say "run it as root".
func TestIsNoMountPrivilege(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "bind-mount /a on", Path: "/b", Err: unix.EPERM}, true},
		{&os.PathError{Op: "unmount", Path: "/b", Err: unix.EACCES}, true},
		{&os.PathError{Op: "bind-mount /a on", Path: "/b", Err: unix.EINVAL}, false},
		{errors.New("operation not permitted"), false}, // the words alone are not the errno
		{nil, false},
	} {
		if got := hostpath.IsNoMountPrivilege(tt.err); got != tt.want {
			t.Errorf("IsNoMountPrivilege(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestNodeRestoreKeepsUnchangedRecord: restoring a volume's mounts after a reboot stages and
// publishes it again at the staging path and target its record already names. The record on
// disk already says so, durably, so the plugin does not write it again (each write cost a
// temp file, two fsyncs and a rename under the plugin's one lock: most of a 1,000-claim
// restore). A change is still written.
func TestNodeRestoreKeepsUnchangedRecord(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "plugin running"
		if restart {
			name = "plugin restarted"
		}
		t.Run(name, func(t *testing.T) {
			cfg := hostpath.Config{Root: filepath.Join(hostpathtest.MountDir(t), "root")}
			c, m := startFake(t, cfg)
			v, p := c.staged(t, "v")
			mustOK(t, c.publish(v, p, p.target, false, nil))
			record := filepath.Join(cfg.Root, "meta", "volumes", v.GetVolumeId()+".json")
			// A second name for the record's file keeps its inode from being reused by a
			// rewrite, so SameFile tells a rewritten record from the one there was.
			witness := filepath.Join(cfg.Root, "record-before")
			mustOK(t, os.Link(record, witness))
			content, err := os.ReadFile(record)
			mustOK(t, err)

			// A reboot: the mounts are gone, and with restart the plugin starts again from
			// its records.
			if restart {
				mustOK(t, c.srv.Stop())
				c, m = startFake(t, cfg)
			} else {
				m.Forget(p.target)
				m.Forget(p.staging)
			}
			mustOK(t, c.stage(v, p, nil))
			mustOK(t, c.publish(v, p, p.target, false, nil))
			if got := m.Mounts(); len(got) != 2 {
				t.Fatalf("mounts after the restore: %v, want the staging path and the target", got)
			}
			before, err := os.Stat(witness)
			mustOK(t, err)
			after, err := os.Stat(record)
			mustOK(t, err)
			if !os.SameFile(before, after) {
				t.Errorf("restoring the mounts rewrote the volume's unchanged record %s", record)
			}
			if now, _ := os.ReadFile(record); !bytes.Equal(now, content) {
				t.Errorf("record changed by the restore:\n%s\nwas\n%s", now, content)
			}

			// A change is written.
			mustOK(t, c.unpublish(v, p.target))
			if now, _ := os.ReadFile(record); bytes.Contains(now, []byte(p.target)) {
				t.Errorf("record still names the target after NodeUnpublishVolume: %s", now)
			}
		})
	}
}

// TestStagingPathWithoutItsParentSaysWhoMakesIt: the orchestrator makes the parent of a
// staging or target path. Run by Nomad from the job volctl export nomad writes, the plugin is
// given paths under the job's stage_publish_base_dir, which must be under the clients'
// data_dir (--nomad-data-dir, /opt/nomad/data by default): a client with another data_dir
// (a `nomad agent -dev`'s temporary one) failed every alloc with "its parent directory does
// not exist", which Nomad shows under "does not have MULTI_NODE volume capability", and
// nothing said what to change.
func TestStagingPathWithoutItsParentSaysWhoMakesIt(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	v := c.createVolume(t, "v")
	dir := hostpathtest.MountDir(t)
	missing := paths{staging: filepath.Join(dir, "no-such-dir", "staging"), target: filepath.Join(dir, "no-such-dir", "target")}
	err := c.stage(v, missing, nil)
	wantCode(t, err, codes.FailedPrecondition, "its parent directory does not exist", "stage_publish_base_dir", "--nomad-data-dir")
	mustOK(t, c.stage(v, newPaths(t), nil))
}
