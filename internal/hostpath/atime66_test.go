package hostpath_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// On a root mounted strictatime (statfs reports neither noatime nor relatime), carriedFlags
// adds MS_STRICTATIME to every remount, and the kernel applies MS_STRICTATIME after
// MS_NOATIME (path_mount: "if (flags & MS_STRICTATIME) mnt_flags &= ~(MNT_RELATIME |
// MNT_NOATIME)"). So a claim asking "noatime" (or "relatime"), a supported flag, is answered
// OK and mounted strictatime: its own flag silently dropped, on the staging and on every
// target. Before the carry added strictatime, the claim's noatime was applied. On a relatime
// root the same claim gets noatime (MS_RELATIME has no such precedence): the root's atime rule
// overrides the claim's only where it is strictatime.
// Found by helper review66.
func TestClaimsAtimeFlagHonouredOnAStrictatimeRoot(t *testing.T) {
	root := tmpfsRoot(t, unix.MS_STRICTATIME)
	if statfsFlags(t, filepath.Dir(root))&(unix.ST_NOATIME|unix.ST_RELATIME) != 0 {
		t.Skip("the tmpfs is not strictatime")
	}
	c := start(t, hostpath.Config{Root: root})
	v := c.createVolume(t, "v")
	dir := hostpathtest.MountDir(t)
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	mmw := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	_, err := c.nd.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: staging, VolumeCapability: mountCap(mmw, "noatime"),
	})
	mustOK(t, err)
	defer func() {
		_, _ = c.nd.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: staging})
	}()
	if got := statfsFlags(t, staging); got&unix.ST_NOATIME == 0 {
		t.Errorf("NodeStageVolume asking \"noatime\" on a strictatime root answered OK, but the staging %s is not noatime (statfs flags %#x)", staging, got)
	}
	for _, tc := range []struct {
		flag string
		st   int64
	}{{"noatime", unix.ST_NOATIME}, {"relatime", unix.ST_RELATIME}} {
		_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: target,
			VolumeCapability: mountCap(mmw, tc.flag),
		})
		mustOK(t, err)
		if got := statfsFlags(t, target); got&tc.st == 0 {
			t.Errorf("NodePublishVolume asking %q on a strictatime root answered OK, but the target is not %s (statfs flags %#x): the claim's flag dropped by the carried strictatime",
				tc.flag, tc.flag, got)
		}
		_, err = c.nd.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), TargetPath: target})
		mustOK(t, err)
	}
}
