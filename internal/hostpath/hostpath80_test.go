package hostpath_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestHealthOfAVolumeWhileTheRootIsMovedDoesNotForgetIt: with the plugin's --root moved away
// while it serves, every other request that reads or changes a volume's record answers the
// root-moved refusal (FAILED_PRECONDITION, "put it back where it was, or restart the plugin
// with --root where it is now"), but NodeGetVolumeHealth, which takes the plugin's mutex alone
// and no checkRoot, answered NOT_FOUND "volume not found" of a volume that exists, and its
// record lookup (state.current), finding no record file, dropped the volume from the plugin's
// memory. With the root put back, as advised, ListVolumes (which lists the volumes in memory)
// no longer lists the volume, though its record, directory and mounts are all there. Correct:
// NodeGetVolumeHealth answers the root-moved refusal as the other reads do, and forgets nothing,
// so that once the root is back the volume is listed again.
// Found by helper review80 (hostpath).
func TestHealthOfAVolumeWhileTheRootIsMovedDoesNotForgetIt(t *testing.T) {
	ctx := context.Background()
	c, v, p, root := stagedUnderAMovedRoot(t, "health")
	_, err := c.nd.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging})
	if st := status.Convert(err); err == nil || st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "moved or removed") {
		t.Errorf("NodeGetVolumeHealth of volume %s with the plugin's root moved: %v; want FAILED_PRECONDITION saying the root %s was moved or removed", v.GetVolumeId(), err, root)
	}
	// Put back, as advised.
	if err := os.Rename(root+"-moved", root); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	mustOK(t, err)
	listed := false
	for _, e := range resp.GetEntries() {
		listed = listed || e.GetVolume().GetVolumeId() == v.GetVolumeId()
	}
	if !listed {
		t.Errorf("ListVolumes with the root put back does not list volume %s, whose record is on disk: %v", v.GetVolumeId(), resp.GetEntries())
	}
}

// stagedUnderAMovedRoot starts a plugin on a root of its own, stages volume name through it,
// then moves the root away (to ROOT-moved) while the plugin serves. It returns the client, the
// volume, its paths and the root's path.
func stagedUnderAMovedRoot(t *testing.T, name string) (*client, *csi.Volume, paths, string) {
	t.Helper()
	root := t.TempDir() + "/root"
	c, _ := startFake(t, hostpath.Config{Root: root})
	v, p := c.staged(t, name)
	if err := os.Rename(root, root+"-moved"); err != nil {
		t.Fatal(err)
	}
	return c, v, p, root
}
