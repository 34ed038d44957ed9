package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/mountflags"
)

// tmpfsRoot mounts a tmpfs with the mount(2) flags given (what a host put on the file system
// the plugin's root is on) and returns a root directory on it; everything below is unmounted
// at the end (MountDir).
func tmpfsRoot(t *testing.T, flags uintptr) string {
	t.Helper()
	hostpathtest.RequireMount(t)
	dir := filepath.Join(hostpathtest.MountDir(t), "fs")
	mustOK(t, os.Mkdir(dir, 0o700))
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size=16m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs with flags %#x: %v", flags, err)
	}
	return filepath.Join(dir, "root")
}

func statfsFlags(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	mustOK(t, unix.Statfs(path, &st))
	return int64(st.Flags)
}

// The docs (Node): NodePublish remounts "keeping those [flags] of the mount the volume's
// directory is on (the root's: a host's nosuid ...)". A host that mounts the plugin's root
// nosymfollow (Linux 5.10+: symlinks on it are not followed, a guard against a consumer's
// planted links) has that flag cleared on every target the plugin remounts: carriedFlags
// maps ro, nosuid, nodev, noexec and the atime flags, not ST_NOSYMFOLLOW, and a bind remount
// replaces every flag it is not given. So a read-only claim, or any claim after a staging
// claim with a flag of its own, gets a target that follows symlinks the host forbade.
// Found by helper review66.
func TestPublishKeepsTheRootMountsNosymfollow(t *testing.T) {
	host := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOSYMFOLLOW)
	for _, tc := range []struct {
		name      string
		stageFlag []string
		readonly  bool
	}{
		{"read-only claim", nil, true},
		{"read-write claim after a noexec staging", []string{"noexec"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tmpfsRoot(t, host)
			if statfsFlags(t, filepath.Dir(root))&mountflags.STNoSymFollow == 0 {
				t.Skip("this kernel does not report nosymfollow")
			}
			c := start(t, hostpath.Config{Root: root})
			v := c.createVolume(t, "v")
			dir := hostpathtest.MountDir(t)
			staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
			mmw := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
			_, err := c.nd.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
				VolumeId: v.GetVolumeId(), StagingTargetPath: staging, VolumeCapability: mountCap(mmw, tc.stageFlag...),
			})
			mustOK(t, err)
			_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
				VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: target,
				VolumeCapability: mountCap(mmw), Readonly: tc.readonly,
			})
			mustOK(t, err)
			defer func() {
				_, _ = c.nd.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), TargetPath: target})
				_, _ = c.nd.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: staging})
			}()
			got := statfsFlags(t, target)
			for _, f := range []struct {
				name string
				st   int64
			}{{"nosuid", unix.ST_NOSUID}, {"nodev", unix.ST_NODEV}, {"noexec", unix.ST_NOEXEC}, {"nosymfollow", mountflags.STNoSymFollow}} {
				if got&f.st == 0 {
					t.Errorf("the root's file system is mounted %s by the host, but the target %s published from it is not (statfs flags %#x): the remount cleared the host's flag",
						f.name, target, got)
				}
			}
			// And it is so: a symlink in the volume is followed through the target.
			vdir := c.volumeDir(t, v.GetVolumeId())
			mustOK(t, os.WriteFile(filepath.Join(vdir, "f"), nil, 0o644))
			mustOK(t, os.Symlink("f", filepath.Join(vdir, "l")))
			if _, err := os.Stat(filepath.Join(target, "l")); err == nil {
				t.Errorf("a symlink in the volume is followed through the target (on the root's mount it is not: nosymfollow)")
			}
		})
	}
}

// The docs (Node): the target keeps the flags of the root's mount, "not the staging's ... its
// noexec, its ro" (TestPublishDoesNotInheritTheStagingClaimsMountFlags). On a root mounted
// strictatime (statfs then reports no atime flag at all), the remount of a claim asking no
// atime flag is given none, and the kernel's bind remount then keeps the atime flags the
// target has: the staging claim's noatime, which the bind copied.
// Found by helper review66.
func TestPublishOnAStrictatimeRootDoesNotGetTheStagingClaimsNoatime(t *testing.T) {
	c, v, staging, target, mmw := stagedOnAStrictatimeRoot(t, "noatime", "nodiratime")
	var err error
	for _, flags := range [][]string{nil, {"nosuid"}} {
		_, err = c.nd.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: v.GetVolumeId(), StagingTargetPath: staging, TargetPath: target,
			VolumeCapability: mountCap(mmw, flags...),
		})
		mustOK(t, err)
		if got := statfsFlags(t, target); got&(unix.ST_NOATIME|unix.ST_NODIRATIME) != 0 {
			t.Errorf("a claim asking mount flags %q on a strictatime root got a target mounted noatime/nodiratime (statfs flags %#x): the staging claim's flags, not its own",
				flags, got)
		}
		_, err = c.nd.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), TargetPath: target})
		mustOK(t, err)
	}
	_, _ = c.nd.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: staging})
}

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
	c, v, staging, target, mmw := stagedOnAStrictatimeRoot(t, "noatime")
	var err error
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

// stagedOnAStrictatimeRoot stages volume "v" of a plugin whose root is on a tmpfs mounted
// strictatime, multi-node-multi-writer, with the mount flags stageFlags; it skips, saying so,
// where the tmpfs is not strictatime.
func stagedOnAStrictatimeRoot(t *testing.T, stageFlags ...string) (c *client, v *csi.Volume, staging, target string, mmw csi.VolumeCapability_AccessMode_Mode) {
	t.Helper()
	root := tmpfsRoot(t, unix.MS_STRICTATIME)
	if statfsFlags(t, filepath.Dir(root))&(unix.ST_NOATIME|unix.ST_RELATIME) != 0 {
		t.Skip("the tmpfs is not strictatime")
	}
	c = start(t, hostpath.Config{Root: root})
	v = c.createVolume(t, "v")
	dir := hostpathtest.MountDir(t)
	staging, target = filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	mmw = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	_, err := c.nd.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: v.GetVolumeId(), StagingTargetPath: staging, VolumeCapability: mountCap(mmw, stageFlags...),
	})
	mustOK(t, err)
	return c, v, staging, target, mmw
}
