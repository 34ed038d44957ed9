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

// TestUnpublishOfAPathNotPublishedLeavesAFileThere: NodeUnpublishVolume of a target
// the volume was never published at, where a regular file is (not a mount, not a directory the
// plugin made), must leave the file: the plugin only ever makes directories at targets
// (ensureDir), and CSI has it delete "the file or directory it created". It removed the
// caller's file, and answered OK. (hostpath review)
func TestUnpublishOfAPathNotPublishedLeavesAFileThere(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	v := c.createVolume(t, "data")
	file := filepath.Join(hostpathtest.MountDir(t), "notes.txt")
	mustOK(t, os.WriteFile(file, []byte("not the plugin's"), 0o644))

	err := c.unpublish(v, file)
	if _, serr := os.Stat(file); serr != nil {
		t.Fatalf("NodeUnpublishVolume of %s, where volume %s was never published, answered %v and removed the file: %v",
			file, v.GetVolumeId(), status.Code(err), serr)
	}
}

// TestStagingInsideThePluginsRootIsRefused: a staging path inside the plugin's own
// root (its meta/ directory) was accepted, and the volume bind-mounted over the records: every
// volume was then unknown to the plugin, and the volume just staged cannot be unstaged
// (NOT_FOUND), its mount left over the records for good. Refused now. (hostpath review)
func TestStagingInsideThePluginsRootIsRefused(t *testing.T) {
	hostpathtest.RequireMount(t)
	c := start(t, hostpath.Config{})
	v := c.createVolume(t, "data")
	other := c.createVolume(t, "other")
	inRoot := filepath.Join(c.srv.Config.Root, "meta")

	err := c.stage(v, paths{staging: inRoot}, nil)
	if err != nil {
		if status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("NodeStageVolume at %s: %v, want INVALID_ARGUMENT or FAILED_PRECONDITION", inRoot, err)
		}
		return // refused: what this test wants
	}
	t.Cleanup(func() { _ = (hostpath.SystemMounter{}).Unmount(inRoot) })
	t.Errorf("NodeStageVolume at %s, inside the plugin's root, answered OK", inRoot)
	if _, err := c.ctl.ValidateVolumeCapabilities(context.Background(), &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: other.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{snw},
	}); err != nil {
		t.Errorf("volume %s, untouched, is now: %v", other.GetVolumeId(), err)
	}
	if err := c.unstage(v, paths{staging: inRoot}); err != nil {
		t.Errorf("NodeUnstageVolume of what it just staged: %v", err)
	}
}
