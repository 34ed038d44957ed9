package csi

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi/internal/wire"
)

// GetCapacity is the one RPC in RPCs volctl itself never sends; the tests send it, to hold the
// client to every RPC it knows (timeouts, classes, redaction).

// Capacity is what GetCapacity reports. The size bounds are nil when the plugin does not say.
type Capacity struct {
	AvailableBytes    int64  `json:"available_bytes"`
	MaximumVolumeSize *int64 `json:"maximum_volume_size,omitempty"`
	MinimumVolumeSize *int64 `json:"minimum_volume_size,omitempty"`
}

// GetCapacity asks how much space the plugin has for volumes with these capabilities,
// parameters and topology.
func (c *Client) GetCapacity(ctx context.Context, r GetCapacityRequest) (Capacity, error) {
	ep, err := c.endpointFor(RPCGetCapacity)
	if err != nil {
		return Capacity{}, err
	}
	req := &csipb.GetCapacityRequest{Parameters: r.Parameters, AccessibleTopology: wire.Topology(r.AccessibleTopology)}
	if req.VolumeCapabilities, err = capabilitiesToCSI(r.Capabilities); err != nil {
		return Capacity{}, fmt.Errorf("%s: %w", RPCGetCapacity, err)
	}
	resp, err := invoke(ctx, c, ep, RPCGetCapacity, req, ep.controller.GetCapacity)
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
