package nomad

import (
	"maps"
	"slices"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// RegisterSpec is the volume as Nomad must register it: volctl's spec with the recorded
// external ID (a volume volctl created is registered in Nomad, not created again), the plugin's
// returned context, its accessible topology as topology_request.required (for a registered
// volume, Nomad takes that as the volume's topology) and its capacity: as capacity_min, and
// as the size the plugin reported (Capacity, which only the API carries). Create-only fields
// (snapshot_id, clone_id) are dropped. Secrets are raw: the caller decides what to write.
func RegisterSpec(v engine.VolumeInfo) spec.Volume {
	out := spec.Volume{
		ID: v.ID, Namespace: v.Namespace, Name: v.Name, Type: "csi", PluginID: v.PluginID,
		ExternalID: v.ExternalID, Capabilities: slices.Clone(v.Capabilities), MountOptions: v.MountOptions,
		Secrets: v.Secrets, Parameters: maps.Clone(v.Parameters), Context: maps.Clone(v.Context),
		CapacityMin: v.CapacityBytes, CapacityMax: v.RequestedMax, Capacity: v.CapacityBytes,
	}
	if out.Namespace == "" {
		out.Namespace = spec.DefaultNamespace
	}
	if out.CapacityMin == 0 {
		out.CapacityMin = v.RequestedMin
	}
	if out.CapacityMax > 0 && out.CapacityMax < out.CapacityMin {
		out.CapacityMax = 0
	}
	if req := RequiredTopologies(v); len(req) > 0 {
		out.TopologyRequest = &spec.TopologyRequest{Required: req}
	}
	return out
}

// RequiredTopologies are the topologies volume v's Nomad spec requires (RegisterSpec): its
// accessible topology, a created volume's (recorded with each key spelled as the plugin's node
// states it: Nomad compares keys as bytes), else its spec's topology_request.required, a
// registered volume's, as the spec spells it; a copy.
func RequiredTopologies(v engine.VolumeInfo) []spec.Topology {
	switch {
	case len(v.AccessibleTopology) > 0:
		return slices.Clone(v.AccessibleTopology)
	case v.TopologyRequest != nil:
		return slices.Clone(v.TopologyRequest.Required)
	}
	return nil
}
