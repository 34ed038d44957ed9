package csi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

func controllerCap(t csipb.ControllerServiceCapability_RPC_Type) *csipb.ControllerServiceCapability {
	return &csipb.ControllerServiceCapability{Type: &csipb.ControllerServiceCapability_Rpc{Rpc: &csipb.ControllerServiceCapability_RPC{Type: t}}}
}

func nodeCap(t csipb.NodeServiceCapability_RPC_Type) *csipb.NodeServiceCapability {
	return &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: t}}}
}

func serviceCap(t csipb.PluginCapability_Service_Type) *csipb.PluginCapability {
	return &csipb.PluginCapability{Type: &csipb.PluginCapability_Service_{Service: &csipb.PluginCapability_Service{Type: t}}}
}

// TestCapabilitiesParsedOnce plays a plugin in the wild: capabilities listed twice, removed and
// future values, an UNKNOWN entry and an empty one. Each set comes out as bools plus names.
func TestCapabilitiesParsedOnce(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(),
		withOverride(csi.RPCGetPluginCapabilities, func(any) (any, error) {
			return &csipb.GetPluginCapabilitiesResponse{Capabilities: []*csipb.PluginCapability{
				serviceCap(csipb.PluginCapability_Service_CONTROLLER_SERVICE),
				serviceCap(csipb.PluginCapability_Service_CONTROLLER_SERVICE),
				serviceCap(csipb.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS),
				{Type: &csipb.PluginCapability_VolumeExpansion_{VolumeExpansion: &csipb.PluginCapability_VolumeExpansion{Type: csipb.PluginCapability_VolumeExpansion_OFFLINE}}},
				serviceCap(csipb.PluginCapability_Service_UNKNOWN),
				{},
			}}, nil
		}),
		withOverride(csi.RPCControllerGetCapabilities, func(any) (any, error) {
			return &csipb.ControllerGetCapabilitiesResponse{Capabilities: []*csipb.ControllerServiceCapability{
				controllerCap(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
				controllerCap(csipb.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME),
				controllerCap(csipb.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
				controllerCap(11), // VOLUME_CONDITION, since removed from the spec
				controllerCap(99), // from a spec newer than volctl
				controllerCap(99),
			}}, nil
		}),
		withOverride(csi.RPCNodeGetCapabilities, func(any) (any, error) {
			return &csipb.NodeGetCapabilitiesResponse{Capabilities: []*csipb.NodeServiceCapability{
				nodeCap(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
				nodeCap(csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
				nodeCap(csipb.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP),
				nodeCap(4), // VOLUME_CONDITION, removed
			}}, nil
		}),
	)
	fp, err := h.client.Fingerprint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := csi.Capabilities{
		Plugin: csi.PluginCapabilities{ControllerService: true, VolumeAccessibilityConstraints: true, VolumeExpansionOffline: true},
		Controller: csi.ControllerCapabilities{CreateDeleteVolume: true, PublishUnpublishVolume: true,
			Unknown: []string{"VOLUME_CONDITION", "UNKNOWN_99"}},
		Node: csi.NodeCapabilities{StageUnstageVolume: true, VolumeMountGroup: true, Unknown: []string{"VOLUME_CONDITION"}},
	}
	if !reflect.DeepEqual(fp.Capabilities, want) {
		t.Fatalf("capabilities =\n%+v\nwant\n%+v", fp.Capabilities, want)
	}
	wantNames := map[string][]string{
		"plugin":     {"CONTROLLER_SERVICE", "VOLUME_ACCESSIBILITY_CONSTRAINTS", "VOLUME_EXPANSION_OFFLINE"},
		"controller": {"CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "UNKNOWN_99", "VOLUME_CONDITION"},
		"node":       {"STAGE_UNSTAGE_VOLUME", "VOLUME_MOUNT_GROUP", "VOLUME_CONDITION"},
	}
	gotNames := map[string][]string{
		"plugin": fp.Capabilities.Plugin.Names(), "controller": fp.Capabilities.Controller.Names(), "node": fp.Capabilities.Node.Names(),
	}
	if !reflect.DeepEqual(gotNames, wantNames) {
		t.Fatalf("names = %v, want %v", gotNames, wantNames)
	}
}

// TestCapabilityNamesRoundTrip checks that what the store keeps (names) parses back to the
// same set, for every known capability and an unknown one.
func TestCapabilityNamesRoundTrip(t *testing.T) {
	all := csi.Capabilities{
		Plugin: csi.PluginCapabilities{ControllerService: true, VolumeAccessibilityConstraints: true, GroupControllerService: true,
			SnapshotMetadataService: true, SnapshotAccessibilityConstraints: true, VolumeExpansionOnline: true, VolumeExpansionOffline: true,
			Unknown: []string{"FUTURE"}},
		Controller: csi.ControllerCapabilities{CreateDeleteVolume: true, PublishUnpublishVolume: true, ListVolumes: true, GetCapacity: true,
			CreateDeleteSnapshot: true, ListSnapshots: true, CloneVolume: true, PublishReadonly: true, ExpandVolume: true,
			ListVolumesPublishedNodes: true, GetVolume: true, SingleNodeMultiWriter: true, ModifyVolume: true, GetSnapshot: true,
			GetVolumeHealth: true, ListVolumeHealth: true, Unknown: []string{"UNKNOWN_42"}},
		Node: csi.NodeCapabilities{StageUnstageVolume: true, GetVolumeStats: true, ExpandVolume: true, SingleNodeMultiWriter: true,
			VolumeMountGroup: true, GetVolumeHealth: true, GetStorageHealth: true},
	}
	tests := []struct {
		name string
		in   any
		back any
	}{
		{"plugin all", all.Plugin, csi.ParsePluginCapabilities(all.Plugin.Names())},
		{"controller all", all.Controller, csi.ParseControllerCapabilities(all.Controller.Names())},
		{"node all", all.Node, csi.ParseNodeCapabilities(all.Node.Names())},
		{"plugin none", csi.PluginCapabilities{}, csi.ParsePluginCapabilities(csi.PluginCapabilities{}.Names())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.in, tt.back) {
				t.Fatalf("round trip = %+v, want %+v", tt.back, tt.in)
			}
		})
	}
	if n := len(all.Controller.Names()); n != 17 {
		t.Errorf("every controller capability on gives %d names, want 17", n)
	}
	if names := (csi.NodeCapabilities{}).Names(); names == nil || len(names) != 0 {
		t.Errorf("no capabilities gives %#v, want an empty, non-nil list", names)
	}

	b, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	var back csi.Capabilities
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, all) {
		t.Fatalf("JSON round trip = %+v, want %+v (JSON %s)", back, all, b)
	}
}

// TestMemPluginCapabilitiesOnTheWire checks MemPlugin advertises exactly what it is
// configured with, unknown names included, so engine tests can shape a plugin at will.
func TestMemPluginCapabilitiesOnTheWire(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Controller.Unknown = []string{"UNKNOWN_42"}
	h := newHarness(t, cfg)
	got, err := h.client.ControllerGetCapabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cfg.Controller) {
		t.Fatalf("ControllerGetCapabilities = %+v, want %+v", got, cfg.Controller)
	}
}
