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

// remounting makes one of the hostpath plugin's node RPCs not idempotent, as plugins that mount
// without looking first are: asked again for a path (the one pathOf finds in its request) that
// is already a mount, it answers OK and binds the path over itself once more, stacking a second
// mount that its reverse RPC, which unmounts once, leaves behind.
func remounting(pathOf func(req any) (string, bool)) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		path, ok := pathOf(req)
		if !ok {
			return handler(ctx, req)
		}
		already, err := hostpath.SystemMounter{}.IsMountPoint(path)
		if err != nil {
			return nil, err
		}
		resp, err := handler(ctx, req)
		if err == nil && already {
			if merr := unix.Mount(path, path, "", unix.MS_BIND, ""); merr != nil {
				return nil, merr
			}
		}
		return resp, err
	}
}

// remountingStage stacks a mount at the staging path when NodeStageVolume is sent again;
// remountingPublish, at the target when NodePublishVolume is.
var (
	remountingStage = remounting(func(req any) (string, bool) {
		r, ok := req.(*csipb.NodeStageVolumeRequest)
		return r.GetStagingTargetPath(), ok
	})
	remountingPublish = remounting(func(req any) (string, bool) {
		r, ok := req.(*csipb.NodePublishVolumeRequest)
		return r.GetTargetPath(), ok
	})
)

// TestCrashAfterNodePublishAgainstARemountingPlugin kills a claim right after NodePublishVolume
// answered, before its answer is recorded, against a plugin whose NodePublishVolume stacks a
// second mount when sent again; reconcile, which finishes the claim, must leave one mount at
// the target, the store and the mount table agreeing, and the claim must release cleanly.
func TestCrashAfterNodePublishAgainstARemountingPlugin(t *testing.T) {
	t.Parallel()
	crashAgainstARemountingPlugin(t, remountingPublish, "rpc:NodePublishVolume", "publish/a/vol/rw-file-system-single-node-writer")
}

// TestCrashAfterNodeStageAgainstARemountingPlugin is the same for NodeStageVolume: killed
// after it answered, before its answer is recorded, against a plugin whose NodeStageVolume
// stacks a second mount at the staging path when sent again.
func TestCrashAfterNodeStageAgainstARemountingPlugin(t *testing.T) {
	t.Parallel()
	crashAgainstARemountingPlugin(t, remountingStage, "rpc:NodeStageVolume", "staging/hp/vol")
}

// crashAgainstARemountingPlugin kills a claim at failpoint against the hostpath plugin made
// not idempotent by remount, reconciles, and checks that path (under the state dir) holds one
// mount and that the claim then releases cleanly.
func crashAgainstARemountingPlugin(t *testing.T, remount grpc.UnaryServerInterceptor, failpoint, path string) {
	hostpathtest.RequireMount(t)
	srv := hostpathtest.Start(t, hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true,
		ServerOptions: []grpc.ServerOption{grpc.ChainUnaryInterceptor(remount)}})
	env := &hostEnv{t: t, state: hostpathtest.MountDir(t), socket: srv.Socket, plugin: srv.Plugin}
	env.ok("plugin", "register", "--id", "hp", "--socket", env.socket)
	bin := buildVolctl(t, failpointsTag)
	env.createVolume("vol", spec.SingleNodeWriter)
	env.crash(bin, failpoint, "volume", "claim", "vol", "--alloc", "a")
	env.ok("reconcile")
	env.checkInvariants()
	at := filepath.Join(env.state, path)
	if mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != at, false }); err != nil || len(mounts) != 1 {
		t.Fatalf("after reconcile, %d mounts at %s (%v); want one", len(mounts), at, err)
	}
	env.ok("volume", "release", "vol", "--alloc", "a")
	env.checkInvariants()
}
