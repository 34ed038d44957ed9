package csi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

func mountCap(mode csipb.VolumeCapability_AccessMode_Mode, fsType string, flags ...string) *csipb.VolumeCapability {
	vc := &csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: fsType, MountFlags: flags}}}
	if mode != csipb.VolumeCapability_AccessMode_UNKNOWN {
		vc.AccessMode = &csipb.VolumeCapability_AccessMode{Mode: mode}
	}
	return vc
}

func TestValidateVolumeCapabilities(t *testing.T) {
	const snw = csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	confirmed := func(caps ...*csipb.VolumeCapability) *csipb.ValidateVolumeCapabilitiesResponse {
		return &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{VolumeCapabilities: caps}}
	}
	tests := []struct {
		name    string
		resp    *csipb.ValidateVolumeCapabilitiesResponse
		wantErr string
	}{
		// The spec: confirmed is set only when every capability is supported, so its absence
		// is a refusal, with the plugin's message when it gave one.
		{"confirmed absent refuses", &csipb.ValidateVolumeCapabilitiesResponse{}, "did not confirm the capabilities single-node-writer/file-system: capabilities not confirmed (it gave no reason)"},
		{"confirmed absent with a message refuses with it", &csipb.ValidateVolumeCapabilitiesResponse{Message: "not checked"}, "capabilities not confirmed: not checked"},
		{"exact confirmation", confirmed(mountCap(snw, "ext4", "noatime", "nodev")), ""},
		{"partial: access mode only", confirmed(&csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: snw}}), ""},
		{"partial: mount without fs type or flags", confirmed(mountCap(snw, "")), ""},
		{"partial: no access mode", confirmed(mountCap(csipb.VolumeCapability_AccessMode_UNKNOWN, "ext4")), ""},
		{"flags in another order", confirmed(mountCap(snw, "ext4", "nodev", "noatime")), ""},
		// Confirmed, but not what was asked: the answer says what the plugin confirmed.
		{"other access mode", confirmed(mountCap(csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, "")), "capability single-node-writer/file-system is not among those the plugin confirmed (multi-node-reader-only/file-system): capabilities not confirmed"},
		{"block instead of mount", confirmed(&csipb.VolumeCapability{AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER}}), "not among those the plugin confirmed (multi-node-multi-writer/block-device): capabilities not confirmed"},
		{"other fs type", confirmed(mountCap(snw, "xfs")), "not confirmed"},
		{"other flags", confirmed(mountCap(snw, "ext4", "noatime")), "not confirmed"},
		{"confirmed but empty", &csipb.ValidateVolumeCapabilitiesResponse{Confirmed: &csipb.ValidateVolumeCapabilitiesResponse_Confirmed{}, Message: "nope"}, "the plugin confirmed (none): capabilities not confirmed: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, csitest.DefaultMemConfig(), withOverride(csi.RPCValidateVolumeCapabilities, func(any) (any, error) {
				return tt.resp, nil
			}))
			err := h.client.ValidateVolumeCapabilities(context.Background(), csi.ValidateVolumeCapabilitiesRequest{
				VolumeID: "vol-1", Capabilities: []csi.VolumeCapability{fsWriter}})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateVolumeCapabilities = %v, want accepted", err)
				}
				return
			}
			if !errors.Is(err, csi.ErrNotConfirmed) || !strings.Contains(err.Error(), tt.wantErr) ||
				!strings.HasPrefix(err.Error(), `ValidateVolumeCapabilities: volume "vol-1": `) {
				t.Fatalf("ValidateVolumeCapabilities = %v, want ErrNotConfirmed with %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateAgainstMemPlugin(t *testing.T) {
	cfg := csitest.DefaultMemConfig()
	cfg.AccessModes = []spec.AccessMode{spec.SingleNodeWriter}
	h := newHarness(t, cfg)
	h.mem.AddVolume(csi.Volume{ID: "ext-1"})
	ctx := context.Background()
	if err := h.client.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{VolumeID: "ext-1",
		Capabilities: []csi.VolumeCapability{fsWriter}}); err != nil {
		t.Fatalf("supported mode: %v", err)
	}
	err := h.client.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{VolumeID: "nope",
		Capabilities: []csi.VolumeCapability{fsWriter}})
	if csi.CodeOf(err) != codes.NotFound || csi.ClassOf(err) != csi.Final {
		t.Fatalf("unknown volume: %v, want a final NotFound", err)
	}
}
