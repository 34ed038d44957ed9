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

// mount(8) reads an empty item of a comma-joined flag as nothing ("noatime,ro," and
// "noatime,,ro" mount read-only with noatime), and of "ro" and "rw" takes the last ("ro,rw" is
// read-write): volctl's plugin reads them so, as spec.ReadOnlyFlag does. Before, an empty item
// refused the whole publish as an unknown flag, though the spec read its "ro" and warned the
// volume mounts read-only, and "ro,rw" mounted read-only. Found by helper review62, reviewing
// this round's fix.
func TestCommaJoinedMountFlagsAreReadAsMountReadsThem(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  uintptr
	}{
		{[]string{"noatime,ro,"}, unix.MS_NOATIME | unix.MS_RDONLY},
		{[]string{"noatime,,ro"}, unix.MS_NOATIME | unix.MS_RDONLY},
		{[]string{"ro,rw", "nodev"}, unix.MS_NODEV},
		{[]string{"ro", "rw,ro"}, unix.MS_RDONLY},
		{[]string{"ro", "rw"}, 0},
	} {
		c, m := startFake(t, hostpath.Config{})
		v, p := c.staged(t, "v")
		_, err := c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, TargetPath: p.target,
			VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, tc.flags...),
		})
		if err != nil {
			t.Errorf("publish with the mount flags %q = %v", tc.flags, err)
			continue
		}
		if flags, _ := m.Flags(p.target); flags != tc.want {
			t.Errorf("flags %#x for the mount flags %q, want %#x", flags, tc.flags, tc.want)
		}
	}
}
