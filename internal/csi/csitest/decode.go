package csitest

import (
	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/internal/wire"
	"github.com/volctl/volctl/internal/spec"
)

// Requests are recorded as the owned types the client takes, so a test can compare what the
// engine sent with what the plugin got without touching protobuf. Unset fields come back
// unset: nil maps, zero sizes, nil capabilities.

func capabilityFromCSI(vc *csipb.VolumeCapability) csi.VolumeCapability {
	c, mo := wire.FromVolumeCapability(vc)
	return csi.VolumeCapability{Capability: c, MountOptions: mo}
}

func optionalCapabilityFromCSI(vc *csipb.VolumeCapability) *csi.VolumeCapability {
	if vc == nil {
		return nil
	}
	c := capabilityFromCSI(vc)
	return &c
}

func capabilitiesFromCSI(vcs []*csipb.VolumeCapability) []csi.VolumeCapability {
	if len(vcs) == 0 {
		return nil
	}
	out := make([]csi.VolumeCapability, len(vcs))
	for i, vc := range vcs {
		out[i] = capabilityFromCSI(vc)
	}
	return out
}

func secrets(m map[string]string) spec.Secrets {
	if m == nil {
		return nil
	}
	return spec.Secrets(m)
}

func decodeCreateVolume(r *csipb.CreateVolumeRequest) csi.CreateVolumeRequest {
	return csi.CreateVolumeRequest{
		Name:              r.GetName(),
		CapacityMin:       r.GetCapacityRange().GetRequiredBytes(),
		CapacityMax:       r.GetCapacityRange().GetLimitBytes(),
		Capabilities:      capabilitiesFromCSI(r.GetVolumeCapabilities()),
		Parameters:        r.GetParameters(),
		MutableParameters: r.GetMutableParameters(),
		Secrets:           secrets(r.GetSecrets()),
		SnapshotID:        r.GetVolumeContentSource().GetSnapshot().GetSnapshotId(),
		CloneID:           r.GetVolumeContentSource().GetVolume().GetVolumeId(),
		TopologyRequest:   wire.FromTopologyRequirement(r.GetAccessibilityRequirements()),
	}
}

func decodeControllerPublish(r *csipb.ControllerPublishVolumeRequest) csi.ControllerPublishVolumeRequest {
	return csi.ControllerPublishVolumeRequest{
		VolumeID:      r.GetVolumeId(),
		NodeID:        r.GetNodeId(),
		Capability:    capabilityFromCSI(r.GetVolumeCapability()),
		ReadOnly:      r.GetReadonly(),
		Secrets:       secrets(r.GetSecrets()),
		VolumeContext: r.GetVolumeContext(),
	}
}

func decodeValidate(r *csipb.ValidateVolumeCapabilitiesRequest) csi.ValidateVolumeCapabilitiesRequest {
	return csi.ValidateVolumeCapabilitiesRequest{
		VolumeID:          r.GetVolumeId(),
		VolumeContext:     r.GetVolumeContext(),
		Capabilities:      capabilitiesFromCSI(r.GetVolumeCapabilities()),
		Parameters:        r.GetParameters(),
		MutableParameters: r.GetMutableParameters(),
		Secrets:           secrets(r.GetSecrets()),
	}
}

func decodeGetCapacity(r *csipb.GetCapacityRequest) csi.GetCapacityRequest {
	return csi.GetCapacityRequest{
		Capabilities:       capabilitiesFromCSI(r.GetVolumeCapabilities()),
		Parameters:         r.GetParameters(),
		AccessibleTopology: wire.FromTopology(r.GetAccessibleTopology()),
	}
}

func decodeNodeStage(r *csipb.NodeStageVolumeRequest) csi.NodeStageVolumeRequest {
	return csi.NodeStageVolumeRequest{
		VolumeID:       r.GetVolumeId(),
		PublishContext: r.GetPublishContext(),
		StagingPath:    r.GetStagingTargetPath(),
		Capability:     capabilityFromCSI(r.GetVolumeCapability()),
		Secrets:        secrets(r.GetSecrets()),
		VolumeContext:  r.GetVolumeContext(),
	}
}

func decodeNodePublish(r *csipb.NodePublishVolumeRequest) csi.NodePublishVolumeRequest {
	return csi.NodePublishVolumeRequest{
		VolumeID:       r.GetVolumeId(),
		PublishContext: r.GetPublishContext(),
		StagingPath:    r.GetStagingTargetPath(),
		TargetPath:     r.GetTargetPath(),
		Capability:     capabilityFromCSI(r.GetVolumeCapability()),
		ReadOnly:       r.GetReadonly(),
		Secrets:        secrets(r.GetSecrets()),
		VolumeContext:  r.GetVolumeContext(),
	}
}

func decodeNodeExpand(r *csipb.NodeExpandVolumeRequest) csi.NodeExpandVolumeRequest {
	return csi.NodeExpandVolumeRequest{
		VolumeID:    r.GetVolumeId(),
		VolumePath:  r.GetVolumePath(),
		CapacityMin: r.GetCapacityRange().GetRequiredBytes(),
		CapacityMax: r.GetCapacityRange().GetLimitBytes(),
		StagingPath: r.GetStagingTargetPath(),
		Capability:  optionalCapabilityFromCSI(r.GetVolumeCapability()),
		Secrets:     secrets(r.GetSecrets()),
	}
}

func decodeControllerExpand(r *csipb.ControllerExpandVolumeRequest) csi.ControllerExpandVolumeRequest {
	return csi.ControllerExpandVolumeRequest{
		VolumeID:    r.GetVolumeId(),
		CapacityMin: r.GetCapacityRange().GetRequiredBytes(),
		CapacityMax: r.GetCapacityRange().GetLimitBytes(),
		Secrets:     secrets(r.GetSecrets()),
		Capability:  optionalCapabilityFromCSI(r.GetVolumeCapability()),
	}
}
