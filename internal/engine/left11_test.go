package engine

import (
	"context"
	"fmt"
	"github.com/volctl/volctl/internal/csi/csitest"
	"google.golang.org/grpc/codes"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// attachOutside attaches the harness's volume vol to the plugin's node directly, with cap, as
// something other than volctl (another CO, an operator with the provider's tools) would.
func (h *harness) attachOutside(vol string, vc csi.VolumeCapability, readOnly bool) {
	h.t.Helper()
	c, err := csi.New(csi.Config{ControllerSocket: h.socket})
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ControllerPublishVolume(h.ctx, csi.ControllerPublishVolumeRequest{
		VolumeID: h.externalID(vol), NodeID: "node-1", Capability: vc, ReadOnly: readOnly}); err != nil {
		h.t.Fatal(err)
	}
}

// TestAttachmentAnsweredAlreadyExistsIsNotUndone: the volume is attached to the node already,
// outside volctl, with another capability than a claim asks for, and ControllerPublishVolume
// answers ALREADY_EXISTS. Before, the claim's rollback sent ControllerUnpublishVolume for the
// attachment admission had recorded as this claim's intent, detaching a volume this claim never
// attached and someone else may be using. Now the claim fails naming the volume, the node and
// the conflict, sends no unpublish, and records no attachment. The plugin cannot list the nodes
// a volume is published to: one that can is refused before the RPC
// (TestClaimOfAVolumeAnotherStateDirAttachedLeavesItsAttachment).
func TestAttachmentAnsweredAlreadyExistsIsNotUndone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumesPublishedNodes = false })
	h.create(volume("v", capab(spec.SingleNodeWriter), capab(spec.MultiNodeReaderOnly)))
	h.attachOutside("v", csi.VolumeCapability{Capability: capab(spec.MultiNodeReaderOnly)}, true)
	h.mem.ResetCalls()

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !csi.IsAlreadyExists(err) {
		t.Fatalf("claim over an attachment made outside volctl: %v, want ALREADY_EXISTS", err)
	}
	for _, want := range []string{`volume "v"`, `node "node-1"`, "not by this claim", "left that attachment as it is"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim error %q does not say %q", err, want)
		}
	}
	if got := h.rpcs(); slices.Contains(got, csi.RPCControllerUnpublishVolume) {
		t.Errorf("RPCs = %v: the rollback detached an attachment the claim did not make", got)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{"node-1"}) {
		t.Errorf("the volume is attached to %v after the failed claim, want node-1 still", nodes)
	}
	if st, ok := h.staging("v"); ok && st.ControllerPublished {
		t.Errorf("staging row %+v records as volctl's an attachment it did not make", st)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims left = %+v", live)
	}
}

// TestAttachmentOfAnInterruptedClaimStaysThroughAnotherClaimsAlreadyExists: claim a was cut off
// right after ControllerPublishVolume attached the volume with its mount flags (left taken,
// the attachment recorded as its intent), and claim b, with other mount flags, is answered
// ALREADY_EXISTS. b's rollback must leave a's attachment and its record: a holds the volume
// and reconcile finishes publishing it over that very attachment.
func TestAttachmentOfAnInterruptedClaimStaysThroughAnotherClaimsAlreadyExists(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime"}}}); err == nil {
		t.Fatal("claim a went past a NodeStageVolume that fails")
	}
	h.faults.Clear()
	h.update(func(tx *store.Tx) error { // as a kill right after ControllerPublishVolume left it
		cl, err := tx.Claims().Find("v", "a")
		if err != nil {
			return err
		}
		cl.State = store.ClaimTaken
		return tx.Claims().Update(&cl)
	})
	h.mem.ResetCalls()

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noexec"}}})
	if !csi.IsAlreadyExists(err) || !strings.HasSuffix(err.Error(), "(the claim was rolled back)") {
		t.Fatalf("claim b: %v, want ALREADY_EXISTS", err)
	}
	if got := h.rpcs(); slices.Contains(got, csi.RPCControllerUnpublishVolume) {
		t.Errorf("RPCs = %v: b's rollback detached a's attachment", got)
	}
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished || st.NodeID != "node-1" {
		t.Errorf("staging row after b's rollback = %+v (kept %v), want a's attachment to node-1 recorded", st, ok)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); !slices.Equal(nodes, []string{"node-1"}) {
		t.Errorf("the volume is attached to %v, want node-1 still", nodes)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile finishing a's claim: %v", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimPublished {
		t.Fatalf("claims after reconcile = %+v, want a's published", live)
	}
}

