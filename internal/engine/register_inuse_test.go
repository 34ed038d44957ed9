package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// registeredBoth is volume v on ext-1 with two capabilities: single-node-writer, and
// multi-node-multi-writer (file system), registered.
func (h *harness) registeredBoth() spec.Volume {
	h.t.Helper()
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	sv := registered("v", "ext-1")
	sv.Capabilities = []spec.Capability{capab(spec.SingleNodeWriter), capab(spec.MultiNodeMultiWriter)}
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		h.t.Fatal(err)
	}
	return sv
}

// A registration again that drops the capability the volume's live claims use (Nomad refuses
// it: "volume requested capabilities update was not compatible with existing capability in
// use"). Before, it was taken: the plugin was asked to validate only the new capabilities, the
// volume recorded them, and its claim stayed published, staged and attached under a capability
// the volume no longer had, which no later claim could ask for. It is refused, naming the
// claim, its mode and the way on, and the volume keeps its capabilities.
func TestRegisterAgainDroppingTheCapabilityInUseIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := h.registeredBoth()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0", AccessMode: spec.MultiNodeMultiWriter})

	narrowed := sv
	narrowed.Capabilities = []spec.Capability{capab(spec.SingleNodeWriter)}
	_, err := h.e.RegisterVolume(h.ctx, narrowed)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a registration dropping the capability alloc web-0's claim uses: %v; want a conflict", err)
	}
	for _, want := range []string{`volume "v"`, `alloc "web-0"`, "multi-node-multi-writer/file-system", "volctl volume release"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if got := h.volumeInfo("v").Capabilities; !slices.Equal(got, sv.Capabilities) {
		t.Errorf("the volume's capabilities after the refusal: %v; want %v, unchanged", got, sv.Capabilities)
	}
	// A registration that keeps the capability in use may change the others.
	kept := sv
	kept.Capabilities = []spec.Capability{capab(spec.MultiNodeMultiWriter)}
	if _, err := h.e.RegisterVolume(h.ctx, kept); err != nil {
		t.Errorf("a registration keeping the capability in use: %v", err)
	}
	// Released, the volume is in use no more, and any capabilities go.
	h.release("v", "web-0")
	if _, err := h.e.RegisterVolume(h.ctx, narrowed); err != nil {
		t.Errorf("a registration of a volume no longer in use: %v", err)
	}
}

// The same between two processes, mid-claim: a `volume register` holding the volume's lock
// (its ValidateVolumeCapabilities in flight) with a spec that drops multi-node-multi-writer,
// and a claim from another volctl admitted meanwhile without the lock under that capability,
// waiting for the lock to publish. Before, the registration recorded the narrowed capabilities
// and the claim then published under one the volume no longer had (ControllerPublishVolume,
// NodeStageVolume and NodePublishVolume sent with it). The registration, committed after the
// admission, sees the claim and is refused; the claim publishes under a capability the volume
// still has.
func TestRegisterMidClaimDroppingItsCapabilityIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := h.registeredBoth()
	narrowed := sv
	narrowed.Capabilities = []spec.Capability{capab(spec.SingleNodeWriter)}

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCValidateVolumeCapabilities, csitest.Fault{Gate: gate, Times: 1})
	registerDone := make(chan error, 1)
	go func() { _, err := h.e.RegisterVolume(h.ctx, narrowed); registerDone <- err }()
	for deadline := time.Now().Add(30 * time.Second); h.faults.Held() == 0; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("the registration never sent ValidateVolumeCapabilities")
		}
	}
	other, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts})
	if err != nil {
		close(gate)
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	claimDone := make(chan error, 1)
	go func() {
		_, err := other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0", AccessMode: spec.MultiNodeMultiWriter})
		claimDone <- err
	}()
	select {
	case <-waiting:
	case err := <-claimDone:
		close(gate)
		t.Fatalf("the claim ended before waiting for the registration's lock: %v", err)
	case <-time.After(30 * time.Second):
		close(gate)
		t.Fatal("the claim never waited for the volume's lock")
	}
	close(gate)
	rerr, cerr := <-registerDone, <-claimDone
	if cerr != nil {
		t.Fatalf("the claim: %v", cerr)
	}
	if !errors.Is(rerr, ErrConflict) || !strings.Contains(rerr.Error(), `alloc "web-0"`) {
		t.Errorf("the registration dropping the capability the claim admitted meanwhile uses: %v; want a conflict naming the claim", rerr)
	}
	caps := h.volumeInfo("v").Capabilities
	np, _ := csitest.LastRequest[csi.NodePublishVolumeRequest](h.mem)
	if !slices.Contains(caps, np.Capability.Capability) {
		t.Errorf("NodePublishVolume sent with capability %v, which the volume's capabilities %v do not have", np.Capability.Capability, caps)
	}
	h.release("v", "web-0")
}
