package engine

import (
	"errors"
	"strings"

	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// The CSI spec: ControllerPublishVolume's readonly MUST be false unless the plugin has the
// PUBLISH_READONLY controller capability.
func TestControllerPublishReadonlyNeedsCapability(t *testing.T) {
	t.Parallel()
	for _, capOn := range []bool{false, true} {
		h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishReadonly = capOn })
		h.create(volume("ro", capab(spec.MultiNodeReaderOnly)))
		h.claim(ClaimRequest{VolumeID: "ro", Alloc: "r", ReadOnly: true})
		cp, ok := csitest.LastRequest[csi.ControllerPublishVolumeRequest](h.mem)
		if !ok {
			t.Fatal("no ControllerPublishVolume sent")
		}
		if cp.ReadOnly != capOn {
			t.Errorf("PUBLISH_READONLY %v: ControllerPublishVolume readonly = %v, want %v", capOn, cp.ReadOnly, capOn)
		}
	}
}

// A ValidateVolumeCapabilities answer without `confirmed` is the plugin's refusal: register
// fails and shows the plugin's message, and nothing is recorded.
func TestRegisterRefusedWithoutConfirmed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.AccessModes = []spec.AccessMode{spec.SingleNodeWriter} })
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	sv := registered("v", "ext-1")
	sv.Capabilities = []spec.Capability{capab(spec.MultiNodeMultiWriter)}
	_, err := h.e.RegisterVolume(h.ctx, sv)
	if err == nil || !errors.Is(err, csi.ErrNotConfirmed) || !strings.Contains(err.Error(), "access mode multi-node-multi-writer is not supported") {
		t.Fatalf("register = %v, want a refusal with the plugin's message", err)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume after the refused register: %v, want not found", err)
	}
}

// max_volumes_per_node is enforced when a claim is admitted, as Nomad's scheduler does, not
// discovered by a ControllerPublishVolume that fails and is retried for good.
func TestAdmissionMaxVolumesPerNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.MaxVolumes = 1 })
	h.create(volume("a"))
	h.create(volume("b"))
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web-0"})
	h.mem.ResetCalls()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "b", Alloc: "web-1"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `allows 1 volume(s) per node`) ||
		!strings.Contains(err.Error(), `node "node-1" has 1: volume "a"`) {
		t.Fatalf("claim over the limit = %v, want a conflict naming the limit and volume a", err)
	}
	if got := h.rpcs(); len(got) != 0 {
		t.Errorf("RPCs for the refused claim: %v, want none", got)
	}
	if cl := h.liveClaims("b"); len(cl) != 0 {
		t.Errorf("refused claim recorded: %+v", cl)
	}
	// Once a is released, b fits.
	h.release("a", "web-0")
	h.claim(ClaimRequest{VolumeID: "b", Alloc: "web-1"})
}

// A volume's accessible topology must include the node's (NodeGetInfo accessible_topology):
// a created volume's from CreateVolume, a registered one's from topology_request.required.
func TestAdmissionTopology(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a", "rack": "1"}}
	})
	reg := func(id, zone string) {
		h.mem.AddVolume(csi.Volume{ID: "ext-" + id, CapacityBytes: 1 << 30})
		sv := registered(id, "ext-"+id)
		sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": zone}}}}
		if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
			t.Fatal(err)
		}
	}
	reg("here", "a")
	reg("there", "b")
	h.claim(ClaimRequest{VolumeID: "here", Alloc: "web-0"})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "there", Alloc: "web-0"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "there" is accessible only from topology {zone=b}`) ||
		!strings.Contains(err.Error(), `node "node-1" is in {rack=1, zone=a}`) {
		t.Fatalf("claim of a volume in another zone = %v, want a conflict naming both topologies", err)
	}

	sv := volume("made-there")
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "b"}}}}
	if v := h.create(sv); len(v.AccessibleTopology) == 0 {
		t.Fatalf("created volume has no accessible topology: %+v", v)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "made-there", Alloc: "web-1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("claim of a created volume in another zone = %v, want a conflict", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerPublishVolume); n != 1 {
		t.Errorf("ControllerPublishVolume sent %d times, want once (for the volume in this zone)", n)
	}
}

// A volume CreateVolume placed outside the requisite topology asked for is an error: the
// volume is deleted again and the create forgotten, as for one smaller than asked.
func TestCreateOutsideRequisiteTopology(t *testing.T) {
	t.Parallel()
	zone := func(z string) *spec.Topology { return &spec.Topology{Segments: map[string]string{"zone": z}} }
	h := newHarness(t, func(c *csitest.MemConfig) { c.CreateTopology = zone("b") })
	sv := volume("v")
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{*zone("a")}}
	_, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil || !strings.Contains(err.Error(), "accessible from {zone=b}, outside the requisite topology {zone=a}") {
		t.Fatalf("create = %v, want an error naming both topologies", err)
	}
	if n := h.pluginVolumeCount(); n != 0 {
		t.Errorf("the plugin keeps %d volume(s), want the misplaced one deleted", n)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume after the failed create: %v, want not found", err)
	}

	// A topology within the requisite one (a rack of the zone) is fine.
	h2 := newHarness(t, func(c *csitest.MemConfig) {
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"zone": "a", "rack": "1"}}
	})
	h2.create(sv)
}
