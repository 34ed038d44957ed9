package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A staging path that is a symlink, its last component, to the plugin's own meta/: outsideRoot
// resolves only the path's parent, mount(2) follows the link, and the volume is bind-mounted
// over the records, every volume then unknown to the plugin: what
// TestStagingInsideThePluginsRootIsRefused refuses for the path given plainly. Now a path that is
// itself a link is refused. Found by helper review62.
func TestStagingSymlinkIntoTheRootIsRefused(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v := c.createVolume(t, "data")
	other := c.createVolume(t, "other")
	meta := filepath.Join(c.srv.Config.Root, "meta")
	link := filepath.Join(hostpathtest.MountDir(t), "staging")
	mustOK(t, os.Symlink(meta, link))
	t.Cleanup(func() { _ = hostpath.UnmountAll(meta) })

	err := c.stage(v, paths{staging: link}, nil)
	if err != nil {
		if status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("NodeStageVolume at %s (-> %s): %v, want INVALID_ARGUMENT or FAILED_PRECONDITION", link, meta, err)
		}
		return
	}
	t.Errorf("NodeStageVolume at %s, a symlink to %s inside the plugin's root, answered OK (meta mounted over: %t)",
		link, meta, hostpathtest.Mounted(t, meta))
	if _, err := c.ctl.ValidateVolumeCapabilities(context.Background(), &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: other.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{snw},
	}); err != nil {
		t.Errorf("volume %s, untouched, is now: %v", other.GetVolumeId(), err)
	}
}

// A target that is a symlink to another volume's directory: NodePublishVolume bind-mounts
// volume A over volume B's directory, and B's next consumer, staged from it, is handed A's
// data. Found by helper review62.
func TestTargetSymlinkToAnotherVolumesDirectoryIsRefused(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	a, p := c.staged(t, "a")
	b := c.createVolume(t, "b")
	bDir := c.volumeDir(t, b.GetVolumeId())
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, a.GetVolumeId()), "a-secret"), []byte("A's"), 0o600))
	link := filepath.Join(hostpathtest.MountDir(t), "target")
	mustOK(t, os.Symlink(bDir, link))
	t.Cleanup(func() { _ = hostpath.UnmountAll(bDir) })

	err := c.publish(a, p, link, false, nil)
	if err != nil {
		if status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("NodePublishVolume at %s (-> %s): %v, want INVALID_ARGUMENT or FAILED_PRECONDITION", link, bDir, err)
		}
		return
	}
	t.Errorf("NodePublishVolume of %s at %s, a symlink to volume %s's directory %s, answered OK",
		a.GetVolumeId(), link, b.GetVolumeId(), bDir)
	pb := newPaths(t)
	if err := c.stage(b, pb, nil); err != nil {
		t.Fatalf("staging volume %s: %v", b.GetVolumeId(), err)
	}
	if _, err := os.Stat(filepath.Join(pb.staging, "a-secret")); err == nil {
		t.Errorf("volume %s staged at %s shows volume %s's file a-secret", b.GetVolumeId(), pb.staging, a.GetVolumeId())
	}
}

// NodeUnpublishVolume of volume A at a target A was never published at, that is another
// volume's (empty) directory under the root: the plugin removes "the directory it made there"
// and so removed volume B's directory, which no later stage of B can bind. Now only a
// directory at a target the volume records is removed. Found by helper review62.
func TestUnpublishDoesNotRemoveAnotherVolumesDirectory(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	a := c.createVolume(t, "a")
	b := c.createVolume(t, "b")
	bDir := c.volumeDir(t, b.GetVolumeId())

	err := c.unpublish(a, bDir)
	if _, serr := os.Stat(bDir); serr != nil {
		t.Errorf("NodeUnpublishVolume of %s at %s (never published there) answered %v and removed volume %s's directory: %v",
			a.GetVolumeId(), bDir, status.Code(err), b.GetVolumeId(), serr)
	}
}
