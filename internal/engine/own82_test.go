package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// legacyOwedThroughAControllerOnlyRegistration leaves volume v attached to node-1 with no claim,
// its staging row an older volctl's (no node ID), and plugin mem registered again by its
// controller half alone (no node ID in its fingerprint): the owed ControllerUnpublishVolume that
// noNodeToUnpublish now refuses to send for an empty node.
func legacyOwedThroughAControllerOnlyRegistration(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Unavailable)
	if _, err := h.e.Detach(h.ctx, "v", true); err != nil {
		t.Fatalf("forced detach: %v", err)
	}
	h.faults.Clear()
	st, ok := h.staging("v")
	if !ok || !st.ControllerPublished {
		t.Fatalf("premise: the attachment is owed after the forced detach: %+v %v", st, ok)
	}
	h.update(func(tx *store.Tx) error {
		st.NodeID = "" // as recorded before node IDs were
		return tx.Stagings().Put(&st)
	})
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginController, ControllerSocket: h.socket}); err != nil {
		t.Fatalf("register plugin mem by its controller half alone: %v", err)
	}
	if nodes := h.mem.PublishedNodes(ext); len(nodes) == 0 {
		t.Fatalf("premise: v is attached somewhere; the plugin lists it attached to %v", nodes)
	}
	h.mem.ResetCalls()
	return h, ext
}

// TestUnpublishWaitsOfALegacyRowThroughAControllerOnlyRegistrationDoesNotPromiseReconcile: v
// owes a ControllerUnpublishVolume recorded by an older volctl (its staging row names no node),
// and plugin mem is now registered by its controller half alone, so no node ID can be had.
// unpublishChecked now refuses to send it for an empty node (noNodeToUnpublish), every
// reconcile pass, saying the node half must be registered first. But `volume status v`
// (unpublish_waits, from owedUnpublishWayOf, which looks only at the capability) still says
// "Run `volctl reconcile` once plugin "mem" answers (it sends it)": followed, with the plugin
// answering, reconcile sends nothing, reports a failure, and v stays attached. The deregister
// refusal advises the same reconcile. Correct: the words say what the refusal says (no node
// to send it for: register the plugin's node half, then reconcile), not a reconcile that
// cannot send it.
// Found by helper review82 (own).
func TestUnpublishWaitsOfALegacyRowThroughAControllerOnlyRegistrationDoesNotPromiseReconcile(t *testing.T) {
	t.Parallel()
	h, ext := legacyOwedThroughAControllerOnlyRegistration(t)
	waits := h.volumeInfo("v").UnpublishWaits
	if waits == "" {
		t.Fatalf("premise: unpublish_waits is empty for v, which owes an unpublish")
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Logf("reconcile: %v", err)
	}
	sent := h.mem.CallCount(csi.RPCControllerUnpublishVolume)
	if sent != 0 || len(h.mem.PublishedNodes(ext)) == 0 {
		t.Fatalf("premise: reconcile sent ControllerUnpublishVolume %d time(s), v attached to %v; want none sent (no node), v still attached", sent, h.mem.PublishedNodes(ext))
	}
	if strings.Contains(waits, "`volctl reconcile`") && !strings.Contains(waits, "node half") && !strings.Contains(waits, "node ID") {
		t.Fatalf("volume status v says of its owed unpublish:\n%s\nfollowed (plugin mem answering, `volctl reconcile`), nothing was sent and v stays attached to %v; reconcile's problems: %+v; "+
			"want the words to say no node can be named for it (register plugin mem's node half first), as the reconcile refusal does",
			waits, h.mem.PublishedNodes(ext), rep.Problems)
	}
	// Followed to the end: the plugin registered with its node service (one process serves
	// both here: a monolith, as the words allow), then reconcile sends it for this node.
	if !strings.Contains(waits, "monolith") {
		t.Fatalf("the words do not say how a plugin whose one process serves both halves gets a node ID:\n%s", waits)
	}
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket}); err != nil {
		t.Fatalf("register plugin mem as a monolith, as advised: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the node half was registered: %v", err)
	}
	if nodes := h.mem.PublishedNodes(ext); len(nodes) != 0 || h.mem.CallCount(csi.RPCControllerUnpublishVolume) == 0 {
		t.Errorf("with plugin mem's node half registered as advised, reconcile left v attached to %v", nodes)
	}
}

// TestForcedDeregisterOfALegacyRowThroughAControllerOnlyRegistrationDoesNotSayTheAttachmentStaysOwed:
// the same v (owed unpublish, legacy row with no node, plugin mem registered by its controller
// half alone). `volctl volume deregister v --force` forgets the volume and its attachment
// record. Its warning (forgottenAttachment) quotes the refusal sendOwedUnpublish met,
// noNodeToUnpublish's: "its attachment to node "this node" is forgotten, as --force asks: ...
// (... the attachment stays recorded, owed: register plugin "mem"'s node half too, then
// `volctl reconcile` sends it for this node)". The record is gone: followed, reconcile sends
// nothing, and v stays attached. The refusal's advice is for a release that keeps the row, not
// for a forced deregister that drops it. Correct: the warning gives the cause alone (no node
// to send it for), as it does for an owedError, and no promise that reconcile sends it.
// Found by helper review82 (own).
func TestForcedDeregisterOfALegacyRowThroughAControllerOnlyRegistrationDoesNotSayTheAttachmentStaysOwed(t *testing.T) {
	t.Parallel()
	h, ext := legacyOwedThroughAControllerOnlyRegistration(t)
	warnings, err := h.e.DeregisterVolume(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("forced deregister: %v", err)
	}
	var rows int
	h.update(func(tx *store.Tx) error {
		_, gerr := tx.Volumes().Get("v")
		if gerr == nil {
			rows++
		}
		if _, serr := tx.Stagings().Get("v"); serr == nil {
			rows++
		}
		return nil
	})
	if rows != 0 {
		t.Fatalf("premise: after the forced deregister, v's records are still there (%d)", rows)
	}
	words := strings.Join(warnings, "\n")
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile: %v", err)
	}
	sent := h.mem.CallCount(csi.RPCControllerUnpublishVolume)
	if strings.Contains(words, "stays recorded") || strings.Contains(words, "`volctl reconcile` sends it") {
		t.Errorf("the forced deregister of v forgot its attachment record, and its warnings say:\n%s\nfollowed, `volctl reconcile` sent ControllerUnpublishVolume %d time(s), v still attached to %v; "+
			"want no promise that the attachment stays recorded or that reconcile sends it", words, sent, h.mem.PublishedNodes(ext))
	}
}
