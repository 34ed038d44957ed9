package main

import (
	"context"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// remountingPublish makes the hostpath plugin's NodePublishVolume not idempotent, as plugins
// that mount without looking first are: asked again for a target that is already a mount, it
// answers OK and binds the staging over the target once more, stacking a second mount that its
// own NodeUnpublishVolume, which unmounts once, leaves behind.
func remountingPublish(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	pub, ok := req.(*csipb.NodePublishVolumeRequest)
	if !ok {
		return handler(ctx, req)
	}
	already, err := hostpath.SystemMounter{}.IsMountPoint(pub.GetTargetPath())
	if err != nil {
		return nil, err
	}
	resp, err := handler(ctx, req)
	if err == nil && already {
		if merr := unix.Mount(pub.GetStagingTargetPath(), pub.GetTargetPath(), "", unix.MS_BIND, ""); merr != nil {
			return nil, merr
		}
	}
	return resp, err
}

// TestCrashAfterNodePublishAgainstARemountingPlugin kills a claim right after NodePublishVolume
// answered, before its answer is recorded, against a plugin whose NodePublishVolume stacks a
// second mount when sent again; reconcile, which finishes the claim, must leave the store and
// the mount table agreeing, and the claim must release cleanly.
func TestCrashAfterNodePublishAgainstARemountingPlugin(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	srv := hostpathtest.Start(t, hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true,
		ServerOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(remountingPublish)}})
	env := &hostEnv{t: t, state: hostpathtest.MountDir(t), socket: srv.Socket, plugin: srv.Plugin}
	env.ok("plugin", "register", "--id", "hp", "--socket", env.socket)
	bin := buildVolctl(t, failpointsTag)
	env.createVolume("vol", spec.SingleNodeWriter)
	env.crash(bin, "rpc:NodePublishVolume", "volume", "claim", "vol", "--alloc", "a")
	env.ok("reconcile")
	env.checkInvariants()
	target := filepath.Join(env.state, "publish", "a", "vol", "rw-file-system-single-node-writer")
	if mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != target, false }); err != nil || len(mounts) != 1 {
		t.Fatalf("after reconcile, %d mounts at the claim's target %s (%v); want one", len(mounts), target, err)
	}
	env.ok("volume", "release", "vol", "--alloc", "a")
	env.checkInvariants()
}
