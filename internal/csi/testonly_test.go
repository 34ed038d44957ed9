package csi

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi/internal/wire"
)

// GetCapacity and NodeGetVolumeStats are the RPCs in RPCs volctl itself never sends; the
// tests send them, to hold the client to every RPC it knows (timeouts, classes,
// redaction, routing by service). Tests of other packages that want to see what a plugin holds
// ask it themselves (csitest.VolumeIDs).

// Capacity is what GetCapacity reports. The size bounds are nil when the plugin does not say.
type Capacity struct {
	AvailableBytes    int64  `json:"available_bytes"`
	MaximumVolumeSize *int64 `json:"maximum_volume_size,omitempty"`
	MinimumVolumeSize *int64 `json:"minimum_volume_size,omitempty"`
}

// GetCapacity asks how much space the plugin has for volumes with these capabilities,
// parameters and topology.
func (c *Client) GetCapacity(ctx context.Context, r GetCapacityRequest) (Capacity, error) {
	_, err := c.endpointFor(RPCGetCapacity) // a missing socket is reported before a bad request
	if err != nil {
		return Capacity{}, err
	}
	req := &csipb.GetCapacityRequest{Parameters: r.Parameters, AccessibleTopology: wire.Topology(r.AccessibleTopology)}
	if req.VolumeCapabilities, err = capabilitiesToCSI(r.Capabilities); err != nil {
		return Capacity{}, fmt.Errorf("%s: %w", RPCGetCapacity, err)
	}
	resp, err := send(ctx, c, RPCGetCapacity, req, csipb.ControllerClient.GetCapacity)
	if err != nil {
		return Capacity{}, err
	}
	out := Capacity{AvailableBytes: resp.GetAvailableCapacity()}
	if v := resp.GetMaximumVolumeSize(); v != nil {
		n := v.GetValue()
		out.MaximumVolumeSize = &n
	}
	if v := resp.GetMinimumVolumeSize(); v != nil {
		n := v.GetValue()
		out.MinimumVolumeSize = &n
	}
	return out, nil
}

// Usage is one unit's figures of a volume's usage.
type Usage struct {
	Total     int64 `json:"total"`
	Used      int64 `json:"used"`
	Available int64 `json:"available"`
}

// VolumeStats is what NodeGetVolumeStats reports; a unit the plugin did not report is nil.
type VolumeStats struct {
	Bytes  *Usage `json:"bytes,omitempty"`
	Inodes *Usage `json:"inodes,omitempty"`
}

// NodeGetVolumeStats returns a published or staged volume's usage.
func (c *Client) NodeGetVolumeStats(ctx context.Context, r NodeGetVolumeStatsRequest) (VolumeStats, error) {
	req := &csipb.NodeGetVolumeStatsRequest{VolumeId: r.VolumeID, VolumePath: r.VolumePath, StagingTargetPath: r.StagingPath}
	resp, err := send(ctx, c, RPCNodeGetVolumeStats, req, csipb.NodeClient.NodeGetVolumeStats)
	if err != nil {
		return VolumeStats{}, err
	}
	var out VolumeStats
	for _, u := range resp.GetUsage() {
		usage := &Usage{Total: u.GetTotal(), Used: u.GetUsed(), Available: u.GetAvailable()}
		switch u.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			out.Bytes = usage
		case csipb.VolumeUsage_INODES:
			out.Inodes = usage
		}
	}
	return out, nil
}
