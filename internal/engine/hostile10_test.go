package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A plugin that comes back from a reboot with another NodeGetInfo node_id (one derived from the
// host name or the instance, which changed) while a published claim holds the volume's
// attachment to the old node: the restore never sends ControllerPublishVolume again, and the
// publish context it has is the old node's (a device path there, which on this node may be
// another volume's device). NodeStageVolume is not sent with it: the claim stays held,
// degraded, and reconcile says what changed and the way out (release the claim, which detaches
// the old node, and claim again), not that the next reconcile restores it, which it cannot.
// The release detaches the old node; the claim again attaches the new one.
func TestRestoreAfterNodeIDChangeSendsNoOtherNodesAttachment(t *testing.T) {
	t.Parallel()
	t.Run("staging", func(t *testing.T) { restoreAfterNodeIDChange(t, true, csi.RPCNodeStageVolume) })
	// A plugin that does not stage publishes from the attachment itself.
	t.Run("no staging", func(t *testing.T) { restoreAfterNodeIDChange(t, false, csi.RPCNodePublishVolume) })
}

func restoreAfterNodeIDChange(t *testing.T, stages bool, rpc string) {
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = stages })
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID = "node-2" })

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("reconcile = %+v, %v; want the claim's restore reported", rep, err)
	}
	msg := rep.Problems[0].Message
	for _, want := range []string{`node "node-1"`, `node "node-2"`, "volctl volume release v --alloc a"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reconcile's problem %q does not name %s", msg, want)
		}
	}
	if strings.Contains(msg, "the next reconcile restores it") {
		t.Errorf("reconcile's problem %q promises a restore the next pass cannot make", msg)
	}
	if n := h.mem.CallCount(rpc); n != 0 {
		t.Errorf("%s sent %d times with node-1's publish context to a plugin on node-2", rpc, n)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Degraded {
		t.Fatalf("claims after the refused restore = %+v; want a's held, degraded", live)
	}

	h.release("v", "a")
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Fatalf("still attached to %v after the release", nodes)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 1 || nodes[0] != "node-2" {
		t.Errorf("attached to %v after the claim again, want node-2", nodes)
	}
}

