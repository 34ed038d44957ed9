package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// Mount flags are each claim's (docs/architecture.md, on two claims of one volume sharing its
// staging): NodePublishVolume carries them and the hostpath plugin remounts with them.
// But the plugin applies NodeStageVolume's mount flags (the first claim's) to the staging
// bind, and every target is a bind of the staging, which carries the staging's per-mount
// flags (a bind inherits them, and BindMount's remount repeats them via carriedFlags). So a
// later NodePublishVolume asking no "noexec", "nodev", "nosuid" or "ro" is answered OK with a
// target that has them: a writer's target read-only, an alloc's binaries not executable.
// Either the target is mounted as its own request asks or the publish is refused; OK with
// another claim's flags is neither. Found by helper review66.
func TestPublishDoesNotInheritTheStagingClaimsMountFlags(t *testing.T) {
	hostpathtest.RequireMount(t)
	for _, tc := range []struct {
		stageFlag string
		st        int64
	}{
		{"noexec", unix.ST_NOEXEC},
		{"nodev", unix.ST_NODEV},
		{"nosuid", unix.ST_NOSUID},
		{"ro", unix.ST_RDONLY},
	} {
		t.Run(tc.stageFlag, func(t *testing.T) {
			c := start(t, hostpath.Config{})
			v := c.createVolume(t, "v")
			dir := hostpathtest.MountDir(t)
			staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
			mmw := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
			// The first claim stages with its own flag (volctl sends the staging claim's
			// capability in NodeStageVolume).
			_, err := c.nd.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
				VolumeId: v.GetVolumeId(), StagingTargetPath: staging, VolumeCapability: mountCap(mmw, tc.stageFlag),
			})
			mustOK(t, err)
			// A second claim, read-write, asking no mount flag at all.
			_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
				VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: target,
				VolumeCapability: mountCap(mmw),
			})
			if err != nil {
				t.Logf("NodePublishVolume without %q refused: %v (%s): refused is fine", tc.stageFlag, status.Code(err), err)
				return
			}
			var st unix.Statfs_t
			mustOK(t, unix.Statfs(target, &st))
			if int64(st.Flags)&tc.st != 0 {
				t.Errorf("NodePublishVolume asking no mount flags (readonly=false) answered OK, but the target %s is mounted %q: the staging claim's flag, not its own (statfs flags %#x)",
					target, tc.stageFlag, st.Flags)
			}
			if tc.stageFlag == "ro" {
				if err := os.WriteFile(filepath.Join(target, "w"), []byte("x"), 0o644); err != nil {
					t.Errorf("write through a read-write target published OK: %v", err)
				}
			}
			_, _ = c.nd.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), TargetPath: target})
			_, _ = c.nd.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: staging})
		})
	}
}
