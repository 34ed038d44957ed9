package csi

import (
	"context"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi/internal/wire"
)

// NodeStageVolume stages a volume at its staging path (which the caller creates).
func (c *Client) NodeStageVolume(ctx context.Context, r NodeStageVolumeRequest) error {
	vc, err := r.Capability.toCSI()
	if err := c.prepared(RPCNodeStageVolume, err); err != nil {
		return err
	}
	req := &csipb.NodeStageVolumeRequest{
		VolumeId:          r.VolumeID,
		PublishContext:    r.PublishContext,
		StagingTargetPath: r.StagingPath,
		VolumeCapability:  vc,
		Secrets:           r.Secrets.Plain(),
		VolumeContext:     r.VolumeContext,
	}
	_, err = send(ctx, c, RPCNodeStageVolume, req, csipb.NodeClient.NodeStageVolume)
	return err
}

// NodeUnstageVolume undoes NodeStageVolume. NOT_FOUND is ignorable.
func (c *Client) NodeUnstageVolume(ctx context.Context, r NodeUnstageVolumeRequest) error {
	req := &csipb.NodeUnstageVolumeRequest{VolumeId: r.VolumeID, StagingTargetPath: r.StagingPath}
	_, err := send(ctx, c, RPCNodeUnstageVolume, req, csipb.NodeClient.NodeUnstageVolume)
	return err
}

// NodePublishVolume publishes a volume at its target path (the caller creates the parent,
// the plugin the target).
func (c *Client) NodePublishVolume(ctx context.Context, r NodePublishVolumeRequest) error {
	vc, err := r.Capability.toCSI()
	if err := c.prepared(RPCNodePublishVolume, err); err != nil {
		return err
	}
	req := &csipb.NodePublishVolumeRequest{
		VolumeId:          r.VolumeID,
		PublishContext:    r.PublishContext,
		StagingTargetPath: r.StagingPath,
		TargetPath:        r.TargetPath,
		VolumeCapability:  vc,
		Readonly:          r.ReadOnly,
		Secrets:           r.Secrets.Plain(),
		VolumeContext:     r.VolumeContext,
	}
	_, err = send(ctx, c, RPCNodePublishVolume, req, csipb.NodeClient.NodePublishVolume)
	return err
}

// NodeUnpublishVolume undoes NodePublishVolume. NOT_FOUND is ignorable.
func (c *Client) NodeUnpublishVolume(ctx context.Context, r NodeUnpublishVolumeRequest) error {
	req := &csipb.NodeUnpublishVolumeRequest{VolumeId: r.VolumeID, TargetPath: r.TargetPath}
	_, err := send(ctx, c, RPCNodeUnpublishVolume, req, csipb.NodeClient.NodeUnpublishVolume)
	return err
}

// NodeGetCapabilities returns the node service's capabilities.
func (c *Client) NodeGetCapabilities(ctx context.Context) (NodeCapabilities, error) {
	resp, err := send(ctx, c, RPCNodeGetCapabilities, &csipb.NodeGetCapabilitiesRequest{}, csipb.NodeClient.NodeGetCapabilities)
	if err != nil {
		return NodeCapabilities{}, err
	}
	return nodeCapabilitiesFromCSI(resp.GetCapabilities()), nil
}

// NodeGetInfo returns the plugin's node ID (what ControllerPublishVolume takes), its volume
// limit and its topology.
func (c *Client) NodeGetInfo(ctx context.Context) (NodeInfo, error) {
	resp, err := send(ctx, c, RPCNodeGetInfo, &csipb.NodeGetInfoRequest{}, csipb.NodeClient.NodeGetInfo)
	if err != nil {
		return NodeInfo{}, err
	}
	return NodeInfo{
		NodeID:             resp.GetNodeId(),
		MaxVolumes:         resp.GetMaxVolumesPerNode(),
		AccessibleTopology: wire.FromTopology(resp.GetAccessibleTopology()),
	}, nil
}

// NodeExpandVolume grows a volume's filesystem on this node and returns its new size
// (0 when the plugin does not say).
func (c *Client) NodeExpandVolume(ctx context.Context, r NodeExpandVolumeRequest) (int64, error) {
	capacity, capacityErr := capacityRange(r.CapacityMin, r.CapacityMax)
	vc, vcErr := optionalCapabilityToCSI(r.Capability)
	if err := c.prepared(RPCNodeExpandVolume, capacityErr, vcErr); err != nil {
		return 0, err
	}
	req := &csipb.NodeExpandVolumeRequest{
		VolumeId:          r.VolumeID,
		VolumePath:        r.VolumePath,
		CapacityRange:     capacity,
		StagingTargetPath: r.StagingPath,
		VolumeCapability:  vc,
		Secrets:           r.Secrets.Plain(),
	}
	resp, err := send(ctx, c, RPCNodeExpandVolume, req, csipb.NodeClient.NodeExpandVolume)
	if err != nil {
		return 0, err
	}
	if err := negativeCapacity(RPCNodeExpandVolume, r.VolumeID, resp.GetCapacityBytes()); err != nil {
		return 0, err
	}
	return resp.GetCapacityBytes(), nil
}
