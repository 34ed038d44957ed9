package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// The adversary: a volume owed a node-only expansion (the controller never had the size)
// through a plugin back with the controller's EXPAND_VOLUME and OFFLINE expansion alone,
// handed over to Nomad with --force, which says the expansion waits for the take-back. Nomad
// claims it now, on any node, and volctl's own claims and stagings know nothing of that.
// reconcile's expandOffNode (expand34) looked only at those: it sent ControllerExpandVolume
// behind Nomad's back, to a plugin that may not grow a published volume (the CSI spec: SHALL
// NOT), and recorded the size on a volume Nomad has. Now it leaves a handed-over volume's
// expansion for the take-back, as reconcile's pending expansions do; taken back, reconcile
// sends it (the honest case).
func TestOwedControllerStepOfAHandedOverVolumeWaitsForTheTakeBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v")).ExternalID
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	h.restartWith(offlineOnlyExpansion)
	to := HandoverTarget{Address: "http://127.0.0.1:4646"}
	if _, err := h.e.HandOver(h.ctx, "v", to, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("reconcile sent ControllerExpandVolume %d times for a volume handed over to Nomad; want none until it is taken back", n)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Errorf("owed %d after reconcile; want 4MiB still owed, for after the take-back", v.NodeExpansionOwed)
	}
	// Taken back: reconcile sends the controller's step while the volume is off the node.
	if _, err := h.e.TakeBack(h.ctx, "v", func(HandoverInfo) (string, error) { return "deregistered", nil }, nil); err != nil {
		t.Fatalf("take back: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile after the take-back: %v (%+v)", err, rep.Problems)
	}
	if mv, _ := h.mem.Volume(ext); mv.CapacityBytes != 4*mib || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 {
		t.Errorf("after the take-back: storage %d, ControllerExpandVolume sent %d times; want 4MiB, once", mv.CapacityBytes, h.mem.CallCount(csi.RPCControllerExpandVolume))
	}
}

// The same promise with the volume still claimed here, handed over with --force: the debt's
// ControllerExpandVolume (an ONLINE plugin's, sent beside the node's step) and NodeExpandVolume
// wait for the take-back too, whether reconcile or `volume expand` to its size would send them.
func TestOwedExpansionOfAClaimedHandedOverVolumeWaitsForTheTakeBack(t *testing.T) {
	t.Parallel()
	h, noAttach := claimedWithNodeExpansionOwed(t)
	h.restartWith(func(c *csitest.MemConfig) { noAttach(c); c.Controller.ExpandVolume = true })
	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	before := h.mem.CallCount(csi.RPCNodeExpandVolume)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("reconcile of the handed-over volume: %v; want its expansion left for the take-back", err)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); !errors.Is(err, ErrConflict) || !strings.Contains(fmt.Sprint(err), "handed over to Nomad") {
		t.Errorf("expand of the handed-over volume to its size = %v; want a conflict saying it is handed over", err)
	}
	if c, n := h.mem.CallCount(csi.RPCControllerExpandVolume), h.mem.CallCount(csi.RPCNodeExpandVolume)-before; c != 0 || n != 0 {
		t.Errorf("with the volume handed over, ControllerExpandVolume was sent %d times, NodeExpandVolume %d; want none until the take-back", c, n)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
		t.Errorf("owed %d; want 4MiB still owed", v.NodeExpansionOwed)
	}
	// Taken back: reconcile sends them, the controller's step first.
	if _, err := h.e.TakeBack(h.ctx, "v", func(HandoverInfo) (string, error) { return "deregistered", nil }, nil); err != nil {
		t.Fatalf("take back: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile after the take-back: %v (%+v)", err, rep.Problems)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 || h.mem.CallCount(csi.RPCNodeExpandVolume)-before != 1 {
		t.Errorf("after the take-back: owed %d, ControllerExpandVolume sent %d times, NodeExpandVolume %d; want nothing owed, once each",
			v.NodeExpansionOwed, h.mem.CallCount(csi.RPCControllerExpandVolume), h.mem.CallCount(csi.RPCNodeExpandVolume)-before)
	}
}

// claimedWithNodeExpansionOwed is a harness whose plugin has neither PUBLISH_UNPUBLISH_VOLUME
// (noAttach, to keep it so when the plugin is started again) nor the controller's EXPAND_VOLUME,
// with volume "v" claimed by alloc "a" and its expansion to 4 MiB owed on the node: its
// NodeExpandVolume failed.
func claimedWithNodeExpansionOwed(t *testing.T) (h *harness, noAttach func(*csitest.MemConfig)) {
	t.Helper()
	noAttach = func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false }
	h = newHarness(t, func(c *csitest.MemConfig) { noAttach(c); c.Controller.ExpandVolume = false })
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
		t.Fatal("expand with the node failing succeeded")
	}
	return h, noAttach
}
