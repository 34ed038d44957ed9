// Package wire converts volctl's spec vocabulary (access and attachment modes, mount options,
// topology) to and from the CSI protobuf messages. It is internal to internal/csi so that the
// client (package csi) and the test plugins (package csitest) share one mapping.
package wire

import (
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/volctl/volctl/internal/spec"
)

// accessModes is the one table between Nomad's access-mode spelling and CSI's enum.
var accessModes = []struct {
	mode spec.AccessMode
	pb   csipb.VolumeCapability_AccessMode_Mode
}{
	{spec.SingleNodeReaderOnly, csipb.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY},
	{spec.SingleNodeWriter, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	{spec.MultiNodeReaderOnly, csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
	{spec.MultiNodeSingleWriter, csipb.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER},
	{spec.MultiNodeMultiWriter, csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
}

// AccessModeFromCSI maps a CSI access mode back to Nomad's spelling. The alpha single-node
// single/multi-writer modes have no Nomad spelling and come back as their CSI names, so a
// reader still sees what the plugin said.
func AccessModeFromCSI(m csipb.VolumeCapability_AccessMode_Mode) spec.AccessMode {
	for _, e := range accessModes {
		if e.pb == m {
			return e.mode
		}
	}
	return spec.AccessMode(m.String())
}

// VolumeCapability builds the CSI capability for an (access, attachment) pair and the mount
// options that go with it. This is the one place modes are mapped to CSI; mount flags are
// passed raw, as only internal/csi may do.
func VolumeCapability(c spec.Capability, mo *spec.MountOptions) (*csipb.VolumeCapability, error) {
	out := &csipb.VolumeCapability{}
	found := false
	for _, e := range accessModes {
		if e.mode == c.AccessMode {
			out.AccessMode = &csipb.VolumeCapability_AccessMode{Mode: e.pb}
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("unknown access mode %q", c.AccessMode)
	}
	switch c.AttachmentMode {
	case spec.FileSystem:
		mount := &csipb.VolumeCapability_MountVolume{}
		if mo != nil {
			mount.FsType = mo.FSType
			mount.MountFlags = mo.MountFlags.Plain()
		}
		out.AccessType = &csipb.VolumeCapability_Mount{Mount: mount}
	case spec.BlockDevice:
		if mo != nil && (mo.FSType != "" || len(mo.MountFlags) > 0) {
			return nil, fmt.Errorf("a block-device capability cannot carry mount options")
		}
		out.AccessType = &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}
	default:
		return nil, fmt.Errorf("unknown attachment mode %q", c.AttachmentMode)
	}
	return out, nil
}

// FromVolumeCapability is the reverse of VolumeCapability, for servers that receive one.
// A capability with neither block nor mount set has an empty attachment mode; mount options
// are nil when the plugin would see none.
func FromVolumeCapability(vc *csipb.VolumeCapability) (spec.Capability, *spec.MountOptions) {
	var c spec.Capability
	if vc == nil {
		return c, nil
	}
	if am := vc.GetAccessMode(); am != nil {
		c.AccessMode = AccessModeFromCSI(am.GetMode())
	}
	var mo *spec.MountOptions
	switch {
	case vc.GetBlock() != nil:
		c.AttachmentMode = spec.BlockDevice
	case vc.GetMount() != nil:
		c.AttachmentMode = spec.FileSystem
		m := vc.GetMount()
		if m.GetFsType() != "" || len(m.GetMountFlags()) > 0 {
			mo = &spec.MountOptions{FSType: m.GetFsType()}
			if len(m.GetMountFlags()) > 0 {
				mo.MountFlags = spec.MountFlags(append([]string(nil), m.GetMountFlags()...))
			}
		}
	}
	return c, mo
}

// Topology converts one segment set; nil stays nil.
func Topology(t *spec.Topology) *csipb.Topology {
	if t == nil {
		return nil
	}
	return &csipb.Topology{Segments: t.Segments}
}

// Topologies converts a list of segment sets; an empty list is nil.
func Topologies(ts []spec.Topology) []*csipb.Topology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*csipb.Topology, len(ts))
	for i := range ts {
		out[i] = &csipb.Topology{Segments: ts[i].Segments}
	}
	return out
}

// FromTopology converts one CSI segment set; nil stays nil.
func FromTopology(t *csipb.Topology) *spec.Topology {
	if t == nil {
		return nil
	}
	return &spec.Topology{Segments: t.GetSegments()}
}

// FromTopologies converts a list of CSI segment sets; an empty list is nil.
func FromTopologies(ts []*csipb.Topology) []spec.Topology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]spec.Topology, 0, len(ts))
	for _, t := range ts {
		if t != nil {
			out = append(out, spec.Topology{Segments: t.GetSegments()})
		}
	}
	return out
}

// TopologyRequirement converts a topology request; nil, or one with nothing in it, is nil, so
// a plugin never sees an empty requirement it might read as "accessible nowhere".
func TopologyRequirement(r *spec.TopologyRequest) *csipb.TopologyRequirement {
	if r == nil || (len(r.Required) == 0 && len(r.Preferred) == 0) {
		return nil
	}
	return &csipb.TopologyRequirement{Requisite: Topologies(r.Required), Preferred: Topologies(r.Preferred)}
}

// FromTopologyRequirement is the reverse of TopologyRequirement.
func FromTopologyRequirement(r *csipb.TopologyRequirement) *spec.TopologyRequest {
	if r == nil {
		return nil
	}
	return &spec.TopologyRequest{Required: FromTopologies(r.GetRequisite()), Preferred: FromTopologies(r.GetPreferred())}
}