// The same change seen by a new claim of a volume another claim holds attached to the old node,
// its staging gone with the reboot: the new claim shares the attachment (the old node's), and
// staging the volume with that publish context is refused as a conflict naming both nodes and
// the claim that holds the attachment; the new claim is rolled back and the holder's claim and
// attachment are left as they are.
func TestClaimSharingAnAttachmentToAnotherNodeIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.MultiNodeMultiWriter)
	h.restartWith(func(c *csitest.MemConfig) { c.NodeID = "node-2" })

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("claim sharing node-1's attachment on node-2: %v; want a conflict", err)
	}
	for _, want := range []string{`node "node-1"`, `node "node-2"`, `alloc "a"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim error %q does not name %s", err, want)
		}
	}
	if n := h.mem.CallCount(csi.RPCNodeStageVolume); n != 0 {
		t.Errorf("NodeStageVolume sent %d times with node-1's publish context to a plugin on node-2", n)
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Errorf("ControllerUnpublishVolume sent %d times while alloc a's claim holds the attachment", n)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].Alloc != "a" || live[0].State != store.ClaimPublished {
		t.Fatalf("claims after the refusal = %+v; want a's alone, as it was", live)
	}
}

// A node expansion owed to a volume published through a plugin that did not stage then, and
// stages now (a restart with STAGE_UNSTAGE_VOLUME gained): NodeExpandVolume names the staging
// path only where the volume is staged, as recorded. It named the path a staging would have,
// where nothing was ever staged, which a plugin that finds the device through its staging
// mount fails on; the expansion stayed owed, and each expand or reconcile failed the same way
// until the claim was released.
func TestNodeExpandNamesNoStagingNeverMade(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = true })
	h.mem.AnswerNodeExpansionRequired(true)

	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("expand of a volume published without a staging: %v", err)
	}
	reqs := h.nodeExpands()
	if len(reqs) != 1 || reqs[0].VolumePath != cl.TargetPath || reqs[0].StagingPath != "" {
		t.Fatalf("NodeExpandVolume requests %+v, want one at the target %s naming no staging path", reqs, cl.TargetPath)
	}
	if got := h.owed("v"); got != 0 {
		t.Errorf("node expansion still owed: %d", got)
	}
}

// `volume delete` of a volume whose create was interrupted after the plugin made it (every
// CreateVolume answer lost): the plugin holds a volume under the create's CSI name, which only
// CreateVolume under that name tells volctl. The delete finishes the create to learn the
// volume's ID and deletes it, as `snapshot delete` of a pending snapshot does. It recorded the
// volume deleted (exit 0, a "deleted" event) without sending DeleteVolume, and the plugin kept
// the storage, which nothing tracked any more. While the plugin cannot answer, the delete
// fails and the volume stays recorded being created.
func TestDeleteOfAnInterruptedCreateDeletesWhatThePluginMade(t *testing.T) {
	t.Parallel()
	h := createWithEveryAnswerLost(t)

	h.faults.FailAlways(csi.RPCCreateVolume, codes.Unavailable)
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("delete succeeded while the plugin could not say what it made")
	}
	if got := h.volumeInfo("v").State; got != string(store.VolumeCreating) {
		t.Fatalf("volume after the failed delete is %s, want it still recorded creating", got)
	}
	h.faults.Clear()

	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete of the interrupted create: %v", err)
	}
	if n := h.pluginVolumeCount(); n != 0 {
		t.Errorf("plugin still has %d volume(s) after volctl deleted v: the storage was left behind, untracked", n)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume v after the delete: %v, want it gone", err)
	}
}

// The same delete when the plugin refuses the create for good now: nothing can be under the
// name (CSI's CreateVolume answers OK for a volume it holds under it), so the record is forgotten
// and the delete succeeds, its event saying so. A plugin whose answer cannot be used (it made the
// volume, but its answer has no ID) has the record forgotten too, and the delete fails, saying
// the volume was not deleted and naming the CSI name to delete it by with the provider's tools.
func TestDeleteOfAnInterruptedCreateThePluginCannotFinish(t *testing.T) {
	t.Parallel()
	interrupted := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
		if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
			t.Fatal("create with every answer lost succeeded")
		}
		return h
	}
	t.Run("refused", func(t *testing.T) {
		h := interrupted(t)
		for _, v := range h.mem.Volumes() {
			h.mem.DropVolume(v.ID)
		}
		h.faults.FailAlways(csi.RPCCreateVolume, codes.OutOfRange)
		if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
			t.Fatalf("delete of a create the plugin refuses now: %v", err)
		}
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume v after the delete: %v, want it forgotten", err)
		}
	})
	t.Run("another volume's storage", func(t *testing.T) {
		h := interrupted(t)
		a := h.create(volume("a"))
		h.mem.AnswerCreateWith(a.ExternalID)
		err := h.e.DeleteVolume(h.ctx, "v")
		if err == nil || !strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), `already volume "a"`) {
			t.Fatalf("delete of a create answered with volume a's storage: %v; want it to say v was not deleted, naming a", err)
		}
		if _, ok := h.mem.Volume(a.ExternalID); !ok {
			t.Fatalf("a's storage %q was deleted by v's delete", a.ExternalID)
		}
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume v after the delete: %v, want it forgotten", err)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		h := interrupted(t)
		h.mem.SetAnswerWithoutID(true)
		name := h.volumeRow("v").CSIName
		err := h.e.DeleteVolume(h.ctx, "v")
		if err == nil || !strings.Contains(err.Error(), "not deleted") || !strings.Contains(err.Error(), name) {
			t.Fatalf("delete of a create whose answer cannot be used: %v; want it to say the volume was not deleted, naming %q", err, name)
		}
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume v after the delete: %v, want it forgotten", err)
		}
	})
}

// A plugin that comes back with another NodeGetInfo node_id while volumes are attached to the
// old node gets its plugin-capabilities event as for other capabilities, naming both nodes and
// the volumes attached to the old one (which claims can share, and restores stage, no more on
// this node: attachedElsewhere), from whichever connection records the new fingerprint first,
// here a health probe. A restart with the same node ID and capabilities records no event.
func TestNodeIDChangeIsAnEventNamingTheVolumesAttachedToTheOldNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	h.restartWith(func(c *csitest.MemConfig) {})
	if evs := h.capabilityEventsSeenByAProbe(); len(evs) != 0 {
		t.Fatalf("events after a restart as it was = %+v; want none", evs)
	}

	h.restartWith(func(c *csitest.MemConfig) { c.NodeID = "node-2" })
	evs := h.capabilityEventsSeenByAProbe()
	if len(evs) != 1 {
		t.Fatalf("events after a restart with another node ID = %+v; want one", evs)
	}
	for _, want := range []string{`node "node-1"`, `node "node-2"`, `"v"`} {
		if !strings.Contains(evs[0].Message, want) {
			t.Errorf("the event %q does not name %s", evs[0].Message, want)
		}
	}
}

// An interrupted create (its answers lost) whose plugin comes back without CREATE_DELETE_VOLUME:
// reconcile does not send CreateVolume, which the plugin no longer advertises, and its problem
// names the way out that works, `volume deregister` (a `volume delete` is refused without the
// capability), and the CSI name a volume the lost answer was about goes by. The deregister
// forgets it, warning that the plugin may hold that volume, and the event says so: it forgot it
// without a word.
func TestInterruptedCreateThroughAPluginThatLostCreateDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
		t.Fatal("create with every answer lost succeeded")
	}
	name := h.volumeRow("v").CSIName
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteVolume = false })

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("reconcile = %+v, %v; want the create reported", rep, err)
	}
	for _, want := range []string{"CREATE_DELETE_VOLUME", "volctl volume deregister v", name} {
		if !strings.Contains(rep.Problems[0].Message, want) {
			t.Errorf("reconcile's problem %q does not name %s", rep.Problems[0].Message, want)
		}
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != 0 {
		t.Errorf("CreateVolume sent %d times to a plugin without CREATE_DELETE_VOLUME", n)
	}

	warnings, err := h.e.DeregisterVolume(h.ctx, "v", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], name) {
		t.Errorf("deregister of the interrupted create warned %q; want the CSI name %q of a volume the plugin may hold", warnings, name)
	}
	if msgs := h.eventMessages("volume-deregister", "v"); !strings.Contains(msgs, name) {
		t.Errorf("the deregister event %q does not name %q", msgs, name)
	}
}

// createWithEveryAnswerLost creates volume v with every CreateVolume answer lost: the plugin
// holds the volume, volctl its create's intent.
func createWithEveryAnswerLost(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, volume("v")); err == nil {
		t.Fatal("create with every answer lost succeeded")
	}
	if n := h.pluginVolumeCount(); n != 1 {
		t.Fatalf("plugin has %d volumes, want the one the lost answers were about", n)
	}
	return h
}