// restartKeepingState stops the harness's plugin and serves the same one again, edited, on a
// new socket file at the same path: a plugin process restarted with other flags, whose
// stagings (mounts, which outlive it) are still there.
func (h *harness) restartKeepingState(edit func(*csitest.MemConfig)) {
	h.t.Helper()
	h.stopServe()
	h.mem.Reconfigure(edit)
	h.stopServe = csitest.ServeAt(h.t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
}

// TestStagingMadeBeforeTheAttachmentIsMadeAgainFromIt: a claim staged through a plugin
// instance without PUBLISH_UNPUBLISH_VOLUME and cut off before NodePublishVolume is re-driven
// by reconcile through an instance with it, whose staging works from the attachment. The
// re-drive attaches (TestClaimRedrivenAttachesOnceThePluginDoes); before, it then sent
// NodePublishVolume over the staging made without the attachment, the plugin refused it
// FAILED_PRECONDITION, and reconcile rolled the claim back. Nothing is published from that
// staging, so it is unstaged and staged again with the attachment's publish_context, each
// step's intent committed first, and the claim is published.
func TestStagingMadeBeforeTheAttachmentIsMadeAgainFromIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(cfg *csitest.MemConfig) {
		cfg.Controller.PublishUnpublishVolume = false
		cfg.StageFromAttachment = true
	})
	h.create(volume("v"))
	h.claimInterruptedAt(csi.RPCNodePublishVolume, csitest.Fault{Code: codes.Unavailable}, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimNodeStaged {
		t.Fatalf("claims after the interruption = %+v; want one left node-staged", live)
	}

	h.restartKeepingState(func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = true })
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimPublished {
		t.Fatalf("claims after the re-drive = %+v; want a's published", live)
	}
	// NodeUnpublishVolume first: the NodePublishVolume cut off may have been carried out.
	// ListVolumes: no attachment is recorded, so whether the plugin has one already (attachedAlready).
	want := []string{csi.RPCListVolumes, csi.RPCControllerPublishVolume, csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}
	if got := h.rpcs(); !slices.Equal(got, want) {
		t.Errorf("RPCs of the re-drive = %v, want %v", got, want)
	}
	if st, ok := h.staging("v"); !ok || !st.Staged || !st.ControllerPublished {
		t.Errorf("staging after the re-drive = %+v (%v)", st, ok)
	}
	h.release("v", "a")
}

// leaveStagedWithoutClaim claims volume vol with NodePublishVolume failing, so that it is staged
// and attached, then drops the claim as a release cut short in a way the state machine did not
// foresee would: the staging row stays with no claim, for reconcile to clean.
func (h *harness) leaveStagedWithoutClaim(vol string) store.Staging {
	h.t.Helper()
	h.create(volume(vol))
	h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: vol, Alloc: "a"}); err == nil {
		h.t.Fatal("the claim went past a NodePublishVolume that fails")
	}
	h.faults.Clear()
	h.update(func(tx *store.Tx) error {
		cl, err := tx.Claims().Find(vol, "a")
		if err != nil {
			return err
		}
		return tx.Claims().Free(cl.ID, store.OutcomeForced)
	})
	st, ok := h.staging(vol)
	if !ok || !st.Staged || !st.ControllerPublished {
		h.t.Fatalf("staging row = %+v (%v), want staged and attached", st, ok)
	}
	return st
}

