package csi

import (
	"fmt"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi/internal/wire"
	"github.com/volctl/volctl/internal/spec"
)

// Conversions from the owned types to the wire. Unset stays unset: nil maps stay nil, a zero
// capacity range and an empty topology request are not sent, and no content source is sent
// unless one is named, because plugins tell empty from absent.

func (vc VolumeCapability) toCSI() (*csipb.VolumeCapability, error) {
	out, err := wire.VolumeCapability(vc.Capability, vc.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("capability %s/%s: %w", vc.AccessMode, vc.AttachmentMode, err)
	}
	return out, nil
}

func capabilitiesToCSI(caps []VolumeCapability) ([]*csipb.VolumeCapability, error) {
	if len(caps) == 0 {
		return nil, nil
	}
	out := make([]*csipb.VolumeCapability, len(caps))
	for i, vc := range caps {
		pb, err := vc.toCSI()
		if err != nil {
			return nil, err
		}
		out[i] = pb
	}
	return out, nil
}

func optionalCapabilityToCSI(vc *VolumeCapability) (*csipb.VolumeCapability, error) {
	if vc == nil {
		return nil, nil
	}
	return vc.toCSI()
}

// capacityRange sends nothing when neither bound is set.
func capacityRange(min, max int64) (*csipb.CapacityRange, error) {
	switch {
	case min < 0 || max < 0:
		return nil, fmt.Errorf("capacity range %d..%d: sizes cannot be negative", min, max)
	case max > 0 && min > max:
		return nil, fmt.Errorf("capacity range: minimum %d is above maximum %d", min, max)
	case min == 0 && max == 0:
		return nil, nil
	}
	return &csipb.CapacityRange{RequiredBytes: min, LimitBytes: max}, nil
}

func contentSource(snapshotID, cloneID string) (*csipb.VolumeContentSource, error) {
	switch {
	case snapshotID != "" && cloneID != "":
		return nil, fmt.Errorf("snapshot %q and clone %q: a volume has one source at most", snapshotID, cloneID)
	case snapshotID != "":
		return &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: snapshotID}}}, nil
	case cloneID != "":
		return &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: cloneID}}}, nil
	}
	return nil, nil
}

func volumeFromCSI(v *csipb.Volume) Volume {
	out := Volume{
		ID: v.GetVolumeId(),
		// A negative size, which the CSI spec does not allow, reads as not stated (0), as a
		// snapshot's does (snapshotFromCSI).
		CapacityBytes: max(v.GetCapacityBytes(), 0),
		Context:       v.GetVolumeContext(),
		// A topology without segments says nothing of where the volume is (a driver whose
		// topology key is not set answers so) and is left out: kept, it matched every node that
		// has a topology, a volume whose spec required zone a admitted on a zone-b node, and
		// export wrote a required topology Nomad refuses
		// (TestCreateAnsweredWithATopologyOfNoSegmentsIsNotAccessibleEverywhere). With none
		// left, the volume's topology is what its spec required.
		AccessibleTopology: slices.DeleteFunc(wire.FromTopologies(v.GetAccessibleTopology()), func(t spec.Topology) bool { return len(t.Segments) == 0 }),
	}
	if src := v.GetContentSource(); src != nil {
		out.SnapshotID = src.GetSnapshot().GetSnapshotId()
		out.CloneID = src.GetVolume().GetVolumeId()
	}
	return out
}

// snapshotFromCSI is a snapshot as the plugin describes it. What the CSI spec never allows
// reads as not stated, as the plugin leaving it out does: a negative size_bytes as 0, and a
// creation_time that is not a valid Timestamp (outside the years 1 to 9999, or its nanos
// outside a second) as the zero time, which no JSON encoder could write (encoding/json fails
// on it, and with it the whole listing that holds it). So does a creation_time of exactly
// 1970-01-01T00:00:00Z, the zero Timestamp message (a plugin filling the field with an empty
// one), which no snapshot was taken at and the store keeps as "none"
// (`TestSnapshotTimeAndSizeAPluginLiesAbout`).
func snapshotFromCSI(s *csipb.Snapshot) Snapshot {
	out := Snapshot{
		ID:              s.GetSnapshotId(),
		SourceVolumeID:  s.GetSourceVolumeId(),
		SizeBytes:       max(s.GetSizeBytes(), 0),
		ReadyToUse:      s.GetReadyToUse(),
		GroupSnapshotID: s.GetGroupSnapshotId(),
	}
	if t := s.GetCreationTime(); t != nil && t.CheckValid() == nil && (t.GetSeconds() != 0 || t.GetNanos() != 0) {
		out.CreatedAt = t.AsTime()
	}
	return out
}

// capabilitySet is a service's capability set (PluginCapabilities, ControllerCapabilities,
// NodeCapabilities) through its pointer, which sets one capability by name.
type capabilitySet[T any] interface {
	*T
	set(name string)
}

// capabilitiesFromCSI is the capability set T a service answered, each capability named by name.
func capabilitiesFromCSI[T any, P capabilitySet[T], C any](caps []C, name func(C) string) T {
	var out T
	for _, c := range caps {
		P(&out).set(name(c))
	}
	return out
}

func pluginCapabilitiesFromCSI(caps []*csipb.PluginCapability) PluginCapabilities {
	return capabilitiesFromCSI[PluginCapabilities](caps, wire.PluginCapabilityName)
}

func controllerCapabilitiesFromCSI(caps []*csipb.ControllerServiceCapability) ControllerCapabilities {
	return capabilitiesFromCSI[ControllerCapabilities](caps, wire.ControllerCapabilityName)
}

func nodeCapabilitiesFromCSI(caps []*csipb.NodeServiceCapability) NodeCapabilities {
	return capabilitiesFromCSI[NodeCapabilities](caps, wire.NodeCapabilityName)
}

// capabilityConfirmed reports whether a confirmed capability covers a requested one, on the
// fields the plugin filled in: plugins in the wild confirm partial capabilities.
func capabilityConfirmed(req, conf *csipb.VolumeCapability) bool {
	if m := conf.GetAccessMode().GetMode(); m != csipb.VolumeCapability_AccessMode_UNKNOWN && m != req.GetAccessMode().GetMode() {
		return false
	}
	switch {
	case conf.GetBlock() != nil:
		return req.GetBlock() != nil
	case conf.GetMount() != nil:
		cm, rm := conf.GetMount(), req.GetMount()
		if rm == nil {
			return false
		}
		if cm.GetFsType() != "" && cm.GetFsType() != rm.GetFsType() {
			return false
		}
		if cm.GetVolumeMountGroup() != "" && cm.GetVolumeMountGroup() != rm.GetVolumeMountGroup() {
			return false
		}
		if len(cm.GetMountFlags()) > 0 && !sameSet(cm.GetMountFlags(), rm.GetMountFlags()) {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	in := make(map[string]bool, len(a))
	for _, s := range a {
		in[s] = true
	}
	for _, s := range b {
		if !in[s] {
			return false
		}
	}
	seen := make(map[string]bool, len(b))
	for _, s := range b {
		seen[s] = true
	}
	return len(seen) == len(in)
}
