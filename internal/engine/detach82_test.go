package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestUnpublishWaitsOfAHandedOverVolumeWhosePluginCannotUnpublishDoesNotPromiseReconcile: v's
// claim is released through plugin mem restarted without PUBLISH_UNPUBLISH_VOLUME, so the
// attachment to node-1 stays recorded, owed, and nothing can send its ControllerUnpublishVolume
// until the plugin has the capability again (status says so, rightly). v is then handed over to
// Nomad with --force. `volume status v` (VolumeInfo.UnpublishWaits, `unpublish_waits` in --json)
// now says the unpublish "waits for the volume to be taken back from Nomad ... then `volctl
// reconcile` sends it": followed (take-back, reconcile, the plugin unchanged), reconcile sends
// nothing and the volume stays attached. owedUnpublishWaits answers the handover case before
// (and instead of) the plugin's own block (UnpublishWay), so the one thing that stops the send
// is dropped from the words. Correct: while handed over, the words name the take-back and also
// what the plugin lacks (the plugin started with PUBLISH_UNPUBLISH_VOLUME again), as the words
// without a handover do.
// Found by helper review82 (detach).
func TestUnpublishWaitsOfAHandedOverVolumeWhosePluginCannotUnpublishDoesNotPromiseReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.release("v", "a")
	if v := h.volumeInfo("v"); !strings.Contains(v.UnpublishWaits, "PUBLISH_UNPUBLISH_VOLUME") {
		t.Fatalf("premise: before the handover, unpublish_waits = %q; want it to name the capability the plugin lacks", v.UnpublishWaits)
	}
	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatalf("forced hand over: %v", err)
	}
	waits := h.volumeInfo("v").UnpublishWaits
	// Followed: taken back, then reconcile, the plugin as it is.
	if _, err := h.e.TakeBack(h.ctx, "v", because("deregistered from Nomad"), nil); err != nil {
		t.Fatalf("take back: %v", err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Logf("reconcile: %v", err)
	}
	sent := h.mem.CallCount(csi.RPCControllerUnpublishVolume)
	if sent != 0 || len(h.mem.PublishedNodes(ext)) == 0 {
		t.Fatalf("premise: after the take-back, reconcile sent ControllerUnpublishVolume %d times, attached to %v; want none sent, still attached", sent, h.mem.PublishedNodes(ext))
	}
	if strings.Contains(waits, "`volctl reconcile` sends it") && !strings.Contains(waits, "PUBLISH_UNPUBLISH_VOLUME") {
		t.Errorf("volume status of handed-over v says:\n%s\nfollowed (take-back, `volctl reconcile`), nothing was sent and v stays attached to %v (reconcile's problems: %+v); "+
			"want it to say the plugin lacks PUBLISH_UNPUBLISH_VOLUME too", waits, h.mem.PublishedNodes(ext), rep.Problems)
	}
}

// TestReleaseOfAHandedOverVolumeThroughAPluginWithoutUnpublishAdvisesAWayThatWorks: v is
// claimed (attached to node-1) here and handed over to Nomad with the claim still live (a mark
// an older volctl made, or one made before the plugin attached: the docs' keptForNomad cases).
// The plugin restarts without PUBLISH_UNPUBLISH_VOLUME and the local claim is released. The
// release keeps the attachment owed, rightly, but its warning and capability-lost event are the
// ones for a volume volctl has (keptAttachment): "start the plugin with that capability again and
// `volctl reconcile` sends it, or ... run `volctl volume detach v --force --yes` to forget it".
// Both fail while v is with Nomad: reconcile leaves a handed-over volume's attachment alone
// (cleanStaging), and the advised forced detach is refused ("handed over to Nomad"). undoUnused
// checks the handover only when c.controllerPublishes(), so a plugin without the capability
// falls through to the words of a volume that is not handed over. Correct: the words name the
// take-back (`volctl nomad release v`) as what comes first, as keptForNomad does, and do not
// advise a detach that is refused.
// Found by helper review82 (detach).
func TestReleaseOfAHandedOverVolumeThroughAPluginWithoutUnpublishAdvisesAWayThatWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.update(func(tx *store.Tx) error {
		return tx.Handovers().Put(&store.Handover{VolumeID: "v", Address: "http://127.0.0.1:4646", Forced: true})
	})
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.release("v", "a")
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("premise: staging after the release = %+v (kept %v); want the attachment kept, owed", st, ok)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "v"})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, ev := range evs {
		if strings.Contains(ev.Message, "ControllerUnpublishVolume") {
			said = append(said, ev.Kind+": "+ev.Message)
		}
	}
	words := strings.Join(said, "\n")
	if strings.Contains(words, "nomad release v") {
		// The take-back named as what comes first, with what the plugin lacks besides, and no
		// forced detach, which is refused while the volume is Nomad's.
		if !strings.Contains(words, "PUBLISH_UNPUBLISH_VOLUME") || strings.Contains(words, "volume detach") {
			t.Errorf("the release of handed-over v's last local claim says:\n%s\nwant the take-back and the capability the plugin lacks, and no forced detach", words)
		}
		return
	}
	// Followed as they say: the plugin started with the capability again, then reconcile; and
	// the forced detach that forgets the record.
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = true })
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile: %v", err)
	}
	sent := h.mem.CallCount(csi.RPCControllerUnpublishVolume)
	_, derr := h.e.Detach(h.ctx, "v", true)
	t.Errorf("the release of handed-over v's last local claim says:\n%s\nfollowed: with the plugin started with PUBLISH_UNPUBLISH_VOLUME, `volctl reconcile` sent ControllerUnpublishVolume %d time(s); "+
		"the advised forced detach: %v; want the words to name the take-back (`volctl nomad release v`) that comes first", words, sent, derr)
}

