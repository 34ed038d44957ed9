package engine

import (
	"errors"
	"reflect"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// regSpec is a register spec for a volume the mem plugin already holds as "ext-<id>".
func regSpec(id string, min int64) spec.Volume {
	return spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "mem", ExternalID: "ext-" + id,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}, CapacityMin: min}
}

// A registered volume's size is not recorded (registration learns none), so its expansion asks
// the plugin's listing first (learntSize), its capacity_min being a lower bound only: the
// ListVolumes in each expansion's RPCs (before, the capacity_min was taken for its size:
// TestExpandOfARestoreOfUnknownSizeAsksItsSizeFirst).
func TestRegisterAgainWithLargerCapacityExpands(t *testing.T) {
	t.Parallel()
	const mib = int64(1 << 20)
	tests := []struct {
		name       string
		mutate     func(*csitest.MemConfig)
		claimed    bool
		wantRPCs   []string
		wantSize   int64 // capacity_bytes after the second registration
		wantMin    int64 // capacity_min after it
		wantErrIs  error
		wantErrMsg string
	}{
		{
			name:     "controller expands, node not required when unclaimed",
			wantRPCs: []string{csi.RPCValidateVolumeCapabilities, csi.RPCListVolumes, csi.RPCControllerExpandVolume},
			wantSize: 4 * mib, wantMin: 4 * mib,
		},
		{
			name:     "published claim is expanded on the node too",
			claimed:  true,
			wantRPCs: []string{csi.RPCValidateVolumeCapabilities, csi.RPCListVolumes, csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume},
			wantSize: 4 * mib, wantMin: 4 * mib,
		},
		{
			name: "no EXPAND_VOLUME: the larger request is only recorded",
			mutate: func(c *csitest.MemConfig) {
				c.Controller.ExpandVolume, c.Node.ExpandVolume = false, false
			},
			wantRPCs: []string{csi.RPCValidateVolumeCapabilities},
			wantSize: 0, wantMin: 4 * mib,
		},
		{
			name: "offline-only plugin refuses while the volume is in use",
			mutate: func(c *csitest.MemConfig) {
				c.Plugin.VolumeExpansionOnline, c.Plugin.VolumeExpansionOffline = false, true
			},
			claimed:  true,
			wantRPCs: []string{csi.RPCValidateVolumeCapabilities, csi.RPCListVolumes},
			wantSize: 0, wantMin: 2 * mib,
			wantErrIs:  ErrConflict,
			wantErrMsg: `register volume "db": expand volume "db": plugin "mem" only expands volumes offline and "db" is in use by alloc "web-0" (write, published): release its claims first`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.mutate)
			h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 2 * mib})
			if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 2*mib)); err != nil {
				t.Fatal(err)
			}
			if tt.claimed {
				h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
			}
			h.mem.ResetCalls()

			v, err := h.e.RegisterVolume(h.ctx, regSpec("db", 4*mib))
			if tt.wantErrIs != nil {
				if !errors.Is(err, tt.wantErrIs) || err.Error() != tt.wantErrMsg {
					t.Fatalf("err = %v, want %q", err, tt.wantErrMsg)
				}
				v, err = h.e.Volume(h.ctx, "db")
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := h.rpcs(); !reflect.DeepEqual(got, tt.wantRPCs) {
				t.Errorf("RPCs = %v, want %v", got, tt.wantRPCs)
			}
			if v.CapacityBytes != tt.wantSize || v.RequestedMin != tt.wantMin {
				t.Errorf("capacity %d, capacity_min %d; want %d, %d", v.CapacityBytes, v.RequestedMin, tt.wantSize, tt.wantMin)
			}
			if ce, ok := csitest.LastRequest[csi.ControllerExpandVolumeRequest](h.mem); ok && (ce.VolumeID != "ext-db" || ce.CapacityMin != 4*mib) {
				t.Errorf("ControllerExpandVolume got volume %q min %d", ce.VolumeID, ce.CapacityMin)
			}
			if ne, ok := csitest.LastRequest[csi.NodeExpandVolumeRequest](h.mem); ok {
				cl := h.liveClaims("db")[0]
				if ne.VolumePath != cl.TargetPath || ne.StagingPath == "" || ne.CapacityMin != 4*mib {
					t.Errorf("NodeExpandVolume got path %q staging %q min %d, want the claim's target %q and its staging path",
						ne.VolumePath, ne.StagingPath, ne.CapacityMin, cl.TargetPath)
				}
			}
		})
	}
}

// A re-registration that changes an immutable field is refused before anything is expanded.
func TestRegisterAgainImmutableChangeDoesNotExpand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-db", CapacityBytes: 1 << 20})
	if _, err := h.e.RegisterVolume(h.ctx, regSpec("db", 1<<20)); err != nil {
		t.Fatal(err)
	}
	h.mem.ResetCalls()
	sv := regSpec("db", 8<<20)
	sv.Parameters = map[string]string{"tier": "slow"}
	_, err := h.e.RegisterVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want a conflict about parameters", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Fatalf("ControllerExpandVolume sent %d times for a refused registration", n)
	}
}
