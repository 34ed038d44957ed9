package hostpath

import (
	"fmt"
	"maps"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Status helpers: every message starts with "hostpath:" so the orchestrator's error path shows
// which side of the socket said it.
func invalidArg(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, "hostpath: "+format, args...)
}

func notFound(format string, args ...any) error {
	return status.Errorf(codes.NotFound, "hostpath: "+format, args...)
}

func failedPrecondition(format string, args ...any) error {
	return status.Errorf(codes.FailedPrecondition, "hostpath: "+format, args...)
}

func alreadyExists(format string, args ...any) error {
	return status.Errorf(codes.AlreadyExists, "hostpath: "+format, args...)
}

func internal(format string, args ...any) error {
	return status.Errorf(codes.Internal, "hostpath: "+format, args...)
}

// supportedAccessModes are the five classic modes, the ones Nomad speaks. The SINGLE_NODE_*
// split modes need the SINGLE_NODE_MULTI_WRITER capability, which hostpath does not advertise.
var supportedAccessModes = map[csi.VolumeCapability_AccessMode_Mode]bool{
	csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER:       true,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY:  true,
	csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:   true,
	csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER: true,
	csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:  true,
}

// capability is a checked volume capability: the mount flags to apply and a key that two
// requests share exactly when they ask for the same thing.
type capability struct {
	flags uintptr
	key   string
}

// checkCapability accepts a mount capability with a supported access mode and mount flags a
// bind mount can honour. Block volumes are refused: volumes are directories.
func checkCapability(c *csi.VolumeCapability) (capability, error) {
	if c == nil {
		return capability{}, invalidArg("volume_capability is required")
	}
	if c.GetBlock() != nil {
		return capability{}, invalidArg("block volumes are not supported: hostpath volumes are directories (use attachment mode file-system)")
	}
	mount := c.GetMount()
	if mount == nil {
		return capability{}, invalidArg("volume capability has no access type (want mount)")
	}
	mode := c.GetAccessMode().GetMode()
	if !supportedAccessModes[mode] {
		return capability{}, invalidArg("access mode %s is not supported (supported: SINGLE_NODE_WRITER, SINGLE_NODE_READER_ONLY, MULTI_NODE_READER_ONLY, MULTI_NODE_SINGLE_WRITER, MULTI_NODE_MULTI_WRITER)", mode)
	}
	bits, canonical, err := parseMountFlags(mount.GetMountFlags())
	if err != nil {
		return capability{}, invalidArg("%v", err)
	}
	return capability{
		flags: bits,
		key:   fmt.Sprintf("mount mode=%s fs=%s flags=%s", mode, mount.GetFsType(), canonical),
	}, nil
}

// checkCapabilities checks a CreateVolume or ValidateVolumeCapabilities list.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return invalidArg("volume_capabilities are required")
	}
	for _, c := range caps {
		if _, err := checkCapability(c); err != nil {
			return err
		}
	}
	return nil
}

// checkTopology applies CreateVolume's accessibility rules for a plugin that can only place a
// volume on its own node: a requisite list that does not include this node cannot be satisfied.
func (p *Plugin) checkTopology(req *csi.TopologyRequirement) error {
	if req == nil {
		return nil
	}
	if len(req.GetRequisite()) == 0 && len(req.GetPreferred()) == 0 {
		return invalidArg("accessibility_requirements needs requisite or preferred topologies")
	}
	if len(req.GetRequisite()) == 0 {
		// Preferred only: the plugin may pick any topology, and it has exactly one.
		return nil
	}
	for _, pref := range req.GetPreferred() {
		found := false
		for _, r := range req.GetRequisite() {
			if maps.Equal(pref.GetSegments(), r.GetSegments()) {
				found = true
				break
			}
		}
		if !found {
			return invalidArg("preferred topology %v is not in the requisite list", pref.GetSegments())
		}
	}
	for _, r := range req.GetRequisite() {
		if p.topologyMatches(r) {
			return nil
		}
	}
	return status.Errorf(codes.ResourceExhausted, "hostpath: no requisite topology matches this node (%s=%s)", TopologyKey, p.cfg.NodeID)
}

// topologyMatches reports whether t describes this node: every segment it names must be this
// plugin's node segment with this node's ID.
func (p *Plugin) topologyMatches(t *csi.Topology) bool {
	for k, v := range t.GetSegments() {
		if k != TopologyKey || v != p.cfg.NodeID {
			return false
		}
	}
	return true
}

// capacityRange checks a request's capacity range: no negatives, limit not below required.
func capacityRange(cr *csi.CapacityRange) (required, limit int64, err error) {
	required, limit = cr.GetRequiredBytes(), cr.GetLimitBytes()
	if required < 0 || limit < 0 {
		return 0, 0, invalidArg("capacity_range must not be negative (required %d, limit %d)", required, limit)
	}
	if limit > 0 && limit < required {
		return 0, 0, invalidArg("capacity_range limit %d is below required %d", limit, required)
	}
	return required, limit, nil
}

// fits reports whether size satisfies a capacity range.
func fits(size, required, limit int64) bool {
	return size >= required && (limit == 0 || size <= limit)
}