// TestReconcileSaysWhatItDidWithALeftStaging: a staging row with no claim, recording both a
// staging and an attachment. Before, the report said "undid the unused staging" whether it
// unstaged and detached, and, when the plugin had lost PUBLISH_UNPUBLISH_VOLUME, reported an
// "unused staging" problem though it had unstaged it and it was the attachment that stayed.
// Now each line says what was done: unstaged at which path, detached from which node, or the
// attachment kept, owed.
func TestReconcileSaysWhatItDidWithALeftStaging(t *testing.T) {
	t.Parallel()
	t.Run("unstaged and detached", func(t *testing.T) {
		h := newHarness(t, nil)
		st := h.leaveStagedWithoutClaim("v")
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil {
			t.Fatalf("reconcile: %+v, %v", rep, err)
		}
		want := fmt.Sprintf(`unstaged volume "v" at %s and detached it from node "node-1": no claim used them`, st.StagingPath)
		if len(rep.Actions) != 1 || rep.Actions[0].Kind != "cleaned" || rep.Actions[0].Message != want {
			t.Fatalf("reconcile actions = %+v, want one cleaned: %q", rep.Actions, want)
		}
	})
	t.Run("unstaged, attachment kept", func(t *testing.T) {
		h := newHarness(t, nil)
		st := h.leaveStagedWithoutClaim("v")
		h.restartKeepingState(func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = false })
		rep, err := h.e.Reconcile(h.ctx)
		if err == nil || len(rep.Problems) != 1 {
			t.Fatalf("reconcile: %+v, %v; want the attachment kept reported", rep, err)
		}
		msg := rep.Problems[0].Message
		if want := fmt.Sprintf(`unstaged volume "v" at %s (no claim used it); `, st.StagingPath); !strings.HasPrefix(msg, want) ||
			!strings.Contains(msg, "the attachment stays recorded, owed") || strings.Contains(msg, "unused staging") {
			t.Fatalf("reconcile problem = %q, want it to start %q and say the attachment stays owed", msg, want)
		}
		if got, ok := h.staging("v"); !ok || got.Staged || got.StagingPath != "" || !got.ControllerPublished {
			t.Fatalf("staging row = %+v (%v), want only the attachment, owed", got, ok)
		}
	})
}

// TestClaimOverAStagingMadeBeforeTheAttachmentNamesTheWayOut: a claim published through a
// plugin instance without PUBLISH_UNPUBLISH_VOLUME holds the volume's staging when the plugin
// comes back with it, and its staging works from the attachment: a second claim attaches, and
// the plugin refuses to publish it from a staging not made from that attachment. The staging
// cannot be made again under the first claim's mount, so the second claim is rolled back
// (nothing of the first one is touched); before, the error was the plugin's alone. Now it
// says what happened and which release lets the staging be made from the attachment.
// The same when the plugin's new capabilities were recorded before the claim (a `plugin
// status`, the agent's probe, the claim's own probe): admission recorded the attach intent from
// them, and the publish path took it for claim a's attachment and shared it, sending no
// ControllerPublishVolume; claim b was published over the unattached staging, the volume
// recorded attached though nothing attached it.
func TestClaimOverAStagingMadeBeforeTheAttachmentNamesTheWayOut(t *testing.T) {
	t.Parallel()
	for _, statusFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("status first %t", statusFirst), func(t *testing.T) {
			testClaimOverAStagingMadeBeforeTheAttachment(t, statusFirst)
		})
	}
}

