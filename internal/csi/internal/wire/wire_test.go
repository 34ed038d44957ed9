package wire

import (
	"reflect"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/spec"
)

func TestVolumeCapabilityRoundTrip(t *testing.T) {
	for _, am := range spec.AccessModes {
		for _, att := range spec.AttachmentModes {
			var mo *spec.MountOptions
			if att == spec.FileSystem {
				mo = &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"ro"}}
			}
			c := spec.Capability{AccessMode: am, AttachmentMode: att}
			pb, err := VolumeCapability(c, mo)
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			if pb.GetAccessMode().GetMode() == csipb.VolumeCapability_AccessMode_UNKNOWN {
				t.Fatalf("%v mapped to UNKNOWN", c)
			}
			back, backMO := FromVolumeCapability(pb)
			if back != c || !reflect.DeepEqual(backMO, mo) {
				t.Fatalf("%v %+v came back as %v %+v", c, mo, back, backMO)
			}
		}
	}
}

func TestAccessModesAreDistinct(t *testing.T) {
	seen := map[csipb.VolumeCapability_AccessMode_Mode]spec.AccessMode{}
	for _, am := range spec.AccessModes {
		pb, err := VolumeCapability(spec.Capability{AccessMode: am, AttachmentMode: spec.BlockDevice}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := pb.GetAccessMode().GetMode()
		if other, ok := seen[m]; ok {
			t.Fatalf("%s and %s both map to %v", am, other, m)
		}
		seen[m] = am
	}
	// The alpha modes have no Nomad spelling and keep their CSI names.
	if got := AccessModeFromCSI(csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER); got != "SINGLE_NODE_MULTI_WRITER" {
		t.Fatalf("SINGLE_NODE_MULTI_WRITER came back as %q", got)
	}
}

func TestVolumeCapabilityRefusals(t *testing.T) {
	tests := []struct {
		name string
		c    spec.Capability
		mo   *spec.MountOptions
	}{
		{"unknown access mode", spec.Capability{AccessMode: "x", AttachmentMode: spec.FileSystem}, nil},
		{"unknown attachment", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: "x"}, nil},
		{"block with flags", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}, &spec.MountOptions{MountFlags: spec.MountFlags{"ro"}}},
	}
	for _, tt := range tests {
		if _, err := VolumeCapability(tt.c, tt.mo); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	// A block capability with empty mount options is fine: there is nothing to drop.
	if _, err := VolumeCapability(spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}, &spec.MountOptions{}); err != nil {
		t.Errorf("block with empty mount options: %v", err)
	}
}

// TestCapabilityNamesCoverTheEnums: every value the stubs know has a name that maps back.
func TestCapabilityNamesCoverTheEnums(t *testing.T) {
	for _, svc := range []struct {
		kind  string
		enum  map[int32]string
		round func(n int32) (name string, back int32, err error) // n to its name and back
	}{
		{"controller", csipb.ControllerServiceCapability_RPC_Type_name, func(n int32) (string, int32, error) {
			name := ControllerCapabilityName(&csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: csipb.ControllerServiceCapability_RPC_Type(n)}}})
			back, err := ControllerCapability(name)
			return name, int32(back.GetRpc().GetType()), err
		}},
		{"node", csipb.NodeServiceCapability_RPC_Type_name, func(n int32) (string, int32, error) {
			name := NodeCapabilityName(&csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: csipb.NodeServiceCapability_RPC_Type(n)}}})
			back, err := NodeCapability(name)
			return name, int32(back.GetRpc().GetType()), err
		}},
	} {
		for n := range svc.enum {
			if n == 0 {
				continue
			}
			if name, back, err := svc.round(n); err != nil || back != n {
				t.Errorf("%s %d -> %q -> %v, %v", svc.kind, n, name, back, err)
			}
		}
	}
	for _, name := range []string{"CONTROLLER_SERVICE", "VOLUME_ACCESSIBILITY_CONSTRAINTS", "GROUP_CONTROLLER_SERVICE",
		"SNAPSHOT_METADATA_SERVICE", "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", "VOLUME_EXPANSION_ONLINE", "VOLUME_EXPANSION_OFFLINE", "UNKNOWN_9"} {
		pc, err := PluginCapability(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := PluginCapabilityName(pc); got != name {
			t.Errorf("%s came back as %s", name, got)
		}
	}
	if _, err := PluginCapability("NOT_A_THING"); err == nil {
		t.Error("an unknown plugin capability name was accepted")
	}
	if got := ControllerCapabilityName(&csipb.ControllerServiceCapability{}); got != "" {
		t.Errorf("an empty capability is named %q", got)
	}
}

func TestTopologyConversions(t *testing.T) {
	if TopologyRequirement(nil) != nil || TopologyRequirement(&spec.TopologyRequest{}) != nil {
		t.Error("an empty topology request was converted to a requirement")
	}
	if Topology(nil) != nil || FromTopology(nil) != nil || Topologies(nil) != nil || FromTopologies(nil) != nil {
		t.Error("nil topology did not stay nil")
	}
	req := &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"z": "a"}}}}
	if back := FromTopologyRequirement(TopologyRequirement(req)); !reflect.DeepEqual(back, req) {
		t.Errorf("round trip = %+v, want %+v", back, req)
	}
}
