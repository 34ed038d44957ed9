package hostpath_test

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
)

// Mount flags joined by commas in one ("noatime,ro"), as mount(8) reads its -o and as users
// paste them from an fstab line, are each honoured: the bind is read-only and without atime
// updates, as the same two flags given apart make it, and publishing the one spelling again
// where the other is published is the same capability. An unknown flag among them is refused,
// counted as the flag it stands in, not echoed. Before, "noatime,ro" was refused as one unknown
// flag, though volctl's spec and claim read its "ro" (spec.ReadOnlyFlag).
func TestCommaJoinedMountFlagsAreEachHonoured(t *testing.T) {
	c, m := startFake(t, hostpath.Config{})
	v, p := c.staged(t, "v")
	_, err := c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "noatime, ro"),
	})
	mustOK(t, err)
	if flags, _ := m.Flags(p.target); flags != unix.MS_NOATIME|unix.MS_RDONLY {
		t.Errorf("flags %#x for the mount flag \"noatime, ro\", want noatime|ro", flags)
	}
	_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "ro", "noatime"),
	})
	mustOK(t, err)

	_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target + "2",
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "nosuid", "noexec,password=hunter2"),
	})
	wantCode(t, err, codes.InvalidArgument, "mount flag 2 of 2")
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error leaks the mount flag: %v", err)
	}
}