func testClaimOverAStagingMadeBeforeTheAttachment(t *testing.T, statusFirst bool) {
	h := newHarness(t, func(cfg *csitest.MemConfig) {
		cfg.Controller.PublishUnpublishVolume = false
		cfg.StageFromAttachment = true
	})
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartKeepingState(func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = true })
	if statusFirst {
		if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
			t.Fatal(err)
		}
	}
	h.mem.ResetCalls()

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	if err == nil {
		t.Fatal("claim b published from a staging the plugin refuses")
	}
	st, _ := h.staging("v")
	for _, want := range []string{`volume "v" was staged at ` + st.StagingPath, "before plugin \"mem\" attached it",
		"`volctl volume release v --alloc a`", "(the claim was rolled back)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim b's error %q does not say %q", err, want)
		}
	}
	a, _ := h.e.ClaimInfo(h.ctx, "v", "a")
	for _, r := range csitest.Requests[csi.NodeUnpublishVolumeRequest](h.mem) {
		if r.TargetPath == a.TargetPath {
			t.Errorf("claim b's rollback unpublished claim a's target %s", r.TargetPath)
		}
	}
	if got := h.rpcs(); slices.Contains(got, csi.RPCNodeUnstageVolume) {
		t.Errorf("RPCs = %v: claim b's failure unstaged what claim a is published from", got)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "a" || live[0].State != store.ClaimPublished {
		t.Fatalf("claims = %+v, want a's alone, published", live)
	}
	// The way out works: a released, b's claim again stages from the attachment.
	h.release("v", "a")
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
}

// TestStagingMadeBeforeTheAttachmentUnderItsOwnClaimsTarget: as
// TestStagingMadeBeforeTheAttachmentIsMadeAgainFromIt, but the claim was cut off after its
// NodePublishVolume succeeded and before that was recorded: left node-staged, its target
// published from the staging. The staging cannot be unstaged under that target (the plugin
// refuses, as the CSI spec has it: NodeUnpublishVolume first), which rolled the claim back.
// The claim's own possible publication is undone first, then the staging made again from the
// attachment, and the claim published.
func TestStagingMadeBeforeTheAttachmentUnderItsOwnClaimsTarget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(cfg *csitest.MemConfig) {
		cfg.Controller.PublishUnpublishVolume = false
		cfg.StageFromAttachment = true
	})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.update(func(tx *store.Tx) error { // as a kill right after NodePublishVolume answered left it
		cl, err := tx.Claims().Find("v", "a")
		if err != nil {
			return err
		}
		cl.State = store.ClaimNodeStaged
		return tx.Claims().Update(&cl)
	})
	h.restartKeepingState(func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = true })
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimPublished {
		t.Fatalf("claims after the re-drive = %+v; want a's published", live)
	}
	// ListVolumes: no attachment is recorded, so whether the plugin has one already (attachedAlready).
	want := []string{csi.RPCListVolumes, csi.RPCControllerPublishVolume, csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}
	if got := h.rpcs(); !slices.Equal(got, want) {
		t.Errorf("RPCs of the re-drive = %v, want %v", got, want)
	}
	h.release("v", "a")
}

// claimInterruptedAt claims as req asks and interrupts the claim (Ctrl-C) while rpc is held at
// the plugin, then, once the claim has returned, lets rpc go on as fault says (its Gate and
// Times are set here) unless the plugin saw the cancellation first: the claim is left where it
// got to, for reconcile.
func (h *harness) claimInterruptedAt(rpc string, fault csitest.Fault, req ClaimRequest) {
	h.t.Helper()
	gate := make(chan struct{})
	fault.Gate, fault.Times = gate, 1
	h.faults.Inject(rpc, fault)
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { _, err := h.e.Claim(ctx, req); done <- err }()
	h.waitInFlight(gate, done)
	cancel()
	// The claim returns on its context, the RPC still held; the gate opens only after. Opened
	// at once, the plugin could answer before the client saw the cancellation, and the claim
	// went on a step (seen under load: left node-staged, interrupted at NodePublishVolume).
	err := <-done
	close(gate)
	if err == nil {
		h.t.Fatalf("the claim interrupted at %s succeeded", rpc)
	}
}
