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
	err := publishWithFlags(c, v, p.staging, p.target, "noatime, ro")
	mustOK(t, err)
	if flags, _ := m.Flags(p.target); flags != unix.MS_NOATIME|unix.MS_RDONLY {
		t.Errorf("flags %#x for the mount flag \"noatime, ro\", want noatime|ro", flags)
	}
	err = publishWithFlags(c, v, p.staging, p.target, "ro", "noatime")
	mustOK(t, err)

	err = publishWithFlags(c, v, p.staging, p.target+"2", "nosuid", "noexec,password=hunter2")
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
		err := publishWithFlags(c, v, p.staging, p.target, tc.flags...)
		if err != nil {
			t.Errorf("publish with the mount flags %q = %v", tc.flags, err)
			continue
		}
		if flags, _ := m.Flags(p.target); flags != tc.want {
			t.Errorf("flags %#x for the mount flags %q, want %#x", flags, tc.flags, tc.want)
		}
	}
}

// publishWithFlags publishes volume v, staged at staging, at target for a single-node writer
// with the mount flags given.
func publishWithFlags(c *client, v *csi.Volume, staging, target string, flags ...string) error {
	_, err := c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, flags...),
	})
	return err
}
