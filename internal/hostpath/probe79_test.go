package hostpath_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestProbeOfAPluginWhoseRootMovedIsNotReady: once the plugin's --root is moved or removed
// while it serves (no meta/ there), every request that changes or makes a record fails
// FAILED_PRECONDITION, "the plugin's root ... was moved or removed ...: put it back, or restart
// the plugin with --root where it is now" (Plugin.rootMoved), but Probe answered ready=true,
// so `volctl plugin status` and the agent showed it healthy, and the read-only RPCs answered
// as of another cause (ValidateVolumeCapabilities and NodeGetVolumeStats NOT_FOUND "volume not
// found" of volumes that exist, GetCapacity INTERNAL on its statfs). Now Probe answers not
// ready (not an error: an agent restarts a plugin failing its probes, and the new one would
// make an empty root where the root is to be put back), the reads answer the root-moved
// refusal, and with the root put back, as advised, the plugin is ready and serves the volume.
// Found by helper review79 (hostpath).
func TestProbeOfAPluginWhoseRootMovedIsNotReady(t *testing.T) {
	ctx := context.Background()
	c, v, p, root := stagedUnderAMovedRoot(t, "moved")
	// Precondition: the plugin itself knows it cannot serve the volume.
	if err := c.unstage(v, p); err == nil || !strings.Contains(status.Convert(err).Message(), "moved or removed") {
		t.Fatalf("precondition: NodeUnstageVolume on the moved root answered %v, want the root-moved refusal", err)
	}
	resp, err := c.id.Probe(ctx, &csi.ProbeRequest{})
	if err != nil || resp.GetReady() == nil || resp.GetReady().GetValue() {
		t.Errorf("Probe with the plugin's root %s gone answered %v, %v; want ready=false", root, resp, err)
	}
	reads := map[string]error{}
	_, reads["ValidateVolumeCapabilities"] = c.ctl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: v.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{snw}})
	_, reads["NodeGetVolumeStats"] = c.nd.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.GetVolumeId(), VolumePath: p.staging})
	_, reads["GetCapacity"] = c.ctl.GetCapacity(ctx, &csi.GetCapacityRequest{})
	_, reads["ListVolumes"] = c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	_, reads["ListSnapshots"] = c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	for rpc, err := range reads {
		if st := status.Convert(err); err == nil || st.Code() != codes.FailedPrecondition || !strings.Contains(st.Message(), "moved or removed") || !strings.Contains(st.Message(), root) {
			t.Errorf("%s with the plugin's root gone: %v; want FAILED_PRECONDITION saying the root %s was moved or removed", rpc, err, root)
		}
	}

	// Put back, as advised: ready, and the volume served.
	if err := os.Rename(root+"-moved", root); err != nil {
		t.Fatal(err)
	}
	if resp, err := c.id.Probe(ctx, &csi.ProbeRequest{}); err != nil || !resp.GetReady().GetValue() {
		t.Errorf("Probe with the root put back: %v, %v; want ready", resp, err)
	}
	if err := c.unstage(v, p); err != nil {
		t.Errorf("NodeUnstageVolume with the root put back: %v", err)
	}
}
