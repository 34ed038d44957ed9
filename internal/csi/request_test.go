package csi_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

func createVolumeResponse(id string, size int64) *csipb.CreateVolumeResponse {
	return &csipb.CreateVolumeResponse{Volume: &csipb.Volume{VolumeId: id, CapacityBytes: size}}
}

// TestCreateVolumeLeavesUnsetFieldsUnset checks at the protobuf level that what volctl did not
// set reaches the plugin unset: plugins tell an empty capacity range, content source or
// topology requirement from an absent one.
func TestCreateVolumeLeavesUnsetFieldsUnset(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	ctx := context.Background()
	if _, err := h.client.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "bare",
		Capabilities: []csi.VolumeCapability{{Capability: fsWriter.Capability}}}); err != nil {
		t.Fatal(err)
	}
	got := h.raw.last(t, csi.RPCCreateVolume).(*csipb.CreateVolumeRequest)
	switch {
	case got.CapacityRange != nil:
		t.Errorf("capacity_range = %v, want unset", got.CapacityRange)
	case got.VolumeContentSource != nil:
		t.Errorf("volume_content_source = %v, want unset", got.VolumeContentSource)
	case got.AccessibilityRequirements != nil:
		t.Errorf("accessibility_requirements = %v, want unset", got.AccessibilityRequirements)
	case got.Parameters != nil || got.Secrets != nil || got.MutableParameters != nil:
		t.Errorf("maps = %v %v %v, want nil", got.Parameters, got.Secrets, got.MutableParameters)
	}
	mount := got.GetVolumeCapabilities()[0].GetMount()
	if mount == nil || mount.FsType != "" || mount.MountFlags != nil {
		t.Errorf("mount = %v, want an empty MountVolume", mount)
	}

	// An empty topology request says nothing, so it is not sent either.
	if _, err := h.client.CreateVolume(ctx, csi.CreateVolumeRequest{Name: "empty-topology",
		Capabilities: []csi.VolumeCapability{fsWriter}, TopologyRequest: &spec.TopologyRequest{}}); err != nil {
		t.Fatal(err)
	}
	if got := h.raw.last(t, csi.RPCCreateVolume).(*csipb.CreateVolumeRequest); got.AccessibilityRequirements != nil {
		t.Errorf("an empty topology request was sent as %v", got.AccessibilityRequirements)
	}
}

func TestCreateVolumeSendsWhatIsSet(t *testing.T) {
	tests := []struct {
		name  string
		req   csi.CreateVolumeRequest
		check func(t *testing.T, got *csipb.CreateVolumeRequest)
	}{
		{"minimum only", csi.CreateVolumeRequest{CapacityMin: 5 << 20}, func(t *testing.T, got *csipb.CreateVolumeRequest) {
			if r := got.GetCapacityRange(); r == nil || r.RequiredBytes != 5<<20 || r.LimitBytes != 0 {
				t.Errorf("capacity_range = %v", r)
			}
		}},
		{"maximum only", csi.CreateVolumeRequest{CapacityMax: 5 << 20}, func(t *testing.T, got *csipb.CreateVolumeRequest) {
			if r := got.GetCapacityRange(); r == nil || r.RequiredBytes != 0 || r.LimitBytes != 5<<20 {
				t.Errorf("capacity_range = %v", r)
			}
		}},
		{"snapshot source", csi.CreateVolumeRequest{SnapshotID: "snap-1"}, func(t *testing.T, got *csipb.CreateVolumeRequest) {
			if id := got.GetVolumeContentSource().GetSnapshot().GetSnapshotId(); id != "snap-1" {
				t.Errorf("snapshot source = %v", got.GetVolumeContentSource())
			}
		}},
		{"clone source", csi.CreateVolumeRequest{CloneID: "vol-9"}, func(t *testing.T, got *csipb.CreateVolumeRequest) {
			if id := got.GetVolumeContentSource().GetVolume().GetVolumeId(); id != "vol-9" {
				t.Errorf("clone source = %v", got.GetVolumeContentSource())
			}
		}},
		{"topology", csi.CreateVolumeRequest{TopologyRequest: &spec.TopologyRequest{
			Required:  []spec.Topology{{Segments: map[string]string{"zone": "a"}}},
			Preferred: []spec.Topology{{Segments: map[string]string{"zone": "b"}}},
		}}, func(t *testing.T, got *csipb.CreateVolumeRequest) {
			r := got.GetAccessibilityRequirements()
			if len(r.GetRequisite()) != 1 || r.GetRequisite()[0].Segments["zone"] != "a" ||
				len(r.GetPreferred()) != 1 || r.GetPreferred()[0].Segments["zone"] != "b" {
				t.Errorf("accessibility_requirements = %v", r)
			}
		}},
		{"modes and mount options", csi.CreateVolumeRequest{}, func(t *testing.T, got *csipb.CreateVolumeRequest) {
			caps := got.GetVolumeCapabilities()
			if len(caps) != 2 {
				t.Fatalf("capabilities = %v", caps)
			}
			if caps[0].GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER ||
				caps[0].GetMount().GetFsType() != "ext4" || len(caps[0].GetMount().GetMountFlags()) != 2 {
				t.Errorf("capability 0 = %v", caps[0])
			}
			if caps[1].GetAccessMode().GetMode() != csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY || caps[1].GetBlock() == nil {
				t.Errorf("capability 1 = %v", caps[1])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The plugin's answer does not matter here: the request is what is checked.
			h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCCreateVolume, func(any) (any, error) {
				return createVolumeResponse("v", 0), nil
			}))
			tt.req.Name = "v"
			tt.req.Capabilities = []csi.VolumeCapability{fsWriter, blockReader}
			if _, err := h.client.CreateVolume(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			tt.check(t, h.raw.last(t, csi.RPCCreateVolume).(*csipb.CreateVolumeRequest))
		})
	}
}

// TestNodeRequestsLeaveUnsetFieldsUnset covers the node path the same way: no staging path
// for a plugin that does not stage, no publish context without ControllerPublish.
func TestNodeRequestsLeaveUnsetFieldsUnset(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.Controller.PublishUnpublishVolume = false
	cfg.Node.StageUnstageVolume = false
	h := newHarness(t, cfg)
	h.mem.AddVolume(csi.Volume{ID: "ext-1"})
	target := filepath.Join(t.TempDir(), "t")
	if err := h.client.NodePublishVolume(context.Background(), csi.NodePublishVolumeRequest{VolumeID: "ext-1", TargetPath: target,
		Capability: csi.VolumeCapability{Capability: fsWriter.Capability}}); err != nil {
		t.Fatal(err)
	}
	got := h.raw.last(t, csi.RPCNodePublishVolume).(*csipb.NodePublishVolumeRequest)
	if got.PublishContext != nil || got.VolumeContext != nil || got.Secrets != nil || got.StagingTargetPath != "" || got.Readonly {
		t.Errorf("NodePublishVolume sent unset fields: %v", got)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal(err)
	}

	if _, err := h.client.NodeExpandVolume(context.Background(), csi.NodeExpandVolumeRequest{VolumeID: "ext-1", VolumePath: target}); err != nil {
		t.Fatal(err)
	}
	exp := h.raw.last(t, csi.RPCNodeExpandVolume).(*csipb.NodeExpandVolumeRequest)
	if exp.CapacityRange != nil || exp.VolumeCapability != nil || exp.Secrets != nil {
		t.Errorf("NodeExpandVolume sent unset fields: %v", exp)
	}
}
