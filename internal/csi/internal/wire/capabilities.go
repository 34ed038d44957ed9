package wire

import (
	"fmt"
	"strconv"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// Capability names are the CSI enum names ("CREATE_DELETE_VOLUME"), which is what the store keeps
// and what people read. The plugin's volume-expansion capabilities share their enum with
// nothing else, so they get a prefix: "VOLUME_EXPANSION_ONLINE".
const expansionPrefix = "VOLUME_EXPANSION_"

// removed holds values the CSI spec has since reserved, so an older plugin listing them is
// still shown by name rather than by number.
var (
	removedController = map[int32]string{11: "VOLUME_CONDITION"}
	removedNode       = map[int32]string{4: "VOLUME_CONDITION"}
)

// enumName names an enum value: its CSI name, a removed value's old name, or UNKNOWN_<n> for a
// value newer than the stubs. The zero value (UNKNOWN) names nothing and returns "".
func enumName(n int32, names map[int32]string, removed map[int32]string) string {
	if n == 0 {
		return ""
	}
	if s, ok := names[n]; ok {
		return s
	}
	if s, ok := removed[n]; ok {
		return s
	}
	return "UNKNOWN_" + strconv.Itoa(int(n))
}

// enumValue is enumName's reverse; ok is false for names with no wire value.
func enumValue(name string, values map[string]int32, removed map[int32]string) (int32, bool) {
	if v, ok := values[name]; ok && v != 0 {
		return v, true
	}
	for n, s := range removed {
		if s == name {
			return n, true
		}
	}
	if rest, ok := strings.CutPrefix(name, "UNKNOWN_"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n > 0 {
			return int32(n), true
		}
	}
	return 0, false
}

// PluginCapabilityName names one plugin capability, "" for one that says nothing.
func PluginCapabilityName(c *csipb.PluginCapability) string {
	if s := c.GetService(); s != nil {
		return enumName(int32(s.GetType()), csipb.PluginCapability_Service_Type_name, nil)
	}
	if e := c.GetVolumeExpansion(); e != nil {
		if name := enumName(int32(e.GetType()), csipb.PluginCapability_VolumeExpansion_Type_name, nil); name != "" {
			return expansionPrefix + name
		}
	}
	return ""
}

// PluginCapability builds a plugin capability from its name.
func PluginCapability(name string) (*csipb.PluginCapability, error) {
	if rest, ok := strings.CutPrefix(name, expansionPrefix); ok {
		if v, ok := enumValue(rest, csipb.PluginCapability_VolumeExpansion_Type_value, nil); ok {
			return &csipb.PluginCapability{Type: &csipb.PluginCapability_VolumeExpansion_{
				VolumeExpansion: &csipb.PluginCapability_VolumeExpansion{Type: csipb.PluginCapability_VolumeExpansion_Type(v)},
			}}, nil
		}
	}
	if v, ok := enumValue(name, csipb.PluginCapability_Service_Type_value, nil); ok {
		return &csipb.PluginCapability{Type: &csipb.PluginCapability_Service_{
			Service: &csipb.PluginCapability_Service{Type: csipb.PluginCapability_Service_Type(v)},
		}}, nil
	}
	return nil, fmt.Errorf("unknown plugin capability %q", name)
}

// ControllerCapabilityName names one controller capability, "" for one that says nothing.
func ControllerCapabilityName(c *csipb.ControllerServiceCapability) string {
	return enumName(int32(c.GetRpc().GetType()), csipb.ControllerServiceCapability_RPC_Type_name, removedController)
}

// ControllerCapability builds a controller capability from its name.
func ControllerCapability(name string) (*csipb.ControllerServiceCapability, error) {
	v, ok := enumValue(name, csipb.ControllerServiceCapability_RPC_Type_value, removedController)
	if !ok {
		return nil, fmt.Errorf("unknown controller capability %q", name)
	}
	return &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{
		Rpc: &csipb.ControllerServiceCapability_RPC{Type: csipb.ControllerServiceCapability_RPC_Type(v)},
	}}, nil
}

// NodeCapabilityName names one node capability, "" for one that says nothing.
func NodeCapabilityName(c *csipb.NodeServiceCapability) string {
	return enumName(int32(c.GetRpc().GetType()), csipb.NodeServiceCapability_RPC_Type_name, removedNode)
}

// NodeCapability builds a node capability from its name.
func NodeCapability(name string) (*csipb.NodeServiceCapability, error) {
	v, ok := enumValue(name, csipb.NodeServiceCapability_RPC_Type_value, removedNode)
	if !ok {
		return nil, fmt.Errorf("unknown node capability %q", name)
	}
	return &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{
		Rpc: &csipb.NodeServiceCapability_RPC{Type: csipb.NodeServiceCapability_RPC_Type(v)},
	}}, nil
}