// TestForcedDetachThroughAControllerOnlyRegistrationSendsNoUnpublishForEveryNode: plugin mem is
// registered by its controller half alone (type "controller", no node socket: the node half is
// gone from this host, or runs elsewhere), so its fingerprint has no node ID. Volume v has no
// claim and no attachment recorded here; another orchestrator (Nomad) has it attached to node-2
// for its allocs. `volctl volume detach v --force` "tries the controller unpublish whatever the
// records say": with no attachment recorded, its node ID is the fingerprint's, "", and it sends
// ControllerUnpublishVolume with an empty node_id, which the CSI spec defines as "unpublish the
// volume from all nodes it is published to". The volume is pulled from node-2 under Nomad's
// allocs, and the detach then says `Volume "v" has no claims: nothing to detach`, exit 0. The
// listing check before it (attachedAlready) asks about node "" and sees nothing. Correct: no
// ControllerUnpublishVolume is sent without a node ID (forceDetach, and any sender, skips or
// refuses an empty one, saying so); node-2's attachment stays.
// Found by helper review82 (detach).
func TestForcedDetachThroughAControllerOnlyRegistrationSendsNoUnpublishForEveryNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	// Nomad's alloc on node-2 has v attached there (the same controller, another node).
	h.mem.SetNodeID("node-2")
	c, err := csi.New(csi.Config{ControllerSocket: h.socket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ControllerPublishVolume(h.ctx, csi.ControllerPublishVolumeRequest{
		VolumeID: ext, NodeID: "node-2", Capability: csi.VolumeCapability{Capability: capab(spec.SingleNodeWriter)}}); err != nil {
		t.Fatalf("attach v to node-2 as another orchestrator: %v", err)
	}
	c.Close()
	h.mem.SetNodeID("node-1")
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginController, ControllerSocket: h.socket}); err != nil {
		t.Fatalf("register plugin mem by its controller half alone: %v", err)
	}
	h.mem.ResetCalls()
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Logf("forced detach: %v", err)
	}
	var sentFor []string
	for _, call := range h.mem.Calls() {
		if r, ok := call.Request.(csi.ControllerUnpublishVolumeRequest); ok && call.RPC == csi.RPCControllerUnpublishVolume {
			sentFor = append(sentFor, fmt.Sprintf("%q", r.NodeID))
		}
	}
	if len(sentFor) == 0 && !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "was not sent") && strings.Contains(w, "every node") }) {
		t.Errorf("the forced detach sent nothing and said nothing of why: warnings %q", res.Warnings)
	}
	if nodes := h.mem.PublishedNodes(ext); !slices.Contains(nodes, "node-2") {
		t.Errorf("after a forced detach of v (no claim, nothing recorded) through a controller-only registration, v is attached to %v: node-2's attachment, another orchestrator's, was pulled "+
			"(ControllerUnpublishVolume sent for node_id %v; the detach said released %v, detached_from %q, warnings %q)",
			nodes, sentFor, res.Released, res.DetachedFrom, res.Warnings)
	}
}
