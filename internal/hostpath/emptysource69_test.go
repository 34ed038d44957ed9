package hostpath_test

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
)

// CSI's VolumeContentSource.SnapshotSource.snapshot_id (and VolumeSource.volume_id) is
// REQUIRED. A CreateVolume asking for a clone of "" is an invalid request, never one that an
// existing empty volume of the name satisfies: answered OK, the CO recorded a volume it asked to
// be filled from a source, handed a volume with no content source and no data; a name not taken
// got NOT_FOUND, a snapshot said missing. Found by helper review69.
func TestCloneOfAnEmptySourceIDIsRefusedAsInvalid(t *testing.T) {
	c := start(t, hostpath.Config{})
	ctx := context.Background()
	c.createVolume(t, "db")
	for _, src := range []*csi.VolumeContentSource{
		{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{}}},
		{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{}}},
	} {
		for _, name := range []string{"db", "fresh"} {
			req := createReq(name, mib)
			req.VolumeContentSource = src
			resp, err := c.ctl.CreateVolume(ctx, req)
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("CreateVolume %q from %v: got %v (%v), volume %q with content source %v; want INVALID_ARGUMENT (the source's ID is required)",
					name, src, status.Code(err), err, resp.GetVolume().GetVolumeId(), resp.GetVolume().GetContentSource())
			}
		}
	}
}
