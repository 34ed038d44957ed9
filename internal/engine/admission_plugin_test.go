package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestClaimOnAPluginWithoutNodeServiceIsRefusedAtAdmission: a volume whose plugin is
// registered as a controller plugin can never be published on this host. The claim is refused
// before any RPC, naming the plugin and what it lacks, and leaves no claim or staging behind
// (before, it stayed taken until `detach --force`).
func TestClaimOnAPluginWithoutNodeServiceIsRefusedAtAdmission(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "ctl", Type: spec.PluginController, Socket: h.socket}); err != nil {
		t.Fatal(err)
	}
	sv := volume("v")
	sv.PluginID = "ctl"
	h.create(sv)
	h.mem.ResetCalls()

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `plugin "ctl" has no node service`) {
		t.Fatalf("claim on a controller-only plugin = %v; want ErrInvalid naming the plugin and its missing node service", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims left behind: %+v", live)
	}
	if st, ok := h.staging("v"); ok {
		t.Fatalf("staging intent left behind: %+v", st)
	}
	if got := h.rpcs(); len(got) != 0 {
		t.Fatalf("a refused claim sent %v", got)
	}
	// Nothing for reconcile to trip over either.
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 0 {
		t.Fatalf("reconcile after the refusal = %+v, %v", rep, err)
	}
}

// TestClaimRolledBackWhenThePluginLostItsNodeService: a claim admitted while its plugin had
// a node service, whose plugin is re-registered as a controller plugin before the claim is
// driven (another volctl, between admission and the volume lock), is found out when the claim
// connects. The claim, which no RPC was sent for, is rolled back, not left taken.
func TestClaimRolledBackWhenThePluginLostItsNodeService(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	cl, _, _, _, err := h.e.admitProbed(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginController, Socket: h.socket}); err != nil {
		t.Fatal(err)
	}
	h.mem.ResetCalls()
	_, err = h.e.drive(h.ctx, cl.ID, store.OutcomeRolledBack)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `plugin "mem" has no node service`) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("driving the claim after the plugin lost its node service = %v; want it refused and rolled back", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims left behind: %+v", live)
	}
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume, csi.RPCControllerPublishVolume} {
		if n := h.mem.CallCount(rpc); n != 0 {
			t.Errorf("%s sent %d times for a claim that cannot be published", rpc, n)
		}
	}
}
