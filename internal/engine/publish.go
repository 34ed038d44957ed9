package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"golang.org/x/sys/unix"
)

// publishingKey carries, on a publish's ctx, the volume it publishes (store.Volume).
type publishingKey struct{}

// publish drives a claim along the publish path (docs/architecture.md, Claim state machine): taken ->
// ControllerPublishVolume -> controller-published -> NodeStageVolume -> node-staged ->
// NodePublishVolume -> published, each RPC only when the plugin's capabilities call for it.
// Before each RPC, everything it depends on is committed: the claim's state, and the intent the
// RPC may leave behind (a controller publication, a staging), so that whatever happens to this
// process, the release path knows what to undo. The caller holds the volume lock. onPublished
// are events to record in the commit that records the claim published (a restore's), not in one
// of their own.
func (e *Engine) publish(ctx context.Context, c *conn, v store.Volume, cl *store.Claim, ld *loaded, onPublished ...*store.Event) error {
	// The agent stops a plugin only under this lock, taken exclusively around its count of the
	// plugin's mounts and the stop (HoldPluginMountsOf): a publish either holds it first, and the
	// agent leaves the plugin running, or waits for the stop, and its RPCs find the plugin gone
	// rather than reaching one being stopped.
	unlock, err := e.locks.publishing(ctx, c.plugin)
	if err != nil {
		return err
	}
	defer unlock()
	ctx = context.WithValue(ctx, publishingKey{}, v) // admitsAll's volume
	p, err := e.newCheckpoint(ctx, cl, ld)
	if err != nil {
		return err
	}
	// A staging recorded without an attachment, while the plugin attaches now: it was made by
	// an instance without PUBLISH_UNPUBLISH_VOLUME, not from the attachment this claim makes.
	p.stagedUnattached = c.controllerPublishes() && c.stages() && p.st.Staged && !p.st.ControllerPublished
	if cl.State == store.ClaimTaken {
		// The owed expansion's controller step, sent while the volume is off the node (a
		// plugin that expands only offline): the NodeExpandVolume alone follows the publish.
		e.expandBeforeAttach(ctx, c, &v, p)
	}
	looked := false // nodeStage ran in this drive: it staged, or looked at the staging it joined
	for {
		switch cl.State {
		case store.ClaimTaken:
			err = e.controllerPublish(ctx, c, v, p)
		case store.ClaimControllerPublished, store.ClaimNodeStaged:
			if c.controllerPublishes() && !p.st.ControllerPublished {
				// Past the attach step without an attachment: the plugin did not attach then, and
				// does now (it came back from a restart with PUBLISH_UNPUBLISH_VOLUME). Its node
				// calls may need the publish_context; attach before them, recording the intent.
				from := cl.State
				if err = e.controllerPublish(ctx, c, v, p); err == nil {
					if from == store.ClaimNodeStaged {
						// Not back to controller-published: its NodePublishVolume may have
						// been sent, and a release from there would not undo it.
						p.setState(store.ClaimNodeStaged)
					}
					err = e.unstageUnattached(ctx, c, v, p, from == store.ClaimNodeStaged)
				}
				if err == nil {
					continue
				}
				break
			}
			if cl.State == store.ClaimControllerPublished {
				looked = true
				err = e.nodeStage(ctx, c, v, p)
				break
			}
			switch {
			case c.stages() && !p.st.Staged:
				// A restore (or a lost staging) left the claim node-staged with its volume
				// unstaged: stage it again before publishing.
				looked = true
				err = e.nodeStage(ctx, c, v, p)
			case c.stages() && !looked:
				// Driven on from node-staged (a NodePublishVolume cut off, a restore after a
				// reboot) onto a staging recorded staged: it is published from as a join is,
				// only if it still shows what it was staged with. Before, nodeStage and its
				// check were skipped here, and a claim was published from another file system
				// mounted over or in place of the staging since
				// (TestNodeStagedClaimDrivenOnOverACoveredStagingIsNotPublished,
				// TestRestoreOntoAStagingReplacedAtBootIsRefused). Refused so, the claim is
				// left node-staged, not rolled back as a join is: as the staging's last claim,
				// its rollback would send NodeUnstageVolume, and the plugin unmount what
				// covers the staging, not what it staged.
				if cerr := e.stagingCovered(v, c, p.st); cerr != nil {
					err = errors.New(cerr.Error())
				}
			}
			if err == nil {
				err = e.nodePublish(ctx, c, v, p)
			}
		case store.ClaimPublished:
			for _, ev := range onPublished {
				p.event(ev)
			}
			if err := p.flush(ctx, "claim"); err != nil {
				return err
			}
			e.expandOnPublish(ctx, c, v, cl)
			bound, err := e.bind(ctx, cl)
			e.noteRepairs(ctx, cl, bound)
			return err
		default:
			return fmt.Errorf("claim is on the release path (%s)", cl.State)
		}
		if errors.Is(err, errLockLost) {
			return err // nothing more is written: another process may hold the volume
		}
		if err != nil {
			// Keep what was done before the failure (a state reached without an RPC).
			return withFlushError(err, p.flush(ctx, "claim"))
		}
	}
}

// withFlushError is err, a step's failure (nil: none), with ferr, the failure of the flush that records
// what was done before it, when there is one. A flush failing as the step's own commit did
// (the state's file system full, a database met damaged: the one error the store explains) is
// not said twice: before, the claim's error named the database and told what to do twice over
// (TestDiskFullClaimSaysItOnce).
func withFlushError(err, ferr error) error {
	if err == nil {
		return ferr
	}
	if ferr == nil || strings.Contains(err.Error(), ferr.Error()) {
		return err
	}
	return errors.Join(err, ferr)
}

// getStaging returns the volume's staging row, if there is one.
func (e *Engine) getStaging(ctx context.Context, volumeID string) (store.Staging, bool, error) {
	st, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Staging, error) { return tx.Stagings().Get(volumeID) })
	if errors.Is(err, store.ErrNotFound) {
		return store.Staging{VolumeID: volumeID}, false, nil
	}
	return st, err == nil, err
}

func (e *Engine) controllerPublish(ctx context.Context, c *conn, v store.Volume, p *checkpoint) error {
	cl := p.cl
	if c.controllerPublishes() && p.st.ControllerPublished {
		// The volume may already be attached to this node for another claim. The attachment is
		// per volume and node, not per claim: when a claim that got past ControllerPublishVolume
		// still holds it, share it rather than ask again with this claim's capability, which a
		// plugin may rightly refuse as incompatible with the attachment it made.
		u, err := p.usage(ctx)
		if err != nil {
			return err
		}
		if u.attached > 0 {
			cl.PublishContext = p.st.PublishContext
			p.setState(store.ClaimControllerPublished)
			return nil
		}
	}
	if c.controllerPublishes() {
		// ownIntent: the attach intent is this claim's alone, recorded by this command (by
		// admission, or below) before any ControllerPublishVolume was sent for it. A record from
		// before may stand for an attachment volctl made (an earlier attempt's, or one owed).
		ownIntent := p.attachIntent || !p.st.ControllerPublished
		if p.st.ControllerPublished && p.st.NodeID != "" && p.st.NodeID != c.fp.NodeID {
			// The volume is recorded as maybe attached to another node than the one the plugin
			// reports now: its NodeGetInfo node_id changed (a restart). ControllerPublishVolume
			// goes to the node it reports now, and the release detaches the node the record
			// names: left as it is, the new attachment would be forgotten. The intent is
			// recorded anew for the node the RPC goes to. When the record may stand for an
			// attachment (an earlier attempt's, or one a forced detach left), it is undone first,
			// as the release would undo it; admission's intent, taken from the fingerprint
			// before the restart and sent to no node, is only corrected.
			if !p.attachIntent {
				// Not while the volume is handed over to Nomad (forced, this claim already
				// there): the attachment may be Nomad's allocations' now, and volctl never
				// pulls it (keptForNomad). The claim goes no further.
				u, err := p.usage(ctx)
				if err != nil {
					return err
				}
				if h := u.handover; h != nil {
					return fmt.Errorf("plugin %q now reports node %q, and volume %q is recorded attached to node %q: %s",
						c.plugin.ID, c.fp.NodeID, v.ID, p.st.NodeID, keptForNomad(v, p.st.NodeID, *h, ""))
				}
				if err := p.flushDurable(ctx, "claim"); err != nil {
					return err
				}
				if err := e.controllerUnpublish(ctx, c, v, p.st.NodeID); err != nil {
					return err
				}
				e.failpoint("claim:old-node-detached") // recorded attached to the old node still
			}
			p.staging(func(st *store.Staging) { st.NodeID, st.PublishContext = c.fp.NodeID, nil })
			ownIntent = true // the old node's attachment is undone; the new node's is this claim's
		}
		req := controllerPublishRequest(c, v, cl)
		listedNone := false // the plugin said, before the RPC, that nothing attached the volume to its node
		if ownIntent {
			published, checked := e.attachedAlready(ctx, c, v)
			if published {
				return e.attachedOtherwise(v, p, req, nil, false)
			}
			listedNone = checked
		}
		if !p.st.ControllerPublished {
			p.staging(func(st *store.Staging) {
				st.PluginID, st.NodeID, st.ControllerPublished = v.PluginID, c.fp.NodeID, true
			})
		}
		if err := p.flushDurable(ctx, "claim"); err != nil {
			return err
		}
		pc, earlier, err := e.sendControllerPublish(ctx, c, req)
		if err != nil && ownIntent && !earlier && csi.DidNothing(err) {
			// Every attempt answered ABORTED: none attached anything, and the intent, this
			// claim's alone, is withdrawn before the claim fails. Kept, it stood for an
			// attachment of volctl's, and the rollback or reconcile's pass, answered
			// ALREADY_EXISTS by then, detached another orchestrator's whose operation the
			// ABORTED was about (TestAbortedAtEveryAttemptThenAlreadyExistsAtReconcileLeavesTheOtherAttachment).
			p.staging(func(st *store.Staging) { st.ControllerPublished, st.PublishContext = false, nil })
			p.attachIntent = false
			if ferr := p.flushDurable(ctx, "claim"); ferr != nil {
				return errors.Join(err, ferr)
			}
			return err
		}
		if csi.IsAlreadyExists(err) && ownIntent {
			if earlier && listedNone {
				return lostAttachRefused(c, v, req, err)
			}
			return e.attachedOtherwise(v, p, req, err, earlier)
		}
		if err != nil {
			return err
		}
		e.failpoint("rpc:ControllerPublishVolume")
		cl.PublishContext = pc
		p.staging(func(st *store.Staging) { st.PublishContext = pc })
		p.attached = true
		p.setState(store.ClaimControllerPublished)
		return nil
	}
	if p.attachIntent {
		// Admission recorded the intent from the stored fingerprint, and the plugin reached
		// now attaches nothing (it lost PUBLISH_UNPUBLISH_VOLUME in a restart): no
		// ControllerPublishVolume was sent for it, so it is no attachment to keep owed.
		p.staging(func(st *store.Staging) { st.ControllerPublished, st.PublishContext = false, nil })
		p.attachIntent = false
	}
	p.advance(store.ClaimControllerPublished)
	return nil
}

// controllerPublishRequest is the ControllerPublishVolumeRequest of the claim cl's attachment of
// v to the plugin's node. Read-only attachment follows the volume's access mode, not the
// claim's, so every claim of the volume asks for the same attachment and the RPC stays
// idempotent; a read claim is made read-only by NodePublishVolume. The CSI spec lets the CO set
// readonly only when the plugin has PUBLISH_READONLY: without it, the field MUST be false.
func controllerPublishRequest(c *conn, v store.Volume, cl *store.Claim) csi.ControllerPublishVolumeRequest {
	return csi.ControllerPublishVolumeRequest{
		VolumeID: v.ExternalID, NodeID: c.fp.NodeID, Capability: capability(cl),
		ReadOnly: cl.AccessMode.ReaderOnly() && c.fp.Capabilities.Controller.PublishReadonly,
		Secrets:  v.Secrets, VolumeContext: v.Context,
	}
}

// sendControllerPublish sends req and returns the publish_context answered, and whether an
// attempt reached the plugin before the one that answered (sendAnswered's earlier): its answer
// lost, it may have made the attachment.
func (e *Engine) sendControllerPublish(ctx context.Context, c *conn, req csi.ControllerPublishVolumeRequest) (map[string]string, bool, error) {
	pc, earlier, err := controllerAnswer(ctx, e, c, csi.RPCControllerPublishVolume, func(ctx context.Context) (map[string]string, error) {
		return c.client.ControllerPublishVolume(ctx, req)
	})
	if n := csi.MapSize(pc); err == nil && n > csi.MaxPublishContext {
		// The plugin attached the volume, and its answer is not used: a bad answer, final (the
		// same call gets the same one), so a claim is rolled back, detaching it, as after an
		// answer past gRPC's limit. Before, a megabyte of it was recorded with the claim and the
		// staging and sent back in every NodeStageVolume and NodePublishVolume.
		return nil, earlier, badAnswerf("%s: plugin %q answered for volume %q on node %q with a publish_context that holds %d bytes of keys and values (%d entries), "+
			"far past the CSI spec's 4 KiB for a map (volctl takes up to %d): it is not used; fix the plugin",
			csi.RPCControllerPublishVolume, c.plugin.ID, spec.Cut(req.VolumeID, 256), spec.Cut(req.NodeID, 256), n, len(pc), csi.MaxPublishContext)
	}
	return pc, earlier, err
}

// reattach answers a node call (rpc: NodeStageVolume, or NodePublishVolume, which a plugin
// that does not stage works from and a staging one may check the attachment in) refused with
// FAILED_PRECONDITION while the volume is
// recorded attached to the node the plugin reports: the CSI spec's code for a volume not
// published to the node, which a plugin that does not hold the attachment volctl records
// answers (one recorded before a ControllerPublishVolume that never reached the plugin and kept
// through an instance that attached nothing, or the plugin's own records lost; then a reboot).
// ControllerPublishVolume is idempotent for the same volume, node and capability, so it is sent
// again, once, under the attachment already recorded (durable), and what it returns recorded
// with it, and the node call sent again (again) with the publish_context now recorded; its
// error is returned. Only when this command has not sent it for the claim already (the attach
// step found the attachment recorded: a restore, or a claim sharing it): right after an
// attachment answered OK the refusal is the plugin's final word, and a final error is not
// retried. When this does not apply, nodeErr is returned as it is; when the
// ControllerPublishVolume fails too, nodeErr stands, and says so.
func (e *Engine) reattach(ctx context.Context, c *conn, v store.Volume, p *checkpoint, rpc string, nodeErr error, again func(publishContext map[string]string) error) error {
	if !csi.IsFailedPrecondition(nodeErr) || !c.controllerPublishes() || p.attached ||
		!p.st.ControllerPublished || p.st.NodeID != c.fp.NodeID {
		return nodeErr
	}
	pc, _, err := e.sendControllerPublish(ctx, c, controllerPublishRequest(c, v, p.cl))
	if err != nil {
		return fmt.Errorf("%w (volume %q is recorded attached to node %q; ControllerPublishVolume sent again for it failed too: %v)", nodeErr, v.ID, c.fp.NodeID, err)
	}
	p.staging(func(st *store.Staging) { st.PublishContext = pc })
	p.attached = true
	p.event(&store.Event{Kind: "claim-reattach", VolumeID: v.ID, PluginID: c.plugin.ID, Alloc: p.cl.Alloc,
		Message: fmt.Sprintf("plugin %q answered %s that volume %q is not published to node %q, which volctl records it attached to: ControllerPublishVolume sent again", c.plugin.ID, rpc, v.ID, c.fp.NodeID)})
	// Recorded before the node call is sent again, as a first attach's publish_context is: held
	// in memory only, a kill after that call left the old one recorded for good, and every
	// restore after the next reboot staged with it
	// (TestJoinKilledAfterItsReattachedPublishKeepsTheNewPublishContext).
	if err := p.flushDurable(ctx, "claim"); err != nil {
		return err
	}
	return again(p.publishContext(c))
}

// publishContext is the publish_context the claim's node calls send: the attachment's, as
// recorded with it, when the plugin attaches and the volume is attached. The attachment is per
// volume and node, and so is what ControllerPublishVolume returned for it; the claim's own copy
// is what its own attach step saw, which is stale when another claim made the attachment (this
// claim passed its attach step through a plugin that attached nothing then) or made it again
// (a node ID change). The claim's copy follows, so that its record says what was sent.
func (p *checkpoint) publishContext(c *conn) map[string]string {
	if c.controllerPublishes() && p.st.ControllerPublished && !maps.Equal(p.cl.PublishContext, p.st.PublishContext) {
		p.cl.PublishContext = maps.Clone(p.st.PublishContext)
	}
	return p.cl.PublishContext
}

// attachedAlready says whether the plugin lists volume v published to its node already (ListVolumes'
// published_node_ids, asked under the plugin's controller lock and bounded as a teardown's
// check is) while volctl records no attachment of it: the attachment is another orchestrator's
// (another volctl state dir on the same plugin, Nomad after a handover) or made by hand, and
// possibly in use. ControllerPublishVolume is idempotent: a plugin answers OK to the same
// request for an attachment it has, so the claim would take it for its own, and its release,
// or its rollback when the node calls are refused (a second staging path), would detach the
// volume from under that other user's mounts. Only a plugin with LIST_VOLUMES_PUBLISHED_NODES
// can say; another is not asked, and a listing that fails or runs past its bound is logged and
// not held against the claim. checked says the plugin was asked and answered: a published
// false is then its word that nothing attached the volume to its node.
func (e *Engine) attachedAlready(ctx context.Context, c *conn, v store.Volume) (published, checked bool) {
	err := e.controllerCheck(ctx, c, func(ctx context.Context) error {
		var err error
		published, err = e.listsPublished(ctx, c, v.ExternalID, c.fp.NodeID)
		e.failpoint("check:attached-already") // the claim taken, no intent recorded yet
		return err
	})
	if err != nil {
		e.log.Warn(fmt.Sprintf("plugin %q: whether volume %q is attached to node %q already, not by volctl, could not be checked", c.plugin.ID, v.ID, c.fp.NodeID), "err", err)
		return false, false
	}
	return published, publishedCheck(c) != ""
}

// attachedOtherwise is an attachment of the volume to the plugin's node that is not this
// claim's, while the attach intent is this claim's own (ownIntent): either the plugin lists
// it before any ControllerPublishVolume was sent (attachedAlready; err nil), or it answered
// ControllerPublishVolume ALREADY_EXISTS (err), the CSI spec's "already published to this node
// with an incompatible capability or read-only flag". Every attempt of a claim sends the same
// request, which a plugin answers OK when it made the attachment itself, so the attachment is
// not this claim's: another CO's, or made by hand, possibly in use. The intent is withdrawn, to
// be committed by the failure's flush, so that the rollback's release has no attachment to
// undo and sends no ControllerUnpublishVolume (an attachment volctl records for other claims
// is never this claim's intent: it is shared, or kept while they hold it). The error is final
// (a conflict) and names the volume, the node and what the claim asked for. earlier says an
// attempt of this ControllerPublishVolume reached the plugin before the one answered
// ALREADY_EXISTS, its answer lost, and the plugin did not say beforehand that nothing
// attached the volume (it cannot list, or its listing failed; else lostAttachRefused): the
// attachment may be that attempt's, refused by a plugin that is not idempotent, or another's
// made meanwhile, which volctl cannot tell apart; it is left as any attachment that may be in
// use is, and the error says both.
func (e *Engine) attachedOtherwise(v store.Volume, p *checkpoint, req csi.ControllerPublishVolumeRequest, err error, earlier bool) error {
	p.staging(func(st *store.Staging) { st.ControllerPublished, st.PublishContext = false, nil })
	p.attachIntent = false
	if err == nil {
		return conflictf("volume %q (external ID %q) is attached to node %q already, and not by this volctl state dir (plugin %q lists it published there): "+
			"another orchestrator (another volctl state dir, or Nomad) may be using it; volctl sent no ControllerPublishVolume and leaves that attachment as it is: "+
			"release the volume where it is claimed, or, if nothing uses it, detach it with the storage provider's tools, then claim again",
			v.ID, v.ExternalID, req.NodeID, v.PluginID)
	}
	if earlier {
		return fmt.Errorf("volume %q is attached to node %q already, otherwise than this claim asks (%s/%s, read-only %t): %w; "+
			"an earlier attempt of the same ControllerPublishVolume reached plugin %q and its answer was lost, so the attachment may be that attempt's (a plugin that made it should answer OK to the same request), "+
			"or another orchestrator's made meanwhile: volctl could not learn from the plugin before that attempt that nothing had attached it (the plugin cannot list the nodes a volume is published to, or that listing failed), so it cannot tell them apart, and "+
			"volctl left that attachment as it is, since what made it may be using the volume: find what holds it with the storage provider's tools, "+
			"detach it there once nothing uses it, then claim again",
			v.ID, req.NodeID, req.Capability.AccessMode, req.Capability.AttachmentMode, req.ReadOnly, err, v.PluginID)
	}
	return fmt.Errorf("volume %q is attached to node %q already, otherwise than this claim asks (%s/%s, read-only %t), and not by this claim: %w; "+
		"volctl left that attachment as it is, since what made it may be using the volume: find what holds it with the storage provider's tools, "+
		"detach it there once nothing uses it, then claim again",
		v.ID, req.NodeID, req.Capability.AccessMode, req.Capability.AttachmentMode, req.ReadOnly, err)
}

// lostAttachRefused is a ControllerPublishVolume answered ALREADY_EXISTS after an earlier
// attempt of the same request reached the plugin and its answer was lost, where the plugin
// listed no attachment of the volume to its node before the first attempt (attachedAlready,
// checked): the attachment is that attempt's, which a plugin that is not idempotent refuses
// to acknowledge (the CSI spec has it answer OK to the same request). The claim's attach
// intent stays recorded, as after any final error that follows a lost answer (sendAnswered's
// earlier), so the rollback's release sends ControllerUnpublishVolume for it. Before, the
// claim took it for another orchestrator's (attachedOtherwise), withdrew the intent and left
// the attachment it had made recorded nowhere
// (TestAlreadyExistsAfterALostAttachIsTheClaimsOwnWhereThePluginListedNone). The error is final.
func lostAttachRefused(c *conn, v store.Volume, req csi.ControllerPublishVolumeRequest, err error) error {
	return fmt.Errorf("volume %q on node %q: %w; an earlier attempt of the same ControllerPublishVolume reached plugin %q and its answer was lost, "+
		"and the plugin listed no attachment of the volume to that node before it (%s), so the attachment is that attempt's, "+
		"which the plugin refuses to acknowledge (the CSI spec has a plugin answer OK to the same request): the claim is rolled back, "+
		"detaching it (ControllerUnpublishVolume); fix the plugin, then claim again",
		v.ID, req.NodeID, err, c.plugin.ID, publishedCheck(c))
}

// unstageUnattached undoes, right after the claim's ControllerPublishVolume, a staging of the
// volume made (or maybe made: its path recorded) before the volume was attached, by a plugin
// instance without PUBLISH_UNPUBLISH_VOLUME: it was not made with the attachment's
// publish_context, and a plugin whose staging works from the attachment (a device it logs in
// to) refuses to publish from it. When no other claim uses the staging, nothing is published
// from it: NodeUnstageVolume (the staging recorded until it answers, as a release's unstage)
// leaves it to nodeStage, which stages it again with the attachment's publish_context; a claim
// node-staged (mayBePublished: its NodePublishVolume may have been sent, its answer lost) has
// its target unpublished first, as the CSI spec has the CO do before NodeUnstageVolume, and
// published again after. When other claims use the staging, it stays: they are published from
// it, and the claim publishes onto it as it is.
func (e *Engine) unstageUnattached(ctx context.Context, c *conn, v store.Volume, p *checkpoint, mayBePublished bool) error {
	if !c.stages() || p.st.StagingPath == "" {
		return nil
	}
	u, err := p.usage(ctx)
	if err != nil || u.staging > 0 {
		return err
	}
	if err := p.flush(ctx, "claim"); err != nil { // the claim attached, before the unstage
		return err
	}
	if mayBePublished {
		if _, err := e.unpublishTarget(ctx, c, v, p); err != nil {
			return fmt.Errorf("volume %q was staged at %s before plugin %q attached it, so not from the attachment, and unpublishing alloc %q's target to stage it again failed: %w",
				v.ID, p.st.StagingPath, c.plugin.ID, p.cl.Alloc, err)
		}
	}
	if err := e.unstage(ctx, c, v, p.st, p); err != nil {
		return fmt.Errorf("volume %q was staged at %s before plugin %q attached it, so not from the attachment, and unstaging it to stage it again failed: %w",
			v.ID, p.st.StagingPath, c.plugin.ID, err)
	}
	p.staging(func(st *store.Staging) { st.Staged = false })
	p.stagedUnattached = false // staged again by nodeStage, from the attachment
	return nil
}

// stagedBeforeAttach words NodePublishVolume's FAILED_PRECONDITION (err) for a claim published
// onto a staging made before the volume was attached (p.stagedUnattached: by a plugin instance
// without PUBLISH_UNPUBLISH_VOLUME), which other claims are published from, so that
// unstageUnattached could not make it again from the attachment: a plugin whose staging works
// from the attachment refuses it. The way out is the release of those claims: the next claim
// stages from the attachment.
func (e *Engine) stagedBeforeAttach(ctx context.Context, c *conn, v store.Volume, p *checkpoint, err error) error {
	claims, verr := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume(v.ID) })
	if verr != nil {
		return err
	}
	way := releaseThem(claims, "release the claims published from it", func(h store.Claim) bool {
		return h.ID != p.cl.ID && !h.Releasing && (h.State == store.ClaimNodeStaged || h.State == store.ClaimPublished)
	})
	return fmt.Errorf("volume %q was staged at %s before plugin %q attached it, so not from the attachment's publish_context, and other claims are published from that staging, so it cannot be staged again now: %w; "+
		"%s, then claim the volume again, which stages it from the attachment", v.ID, p.st.StagingPath, c.plugin.ID, err, way)
}

func (e *Engine) nodeStage(ctx context.Context, c *conn, v store.Volume, p *checkpoint) error {
	cl := p.cl
	if c.stages() && p.st.Staged {
		// Joining the staging there is: what it shows is what this claim is published from.
		// A plugin that answered another volume's NodeStageVolume by mounting that volume over
		// this one's staging path (refused for that volume, whose own path it left bare) had
		// this claim published from the other volume's file system, the alloc handed its data
		// (TestStageMountedOverAnotherVolumesStagingIsNotPublishedAsIt).
		if err := e.stagingCovered(v, c, p.st); err != nil {
			return err
		}
	}
	// One staging per volume: a later claim shares the one there is.
	if c.stages() && !p.st.Staged {
		if err := e.attachedElsewhere(ctx, c, v, p, csi.RPCNodeStageVolume); err != nil {
			return err
		}
		if err := e.outsideTopology(ctx, c, v, p, csi.RPCNodeStageVolume); err != nil {
			return err
		}
		path := stagingPath(e.cfg.StateDir, v.PluginID, v.ID)
		if err := e.locks.makeDirs(ctx, path); err != nil {
			return e.linkedStaging(ctx, v, p, c, path, err)
		}
		if p.st.StagingPath != path {
			p.staging(func(st *store.Staging) { st.PluginID, st.StagingPath = v.PluginID, path })
		}
		p.stageIntent = false // NodeStageVolume may be sent from here on
		if err := p.flush(ctx, "claim"); err != nil {
			return err
		}
		if err := e.unstageUnrecorded(ctx, c, v, p, path); err != nil {
			return err
		}
		req := csi.NodeStageVolumeRequest{
			VolumeID: v.ExternalID, PublishContext: p.publishContext(c), StagingPath: path,
			Capability: capability(cl), Secrets: v.Secrets, VolumeContext: v.Context,
		}
		stage := func(publishContext map[string]string) error {
			req.PublishContext = publishContext
			// Before it is sent again within this command: a mount the last attempt left
			// (UNAVAILABLE once the plugin mounted) is unstaged first, as after a kill
			// (TestClaimWhoseStageMountedThenAnsweredUnavailableStacksNoSecondMount).
			return e.retryLooking(ctx, c, csi.RPCNodeStageVolume, func(ctx context.Context) (bool, error) {
				return false, e.unstageUnrecorded(ctx, c, v, p, path)
			}, func(ctx context.Context) error {
				return c.client.NodeStageVolume(ctx, req)
			})
		}
		top := e.topLevels(stagingDir)
		err := stage(req.PublishContext)
		if err != nil {
			err = e.reattach(ctx, c, v, p, csi.RPCNodeStageVolume, err, stage)
		}
		if err != nil && !p.stillStaged(ctx, err) {
			return err
		}
		e.failpoint("rpc:NodeStageVolume")
		if err := e.mountedOverTop(v, c, csi.RPCNodeStageVolume, top); err != nil {
			return err
		}
		if err := e.checkStaging(v, c, path); err != nil {
			return err
		}
		if err := e.mountedOver(v, c, csi.RPCNodeStageVolume,
			sharedDir{"the plugin's staging directory", filepath.Dir(path), fmt.Sprintf("the stagings of plugin %q's other volumes, which their claims are published from", v.PluginID)}); err != nil {
			return err
		}
		shows, err := e.stagingShows(path)
		if err != nil {
			// Not recorded staged: the claim is left for reconcile, whose stage finds the
			// mount left (unstageUnrecorded), as after a kill here.
			return fmt.Errorf("volume %q: reading what its staging %s shows once %s answered: %w", v.ID, path, csi.RPCNodeStageVolume, err)
		}
		if shows == (stagingMark{}) && p.st.MountRoot != "" && !p.stagedAgain {
			// A NodeStageVolume answered OK with nothing mounted, of a staging that had a mount
			// before the reboot (a restore's, or a new claim's beside claims a reboot left): a
			// plugin answering from its own record of it (as the CSI host-path driver does),
			// which is taken back (its targets, then the staging) and asked once more in this
			// pass. Recorded staged, the publish bound the bare staging directory, refused every
			// pass, the alloc never given its volume back
			// (TestRestoreAfterARebootThroughAPluginThatRemembersItsStageMountsTheVolume); a new
			// claim's, its mark written over, left the restore no mark to know it by
			// (TestNewClaimAfterARebootThroughAPluginThatRemembersItsStageDoesNotLeaveTheFirstClaimUnrestorable).
			p.stagedAgain = true
			e.log.Info("restore: the plugin answered NodeStageVolume OK with nothing mounted at the staging, and is asked once more after NodeUnstageVolume",
				"volume", v.ID, "alloc", cl.Alloc, "plugin", c.plugin.ID, "staging", path)
			if err := e.unstageToStageOnce(ctx, c, v, p, path, nil); err != nil {
				return err
			}
			return e.nodeStage(ctx, c, v, p)
		}
		p.staging(func(st *store.Staging) {
			st.Staged = true
			st.MountDev, st.MountRoot, st.MountIno, st.MountBirth = shows.dev, shows.root, shows.ino, shows.birth
		})
	}
	p.setState(store.ClaimNodeStaged)
	return nil
}

// stagingMark is what a staging path's topmost mount shows: its file system and root within it
// (mountRoot, to find it among mounts stacked at the path), and the directory it shows, by inode
// and birth time (what it is: the same through every mount namespace and after a rename of its
// source on its disk, and not given to another file system as a freed mount ID or anonymous
// device number of a tmpfs, NFS or FUSE mount is). Zero when nothing is mounted at the path.
type stagingMark struct {
	mountRoot
	ino   uint64
	birth int64 // unix nanoseconds; 0 where the file system keeps none
}

// stagingShows is what the topmost mount at the staging path shows (mountRoots: statmount(2),
// or a read of the table before Linux 6.8, and a statx): zero when nothing is mounted at the
// path itself (a plugin that stages below it, or nowhere) or the MountTable cannot say (a
// test's). A read that fails is an error, never "nothing there": taken so, a check passed, a
// release's NodeUnstageVolume unmounting a cover and a claim published from one
// (TestReleaseOverACoveredStagingWithItsMountUnreadableSendsNoUnstage,
// TestNodeStagedClaimIsNotDrivenOntoACoverWithItsMountUnreadable).
func (e *Engine) stagingShows(path string) (stagingMark, error) {
	mr, ok := e.cfg.Mounts.(mountRoots)
	if !ok {
		return stagingMark{}, nil
	}
	real := e.realPath(path)
	roots, err := mr.MountRoots(real)
	if err != nil {
		return stagingMark{}, err
	}
	if roots[real].root == "" {
		return stagingMark{}, nil
	}
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, real, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_INO|unix.STATX_BTIME, &sx); err != nil {
		return stagingMark{}, &os.PathError{Op: "statx", Path: real, Err: err}
	}
	if sx.Mask&unix.STATX_INO == 0 {
		return stagingMark{}, fmt.Errorf("statx %s: the file system gave no inode number", real)
	}
	m := stagingMark{mountRoot: roots[real], ino: sx.Ino}
	if sx.Mask&unix.STATX_BTIME != 0 {
		m.birth = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	}
	return m, nil
}

// same says whether what a staging path shows now (now) is what it showed once staged (m): the
// same directory, by device, inode and birth time. Its root's name is not compared: a rename of
// the source directory on its disk changes it and not what the mount shows
// (TestStagingWhoseSourceDirectoryWasRenamedIsJoined).
func (m stagingMark) same(now stagingMark) bool {
	return m.dev == now.dev && m.ino == now.ino && m.birth == now.birth
}

// stagingCovered refuses to publish a claim from volume v's staging when what the staging
// showed once staged (st.Mount*) is not what its topmost mount shows now: something stacked over
// it since (the table says how many), or it replaced. The mounts a plugin's own NodeStageVolume
// stacked are what it was staged with. A first version compared the two topmost mounts,
// refusing such a plugin's joins and advising the unmount of its own top mount, and passing a
// staging covered twice (TestStagingStackedByThePluginsOwnStageIsJoined,
// TestStageMountedOverAnotherVolumesStagingIsNotPublishedAsIt); a second compared mount IDs,
// another in every mount namespace and given again once freed
// (TestJoinFromAnotherMountNamespaceSharingTheStateDir, TestStagingReplacedByAMountWithTheReusedIDIsNotJoined);
// a third, device and root, both given again to another tmpfs mounted in the place of one
// (TestStagingTmpfsReplacedByAnotherTmpfsIsNotJoined). A staging with nothing mounted at its
// path now is left to the target's check, which refuses a claim published from a bare staging
// (bareStaging).
func (e *Engine) stagingCovered(v store.Volume, c *conn, st store.Staging) error {
	over, replaced, err := e.stagingCover(st)
	switch {
	case err != nil:
		return err
	case over > 0:
		times := "once"
		if over > 1 {
			times = fmt.Sprintf("%d times", over)
		}
		return conflictf("volume %q's staging %s has %d mount(s) stacked over the one it was staged with (plugin %q, or someone by hand, mounted there since: a stage of another volume at the wrong path?): "+
			"a claim published from it would be handed that, not the volume; nothing was published: unmount them (`%s`, %s), then claim again",
			v.ID, st.StagingPath, over, c.plugin.ID, shellquote.Command("umount", st.StagingPath), times)
	case !replaced:
		return nil
	}
	return conflictf("volume %q's staging %s no longer shows what it was staged with (its mounts there were unmounted, and another mounted in their place, since): "+
		"a claim published from it would be handed that, not the volume; nothing was published: unmount what is there (`%s`, until `findmnt %s` lists nothing), "+
		"then release the volume's claims on this host (the last release unstages it: `%s`), and claim it again, which stages it anew",
		v.ID, st.StagingPath, shellquote.Command("umount", st.StagingPath), shellquote.Arg(st.StagingPath), shellquote.Command("volctl volume detach", v.ID))
}

// stagingCover compares what staging st's path shows now with what it showed once staged
// (st.Mount*): over is how many mounts are stacked over the recorded one, replaced that the
// topmost is another and the recorded one is not below it. Neither when nothing is recorded
// (an older volctl's staging, nothing mounted at the path then, a test's table), nothing is
// mounted there now, or it shows what it did; the table is read for the stack only then.
func (e *Engine) stagingCover(st store.Staging) (over int, replaced bool, err error) {
	if st.MountRoot == "" || st.StagingPath == "" {
		return 0, false, nil
	}
	was := stagingMark{mountRoot: mountRoot{dev: st.MountDev, root: st.MountRoot}, ino: st.MountIno, birth: st.MountBirth}
	return e.coverOf("staging", st.StagingPath, was)
}

// coverOf is stagingCover's comparison of what path (a staging, or a claim's target: what)
// shows now with was, what it showed when recorded.
func (e *Engine) coverOf(what, path string, was stagingMark) (over int, replaced bool, err error) {
	sr, ok := e.cfg.Mounts.(stackReader)
	if !ok {
		return 0, false, nil
	}
	now, err := e.stagingShows(path)
	if err != nil {
		return 0, false, fmt.Errorf("reading what the %s %s shows: %w", what, path, err)
	}
	if now.root == "" || was.same(now) {
		return 0, false, nil
	}
	stack, err := sr.StackAt(e.realPath(path))
	if err != nil {
		return 0, false, err
	}
	// Below the topmost, which is not what was staged: the recorded mount by what the table
	// gives of it.
	for i := len(stack) - 2; i >= 0; i-- {
		if stack[i] == was.mountRoot {
			return len(stack) - 1 - i, false, nil
		}
	}
	return 0, true, nil
}

// checkStaging checks what the plugin left at volume v's staging path after answering
// NodeStageVolume with OK, before the volume is recorded staged: the directory volctl made
// there (the CO's, CSI spec) must still be one, not a symlink. A plugin that "stages" by
// linking the path to a directory of its own has every later check of the staging
// (checkTarget's bare staging, another volume's data) look at the link, not at what its
// NodePublishVolume publishes from, and its own mount behind the link was never the staging
// volctl records. A link is final (errBadAnswer), as checkTarget's refusal of a linked
// target is: the claim is rolled back, and the rollback's NodeUnstageVolume finds the link
// there for the plugin to remove (stagingRecorded). Anything else (the path gone, a link
// above it) is left for the publish that follows, which refuses it by name. The cost is one
// open of the staging path, not followed.
func (e *Engine) checkStaging(v store.Volume, c *conn, path string) error {
	real := e.realPath(path)
	s, err := openNoFollow(e.cfg.StateDir, real, createNothing)
	var se *symlinkError
	if !errors.As(err, &se) || se.Component != filepath.Clean(real) {
		if err == nil {
			s.close()
		}
		return nil
	}
	return badAnswerf("%s: plugin %q answered OK for volume %q, but the staging path %s is %s: the plugin did not stage the volume there "+
		"(the staging path is the directory volctl made for it, which the plugin replaced)",
		csi.RPCNodeStageVolume, c.plugin.ID, v.ID, path, linkWhat(real))
}

// linkWhat says what the symlink at path is: "a symlink to "dest"", or "a symlink" when it
// cannot be read.
func linkWhat(path string) string {
	if dest, err := os.Readlink(path); err == nil {
		return fmt.Sprintf("a symlink to %q", dest)
	}
	return "a symlink"
}

// linkedStaging is nodeStage's answer to makeDirs's refusal err of volume v's staging path
// (path), as linkedTarget is for a target. A symlink at the staging path itself, of a claim not
// degraded, is final, never left for a reconcile that would find it there every pass and
// refuse it again, the claim never settled. Whose link it is, the staging row says. Its
// staging path is recorded before any NodeStageVolume of the volume is sent (by admission,
// recordIntents, or by nodeStage's flush before the RPC), by any claim, and cleared only once
// NodeUnstageVolume answered (undoUnused), so:
//   - no staging path recorded when this operation began, or only the one this claim's own
//     admission recorded where none was (p.stageIntent): no NodeStageVolume of the volume was
//     sent since it was last unstaged, so the link was
//     put there by hand or by another program. The staging intent is dropped (when no other
//     claim uses the staging), so the rollback sends no NodeUnstageVolume, which the plugin
//     would follow through the link; the claim is rolled back as a conflict saying to remove
//     it;
//   - otherwise a NodeStageVolume of the volume may have reached the plugin since it was last
//     unstaged, its answer lost or never checked (UNAVAILABLE after the plugin acted, a
//     cut-off, a record overwritten since by a failure met before another RPC, another
//     claim's stage cut off, a command killed): the link may be the plugin's. It is taken for
//     the plugin's answer (errBadAnswer) and the staging stays recorded, so the rollback
//     sends the plugin NodeUnstageVolume (which may remove its own link: stagingRecorded
//     leaves it there) before any ControllerUnpublishVolume: the volume is never detached
//     under the plugin's staging.
//
// A link above the staging path (a directory of volctl's own replaced), and a degraded claim's
// link (published once, being restored: held, never rolled back), stay errors left for
// reconcile, saying to remove the link.
func (e *Engine) linkedStaging(ctx context.Context, v store.Volume, p *checkpoint, c *conn, path string, err error) error {
	var se *symlinkError
	if !errors.As(err, &se) {
		return fmt.Errorf("staging path: %w", err)
	}
	if se.Component != filepath.Clean(path) || p.cl.Degraded {
		se.Context, se.Advice = fmt.Sprintf("volume %q's staging path %s", v.ID, path), ownPathAdvice(se.Component, path)
		return fmt.Errorf("staging path: %w", err)
	}
	if !p.stageIntent {
		return badAnswerf("%s: volume %q's staging path %s is %s, and its staging was recorded before this command: a %s of the volume "+
			"may have reached plugin %q since it was last unstaged (this claim's or another's, its answer lost or never checked), so the link is taken for the plugin's own "+
			"and the volume is not detached under it: the plugin did not stage the volume there; the rollback sends it %s, which may remove its link, before any %s",
			csi.RPCNodeStageVolume, v.ID, path, linkWhat(path), csi.RPCNodeStageVolume, c.plugin.ID, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume)
	}
	u, uerr := p.usage(ctx)
	if uerr != nil {
		return uerr
	}
	if u.staging == 0 && p.st.StagingPath != "" {
		p.staging(func(st *store.Staging) { st.StagingPath = "" }) // no NodeUnstageVolume through the link
	}
	points := ""
	if dest, lerr := os.Readlink(path); lerr == nil {
		points = fmt.Sprintf("it points to %q, and ", dest)
	}
	se.Context = fmt.Sprintf("volume %q's staging path", v.ID)
	se.Advice = fmt.Sprintf("%sno %s of the volume was sent since it was last unstaged, so it was put there by hand or by another program: "+
		"volctl sends the plugin nothing through it; remove the link with `rm %s`, which leaves what it points to, and claim again",
		points, csi.RPCNodeStageVolume, path)
	return &kindWrap{kind: ErrConflict, err: err}
}

// emptyTargets lists the targets of volume v's claims other than p's that count as its
// staging's users (countUsage: node-staged and past), when each holds nothing (the mount
// table, as mountsLeft reads it) and so publishes nothing from the staging: ok. One that holds
// something, as p's own target, is published from the staging as it is: not ok.
func (e *Engine) emptyTargets(ctx context.Context, v store.Volume, p *checkpoint) (others []store.Claim, ok bool, err error) {
	if held, err := e.mountsLeft(p.cl.TargetPath); err != nil || len(held) > 0 {
		return nil, false, err
	}
	claims, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume(v.ID) })
	if err != nil {
		return nil, false, err
	}
	for _, o := range claims {
		if o.ID == p.cl.ID || o.State != store.ClaimNodeStaged && o.State != store.ClaimPublished && o.State != store.ClaimUnpublishing {
			continue
		}
		if held, err := e.mountsLeft(o.TargetPath); err != nil || len(held) > 0 {
			return nil, false, err
		}
		others = append(others, o)
	}
	return others, true, nil
}

// ownPathAdvice is a symlinkError's advice for a link at component, on the way to (or at)
// path, a path of volctl's own under its state dir, which no one chooses: removing the link,
// not what it points to, then reconcile, never "use the path it points to".
func ownPathAdvice(component, path string) string {
	if component == filepath.Clean(path) {
		what := "it"
		if dest, err := os.Readlink(component); err == nil {
			what = fmt.Sprintf("it points to %q: the link", dest)
		}
		return fmt.Sprintf("%s was left there by a plugin or by hand, at volctl's own path: remove the link with `rm %s`, which leaves what it points to, then run `volctl reconcile`", what, component)
	}
	return fmt.Sprintf("it is a directory of volctl's own, replaced by hand or by a program: remove the link with `rm %s`, which leaves what it points to, then run `volctl reconcile`", component)
}

// unstageUnrecorded sends NodeUnstageVolume before a staging's NodeStageVolume when something
// is mounted at the staging path (or below it) though the volume is recorded unstaged and no
// other claim uses its staging: an earlier command sent NodeStageVolume and died before
// recording its answer (a kill, a power loss that kept the record out), or the record was lost.
// CSI makes NodeStageVolume idempotent, but a plugin that mounts without looking first stacks
// a second mount over the staging path, which its NodeUnstageVolume, unmounting once, leaves
// behind, and the volume's release would fail on it at every try
// (`TestCrashAfterNodeStageAgainstARemountingPlugin`). Skipping NodeStageVolume instead would
// trust a mount the plugin's current instance may not have made, or made with another publish
// context (a plugin that attaches now): undone, the staging is made again by this instance
// with this claim's publish context. What the plugin leaves mounted is an error naming the
// path (checkUnmounted); the claim is rolled back, or held for reconcile. A first staging costs
// one open of the empty staging directory (mountsLeft).
//
// A restore (a degraded claim, driven because the staging was found unmounted) that finds it
// mounted again has its own NodeStageVolume to thank (answered with an error once the plugin
// mounted: a quota, its own record), and sent again, a plugin that mounts without looking first
// stacked a second mount (TestRestoreStageThatMountedThenAnsweredInternalStacksNoSecondMount).
// The plugin may still hold the claim's own target, though, and NodeUnstageVolume before its
// NodeUnpublishVolume breaks CSI's order (a plugin refuses it, and the restore would fail at
// every re-drive: TestAgentHoldsADegradedClaimAndRedrivesItWithBackoff): the claim's target,
// which holds nothing (as the restore found it), is sent NodeUnpublishVolume first. A target
// that holds something, or a staging other claims use, is staged as before.
func (e *Engine) unstageUnrecorded(ctx context.Context, c *conn, v store.Volume, p *checkpoint, path string) error {
	left, err := e.mountsLeft(path)
	if err != nil {
		return fmt.Errorf("checking the mount table for volume %q's staging at %s before %s: %w", v.ID, path, csi.RPCNodeStageVolume, err)
	}
	if len(left) == 0 {
		return nil
	}
	return e.unstageToStageOnce(ctx, c, v, p, path, left)
}

// takeBackWayOut is what a refused take-back of claim cl's staging (unstageToStageOnce, nothing
// mounted) leaves: a restore's claim held for reconcile, which a release frees; a new claim,
// rolled back, claimed again once the plugin takes the call.
func takeBackWayOut(cl *store.Claim) string {
	if cl.Degraded {
		return fmt.Sprintf("the claim stays held for `volctl reconcile`, which tries again; `%s` frees it", releaseCommand(*cl))
	}
	return "the claim is rolled back: claim again once the plugin takes that call"
}

// unstageToStageOnce sends NodeUnstageVolume of volume v's staging at path, which the state
// records unstaged, after NodeUnpublishVolume of its claims' targets that hold nothing, so
// that the plugin stages it once: left, the mounts found there (unstageUnrecorded); none, a
// restore's NodeStageVolume answered OK with nothing mounted (nodeStage's once more).
func (e *Engine) unstageToStageOnce(ctx context.Context, c *conn, v store.Volume, p *checkpoint, path string, left []string) error {
	u, err := p.usage(ctx)
	if err != nil {
		return err
	}
	if u.staging > 0 || p.cl.Degraded {
		// The volume's other claims past node-staged use no staging recorded unstaged while
		// their targets hold nothing (a reboot took their mounts, restageIfLost marked the
		// staging unstaged): counted users, a second claim's restore staged over the first's
		// mount (TestRestoreStageThatMountedThenAnsweredInternalStacksNoSecondMountWithTwoClaims),
		// and so did a new claim's stage run again after a kill, or retried after an UNAVAILABLE
		// once it mounted, beside a claim published before the reboot
		// (TestClaimAfterARebootKilledAtItsStageThenRunAgainStacksNoSecondMount,
		// TestClaimAfterARebootWhoseStageMountedThenAnsweredUnavailableStacksNoSecondMount).
		// A target that holds something publishes from the staging as it is: staged over, as before.
		others, ok, err := e.emptyTargets(ctx, v, p)
		if err != nil || !ok {
			return err
		}
		targets := make([]string, len(others))
		for i, o := range others {
			targets[i] = o.TargetPath
		}
		// Worded for what made the mount: a new claim's own earlier NodeStageVolume is no
		// restore's (TestNewClaimAfterARebootWhoseOtherTargetsUnpublishFailsDoesNotBlameARestore).
		whose, again := "a restore's "+csi.RPCNodeStageVolume+", answered with an error once the plugin mounted", "run `volctl reconcile`"
		if !p.cl.Degraded {
			whose, again = "an earlier "+csi.RPCNodeStageVolume+" whose answer was not recorded (a kill, a lost answer), beside claims whose mounts a reboot took", "claim again"
		}
		if len(left) == 0 {
			// Nothing mounted: this claim's own NodeStageVolume answered OK from the plugin's
			// record (TestNewClaimStageTakeBackRefusedDoesNotSayTheRolledBackClaimStaysHeld).
			whose = csi.RPCNodeStageVolume + " answered OK with nothing mounted: the plugin's own record of the staging before the reboot"
		}
		e.log.Info("the staging of a claim is mounted though recorded unstaged ("+whose+"): sending NodeUnpublishVolume of the volume's claims' targets, which hold nothing, then NodeUnstageVolume, so that the plugin stages it once",
			"volume", v.ID, "alloc", p.cl.Alloc, "staging", path, "targets", targets)
		unpublished := func(err error) error {
			if len(left) == 0 {
				// Nothing is mounted there: no unmount by hand to advise
				// (TestRestoreStageOnceMoreWhoseUnpublishIsRefusedDoesNotSayTheStagingIsMounted).
				return fmt.Errorf("volume %q's staging at %s: %s, and %s of its claims' targets, sent before %s to take it back so that the plugin stages it once more, failed: %w; %s",
					v.ID, path, whose, csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, err, takeBackWayOut(p.cl))
			}
			return fmt.Errorf("volume %q's staging at %s is mounted though recorded unstaged (%s), and %s of its claims' targets, sent before %s so that the plugin stages it once, failed: %w; "+
				"if that persists, unmount %s by hand (no claim's target holds it) and %s",
				v.ID, path, whose, csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, err, path, again)
		}
		// Each through unpublishTarget, as any NodeUnpublishVolume of a target is: what an
		// alloc wrote into its bare target set aside first, a link there removed unfollowed, the
		// claim's record reset after. Sent raw, a plugin removing the target deleted what was
		// written there, and one following a link unmounted another claim's volume
		// (TestRestoreOfASecondClaimSetsAsideWhatWasWrittenAtTheFirstClaimsTarget,
		// TestRestoreOfASecondClaimSendsNoUnpublishThroughALinkAtTheFirstClaimsTarget).
		for i := range others {
			op, err := e.newCheckpoint(ctx, &others[i], nil)
			if err != nil {
				return unpublished(err)
			}
			_, err = e.unpublishTarget(ctx, c, v, op)
			if ferr := op.flush(ctx, "restore:other-target"); ferr != nil {
				err = withFlushError(err, ferr)
			}
			if err != nil {
				return unpublished(fmt.Errorf("alloc %q's target %s: %w", others[i].Alloc, others[i].TargetPath, err))
			}
		}
		if p.cl.Degraded {
			// Its own target, which its restore's earlier publish may have reached; a new
			// claim's publish is not sent yet.
			if _, err := e.unpublishTarget(ctx, c, v, p); err != nil {
				return unpublished(err)
			}
		}
	}
	if len(left) > 0 {
		e.log.Warn(fmt.Sprintf("volume %q's staging at %s is mounted but not recorded staged (an earlier volctl sent %s and did not record the answer): "+
			"sending %s first, so that the plugin stages it once", v.ID, path, csi.RPCNodeStageVolume, csi.RPCNodeUnstageVolume), "mounts", left)
	}
	err = e.retry(ctx, c, csi.RPCNodeUnstageVolume, func(ctx context.Context) error {
		return c.client.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: v.ExternalID, StagingPath: path})
	})
	if err != nil && !csi.IsIgnorable(err) && len(left) == 0 {
		// Nothing mounted there (TestRestoreStageOnceMoreWhoseUnstageIsRefusedDoesNotSayTheStagingIsMounted).
		return fmt.Errorf("volume %q's staging at %s: plugin %q answered %s OK with nothing mounted there (its own record of the staging before the reboot), "+
			"and failed %s, sent to take it back so that it stages the volume once more: %w; %s",
			v.ID, path, c.plugin.ID, csi.RPCNodeStageVolume, csi.RPCNodeUnstageVolume, err, takeBackWayOut(p.cl))
	}
	if err != nil && !csi.IsIgnorable(err) {
		return fmt.Errorf("volume %q's staging at %s is mounted but not recorded staged (an earlier volctl's %s whose answer was not recorded, or a mount made by hand), "+
			"and plugin %q failed %s, sent so that it stages the volume once: %w; if nothing uses that mount, unmount %s by hand, then run `volctl reconcile` and claim again",
			v.ID, path, csi.RPCNodeStageVolume, c.plugin.ID, csi.RPCNodeUnstageVolume, err, path)
	}
	return e.checkUnmounted(v, csi.RPCNodeUnstageVolume, "staging", path, c, err)
}

func (e *Engine) nodePublish(ctx context.Context, c *conn, v store.Volume, p *checkpoint) error {
	cl := p.cl
	// volctl makes the target's parent; the plugin makes the target itself.
	if err := e.locks.makeTargetParent(ctx, e.realPath(cl.TargetPath)); err != nil {
		if !e.restoresOwnLink(v, p, err) {
			return e.linkedTarget(v, p, c, err)
		}
		if err := e.restoreUnpublish(ctx, c, v, p, "a symlink"); err != nil {
			return err
		}
		if err := e.locks.makeTargetParent(ctx, e.realPath(cl.TargetPath)); err != nil {
			return e.linkedTarget(v, p, c, err)
		}
	}
	if err := e.mountedSinceRestoreBegan(v, p); err != nil {
		return err
	}
	if unpublished, err := e.restoreOverOwnMount(ctx, c, v, p); err != nil {
		return err
	} else if unpublished {
		// Its empty directories went with the mount: made again for the publish.
		if err := e.locks.makeTargetParent(ctx, e.realPath(cl.TargetPath)); err != nil {
			return e.linkedTarget(v, p, c, err)
		}
	}
	// The last error, an earlier attempt's answer (a restore refused), is not written with the
	// commit below: kept, it said the NodePublishVolume about to be sent was answered, and a
	// kill before this one's answer was recorded left a restore driven again to send it once
	// more over the mount it made (publishUnanswered;
	// TestRestoreKilledAfterItsPublishFollowingARefusedOneStacksNoSecondMount). It stays in
	// memory, where a failure of this attempt is compared with it, to be said once in the event
	// log when it is the same (recordFailure).
	lastRPC, lastCode, lastError := cl.LastRPC, cl.LastCode, cl.LastError
	if cl.Target != store.TargetNotAccepted || cl.LastError != "" {
		cl.LastRPC, cl.LastCode, cl.LastError = "", "", ""
		// Recorded in the commit before NodePublishVolume is sent, and kept until
		// NodeUnpublishVolume answered and the target was found holding nothing
		// (unpublishTarget): whatever is at the target from here on may be the
		// plugin's (linkedTarget, targetRecorded), whatever it answers, and whatever is
		// written over the claim's last error since. A restore's acceptance is void: its target
		// was found unmounted, and this publish may leave the plugin's link there.
		cl.Target = store.TargetNotAccepted
		p.clDirty = true
	}
	if err := p.flush(ctx, "claim"); err != nil {
		return err
	}
	cl.LastRPC, cl.LastCode, cl.LastError = lastRPC, lastCode, lastError
	req := csi.NodePublishVolumeRequest{
		VolumeID: v.ExternalID, PublishContext: p.publishContext(c), TargetPath: cl.TargetPath,
		Capability: capability(cl), ReadOnly: cl.Mode == store.ClaimRead, Secrets: v.Secrets,
		VolumeContext: v.Context,
	}
	if !c.stages() {
		// The plugin works from the attachment itself, not from a staging made with it.
		if err := e.attachedElsewhere(ctx, c, v, p, csi.RPCNodePublishVolume); err != nil {
			return err
		}
		if err := e.outsideTopology(ctx, c, v, p, csi.RPCNodePublishVolume); err != nil {
			return err
		}
	} else {
		// Where the volume was staged, as recorded (a staging made by an older volctl under a
		// symlinked state dir keeps its path); stagingPath for a row without one.
		req.StagingPath = p.st.StagingPath
		if req.StagingPath == "" {
			req.StagingPath = stagingPath(e.cfg.StateDir, v.PluginID, v.ID)
		}
	}
	publish := func(publishContext map[string]string) error {
		req.PublishContext = publishContext
		// A mount at the target before this publish's first attempt is not an attempt's, what
		// ever it shows: a retry is never taken as done on it
		// (TestRetriedPublishDoesNotTakeAMountThatWasThereBeforeForTheVolume). One open of a
		// target that is not there yet, or of an empty directory (a restore's).
		before, berr := e.mountsLeft(cl.TargetPath)
		heldBefore := berr != nil || len(before) > 0
		return e.retryLooking(ctx, c, csi.RPCNodePublishVolume, func(ctx context.Context) (bool, error) {
			if heldBefore {
				return false, nil
			}
			return e.publishedByLastAttempt(ctx, v, p, c, req.StagingPath)
		}, func(ctx context.Context) error {
			return c.client.NodePublishVolume(ctx, req)
		})
	}
	if !e.publishedBefore(ctx, v, p, c, req.StagingPath) {
		if err := e.setAsideWritten(ctx, v, p, csi.RPCNodePublishVolume); err != nil {
			return err
		}
		top := e.topLevels(publishDir)
		err := publish(req.PublishContext)
		if err != nil && !p.stagedUnattached {
			// A plugin that does not stage works from the attachment in NodePublishVolume, and one
			// that stages may check it there too (volctl's hostpath does): a claim joining a
			// staging other claims made sends no NodeStageVolume to be refused. A staging made
			// before the attachment is stagedBeforeAttach's.
			err = e.reattach(ctx, c, v, p, csi.RPCNodePublishVolume, err, publish)
		}
		if err != nil && p.stagedUnattached && csi.IsFailedPrecondition(err) {
			return e.stagedBeforeAttach(ctx, c, v, p, err)
		}
		if err != nil {
			return err
		}
		e.failpoint("rpc:NodePublishVolume")
		if err := e.publishedWhereAsked(ctx, v, cl, c, req.StagingPath, top); err != nil {
			// A check after the RPC: the claim's record and its event name the RPC, no code, as
			// the checks after the unpublish and unstage do (before, neither named it:
			// TestClaimAgainOfAnUnmountedTargetRecordsTheRPCItsCheckFailedAfter).
			err = checkedAfter(csi.RPCNodePublishVolume, err)
			if !cl.Degraded {
				return err
			}
			undone, uerr := e.undoRefusedRestore(ctx, c, v, p, err)
			if undone && errors.Is(err, errTargetNotMounted) && !p.publishedAgain {
				// A plugin that keeps its own record of what it published (as the CSI host-path
				// driver does) answers a target that lost its mount OK from that record,
				// mounting nothing; taken back, it has forgotten it, and is asked once more in
				// this pass, where it took a second reconcile to mount the volume there, the
				// first failing (TestRestoreOfALostTargetThroughAPluginThatRemembersItsPublishTakesOnePass).
				p.publishedAgain = true
				e.log.Info("restore: the plugin answered NodePublishVolume OK with nothing mounted at the target, and took it back: sent once more",
					"volume", v.ID, "alloc", cl.Alloc, "plugin", c.plugin.ID)
				return e.nodePublish(ctx, c, v, p)
			}
			return uerr
		}
	}
	// What the accepted target shows, recorded with the state: a file system mounted over it
	// since is what reconcile then finds there (targetCovered).
	p.targetShows, p.targetDirty = e.targetShows(cl), true
	p.setState(store.ClaimPublished)
	// Recorded with the state: a release resumed from unpublishing knows from it whether a link
	// at the target is the plugin's own (targetRecorded).
	cl.NeedsReconcile, cl.Attempts, cl.Degraded, cl.Target = false, 0, false, store.TargetAccepted
	p.event(&store.Event{Kind: "claim", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: v.PluginID,
		Message: fmt.Sprintf("%s claim published at %s", cl.Mode, cl.TargetPath)})
	return nil
}

// mountedSinceRestoreBegan refuses to send a restore's NodePublishVolume at a target that is a
// mount point though the claim records no NodePublishVolume of it sent since its publish was
// accepted (store.TargetAccepted, which nodePublish turns to TargetNotAccepted in the commit
// before any is sent), or since an earlier restore's was undone (store.TargetUnsent, as
// unpublishTarget leaves a target found holding nothing: TestRestoreUndoneOnceDoesNotTakeAMountMadeAtItsTargetSinceForTheVolume):
// the restore began because the target was found unmounted, so what is
// mounted there now was mounted since, by hand or by a program, not by the plugin for this
// claim. Sent, a plugin that answers OK for a target mounted already (idempotence by "is it a
// mount point?", as many do) had the restore take that file system for the volume, record it
// as the claim's mount, and give it to the alloc, every view calling the claim published
// (TestDegradedRestoreDoesNotTakeAMountMadeAtItsTargetSinceForTheVolume). The claim stays held,
// degraded, its record unchanged, until the mount is gone; a claim recorded by an older volctl
// (TargetUnrecorded) is not judged.
func (e *Engine) mountedSinceRestoreBegan(v store.Volume, p *checkpoint) error {
	cl := p.cl
	if !cl.Degraded || cl.Target != store.TargetAccepted && cl.Target != store.TargetUnsent {
		return nil
	}
	left, err := e.mountsLeft(cl.TargetPath)
	if err != nil {
		return fmt.Errorf("checking the mount table at volume %q's target %s before the restore's %s: %w", v.ID, cl.TargetPath, csi.RPCNodePublishVolume, err)
	}
	if len(left) == 0 {
		return nil
	}
	return &kindWrap{kind: ErrConflict, err: fmt.Errorf("claim %q for alloc %q is being restored, and its target %s, found unmounted when the restore began, has had %s mounted since (by hand or by a program: "+
		"no %s of the restore was sent): %s is not sent over it, as a plugin that answers OK for a target mounted already would have the alloc given that, not the volume; "+
		"the claim stays held: unmount it, deepest first (%s), then run `volctl reconcile`, which mounts the volume there",
		cl.VolumeID, cl.Alloc, cl.TargetPath, e.mountNames(left), csi.RPCNodePublishVolume, csi.RPCNodePublishVolume, umountsOf(left))}
}

// umountsOf are the umounts that take away what is mounted at paths (sorted, as mountsLeft
// returns them), deepest first: a mount below a target that is no mount point itself is
// unmounted where it is (before, `umount TARGET` was advised of a tmpfs at TARGET/cache, and
// failed, the claim held at every pass:
// TestRestoreRefusedForAMountBelowItsTargetAdvisesAnUnmountThatWorks).
func umountsOf(paths []string) string {
	cmds := make([]string, 0, len(paths))
	for _, p := range slices.Backward(paths) {
		cmds = append(cmds, "`"+shellquote.Command("umount", p)+"`")
	}
	return strings.Join(cmds, ", then ")
}

// publishedWhereAsked checks, once the plugin answered NodePublishVolume OK for claim cl of
// volume v, that it mounted the volume at the target and nowhere over volctl's own
// directories (mountedOverTop, checkTarget, mountedOver); an error is a bad answer.
func (e *Engine) publishedWhereAsked(ctx context.Context, v store.Volume, cl *store.Claim, c *conn, staging string, top []topLevel) error {
	if err := e.mountedOverTop(v, c, csi.RPCNodePublishVolume, top); err != nil {
		return err
	}
	if err := e.checkTarget(ctx, v, cl, c, staging); err != nil {
		return err
	}
	claimDir := filepath.Dir(cl.TargetPath)
	return e.mountedOver(v, c, csi.RPCNodePublishVolume,
		sharedDir{"the claim's publish directory", claimDir, "the target volctl made in it"},
		sharedDir{"the alloc's publish directory", filepath.Dir(claimDir), fmt.Sprintf("the targets of alloc %q's claims on other volumes, whose paths now lead into the plugin's mount", cl.Alloc)},
	)
}

// undoRefusedRestore takes away what the plugin made at the target of claim p, being restored,
// whose NodePublishVolume answer publishedWhereAsked refused (refused): a new claim's rollback
// sends NodeUnpublishVolume for that, but a claim being restored is never rolled back (its alloc
// may be using the volume), and the refused mount stayed at the target the alloc is given, pass
// after pass: another volume's data, or the host's disk under a bare staging directory
// (TestARefusedRestoreTakesTheRefusedMountAway). The claim stays held, degraded, for reconcile;
// the error says whether the mount went.
// undone says NodeUnpublishVolume took it away.
func (e *Engine) undoRefusedRestore(ctx context.Context, c *conn, v store.Volume, p *checkpoint, refused error) (undone bool, err error) {
	if _, err := e.unpublishTarget(ctx, c, v, p); err != nil {
		return false, fmt.Errorf("%w; NodeUnpublishVolume, sent to take that away from the target again, failed: %v: nothing may use %s until it is unmounted (the next reconcile sends it again, or `%s`)",
			refused, err, p.cl.TargetPath, releaseCommand(*p.cl))
	}
	return true, fmt.Errorf("%w (NodeUnpublishVolume took it away from the target again)", refused)
}

// setAsideWritten moves aside what claim p's target holds before rpc is sent for it: files an
// application wrote at the path while the volume was not mounted there (a reboot, the
// application started before the agent's restore; an unmount by hand). NodePublishVolume's
// mount hid them from every path, without a word, and the application found the volume where it
// had written them (TestFilesWrittenAtAnUnmountedTargetAreSetAside); NodeUnpublishVolume, which
// removes the target, had volctl's plugin refuse "directory not empty" at every release, the
// claim stuck unpublishing, and may have another plugin delete them
// (TestFilesWrittenAtAnUnmountedTargetAreSetAsideBeforeItsRelease). The target is renamed to
// TARGET.written-TIME beside it, through its parent's descriptor (the plugin makes the target
// anew: CSI leaves its creation to the plugin), and a warning and the claim's event name both.
// An empty file or directory tree is left as it is, and so is a device, pipe or socket at the
// target, which a plugin may place there itself; a target missing, mounted on, or reached
// through a symlink is checkTarget's, linkedTarget's and unlinkBeforeTeardown's.
func (e *Engine) setAsideWritten(ctx context.Context, v store.Volume, p *checkpoint, rpc string) error {
	cl := p.cl
	target := e.realPath(cl.TargetPath)
	t, err := openNoFollow(e.cfg.StateDir, target, createNothing)
	if err != nil {
		return nil
	}
	defer t.close()
	var st unix.Stat_t
	if err := unix.Fstat(t.fd, &st); err != nil || (st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFREG) {
		return nil
	}
	// Asked of the engine's mount table, as checkTarget asks (MountTable.Mounted).
	if mp, err := e.cfg.Mounts.Mounted(e.cfg.StateDir, target); err != nil || mp.Mounted {
		return nil
	}
	what, err := t.hidden()
	if err != nil {
		return fmt.Errorf("reading what the target %s holds before %s: %w", cl.TargetPath, rpc, err)
	}
	if what == "" {
		return nil
	}
	why, path := "where the mount would have hidden it", "claim"
	if rpc != csi.RPCNodePublishVolume {
		why, path = "which has the plugin remove the target: with what it held, or refusing to, at every release", "release"
	}
	aside := t.name + ".written-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	err = unix.Renameat2(t.parent, t.name, t.parent, aside, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A file system (or kernel) without RENAME_NOREPLACE: the name, to the nanosecond, is
		// new in a directory of volctl's own.
		err = unix.Renameat(t.parent, t.name, t.parent, aside)
	}
	if err != nil {
		return fmt.Errorf("the target %s is %s, written while volume %q was not mounted there, and %s is not sent over it; moving it aside failed: %w "+
			"(move it out of the way by hand, then run `volctl reconcile`)", cl.TargetPath, what, v.ID, rpc, err)
	}
	asidePath := filepath.Join(filepath.Dir(cl.TargetPath), aside)
	msg := fmt.Sprintf("the target %s was %s, written there while the volume was not mounted (by an application after a reboot or an unmount, "+
		"before the volume was back, or left by the plugin): moved to %s before %s, %s; move what belongs in the volume into it",
		cl.TargetPath, what, asidePath, rpc, why)
	e.log.Warn(fmt.Sprintf("volume %q, alloc %q: %s", v.ID, cl.Alloc, msg), "volume", v.ID, "alloc", cl.Alloc)
	p.event(&store.Event{Kind: "claim", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: v.PluginID, Message: msg})
	return p.flush(ctx, path) // recorded whatever the plugin answers
}

// linkedTarget is nodePublish's answer to makeTargetParent's refusal err. A symlink at the
// target itself, of a claim whose target was never accepted (not degraded), is final, as
// checkTarget's refusal of one is, never left for a reconcile that would find it there every
// pass and refuse it again, the claim never settled. Whose link it is, the claim's record says
// (publishSent): whether a NodePublishVolume of it may have been sent is recorded in the
// commit made just before it is sent (store.TargetNotAccepted), and kept until
// NodeUnpublishVolume answered and the target was found holding nothing (unpublishTarget),
// whatever the plugin answered and whatever failure was written
// over the claim's last error since:
//   - one may have been sent: the plugin may have linked the target and then answered an
//     error (UNAVAILABLE after acting, any error after acting), or its answer may have been
//     lost (a kill, a power loss, a deadline), or a later failure met before another RPC (a
//     pass finding the socket gone) written over the record of it. The link is taken for the
//     plugin's answer, as checkTarget takes it (errBadAnswer), and the claim is rolled back
//     from node-staged, its NodeUnpublishVolume (the plugin's chance to remove its link and
//     what it leads to) sent before any NodeUnstageVolume or ControllerUnpublishVolume,
//     finding the link there (targetRecorded) (TestLinkAfterAnUnavailablePublishIsUnpublishedFirst,
//     TestCrashAfterNodePublishOfALinkedTarget). The price: a link put there by hand since
//     gets the plugin's NodeUnpublishVolume, as any release of the claim would send it. A link
//     leading (by any reading, fully resolved) to what another claim holds (linkedToOthers) is
//     not: that claim's own release undoes it, and a plugin following the link would unmount
//     it from under that claim. The claim stays node-staged all the same, and its rollback
//     removes the link unfollowed (targetRecorded) and sends NodeUnpublishVolume at the target:
//     the plugin's publication may be there, the link put in its place since
//     (TestLinkToOthersAfterASentPublishIsRemovedAndTheTargetUnpublished);
//   - none was sent (this claim was taken or its target last unpublished since): the link,
//     wherever it leads, is not the plugin's published answer: left
//     before (by a plugin under an older volctl), or put there by hand or by another program.
//     The claim is put back to controller-published, which a release leaves without
//     NodeUnpublishVolume (a plugin would follow the link and unmount whatever is mounted
//     where it leads), and rolled back as a conflict saying to remove the link
//     (TestClaimOnASymlinkLeftAtTheTargetIsRolledBack,
//     TestLinkToAnotherClaimsTargetAtANodeStagedClaimIsNotFollowed).
//
// A link above the target (a directory of volctl's own replaced) stays an error left for
// reconcile: a rollback would not send NodeUnpublishVolume through it either
// (unlinkBeforeTeardown), and only its removal, which the error says, lets either way on. A
// degraded claim (published once, being restored) is never rolled back: it is held, as for any
// error; the plugin's own link at its target after its restore's publish was sent never gets
// here (restoresOwnLink).
func (e *Engine) linkedTarget(v store.Volume, p *checkpoint, c *conn, err error) error {
	var se *symlinkError
	if !errors.As(err, &se) {
		return fmt.Errorf("publish path: %w", err)
	}
	if target := filepath.Clean(e.realPath(p.cl.TargetPath)); se.Component != target || p.cl.Degraded {
		// Left for reconcile (held, for a degraded claim), which finishes it once the link is
		// gone: not "claim again", nor "use the path it points to".
		se.Advice = ownPathAdvice(se.Component, target)
		return fmt.Errorf("publish path: %w", err)
	}
	others := e.linkedToOthers(v, se.Component)
	if p.publishSent() && !others {
		return badAnswerf("%s: volume %q's claim records that a %s of it may have reached plugin %q since it was taken (its answer an error, lost or never checked), "+
			"and its target %s is %s: taken for the plugin's answer, so its %s is sent before the volume is unstaged or detached: the plugin did not publish the volume there",
			csi.RPCNodePublishVolume, v.ID, csi.RPCNodePublishVolume, c.plugin.ID, p.cl.TargetPath, linkWhat(se.Component), csi.RPCNodeUnpublishVolume)
	}
	switch {
	case others && p.publishSent():
		// The plugin may hold a publication of the claim all the same (its answer lost, and
		// the link put there since): the claim stays node-staged, and the rollback removes the
		// link unfollowed (targetRecorded) and sends NodeUnpublishVolume at the target, before
		// any NodeUnstageVolume or ControllerUnpublishVolume.
		return fmt.Errorf("publish path: %w", &kindWrap{kind: ErrConflict, err: fmt.Errorf("%w; it leads to what another claim holds (volctl's publish directory or state dir, or another volume's staging path), "+
			"which that claim's release undoes: the link is not the plugin's answer, and is not followed; the claim records that a %s of it may have reached plugin %q, "+
			"so the rollback removes the link, not what it points to, and sends %s at the target before the volume is unstaged or detached", err, csi.RPCNodePublishVolume, c.plugin.ID, csi.RPCNodeUnpublishVolume)})
	case others:
		err = fmt.Errorf("%w; it leads to what another claim holds (volctl's publish directory or state dir, or another volume's staging path), which that claim's release undoes: "+
			"the link is not the plugin's answer, and is not followed", err)
	case p.from == store.ClaimNodeStaged:
		err = fmt.Errorf("%w; the claim records no %s sent since it was taken: the link is not the plugin's answer, and is not followed", err, csi.RPCNodePublishVolume)
	}
	p.setState(store.ClaimControllerPublished)
	return fmt.Errorf("publish path: %w", &kindWrap{kind: ErrConflict, err: err})
}

// restoresOwnLink says whether makeTargetParent's refusal err is a symlink at the target itself
// of a degraded claim (published once, being restored) whose record says a NodePublishVolume
// of it may have been sent since (a restore's, its answer lost or an error after the plugin
// linked the target), leading to nothing another claim holds: the plugin's own link, with its
// mount perhaps behind it. Removed by hand (which the advice for any other link says), that
// mount is leaked and the plugin publishes again beside it: the plugin is sent
// NodeUnpublishVolume first (restoreUnpublish).
func (e *Engine) restoresOwnLink(v store.Volume, p *checkpoint, err error) bool {
	var se *symlinkError
	if !errors.As(err, &se) || !p.cl.Degraded || se.Component != filepath.Clean(e.realPath(p.cl.TargetPath)) {
		return false
	}
	return p.publishSent() && !e.linkedToOthers(v, se.Component)
}

// restoreUnpublish sends NodeUnpublishVolume of a degraded claim's target holding what (a
// symlink, a mount) the plugin's own last NodePublishVolume may have left (restoresOwnLink,
// restoreOverOwnMount), the plugin's chance to take it away, and what a link leads to, before
// the restore publishes again (unpublishTarget; a link the plugin leaves after answering OK is
// removed then, a mount it leaves is an error naming the path). What fails leaves the claim
// held, degraded, for reconcile, naming the RPC.
func (e *Engine) restoreUnpublish(ctx context.Context, c *conn, v store.Volume, p *checkpoint, what string) error {
	e.log.Info(fmt.Sprintf("the target of a claim being restored holds %s left by its last NodePublishVolume: sending NodeUnpublishVolume first", what),
		"volume", v.ID, "alloc", p.cl.Alloc, "target", p.cl.TargetPath)
	if _, err := e.unpublishTarget(ctx, c, v, p); err != nil {
		return fmt.Errorf("volume %q's target %s holds %s that plugin %q's last %s (a restore's, its answer not accepted) may have left, and %s, sent so that the plugin takes it away before the restore publishes again, failed: %w",
			v.ID, p.cl.TargetPath, what, c.plugin.ID, csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume, err)
	}
	return nil
}

// publishSent says whether a NodePublishVolume of the claim may have been sent and not undone,
// as the claim records it (store.TargetNotAccepted, from the commit made just before it is
// sent). A claim recorded by a volctl before schema version 11 (store.TargetUnrecorded)
// recorded nothing of it: its record's last word decides, as that volctl did
// (sentUnanswered). A claim this drive began at taken or controller-published sent none
// whatever its record says: NodePublishVolume is sent only after node-staged is committed, and
// a claim is put back to controller-published only with none left to undo (linkedTarget). Only
// a record read otherwise says so: a database migrated to schema 14 by a build whose 0014 read
// every claim past taken as maybe sent.
func (p *checkpoint) publishSent() bool {
	if p.from == store.ClaimTaken || p.from == store.ClaimControllerPublished {
		return false
	}
	switch p.cl.Target {
	case store.TargetNotAccepted:
		return true
	case store.TargetUnrecorded:
		return p.from == store.ClaimNodeStaged && sentUnanswered(p.cl, csi.RPCNodePublishVolume)
	}
	return false
}

// linkedToOthers says whether the symlink at a claim of volume v's target (link) leads to what
// another claim holds, which its own release undoes: into volctl's publish directory outside
// the claim's own (another claim's target: no plugin publishes this claim by linking there but
// to a target of the same volume, which its claim holds), to another volume's staging path, or
// to a directory that holds either (the state dir, the publish or staging directory, their
// parents: every target is below it). A plugin sent NodeUnpublishVolume through the link would
// unmount it from under that claim. Where it leads is read every way a plugin could reach it:
// the link's text, its full resolution (filepath.EvalSymlinks, through every further link,
// relative or absolute, in the claim's own directory or outside the state dir, through any
// alias of the state dir; as far as it exists when it dangles), and each through realPath (the
// state dir's own alias): any of them leading to others' is enough. Only then is a link whose
// resolution stays in the claim's own publish directory (a plugin that mounts beside the target
// and links it there) taken for what it is: the plugin's, and no one else's.
func (e *Engine) linkedToOthers(v store.Volume, link string) bool {
	text, err := os.Readlink(link)
	if err != nil {
		return false
	}
	if !filepath.IsAbs(text) {
		text = filepath.Join(filepath.Dir(link), text)
	}
	leads := []string{filepath.Clean(text), resolveExisting(link)}
	for _, d := range leads[:2] {
		leads = append(leads, e.realPath(d))
	}
	own := stagingPath(e.cfg.StateDir, v.PluginID, v.ID)
	claimDir := filepath.Dir(link) // publish/<alloc>/<volume>: the claim's own, where a plugin may mount beside the target
	for _, d := range leads {
		for _, dir := range []string{e.cfg.StateDir, e.realPath(e.cfg.StateDir)} {
			publish, staging := filepath.Join(dir, publishDir), filepath.Join(dir, stagingDir)
			switch {
			case within(publish, d), within(staging, d): // the state dir, or a parent: every target is below it
				return true
			case within(d, publish) && !within(d, claimDir):
				return true
			case within(d, staging) && !within(d, own) && !within(d, e.realPath(own)):
				return true
			}
		}
	}
	return false
}

// resolveExisting is path with every symlink on the way resolved (filepath.EvalSymlinks); when
// it dangles, its longest part that exists resolved, with the rest joined as it is (a dangling
// link followed to where it points, up to the kernel's own limit of links on one path).
func resolveExisting(path string) string {
	return resolveFrom(filepath.Clean(path), 40)
}

func resolveFrom(path string, hops int) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	parent := filepath.Dir(path)
	if parent == path || hops == 0 {
		return path
	}
	if l, err := os.Readlink(path); err == nil {
		if !filepath.IsAbs(l) {
			l = filepath.Join(parent, l)
		}
		return resolveFrom(filepath.Clean(l), hops-1)
	}
	return filepath.Join(resolveFrom(parent, hops), filepath.Base(path))
}

// sentUnanswered says whether claim cl's record, in the state committed just before rpc is
// sent, allows that rpc was sent and its answer never recorded: no failure recorded, or rpc's
// own failure without the plugin's answer (a deadline or a cancel).
func sentUnanswered(cl *store.Claim, rpc string) bool {
	if cl.LastError == "" {
		return true
	}
	return cl.LastRPC == rpc && (cl.LastCode == "DeadlineExceeded" || cl.LastCode == "Canceled") // the gRPC code names recorded
}

// publishedBefore says whether the claim's target already holds the volume as checkTarget
// accepts it after NodePublishVolume answered OK, when an earlier command may have sent that
// RPC and died before recording its answer (the claim was node-staged when this drive began:
// a kill, or a power loss that kept the mount's record out). Then the RPC is not sent again:
// CSI makes it idempotent, but a plugin that mounts without looking first stacks a second
// mount over the target, which its NodeUnpublishVolume, unmounting once, leaves behind, and
// the claim's release would fail on it at every try
// (`TestCrashAfterNodePublishAgainstARemountingPlugin`). A first publish, and a restore (its
// target unmounted), costs one lstat of a missing or unmounted target at most. A restore
// (degraded) is driven because its target was found unmounted, and is looked at only when its
// own NodePublishVolume may have been sent before (publishUnanswered: the record as loaded), its
// answer lost to a timeout or a kill: the restore driven again sent it again, and a remounting
// plugin stacked a second mount (TestRestoreRedrivenAfterItsPublishAnswerWasLostStacksNoSecondMount).
func (e *Engine) publishedBefore(ctx context.Context, v store.Volume, p *checkpoint, c *conn, staging string) bool {
	if p.from != store.ClaimNodeStaged || p.cl.Degraded && !p.publishUnanswered {
		return false
	}
	if _, err := os.Lstat(e.realPath(p.cl.TargetPath)); err != nil {
		return false
	}
	if e.checkTarget(ctx, v, p.cl, c, staging) != nil {
		return false // sent again, and checked again after its answer
	}
	e.log.Info("not sending NodePublishVolume again: the target holds the volume already (an earlier volctl sent it and did not record the answer)",
		"volume", v.ID, "target", p.cl.TargetPath)
	return true
}

// publishedByLastAttempt says, before NodePublishVolume is sent again within one command (a
// retryable failure: UNAVAILABLE, a connection reset once the plugin mounted), whether the
// last attempt published the volume all the same: something is mounted at the target (a look
// at the directory, the mount table read only when it is not an empty one) and it holds the
// volume as checkTarget accepts it after an OK. Then it is not sent again, as publishedBefore
// does not after a kill: a plugin that mounts without looking first stacked a second mount,
// which its NodeUnpublishVolume, unmounting once, left behind, the claim said published
// (TestClaimWhosePublishMountedThenAnsweredUnavailableStacksNoSecondMount). What was mounted
// is checked again after (publishedWhereAsked), as after an OK. Only when nothing was mounted
// at the target before the publish's first attempt (its caller's heldBefore). A look that
// cannot read what is there stops the retries with its error: taken for "nothing there", the
// RPC was sent again over the mount the last attempt made
// (TestRetriedPublishWhoseLookCannotReadTheMountTableIsNotSentBlind). What checkTarget refuses
// is not the volume: sent again, and checked again after its answer.
func (e *Engine) publishedByLastAttempt(ctx context.Context, v store.Volume, p *checkpoint, c *conn, staging string) (bool, error) {
	left, err := e.mountsLeft(p.cl.TargetPath)
	if err != nil {
		return false, fmt.Errorf("%s of volume %q failed, and its target %s could not be looked at before sending it again (the plugin may have mounted it before the failure): %w",
			csi.RPCNodePublishVolume, v.ID, p.cl.TargetPath, err)
	}
	if len(left) == 0 {
		return false, nil
	}
	if err := e.checkTarget(ctx, v, p.cl, c, staging); err != nil {
		if errors.Is(err, errBadAnswer) {
			return false, nil
		}
		return false, fmt.Errorf("%s of volume %q failed, and what its last attempt may have mounted at the target could not be checked before sending it again: %w",
			csi.RPCNodePublishVolume, v.ID, err)
	}
	e.log.Info("not sending NodePublishVolume again: its last attempt failed, and the target holds the volume (the plugin mounted it before the failure)",
		"volume", v.ID, "alloc", p.cl.Alloc, "target", p.cl.TargetPath)
	return true, nil
}

// restoreOverOwnMount sends NodeUnpublishVolume of a degraded claim's target (a restore) that
// has something mounted though it was found unmounted when the restore began, when the claim
// records that its restore's NodePublishVolume was sent and answered with an error since (the
// record is store.TargetNotAccepted with a failure that is not a lost answer:
// publishUnanswered's are publishedBefore's): the plugin may have mounted and then failed a step
// after (a quota, a chown, its own record), and a plugin that mounts without looking first,
// sent it again, stacks a second mount, which the claim's release leaves behind
// (TestRestorePublishThatMountedThenAnsweredInternalStacksNoSecondMount). Its NodeUnpublishVolume
// is its chance to take its mount away, as it is for its link (restoresOwnLink); the restore
// then publishes anew. The price, as for a link: a mount put there by hand since gets the
// plugin's NodeUnpublishVolume, as the claim's release would send it.
func (e *Engine) restoreOverOwnMount(ctx context.Context, c *conn, v store.Volume, p *checkpoint) (unpublished bool, err error) {
	if !p.cl.Degraded || !p.publishSent() || p.publishUnanswered {
		return false, nil
	}
	left, err := e.mountsLeft(p.cl.TargetPath)
	if err != nil {
		return false, fmt.Errorf("checking the mount table at volume %q's target %s before the restore's %s: %w", v.ID, p.cl.TargetPath, csi.RPCNodePublishVolume, err)
	}
	if len(left) == 0 {
		return false, nil
	}
	return true, e.restoreUnpublish(ctx, c, v, p, "a mount")
}

// attachedElsewhere refuses to send rpc, the node RPC that works from the volume's attachment
// (NodeStageVolume; NodePublishVolume for a plugin that does not stage), when the attachment is
// recorded to another node than the one the plugin reports now: its NodeGetInfo node_id changed
// (a restart, a reboot that renamed the host or replaced the instance) while claims held the
// attachment, so the publish path shared it rather than attach the new node (controllerPublish),
// and a restore never sends ControllerPublishVolume again. The publish context is the old node's:
// sent here, a plugin would stage whatever it names on this node (a device path, which may be
// another volume's), or fail in its own words, which reconcile would report every pass as a
// restore the next pass makes. A staging already mounted is published from as it is. The
// refusal is a conflict naming both nodes and the claims whose release detaches the old one
// (the last claim holding an attachment releases it; a claim again then attaches the new node).
// A fresh claim is rolled back by it; a claim being restored stays held, degraded.
func (e *Engine) attachedElsewhere(ctx context.Context, c *conn, v store.Volume, p *checkpoint, rpc string) error {
	st := p.st
	// Whether the plugin attaches now or not: the publish context recorded is the old node's
	// attachment's all the same. Before, a plugin back without PUBLISH_UNPUBLISH_VOLUME on
	// another node ID was sent it at a restore (TestRestoreAfterNodeIDChangeThroughAPluginThatStoppedAttaching).
	if !st.ControllerPublished || st.NodeID == "" || st.NodeID == c.fp.NodeID {
		return nil
	}
	claims, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume(v.ID) })
	if err != nil {
		return err
	}
	// This claim, unless it is a restore (degraded: held whatever the error), is rolled back by
	// the refusal, and its rollback releases it: it is no claim to tell the user to release
	// (TestRolledBackClaimRefusedForAnotherNodesAttachmentIsNotAdvisedToBeReleased; before, a
	// claim re-driven past its attach step was named, which its rollback had released).
	rolledBack := !p.cl.Degraded
	holds := func(h store.Claim) bool {
		// holds no attachment, or this claim, which its rollback releases
		return h.State != store.ClaimTaken && (h.ID != p.cl.ID || !rolledBack && p.saved != store.ClaimTaken)
	}
	way := releaseThem(claims, "release the claims that hold it", holds)
	if rolledBack && !slices.ContainsFunc(claims, holds) {
		// No other claim holds the attachment: this claim's rollback detaches the old node.
		way = ""
	}
	var node map[string]string
	if c.fp.AccessibleTopology != nil {
		node = c.fp.AccessibleTopology.Segments
	}
	if topos := volumeTopologies(v); len(topos) > 0 && !topologyMatch(node, topos) {
		// The claim again would be refused by the topology (checkNode): the way out is the
		// plugin back on a node the volume is accessible from, where the attachment is its own
		// again (TestHostRenamedUnderATopologyKeyedByNodeID).
		if way == "" {
			return &otherNodesAttachment{wayBack: true, plugin: c.plugin.ID, msg: fmt.Sprintf("volume %q is attached to node %q, but plugin %q now reports node %q (its NodeGetInfo node_id changed), which %s: "+
				"%s is not sent with node %q's publish context, which on this node may name another volume's device; no other claim holds the attachment, so this claim's rollback detaches node %q, "+
				"and the volume, accessible only from topology %s, cannot be claimed on node %q: %s, then claim it again",
				v.ID, st.NodeID, c.plugin.ID, c.fp.NodeID, nodeTopologyWords(node), rpc, st.NodeID, st.NodeID, formatTopologies(topos), c.fp.NodeID,
				restartWords(c.plugin.ID, topos, c.fp.NodeID, node))}
		}
		return &otherNodesAttachment{wayBack: true, plugin: c.plugin.ID, msg: fmt.Sprintf("volume %q is attached to node %q, but plugin %q now reports node %q (its NodeGetInfo node_id changed), which %s: "+
			"%s is not sent with node %q's publish context, which on this node may name another volume's device, and the volume, accessible only from topology %s, cannot be claimed on node %q either: "+
			"%s; or, to leave it, %s (the release detaches node %q)",
			v.ID, st.NodeID, c.plugin.ID, c.fp.NodeID, nodeTopologyWords(node), rpc, st.NodeID, formatTopologies(topos), c.fp.NodeID,
			restartWords(c.plugin.ID, topos, c.fp.NodeID, node), way, st.NodeID)}
	}
	if way == "" {
		return &otherNodesAttachment{msg: fmt.Sprintf("volume %q is attached to node %q, but plugin %q now reports node %q (its NodeGetInfo node_id changed): "+
			"%s is not sent with node %q's publish context, which on this node may name another volume's device. "+
			"No other claim holds the attachment, so this claim's rollback detaches node %q: claim the volume again, which attaches node %q",
			v.ID, st.NodeID, c.plugin.ID, c.fp.NodeID, rpc, st.NodeID, st.NodeID, c.fp.NodeID)}
	}
	return &otherNodesAttachment{msg: fmt.Sprintf("volume %q is attached to node %q, but plugin %q now reports node %q (its NodeGetInfo node_id changed): "+
		"%s is not sent with node %q's publish context, which on this node may name another volume's device. "+
		"The last claim holding the attachment detaches node %q when it is released: %s, then claim the volume again, which attaches node %q",
		v.ID, st.NodeID, c.plugin.ID, c.fp.NodeID, rpc, st.NodeID, st.NodeID, way, c.fp.NodeID)}
}

// releaseThem says how to release the claims among claims that hold what is in the way:
// "release alloc "a"'s claim (`volctl volume release ...`) and ...", or general when none does.
func releaseThem(claims []store.Claim, general string, holds func(store.Claim) bool) string {
	var release []string
	for _, h := range claims {
		if holds(h) {
			release = append(release, fmt.Sprintf("alloc %q's claim (`%s`)", h.Alloc, releaseCommand(h)))
		}
	}
	if len(release) == 0 {
		return general
	}
	return "release " + strings.Join(release, " and ")
}

// otherNodesAttachment is attachedElsewhere's refusal: a conflict (exit 4), which no retry and
// no reconcile pass resolves until the claims holding the old node's attachment are released.
type otherNodesAttachment struct {
	msg string
	// wayBack: the plugin's new node is outside the volume's topology too, and the plugin back
	// on the volume's node is the way out (plugin names it), not only the release.
	wayBack bool
	plugin  string
}

// heldUntil says what a claim held (degraded) after err waits for: reconcile, which restores it
// once the plugin answers, or, after attachedElsewhere's refusal, its release, or, after
// outsideTopology's, the plugin's node back in the volume's topology, or its release.
func heldUntil(err error) string {
	if o := new(*otherNodesAttachment); errors.As(err, o) {
		if (*o).wayBack {
			return fmt.Sprintf("until plugin %q is on the node it is attached to again (the next `volctl reconcile` then restores it), or it is released", (*o).plugin)
		}
		return "until it is released"
	}
	if o := new(*topologyRefusal); errors.As(err, o) {
		return fmt.Sprintf("until plugin %q states a topology the volume is accessible from again (the next `volctl reconcile` then restores it), or it is released", (*o).plugin)
	}
	return "for `volctl reconcile`"
}

// outsideTopology refuses to send rpc, the node RPC that mounts the volume on this node anew
// (NodeStageVolume; NodePublishVolume for a plugin that does not stage), when the plugin's node,
// by its live NodeGetInfo accessible_topology, is in none of the topologies the volume is
// accessible from: the plugin restarted stating another topology since the claim was admitted.
// Admission refuses a new claim there (checkNode, recheckAdmission); this holds the restore of
// a published claim (degraded: after a reboot took its mounts), which admission does not see
// again: before, the restore staged and published the volume on a node the plugin says cannot
// reach it, and reported it restored (TestRestoreOutsideTheVolumesTopologyIsRefused). The claim
// stays held, degraded, for the plugin's topology back or its release. A staging still mounted
// is published from as it is: nothing is mounted anew. A claim admitted and not yet published,
// driven on by reconcile after an interruption, is not held to it, as admission's limits are
// not checked again then (recheckAdmission): the node ID correction drives such a claim onto
// the plugin's new node (TestCrashInTheNodeIDCorrection, whose hostpath plugin's topology is
// its node ID).
func (e *Engine) outsideTopology(ctx context.Context, c *conn, v store.Volume, p *checkpoint, rpc string) error {
	if !p.cl.Degraded {
		return nil
	}
	topos := volumeTopologies(v)
	var node map[string]string
	if c.fp.AccessibleTopology != nil {
		node = c.fp.AccessibleTopology.Segments
	}
	if len(topos) == 0 || topologyMatch(node, topos) {
		return nil
	}
	claims, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume(v.ID) })
	if err != nil {
		return err
	}
	way := releaseThem(claims, "release its claims", func(h store.Claim) bool { return h.ID == p.cl.ID })
	return &topologyRefusal{plugin: c.plugin.ID, msg: fmt.Sprintf("volume %q is accessible only from topology %s, and plugin %q's node %q %s now (NodeGetInfo accessible_topology changed since the claim): "+
		"%s is not sent to mount it on a node the plugin says cannot reach it; %s, or %s",
		v.ID, formatTopologies(topos), c.plugin.ID, c.fp.NodeID, nodeTopologyWords(node), rpc, restartWords(c.plugin.ID, topos, c.fp.NodeID, node), way)}
}

// topologyRefusal is outsideTopology's refusal: a conflict (exit 4), which no retry resolves
// and a reconcile pass does once the plugin states the volume's topology again.
type topologyRefusal struct{ plugin, msg string }

func (o *topologyRefusal) Error() string        { return o.msg }
func (o *topologyRefusal) Is(target error) bool { return target == ErrConflict }

func (o *otherNodesAttachment) Error() string        { return o.msg }
func (o *otherNodesAttachment) Is(target error) bool { return target == ErrConflict }

// checkTarget checks what the plugin left at a claim's target after answering
// NodePublishVolume with OK, before the claim is recorded published and its path handed out:
// something must be there (the plugin makes the target, docs/architecture.md, Claim state
// machine), a directory for a file-system claim and not one for a block claim, not a symlink,
// and a mount point (for a block claim, the device file bind-mounted there). A plugin that
// "publishes" by linking the target to another directory (its own mount, or /etc) would have
// the alloc, and every volume_mount, write wherever the link leads; one that makes the
// directory and mounts nothing on it (or mounts elsewhere), or bind-mounts the staging path
// where its NodeStageVolume mounted nothing (bareStaging; staging is the path NodeStageVolume
// was given, empty for a plugin that does not stage), would have them write into the state
// dir on the host's disk, and reconcile would find the claim lost (restoreIfUnmounted). A read
// claim's file-system target must be a read-only mount: a plugin that ignores readonly would
// let an alloc that holds the volume for reading write it, beside its one writer; a write
// claim's must not be read-only unless its mount flags ask for it ("ro"): the alloc would hold
// the writer's slot through a mount it cannot write. A read claim's block target must not be
// writable: a device whose read-only flag is off (a read-only mount does not stop writes to the
// device file on it), or a file standing for one mounted read-write (blockTargetWritable). Whether it is a mount point, and read-only, is
// asked of the mount table for this one path (MountTable.Mounted), which reads no table. The
// target is opened as every path below the state dir is (nofollow.go), without following any
// component. A failure is final (errBadAnswer): the claim is rolled back, and the release's
// NodeUnpublishVolume asks the plugin to remove what it made.
func (e *Engine) checkTarget(ctx context.Context, v store.Volume, cl *store.Claim, c *conn, staging string) error {
	target := e.realPath(cl.TargetPath)
	t, err := openNoFollow(e.cfg.StateDir, target, createNothing)
	var what string
	notMounted := false
	var se *symlinkError
	switch {
	case errors.As(err, &se) && se.Component == filepath.Clean(target):
		what = "a symlink"
		if dest, lerr := os.Readlink(target); lerr == nil {
			what = fmt.Sprintf("a symlink to %q", dest)
		}
	case errors.As(err, &se):
		what = fmt.Sprintf("reached through a symlink at %s", se.Component)
	case errors.Is(err, fs.ErrNotExist):
		// Nothing mounted there either: a restore through a plugin that remembers its publish
		// asks it once more, as for a target left bare; a target removed by hand took a second
		// pass (TestRestoreOfATargetRemovedByHandThroughAPluginThatRemembersItsPublishTakesOnePass).
		notMounted = true
		what = "missing (the plugin made nothing there)"
	case err != nil:
		return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, err)
	default:
		defer t.close()
		dir, derr := t.isDir()
		if derr != nil {
			return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, derr)
		}
		if !dir && cl.AttachmentMode == spec.FileSystem {
			what = "not a directory (a file-system volume is mounted on one)"
			break
		}
		if dir && cl.AttachmentMode == spec.BlockDevice {
			what = "a directory (a block volume is published as its device file, not as a file system mounted on a directory)"
			break
		}
		mp, merr := e.cfg.Mounts.Mounted(e.cfg.StateDir, target)
		if merr != nil {
			return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, merr)
		}
		bare, serr := e.bareStaging(t, staging, mp)
		if serr != nil {
			return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, serr)
		}
		own, oerr := e.ownDirectory(ctx, t, target, staging, v.ID, mp)
		if oerr != nil {
			return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, oerr)
		}
		notBlock, nerr := notABlockVolume(t, cl)
		if nerr != nil {
			return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, nerr)
		}
		if own == "" && cl.AttachmentMode == spec.BlockDevice && mp.Mounted && notBlock == "" {
			if own, oerr = e.fileInOtherTarget(ctx, t, target, staging, v.ID); oerr != nil {
				return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, oerr)
			}
		}
		var writable string // a read claim's block target the alloc could write
		if cl.Mode == store.ClaimRead && cl.AttachmentMode == spec.BlockDevice && mp.Mounted && notBlock == "" {
			if writable, nerr = blockTargetWritable(t, mp); nerr != nil {
				return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, nerr)
			}
		}
		switch {
		case notBlock != "":
			what = notBlock
		case !mp.Mounted && cl.AttachmentMode == spec.BlockDevice && isBlockDeviceNode(target):
			// A device node made at the target (mknod, as some block plugins publish): its
			// writes go to a device, not to the host's disk, but which device the mount table
			// cannot say, where a bind-mounted device file is tied to its source; said as it is
			// (before, "would write to the host's disk":
			// TestBlockTargetMadeAsADeviceNodeIsRefusedForWhatItIs).
			what = "a block device node, not a mount point: volctl takes a block volume's target only as its device bind-mounted there (which the mount table ties to its source), " +
				"and a node made at the target cannot be told from any other device's; the plugin must publish the device by bind-mounting it"
		case !mp.Mounted:
			notMounted = true
			what = "not a mount point (nothing is mounted on it, so the claim would write to the host's disk)"
		case bare != "":
			what = fmt.Sprintf("the staging path %s, %s, bind-mounted (NodeStageVolume staged nothing there, so the claim would write to the host's disk)", staging, bare)
			if strings.Contains(bare, "below it") {
				what = fmt.Sprintf("a bind of what the plugin made below the staging path %s, %s (NodeStageVolume staged nothing there, so the claim would write to the host's disk)", staging, bare)
			}
		case own != "":
			what = own
		case cl.Mode == store.ClaimRead && cl.AttachmentMode == spec.FileSystem && !mp.ReadOnly:
			what = "mounted read-write (NodePublishVolume asked for read-only: the alloc, which holds the volume for reading, could write it)"
		case writable != "":
			what = writable
		case asksReadOnly(*cl) && !mp.ReadOnly:
			// Its mount flags ask for "ro" (a writer's slot held through a mount nothing
			// writes through, docs/specs.md): a plugin that ignored the flag handed the alloc
			// a mount it writes through. Before, taken
			// (TestWriteClaimAskingReadOnlyMountedWritableIsRefused).
			what = "mounted read-write (its mount flags ask for \"ro\": the alloc was to get a mount it cannot write)"
		case cl.Mode == store.ClaimWrite && cl.AttachmentMode == spec.FileSystem && mp.ReadOnly && spec.ReadOnlyFlag(cl.MountFlags.Plain()) < 0:
			// The writer's slot held through a mount it cannot write, which the spec warns of
			// when a user's "ro" flag makes it, and which that flag alone may: before, taken
			// (TestWriteClaimMountedReadOnlyByThePluginIsRefused).
			what = "mounted read-only (NodePublishVolume asked for read-write, with no \"ro\" mount flag: the alloc, which holds the volume as its writer, could not write it)"
		default:
			// What is mounted below the target is handed to the alloc with it, and none of the
			// checks above look at it: volctl's state dir bound there, or the volume bound
			// read-write below a read claim's read-only target (a recursive bind made read-only
			// leaves the mounts below its top as they were). Before, the claim was recorded
			// published (TestStateDirBoundBelowTheTargetIsRefused,
			// TestReadClaimWithAWritableMountBelowTheTargetIsRefused).
			below, berr := e.mountBelow(target)
			if berr != nil {
				return fmt.Errorf("checking the target %s after %s: %w", cl.TargetPath, csi.RPCNodePublishVolume, berr)
			}
			if below == "" {
				return nil
			}
			what = fmt.Sprintf("a mount point with another mount below it, at %s, which the volume's own mount does not account for: the alloc would be handed what is mounted there, "+
				"unchecked (volctl's own directories, or the volume writable below a read-only target)", below)
		}
	}
	err = badAnswerf("%s: plugin %q answered OK for volume %q, but the target %s is %s: the plugin did not publish the volume there",
		csi.RPCNodePublishVolume, c.plugin.ID, v.ID, cl.TargetPath, what)
	if notMounted {
		return targetNotMountedError{err}
	}
	return err
}

// blockTargetWritable says how a read claim's block target t, a mount point (mp), could be
// written by the alloc that holds the volume for reading ("" when it cannot): a block device
// whose read-only flag is off (BLKROGET), since a read-only mount of a device file stops no
// write to the device, or a file standing for one on a mount that is not read-only. Before, a
// block target was asked nothing about read-only, and the read claim the refusal of a
// read-only volume_mount advises was published as a read-only bind of the writable device,
// which the reader wrote (TestReadClaimOfABlockVolumeAdvisedForAReadOnlyVolumeMountIsNotWritable).
func blockTargetWritable(t *pathFD, mp MountPoint) (string, error) {
	ft, err := t.fileType()
	if err != nil {
		return "", err
	}
	switch ft {
	case unix.S_IFREG:
		if mp.ReadOnly {
			return "", nil
		}
		return "a file standing for the device, mounted read-write (NodePublishVolume asked for read-only: the alloc, which holds the volume for reading, could write it)", nil
	case unix.S_IFBLK:
	default:
		return "", nil
	}
	fd, err := unix.Open(procPath(t.fd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: t.path, Err: err}
	}
	defer unix.Close(fd)
	ro, err := unix.IoctlGetInt(fd, blkROGet)
	if err != nil {
		return "", &os.PathError{Op: "ioctl BLKROGET", Path: t.path, Err: err}
	}
	if ro != 0 {
		return "", nil
	}
	return "a block device left writable (its read-only flag, BLKROGET, is off; NodePublishVolume asked for read-only, and a read-only mount of a device file stops no write to the device): " +
		"the alloc, which holds the volume for reading, could write it; the plugin must make the device it publishes read-only", nil
}

// blkROGet is the BLKROGET ioctl (<linux/fs.h>, _IO(0x12, 94)): a block device's read-only flag.
const blkROGet = 0x125e

// errTargetNotMounted matches checkTarget's error for a target with nothing mounted on it, or
// missing.
var errTargetNotMounted = errors.New("nothing is mounted at the target")

// targetNotMountedError is checkTarget's error for a target with nothing mounted on it.
type targetNotMountedError struct{ error }

func (e targetNotMountedError) Unwrap() error        { return e.error }
func (e targetNotMountedError) Is(target error) bool { return target == errTargetNotMounted }

// notABlockVolume says what block claim cl's opened target t shows when it cannot be the volume:
// a character device, a pipe or a socket, bound or made there ("" otherwise, and for a
// file-system claim). A block volume is published as its block device, or a file standing for
// one; a plugin that bound /dev/zero, /dev/null or a controller's character node (/dev/nvme0 for
// /dev/nvme0n1) had the claim recorded published, and the alloc's writes discarded
// (TestBlockTargetBoundFromACharacterDeviceIsRefused).
func notABlockVolume(t *pathFD, cl *store.Claim) (string, error) {
	if cl.AttachmentMode != spec.BlockDevice {
		return "", nil
	}
	ft, err := t.fileType()
	if err != nil {
		return "", err
	}
	switch ft {
	case unix.S_IFCHR:
		return "a character device, not a block device (a block volume is published as its block device, or a file standing for one: a character device such as /dev/zero, /dev/null or a controller's node discards or refuses what the alloc writes)", nil
	case unix.S_IFIFO:
		return "a pipe, not a block device (a block volume is published as its block device, or a file standing for one)", nil
	case unix.S_IFSOCK:
		return "a socket, not a block device (a block volume is published as its block device, or a file standing for one)", nil
	}
	return "", nil
}

// mountBelow names a mount strictly below target, a mount point just published ("" for none):
// from listmount(2) where the kernel has it (no read of the table, whose size grows with every
// claim on the host), else from one read of the table (kernelMounts.MountBelow). A MountTable
// without belowFinder (a test's) answers nothing.
func (e *Engine) mountBelow(target string) (string, error) {
	f, ok := e.cfg.Mounts.(belowFinder)
	if !ok {
		return "", nil
	}
	return f.MountBelow(target)
}

// sharedDir is a directory of volctl's own that a node RPC's path lies in and that nothing is
// mounted at (mountedOver): what names it, dir its path, hides what a mount over it hides.
type sharedDir struct{ what, dir, hides string }

// mountedOver checks, after the plugin answered rpc (NodeStageVolume, NodePublishVolume) OK for
// volume v, that none of dirs, directories volctl made on the way to the path it gave the
// plugin (the plugin's staging directory, staging/<plugin>; the claim's and the alloc's publish
// directories, publish/<alloc>/<volume> and publish/<alloc>) is a mount point: a plugin that
// mounted over one and made the path it was given inside answered OK with its path a mount, so
// checkTarget passed it, while its mount hid what volctl keeps there, the alloc's other claims'
// targets or the plugin's other volumes' stagings, and what used those paths from then on
// reached the plugin's file system, not their volumes (before, the claim was published:
// TestPluginMountingOverTheAllocsPublishDirectoryIsRefused). The teardown checks the same
// after NodeUnpublishVolume and NodeUnstageVolume (checkSharedDir); this refuses it when it is
// made. A mount there is final (errBadAnswer): the claim is rolled back, and the rollback's
// teardown finds the mount left and names it, to be unmounted by hand, for reconcile. statx's
// mount-root flag is asked for each; the table is read only where the kernel does not say.
func (e *Engine) mountedOver(v store.Volume, c *conn, rpc string, dirs ...sharedDir) error {
	for _, d := range dirs {
		real := e.realPath(d.dir)
		if root, known := isMountRoot(unix.AT_FDCWD, real); known && !root {
			continue
		} else if !known {
			under, err := e.mountsAt(d.dir)
			if err != nil {
				return fmt.Errorf("checking the mount table for %s %s after %s of volume %q: %w", d.what, d.dir, rpc, v.ID, err)
			}
			if !slices.ContainsFunc(under, func(m string) bool { return m == d.dir || m == real }) {
				continue
			}
		}
		return badAnswerf("%s: plugin %q answered OK for volume %q, but %s %s is a mount point now: volctl mounts nothing there, and the plugin's mount over it hides %s; "+
			"the plugin did not mount the volume where it was asked to",
			rpc, c.plugin.ID, v.ID, d.what, d.dir, d.hides)
	}
	return nil
}

// topLevel is one of the state dir's top levels a node RPC's path lies under (the state dir
// itself, and its staging or publish directory), with the ID of the mount its path led to
// before the RPC was sent (topLevels): mountedOverTop compares it with the one it leads to
// once the plugin answered.
type topLevel struct {
	what, dir, hides string
	id               uint64
	known            bool
}

// topLevels reads, before a node RPC whose path lies in the state dir's sub directory
// (stagingDir, publishDir), the mount IDs of the state dir and of that directory, for
// mountedOverTop. A level whose ID cannot be read (not there yet) is not compared. The cost is
// a statx of each (STATX_MNT_ID; an open and a read of its fdinfo where the kernel, older than
// 5.8, does not say).
func (e *Engine) topLevels(sub string) []topLevel {
	hides := "the stagings of every plugin's volumes, which their claims are published from"
	if sub == publishDir {
		hides = "the targets of every alloc's claims, whose paths now lead into that mount"
	}
	levels := []topLevel{
		{what: "the state dir", dir: e.cfg.StateDir, hides: "volctl's database and lock files and every staging and target under it"},
		{what: "the state dir's " + sub + " directory", dir: filepath.Join(e.cfg.StateDir, sub), hides: hides},
	}
	for i := range levels {
		levels[i].id, levels[i].known = pathMountID(levels[i].dir)
	}
	return levels
}

// pathMountID is the ID of the mount path leads to (its own, when it is a mount point, or the
// one it lies on), path's last component not followed; known is false when it cannot be read.
func pathMountID(path string) (id uint64, known bool) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &sx); err != nil {
		return 0, false
	} else if sx.Mask&unix.STATX_MNT_ID != 0 {
		return sx.Mnt_id, true
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	id, err = mountID(fd)
	return id, err == nil
}

// mountedOverTop checks, after the plugin answered rpc (NodeStageVolume, NodePublishVolume) OK
// for volume v, that the state dir and its staging or publish directory (before, read by
// topLevels just before rpc was sent) lead to the mounts they led to then. mountedOver cannot
// hold these levels to "no mount point": an honest state dir is often a file system of its own
// (a dedicated disk at /var/lib/volctl), and its staging or publish directory may be one too.
// What tells a plugin's mount apart is when it came: a mount over one of them (or over a
// directory above the state dir) made while the plugin handled rpc changes the mount that
// level's path leads to, while one made before, by the host's setup, does not. A plugin that
// mounted over publish/ and made the target inside hid every alloc's targets, their paths
// leading into its file system from then on, and the claim was published
// (TestPluginMountingOverTheStateDirsTopLevelsIsRefused); over the state dir, it hid the
// database and lock files, and the claim stopped on a lock file "removed by something else",
// not naming the plugin. The highest level changed is named, as what hides the rest. A mount
// there is final (errBadAnswer), as mountedOver's: the claim is rolled back, which cannot finish
// until the mount is undone by hand, and `volctl reconcile` then finishes it.
func (e *Engine) mountedOverTop(v store.Volume, c *conn, rpc string, before []topLevel) error {
	if l, now := changedTop(before); l != nil {
		return badAnswerf("%s: plugin %q answered OK for volume %q, but %s %s leads to another mount than before the plugin was sent %s (mount ID %d, was %d): "+
			"volctl mounts nothing there, and a mount made over it (or over a directory above it) while the plugin handled the request hides %s; "+
			"the plugin did not mount the volume where it was asked to: unmount what it mounted over %s by hand (`%s`), then run `volctl reconcile`",
			rpc, c.plugin.ID, v.ID, l.what, l.dir, rpc, now, l.id, l.hides, l.dir, shellquote.Command("umount -l", l.dir))
	}
	return nil
}

// mountedOverTopAfter is mountedOverTop for a teardown (NodeUnpublishVolume,
// NodeUnstageVolume) the plugin answered (answer, nil or ignorable): a mount it made over a top
// level while it undid the claim's or volume's own mount would hide the others' from then on,
// and nothing would ever undo it once the claim were freed. A check's failure (checkedAfter):
// the claim stays on its way back, for reconcile once the mount is undone by hand, as
// checkSharedDir's for the levels below
// (TestPluginMountingOverTheStateDirsTopLevelsAtTeardownIsNotFreed).
func (e *Engine) mountedOverTopAfter(v store.Volume, c *conn, rpc string, before []topLevel) error {
	if l, now := changedTop(before); l != nil {
		return checkedAfter(rpc, fmt.Errorf("%s %s leads to another mount after plugin %q answered %s for volume %q than before it was sent (mount ID %d, was %d): "+
			"volctl mounts nothing there, and a mount made over it (or over a directory above it) while the plugin handled the request hides %s; "+
			"unmount what was mounted over %s by hand (`%s`), then run `volctl reconcile`",
			l.what, l.dir, c.plugin.ID, rpc, v.ID, now, l.id, l.hides, l.dir, shellquote.Command("umount -l", l.dir)))
	}
	return nil
}

// changedTop returns the first (highest) of before whose path leads to another mount now than
// it did, with the mount it leads to now; nil when none does.
func changedTop(before []topLevel) (*topLevel, uint64) {
	for i, l := range before {
		if !l.known {
			continue
		}
		// Not readable now (removed meanwhile, by another process's release): nothing mounted
		// over it is seen, and the deeper levels are still checked (mountedOver).
		if now, known := pathMountID(l.dir); known && now != l.id {
			return &before[i], now
		}
	}
	return nil, 0
}

// bareStaging says how the mounted target t is the bare staging directory, on the state dir's
// disk, "" when it is not: t is the staging path itself (one file: a bind mount of it), or a
// directory below it (a plugin publishing from <staging>/globalmount, say), while nothing is
// mounted at the staging path, or only the staging directory itself, bound onto itself
// (boundOntoItself). staging is empty for a plugin that does not stage. A target on another
// device than the staging directory is neither, and costs nothing more to tell. Before, a
// directory below was not looked for: a plugin that staged nothing and published from one had
// the claim recorded published, the alloc writing on the host's disk under the state dir
// (TestTargetBoundFromBelowABareStagingIsRefused).
func (e *Engine) bareStaging(t *pathFD, staging string, mp MountPoint) (string, error) {
	if staging == "" || !mp.Mounted {
		return "", nil
	}
	real := e.realPath(staging)
	s, err := openNoFollow(e.cfg.StateDir, real, createNothing)
	if err != nil {
		return "", nil // not there, or not reachable without a symlink: not what t is
	}
	defer s.close()
	tid, err := t.id()
	if err != nil {
		return "", err
	}
	sid, err := s.id()
	if err != nil || tid.dev != sid.dev {
		return "", err
	}
	sp, err := e.cfg.Mounts.Mounted(e.cfg.StateDir, real)
	switch {
	case err != nil:
		return "", err
	case !sp.Mounted:
		return bareWords(s, tid, sid, "where nothing is mounted")
	case boundOntoItself(real, sid):
		return bareWords(s, tid, sid, "where only the staging directory itself is mounted (bound onto itself)")
	}
	return "", nil
}

// isBlockDeviceNode says whether path is a block device node (not followed).
func isBlockDeviceNode(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0
}

// bareWords says how target tid is the bare staging directory s (sid), which how says: s itself,
// or a directory or file below it (findBelow); "" when neither.
func bareWords(s *pathFD, tid, sid fileID, how string) (string, error) {
	if tid == sid {
		return how, nil
	}
	below, found, err := s.findBelow(tid)
	if err != nil || !found {
		return "", err
	}
	what := "a directory"
	if fi, err := os.Lstat(filepath.Join(s.path, below)); err == nil && !fi.IsDir() {
		what = "a file"
	}
	return fmt.Sprintf("%s, %s below it, %s", how, what, below), nil
}

// ownDirectory says which of volctl's own directories the mounted target t (at target, a
// claim of volumeID) is, "" when none: the plugin bind-mounted one there instead of the
// volume, and the mount point check passes it. A bind mount's root is the file it was made of,
// so t is compared (device and inode) with the state dir's directories: the target's parents
// up to the state dir, the directories above it (which hold it: aboveStateDir), the state
// dir's own (staging, publish, locks), each plugin's staging
// directory (a staging path's parent, which holds every staging of the plugin), every
// volume's staging path (another volume's, mounted or not: that volume's data, or the host's
// disk under it), every alloc's publish directory and its volumes' directories, and every
// other volume's claim target (published, that volume's data, which a plugin that does not
// stage has at no staging path; or the host's disk); a target that is not a directory (a block
// claim's) is compared with the state dir's files too (stateFile). A part of another volume's
// mounted staging (a file or directory inside it: inOtherStaging), or a block device file of
// the device that staging's file system is on, is that volume's data too. A target that is this volume's staging
// path (staging, empty for a plugin that does not stage), which is what a plugin publishes
// from, is still compared with the directories (a staging that is a bind of one is no
// better), but not with other volumes' stagings and targets: two volumes of one share may
// have their stagings on one file system root. This volume's other targets share its root,
// as they must. bareStaging judges a bare staging. The cost is a read of the state dir and of
// its staging directories, a statx of each staging path that does not sync with its file
// system (a hung NFS staging of another volume does not hang this claim), and the publish
// tree's (publishTreeEntry; a restore's pass walks it once, publishIndex).
func (e *Engine) ownDirectory(ctx context.Context, t *pathFD, target, staging, volumeID string, mp MountPoint) (string, error) {
	if !mp.Mounted {
		return "", nil
	}
	tid, err := t.id()
	if err != nil {
		return "", err
	}
	is := func(path string) bool {
		p, err := openNoFollow(e.cfg.StateDir, path, createNothing)
		if err != nil {
			return false // not there, or not reachable without a symlink: not what t is
		}
		defer p.close()
		id, err := p.id()
		return err == nil && id == tid
	}
	ownStaging := staging != "" && is(e.realPath(staging))
	ofStateDir := func(dir string) string {
		return fmt.Sprintf("a bind mount of %s, a directory of volctl's state dir (on the host's disk, not the volume: the claim would read and write volctl's own files)", dir)
	}
	if boundOntoItself(target, tid) {
		return "a bind mount of itself (the bare target, on the host's disk under volctl's state dir, not the volume: the alloc would write there)", nil
	}
	if dir, err := t.isDir(); err != nil {
		return "", err
	} else if !dir {
		if file := stateFile(e.cfg.StateDir, tid); file != "" {
			return fmt.Sprintf("a bind mount of %s, a file of volctl's state dir (on the host's disk, not the volume: the claim would read and write volctl's own files)", file), nil
		}
	}
	for dir := filepath.Dir(target); strings.HasPrefix(dir, e.cfg.StateDir+"/"); dir = filepath.Dir(dir) {
		if is(dir) {
			return ofStateDir(dir), nil
		}
	}
	if is(e.cfg.StateDir) {
		return ofStateDir(e.cfg.StateDir), nil
	}
	if above := aboveStateDir(e.cfg.StateDir, tid); above != "" {
		return fmt.Sprintf("a bind mount of %s, a directory above volctl's state dir (the claim would reach the state dir, its database among it, and the host's disk around it)", above), nil
	}
	for _, name := range subdirs(e.cfg.StateDir) {
		if top := filepath.Join(e.cfg.StateDir, name); is(top) {
			return ofStateDir(top), nil
		}
	}
	stagings := filepath.Join(e.cfg.StateDir, stagingDir)
	var near []otherStaging // other volumes' stagings on the target's file system (inOtherStaging)
	rdev, block, err := t.blockDevice()
	if err != nil {
		return "", err
	}
	for _, name := range subdirs(stagings) {
		plugin := filepath.Join(stagings, name)
		if is(plugin) {
			return ofStateDir(plugin), nil
		}
		if ownStaging {
			continue // another volume's staging may be this one's storage too (one share)
		}
		for _, volume := range subdirs(plugin) {
			other := filepath.Join(plugin, volume)
			if is(other) {
				return fmt.Sprintf("volume %q's staging path %s bind-mounted (%s)", volume, other, anotherVolume), nil
			}
			oid, mounted := mountRootID(other)
			switch {
			case volume == volumeID:
				// This volume's own staging: what it publishes from.
			case !mounted:
				// Not there, or nothing mounted there: no data of the volume's to be handed.
			case block && rdev == oid.dev:
				return fmt.Sprintf("the device of volume %q, whose file system is mounted at its staging path %s (%s, and the file system mounted from it corrupted by two writers)", volume, other, anotherVolume), nil
			case oid.dev == tid.dev:
				near = append(near, otherStaging{volume: volume, path: other})
			}
		}
	}
	if len(near) > 0 {
		if in, err := e.inOtherStaging(target, staging, near); err != nil || in != "" {
			return in, err
		}
	}
	if block {
		if other, err := e.blockTargetOfDevice(ctx, rdev, volumeID); err != nil || other != "" {
			return other, err
		}
	}
	if idx := publishIndexOf(ctx); idx != nil {
		return idx.entry(e, tid, t.born, target, volumeID, !ownStaging, ofStateDir), nil
	}
	return e.publishTreeEntry(tid, target, volumeID, !ownStaging, ofStateDir), nil
}

// blockTargetOfDevice says, of a block target bound from device rdev, whether another volume's
// published block claim has the same device at its target: another device node of it (made by
// mknod, as plugins that make their own nodes do, or /dev/mapper/x beside /dev/dm-N), which the
// comparisons by file identity (the publish tree, its index) do not see. Before, the claim was
// published, and two allocs wrote one disk as two volumes
// (TestBlockTargetBoundFromAnotherNodeOfAnotherVolumesDeviceIsRefused). It also says whether a
// file system of the device is mounted (deviceMounted): at another volume's claim target (a
// plugin that does not stage mounts a file-system claim's there:
// TestBlockTargetBoundFromTheDeviceOfAnotherVolumesMountedTargetIsRefused), which the
// stagings' comparison does not see, or anywhere else, the state dir's own disk among them
// (TestBlockTargetBoundFromTheStateDirsDeviceIsRefused): the alloc would write raw blocks
// under a mounted file system, which two writers corrupt. The cost is one read of the claims,
// a stat of each other block claim's target, and one read of the mount table, for a block
// target only.
func (e *Engine) blockTargetOfDevice(ctx context.Context, rdev uint64, volumeID string) (string, error) {
	claims, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ListAll() })
	if err != nil {
		return "", fmt.Errorf("reading the claims to compare the target's device with other block claims': %w", err)
	}
	for _, c := range claims {
		if c.VolumeID == volumeID || c.AttachmentMode != spec.BlockDevice || c.TargetPath == "" ||
			c.State != store.ClaimPublished && c.State != store.ClaimUnpublishing {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(e.realPath(c.TargetPath), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != rdev {
			continue
		}
		return fmt.Sprintf("the device of volume %q, published at its target %s (another device node of it: %s)", c.VolumeID, c.TargetPath, anotherVolume), nil
	}
	return e.deviceMounted(rdev, volumeID, claims)
}

// deviceMounter is a MountTable that can say where file systems of a device are mounted.
type deviceMounter interface {
	// MountedFrom returns the mount points (as the table spells them) of the mounts whose file
	// system is on device dev.
	MountedFrom(dev uint64) ([]string, error)
}

// MountedFrom implements deviceMounter from one read of the table.
func (kernelMounts) MountedFrom(dev uint64) ([]string, error) {
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return unix.Mkdev(uint32(m.Major), uint32(m.Minor)) != dev, false
	})
	if err != nil {
		return nil, store.MountTableUnreadable(err)
	}
	points := make([]string, len(mounts))
	for i, m := range mounts {
		points[i] = m.Mountpoint
	}
	return points, nil
}

// deviceMounted is blockTargetOfDevice's look at where file systems of device rdev are: the
// state dir's (on the host's disk, not the volume), another volume's claim target's (of
// claims), or any mounted one the table names. A table that cannot say (a test's) says none.
func (e *Engine) deviceMounted(rdev uint64, volumeID string, claims []store.Claim) (string, error) {
	const corrupted = "the alloc would write raw blocks under a mounted file system, which two writers corrupt"
	if id, ok := statID(e.cfg.StateDir); ok && id.dev == rdev {
		return fmt.Sprintf("the device volctl's state dir %s is on (the host's disk, not the volume: %s, volctl's database among it)", e.cfg.StateDir, corrupted), nil
	}
	dm, ok := e.cfg.Mounts.(deviceMounter)
	if !ok {
		return "", nil
	}
	points, err := dm.MountedFrom(rdev)
	if err != nil || len(points) == 0 {
		return "", err
	}
	for _, c := range claims {
		if c.VolumeID == volumeID || c.TargetPath == "" || !slices.Contains(points, e.realPath(c.TargetPath)) {
			continue
		}
		return fmt.Sprintf("the device of volume %q, whose file system is mounted at its target %s (%s, and %s)", c.VolumeID, c.TargetPath, anotherVolume, corrupted), nil
	}
	return fmt.Sprintf("the device of the file system mounted at %s (not the volume: %s)", spec.QuoteName(points[0]), corrupted), nil
}

// boundOntoItself reports whether the mount at target, whose root is tid, is a bind of the
// target itself: what the plugin made there, on the state dir's disk, which the mount covers
// (no path shows it, so no comparison of identities tells it). It is on the parent's file
// system, so a root on another (a volume's storage elsewhere) is not it. The kernel is asked
// first whether the target is a mount's root (statx's STATX_ATTR_MOUNT_ROOT): a mount table
// other than the kernel's, a test's, can call a bare directory mounted, and its entry is then
// tid too. A directory is then answered from the kernel's record of its mount and the one
// holding its name (statmount(2), Linux 6.8: coversItself). Otherwise, and for a file (a
// block claim's device file, which can have other names), the covered entry is looked at
// through a copy of the parent's mount without the mounts below it (open_tree(2), no
// AT_RECURSIVE: what the target's name holds on the parent's file system), one statx,
// whatever the size of the directory (a plugin's staging directory holds every volume's
// staging). Where the kernel cannot say (before 5.8) or the copy cannot be made (a user
// without CAP_SYS_ADMIN, who cannot mount either), nothing is told.
func boundOntoItself(target string, tid fileID) bool {
	itself, _ := selfBound(target, tid, true)
	return itself
}

// selfBound is boundOntoItself, also saying how it was answered: "statmount", "copy", or ""
// when it was not asked further than the statx of the target and its parent. Tests take the
// copy's way with useStatmount false.
func selfBound(target string, tid fileID, useStatmount bool) (bool, string) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, target, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_MNT_ID_UNIQUE, &sx); err != nil ||
		sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 || statxID(&sx) != tid {
		return false, "" // not a mount's root, or one the kernel (before 5.8) does not say is
	}
	mnt := uint64(0)
	if useStatmount && sx.Mask&unix.STATX_MNT_ID_UNIQUE != 0 && uint32(sx.Mode)&unix.S_IFMT == unix.S_IFDIR {
		mnt = sx.Mnt_id
	}
	if err := unix.Statx(unix.AT_FDCWD, filepath.Dir(target), unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &sx); err != nil || statxID(&sx).dev != tid.dev {
		return false, "" // what the target's name covers is on its parent's file system, and tid is not
	}
	if mnt != 0 {
		if itself, ok := coversItself(target, mnt); ok {
			return itself, "statmount"
		}
	}
	tree, err := unix.OpenTree(unix.AT_FDCWD, filepath.Dir(target), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return false, "copy"
	}
	defer unix.Close(tree)
	if err := unix.Statx(tree, filepath.Base(target), unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_INO, &sx); err != nil {
		return false, "copy"
	}
	return statxID(&sx) == tid, "copy"
}

// aboveStateDir says which directory above the state dir (its parent up to the host's root) the
// identity tid is, "" when none: a target bound from one holds the state dir, on its file
// system. They are the host's own directories, which the state dir is reached through, so
// they are asked as the host resolves them: a statx each, a few.
func aboveStateDir(stateDir string, tid fileID) string {
	for dir := filepath.Dir(stateDir); ; dir = filepath.Dir(dir) {
		if id, ok := statID(dir); ok && id == tid {
			return dir
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
}

// stateFile says which file of the state dir a target that is not a directory (a block claim's,
// the device file bound there) is by its identity tid, "" when none: one of the state dir's own
// (volctl.db and its log, which hold every volume's secrets and every claim) or of its
// directories outside the staging and publish trees (locks/), which ownDirectory compares as
// they are. The files are on their directory's file system, so a directory whose device is not
// tid's is not read: a block volume's device file, on devtmpfs, costs a statx of the state dir
// and of each of its few directories.
func stateFile(stateDir string, tid fileID) string {
	dirs := []string{stateDir}
	for _, name := range subdirs(stateDir) {
		if name != stagingDir && name != publishDir {
			dirs = append(dirs, filepath.Join(stateDir, name))
		}
	}
	for _, dir := range dirs {
		if id, ok := statID(dir); !ok || id.dev != tid.dev {
			continue
		}
		for _, name := range entryNames(dir) {
			path := filepath.Join(dir, name)
			if id, ok := statID(path); ok && id == tid {
				return path
			}
		}
	}
	return ""
}

// publishTreeEntry is ownDirectory's look at the publish tree: which of its alloc and volume
// directories the target's identity tid is, or, with targets, which other volume's claim
// target (a claim of volumeID shares its root, as it must). The directories are on the
// publish directory's file system, and looked at only when tid is: a target that is a
// volume's storage elsewhere, the common case, costs one statx unless targets are compared
// too. A tree of a few paths is walked, one statx a path (the tree is listed, not opened
// component by component: a path a symlink put there is only compared, and compares as the
// link). A larger one is looked up in the mount table (publishTableEntry): a walk costs a
// directory read an alloc and a statx a claim on the host, and a claim among 1,000 others
// spent most of its time there (BENCHMARKS.md, BenchmarkClaimAmongPublished).
func (e *Engine) publishTreeEntry(tid fileID, target, volumeID string, targets bool, ofStateDir func(string) string) string {
	publish := filepath.Join(e.cfg.StateDir, publishDir)
	pub, ok := statID(publish)
	dirs := ok && pub.dev == tid.dev
	if !dirs && !targets {
		return ""
	}
	allocs := subdirs(publish)
	is := func(path string) bool { id, ok := statID(path); return ok && id == tid }
	// walk walks the tree until a path is tid, or for at most budget paths (whole: false).
	walk := func(budget int) (found string, whole bool) {
		paths := 0
		whole = true
		eachPublishPath(publish, allocs, func(volume string) bool { return targets && volume != volumeID }, func(en publishEntry) bool {
			if paths++; paths > budget {
				whole = false
				return false
			}
			switch {
			case en.target && is(en.path):
				found = targetBound(en)
			case !en.target && dirs && is(en.path):
				found = ofStateDir(en.path)
			}
			return found == ""
		})
		return found, whole
	}
	found, whole := walk(e.publishWalkPaths)
	if !whole {
		var ok bool
		if found, ok = publishTableEntry(publish, tid, target, volumeID, targets, ofStateDir); ok {
			return found
		}
		found, _ = walk(math.MaxInt)
	}
	e.publishWalks.Add(1)
	return found
}

// publishWalkPaths is the number of paths publishTreeEntry walks before it reads the mount
// table instead, which costs more than a walk of a few paths (about 0.3 ms for a table of 30
// mounts). An engine's own, which tests set to 0 to take the table's way (Engine.publishWalks
// counts the walks made whole).
const publishWalkPaths = 64

// publishTableEntry is publishTreeEntry read from the kernel's mount table rather than by a
// walk; ok is false when the table cannot answer, and the tree is walked. What a path of the
// tree is, the target's identity included, is a directory of some file system: the root of
// the topmost mount at that path when one is mounted there (a published target), and else
// the directory the mount holding the path has there. A bind mount's root is the directory
// it was made of, which the table names by its path within its file system, and a directory
// has one such path. So the target's mount (its file system and root) is compared with the
// mounts at the paths of the tree (a volume's published target) and with the mount holding
// the publish directory, each naming a path of the file system with its place in the tree;
// a root at or below one of them is the directory at that place, if its identity is tid,
// which one statx checks for a place the walk would report. A target that is not a
// directory (a block claim's device file, which can have other names) is walked, and so is
// any answer the statx does not confirm (the tree changed since the table was read).
func publishTableEntry(publish string, tid fileID, target, volumeID string, targets bool, ofStateDir func(string) string) (string, bool) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, target, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_INO, &sx); err != nil ||
		statxID(&sx) != tid || uint32(sx.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return "", false
	}
	mounts, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !within(m.Mountpoint, publish) && !within(publish, m.Mountpoint) && m.Mountpoint != target, false
	})
	if err != nil {
		return "", false
	}
	// The mount at each path: the target's, the one holding the publish directory, and those
	// at the tree's paths (the table lists a mount after the one it covers, as mounts are made;
	// two at the target or at the holder's path, which a mount moved since can list otherwise,
	// are left to the walk, as a wrong one there would hide a bind).
	var top, holder *mountinfo.Info
	stacked := false
	places := map[string]*mountinfo.Info{}
	for _, m := range mounts {
		switch {
		case m.Mountpoint == target:
			stacked = stacked || top != nil
			top = m
		case within(publish, m.Mountpoint) && (holder == nil || len(m.Mountpoint) >= len(holder.Mountpoint)):
			stacked = stacked || holder != nil && holder.Mountpoint == m.Mountpoint
			holder = m
		case within(m.Mountpoint, publish) && m.Mountpoint != publish && publishDepth(publish, m.Mountpoint) <= 3:
			places[m.Mountpoint] = m
		}
	}
	if top == nil || holder == nil || stacked {
		return "", false
	}
	rel, _ := filepath.Rel(holder.Mountpoint, publish)
	places[publish] = &mountinfo.Info{Major: holder.Major, Minor: holder.Minor, Root: filepath.Join(holder.Root, rel)}
	for point, m := range places {
		if m.Major != top.Major || m.Minor != top.Minor {
			continue
		}
		rest, ok := below(m.Root, top.Root)
		if !ok {
			continue
		}
		path := filepath.Join(point, rest)
		parts := strings.Split(strings.TrimPrefix(path, publish+"/"), "/")
		var found string
		switch {
		case path == publish || path == target || len(parts) > 3:
			continue
		case len(parts) < 3:
			found = ofStateDir(path)
		case targets && parts[1] != volumeID:
			found = targetBound(publishEntry{path: path, alloc: parts[0], volume: parts[1], target: true})
		default:
			continue // this volume's target: its root, as it must be
		}
		if id, ok := statID(path); !ok || id != tid {
			return "", false
		}
		return found, true
	}
	return "", true
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// below is path's part below dir ("" for dir itself), false when path is not within dir.
func below(dir, path string) (string, bool) {
	if !within(path, dir) {
		return "", false
	}
	return strings.TrimPrefix(strings.TrimPrefix(path, dir), "/"), true
}

// publishDepth is the number of components of path below publish.
func publishDepth(publish, path string) int {
	return strings.Count(strings.TrimPrefix(path, publish), "/")
}

// eachPublishPath calls fn with each path of the publish tree, in order, until fn returns
// false: each alloc's directory (allocs, the publish directory's subdirectories), each of its volumes' directories, and, for a volume
// withTargets says to list, the claim targets in its directory (a block target is a file).
func eachPublishPath(publish string, allocs []string, withTargets func(volume string) bool, fn func(en publishEntry) bool) {
	for _, alloc := range allocs {
		allocDir := filepath.Join(publish, alloc)
		if !fn(publishEntry{path: allocDir}) {
			return
		}
		for _, volume := range subdirs(allocDir) {
			volumeDir := filepath.Join(allocDir, volume)
			if !fn(publishEntry{path: volumeDir}) {
				return
			}
			if !withTargets(volume) {
				continue
			}
			for _, usage := range entryNames(volumeDir) {
				if !fn(publishEntry{path: filepath.Join(volumeDir, usage), alloc: alloc, volume: volume, target: true}) {
					return
				}
			}
		}
	}
}

// targetBound is what ownDirectory says of a target that is a bind of another volume's target en.
func targetBound(en publishEntry) string {
	return fmt.Sprintf("volume %q's target %s (alloc %q's claim) bind-mounted (%s)", en.volume, en.path, en.alloc, anotherVolume)
}

// publishIndex is publishTreeEntry's walk made once for a pass that checks many targets: a
// restore publishes every claim again, and a walk per claim costs a statx per claim on the
// host, n² in all (a restore of 1,000 claims took 3.4 s rather than 0.8, most of it these
// statx calls; BENCHMARKS.md). The tree's directories and targets are indexed by identity
// when the first target is checked, and each target checked after is added with the identity
// it then has (its volume's root, published), so that a later target bound from it is still
// told. A target mounted since the index was built by anything else (another command's claim,
// in this process or another, or one of the pass's own claims published but not yet checked)
// is not: the index knows it as the bare directory it was, and a target bound from it would
// pass, reading and writing that volume's data. So a target the index finds nothing for is
// looked up again after the mounts made under the publish tree since (the kernel's mount
// table, read under the publish directory: a mount the index has not seen, by its ID, mount
// point, device and root, as the kernel reuses the IDs of mounts undone) are added, each a
// statx once (and the alloc and volume directories above a new target): one read of the
// table a check of a target compared with other volumes' targets (a plugin that does not
// stage), rather than a statx a claim. A staging plugin's target, a bind of its own staging,
// is compared with the tree's directories only, and reads no table (the restore of 1,000
// claims BENCHMARKS.md measures). Neither the table nor the index knows a directory another
// command made since (an alloc's or a volume's, its target not mounted yet, or not read from
// the table: a staging plugin's check), and a target bound from one passed, handing the alloc
// the state dir's disk and, the mount shared, each target mounted under that directory after
// (TestRestoreIndexSeesADirectoryMadeSinceItWasBuilt). Such a target is on the publish
// directory's file system and was born after the index was built (a statx of the open target,
// for a target the index finds nothing for on that file system only): the tree is indexed
// again then. A staging's root is born when its volume is made, before the pass as a rule, so
// the restore of 1,000 claims walks the tree once still.
type publishIndex struct {
	mu      sync.Mutex
	built   bool
	builtAt time.Time // when the walk started: a directory of the tree born since may be unindexed
	// builtMono is time.Now at the walk's start, whose monotonic reading tells how long ago that
	// was whatever the wall clock (builtAt's, the engine's clock) did since (bornSince).
	builtMono time.Time
	dev       uint64 // the publish directory's device, 0 when it could not be had
	byID      map[fileID][]publishEntry
	mounts    map[seenMount]bool // mounts under the publish tree whose mount points are indexed
	builds    int                // walks of the tree made, for tests of what a pass costs
}

// clockLag is how far a file system's timestamps may lag the clock time.Now reads: the kernel
// stamps files from a coarse clock, a tick (up to 10 ms) behind.
const clockLag = 100 * time.Millisecond

// seenMount tells a mount of the table from any made after it was undone.
type seenMount struct {
	id, major, minor int
	point, root      string
}

func seen(m *mountinfo.Info) seenMount {
	return seenMount{id: m.ID, major: m.Major, minor: m.Minor, point: m.Mountpoint, root: m.Root}
}

// publishEntry is a path of the publish tree: an alloc's or volume's directory, or a claim
// target (alloc, volume) of a volume.
type publishEntry struct {
	path, alloc, volume string
	target              bool
}

type publishIndexKey struct{}

// withPublishIndex returns ctx carrying a new publishIndex for the checks made under it.
func withPublishIndex(ctx context.Context) context.Context {
	return context.WithValue(ctx, publishIndexKey{}, &publishIndex{})
}

func publishIndexOf(ctx context.Context) *publishIndex {
	idx, _ := ctx.Value(publishIndexKey{}).(*publishIndex)
	return idx
}

// entry is publishTreeEntry from the index (built on first use, brought up to the mount
// table on a miss, built again for a target born since on its file system: born says when);
// the target checked (tid, at target, a claim of volumeID) is added to it. When the mount
// table cannot be read, the tree is walked as publishTreeEntry does.
func (x *publishIndex) entry(e *Engine, tid fileID, born func() (time.Time, error), target, volumeID string, targets bool, ofStateDir func(string) string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	publish := filepath.Join(e.cfg.StateDir, publishDir)
	if !x.built {
		x.build(publish, e.cfg.Now())
	}
	found := x.lookup(tid, volumeID, targets, ofStateDir)
	if found == "" && targets { // a staging plugin's target, its staging's bind, reads no table
		if !x.refresh(publish) {
			found = e.publishTreeEntry(tid, target, volumeID, targets, ofStateDir)
		} else {
			found = x.lookup(tid, volumeID, targets, ofStateDir)
		}
	}
	if found == "" && x.bornSince(tid, born, e.cfg.Now()) {
		x.build(publish, e.cfg.Now())
		found = x.lookup(tid, volumeID, targets, ofStateDir)
	}
	if found == "" {
		x.add(publishEntry{path: target, alloc: filepath.Base(filepath.Dir(filepath.Dir(target))), volume: volumeID, target: true}, tid)
	}
	return found
}

// lookup is what the index says of identity tid, as publishTreeEntry does. A path found is
// looked at again (a statx, for a match only): since the index took it, a claim's rollback or
// another command's release may have unmounted it or removed it, and its identity may be
// another file's now (an inode number reused).
func (x *publishIndex) lookup(tid fileID, volumeID string, targets bool, ofStateDir func(string) string) string {
	for _, en := range x.byID[tid] {
		if id, ok := statID(en.path); !ok || id != tid {
			continue
		}
		switch {
		case !en.target:
			return ofStateDir(en.path)
		case targets && en.volume != volumeID:
			return targetBound(en)
		}
	}
	return ""
}

// add indexes en under identity id, once.
func (x *publishIndex) add(en publishEntry, id fileID) {
	if !slices.Contains(x.byID[id], en) {
		x.byID[id] = append(x.byID[id], en)
	}
}

// bornSince reports whether identity tid may be a directory of the publish tree the index has
// not seen: on the publish directory's file system, and born (born's answer) after the index
// was built, or when that cannot be told. A birth time is the wall clock's: when that clock
// reads (now) less time since the build than the monotonic clock measured, it was stepped back
// meanwhile (NTP, a date set by hand), and a directory born since may carry a time before the
// build's, so every one is taken for born since: one walk more, where the step made a
// directory another command made after the walk look walked
// (TestRestoreIndexSeesADirectoryMadeSinceItWasBuiltAfterTheClockSteppedBack).
func (x *publishIndex) bornSince(tid fileID, born func() (time.Time, error), now time.Time) bool {
	if x.dev != 0 && tid.dev != x.dev {
		return false
	}
	if now.Round(0).Sub(x.builtAt.Round(0)) < time.Since(x.builtMono)-clockLag {
		return true
	}
	at, err := born()
	return err != nil || !at.Before(x.builtAt.Add(-clockLag))
}

// build walks the publish tree as publishTreeEntry does, every path of it indexed, and notes
// the mounts under it, whose mount points the walk indexed as they are.
func (x *publishIndex) build(publish string, now time.Time) {
	x.built, x.builtAt, x.builtMono, x.byID, x.mounts = true, now, time.Now(), map[fileID][]publishEntry{}, map[seenMount]bool{}
	x.builds++
	x.dev = 0
	if id, ok := statID(publish); ok {
		x.dev = id.dev
	}
	if mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(publish)); err == nil {
		for _, m := range mounts {
			x.mounts[seen(m)] = true
		}
	}
	eachPublishPath(publish, subdirs(publish), func(string) bool { return true }, func(en publishEntry) bool {
		x.stat(en)
		return true
	})
}

// stat indexes en under the identity its path has now.
func (x *publishIndex) stat(en publishEntry) {
	if id, ok := statID(en.path); ok {
		x.add(en, id)
	}
}

// refresh indexes the mount points under the publish tree of mounts made since it last
// looked; false when the mount table cannot be read.
func (x *publishIndex) refresh(publish string) bool {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(publish))
	if err != nil {
		return false
	}
	for _, m := range mounts {
		if x.mounts[seen(m)] {
			continue
		}
		x.mounts[seen(m)] = true
		rel, err := filepath.Rel(publish, m.Mountpoint)
		if err != nil {
			continue
		}
		switch parts := strings.Split(rel, string(filepath.Separator)); len(parts) {
		case 1, 2: // an alloc's or volume's directory, mounted over
			x.stat(publishEntry{path: m.Mountpoint})
		case 3: // a target, and the directories made for it, which may be new too
			x.stat(publishEntry{path: m.Mountpoint, alloc: parts[0], volume: parts[1], target: true})
			x.stat(publishEntry{path: filepath.Dir(m.Mountpoint)})
			x.stat(publishEntry{path: filepath.Join(publish, parts[0])})
		}
	}
	return true
}

// otherStaging is another volume's staging path, mounted from the target's file system
// (ownDirectory, inOtherStaging).
type otherStaging struct{ volume, path string }

// mountRoots is a MountTable that can say which directory of its file system each of some
// mount points shows (mountinfo's root) and on which file system: inOtherStaging asks it. The
// kernel's table can; a test's fake cannot, and is not asked.
type mountRoots interface {
	// MountRoots returns, for each of paths (as the table spells them) that is a mount point,
	// its topmost mount's file system and root.
	MountRoots(paths ...string) (map[string]mountRoot, error)
}

// mountRoot is what a mount shows: the directory (or file) root of the file system dev.
type mountRoot struct {
	dev  uint64
	root string
}

// inOtherStaging says which other volume's staging the mounted target is a part of, "" when
// none: a bind of a file or directory inside another volume's staging path, where that
// volume's file system is mounted, which ownDirectory's identities (a staging path itself)
// do not tell. A bind mount's root is the file it was made of, named by the mount table by
// its path within its file system, as the staging's mount is: a target on the same file
// system whose root lies below that staging's root is that volume's data (a block claim
// handed a file of it as its device, a file-system claim one of its directories). near are
// the other stagings on the target's file system (the caller compared devices, so a target on
// a file system of its own, the common case, reads no table); staging is this volume's own:
// a target inside it is what this volume publishes from (one share staged for several volumes
// at their roots holds each one's), and is not refused.
func (e *Engine) inOtherStaging(target, staging string, near []otherStaging) (string, error) {
	// The target and this volume's staging first: a target published from its own staging,
	// as a plugin that stages publishes, needs no look at the others (statmount(2) answers
	// for a few paths without the table; a plugin root holding every volume's staging makes
	// near every staging).
	mr, t, within, err := e.targetRoot(target, staging)
	if err != nil || within == nil {
		return "", err
	}
	var paths []string
	for _, o := range near {
		paths = append(paths, o.path)
	}
	roots, err := mr.MountRoots(paths...)
	if err != nil {
		return "", err
	}
	for _, o := range near {
		if r, ok := roots[o.path]; ok && within(r) {
			return fmt.Sprintf("a bind mount of %s, inside volume %q's staging path %s (%s)", t.root, o.volume, o.path, anotherVolume), nil
		}
	}
	return "", nil
}

// fileInOtherTarget says which other volume's published file-system target a block claim's
// target t, a file standing for the device, is a bind of a file inside: a plugin that does not
// stage mounts a file-system claim's volume right at its target, and its data is there alone,
// where inOtherStaging does not look. A block target inside its own staging is the plugin's
// (one share). "" when none, or t is a device (blockTargetOfDevice compares those). Before,
// the claim was published, and its alloc's raw blocks overwrote that volume's file
// (TestBlockTargetBoundFromAFileInsideAnotherVolumesMountedTargetIsRefused). The cost is one
// read of the claims and one statmount of each other file-system claim's target, for a block
// target that is a file only.
func (e *Engine) fileInOtherTarget(ctx context.Context, t *pathFD, target, staging, volumeID string) (string, error) {
	if ft, err := t.fileType(); err != nil || ft != unix.S_IFREG {
		return "", err
	}
	mr, tr, within, err := e.targetRoot(target, staging)
	if err != nil || within == nil {
		return "", err
	}
	claims, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ListAll() })
	if err != nil {
		return "", fmt.Errorf("reading the claims to compare the target with other volumes' targets: %w", err)
	}
	var (
		others []store.Claim
		paths  []string
	)
	for _, c := range claims {
		if c.VolumeID == volumeID || c.AttachmentMode != spec.FileSystem || c.TargetPath == "" ||
			c.State != store.ClaimPublished && c.State != store.ClaimUnpublishing {
			continue
		}
		others = append(others, c)
		paths = append(paths, e.realPath(c.TargetPath))
	}
	if len(others) == 0 {
		return "", nil
	}
	roots, err := mr.MountRoots(paths...)
	if err != nil {
		return "", err
	}
	for i, c := range others {
		if r, ok := roots[paths[i]]; ok && within(r) {
			return fmt.Sprintf("a bind mount of %s, inside volume %q's target %s (%s)", tr.root, c.VolumeID, c.TargetPath, anotherVolume), nil
		}
	}
	return "", nil
}

// targetRoot is what the mounted target shows (its mount's file system and root, from the
// engine's mountRoots) and within, which says whether another mount's root holds it (the same
// file system, at or above its root). within is nil where the table cannot say, or where the
// target is within this volume's own staging (what it publishes from: one share staged for
// several volumes holds each one's), which is not compared with the others'.
func (e *Engine) targetRoot(target, staging string) (mr mountRoots, t mountRoot, within func(mountRoot) bool, err error) {
	mr, ok := e.cfg.Mounts.(mountRoots)
	if !ok {
		return nil, t, nil, nil
	}
	paths := []string{target}
	if staging != "" {
		paths = append(paths, e.realPath(staging))
	}
	roots, err := mr.MountRoots(paths...)
	if err != nil {
		return nil, t, nil, err
	}
	if t, ok = roots[target]; !ok {
		return nil, t, nil, nil
	}
	within = func(r mountRoot) bool {
		return r.dev == t.dev && (r.root == "/" || r.root == t.root || strings.HasPrefix(t.root, strings.TrimSuffix(r.root, "/")+"/"))
	}
	if own, ok := roots[e.realPath(staging)]; staging != "" && ok && within(own) {
		return nil, t, nil, nil
	}
	return mr, t, within, nil
}

// anotherVolume is what ownDirectory says of a target that is another volume's staging or target.
const anotherVolume = "another volume: the claim would read and write that volume's data, or the host's disk below it"

// stillStaged reports whether a NodeStageVolume failure says the plugin still holds the
// volume's staging that other claims made: ALREADY_EXISTS ("staged at this path with another
// capability") while claims of the volume other than this one are node-staged or on. The row
// said unstaged because the mount table lacks the staging (the lost-staging rule), but this
// plugin does not mount at the staging path, and what it holds is the staging those claims
// share, as before the check; the claim publishes onto it. Those claims vouch for it only
// while one's target is still mounted: after a reboot they are recorded on with their mounts
// gone too, and taking their record for the staging swallowed the ALREADY_EXISTS, recorded the
// staging staged where nothing was, and every pass then named NodePublishVolume "not staged",
// never the answer that failed the restore (TestRestoreNamesNodeStageAlreadyExistsBesideAnotherLostClaim).
func (p *checkpoint) stillStaged(ctx context.Context, err error) bool {
	if !csi.IsAlreadyExists(err) {
		return false
	}
	u, uerr := p.usage(ctx)
	if uerr != nil || u.staging == 0 {
		return false
	}
	others, verr := viewOne(ctx, p.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume(p.cl.VolumeID) })
	if verr != nil {
		return false
	}
	for _, c := range others {
		if c.ID == p.cl.ID || c.TargetPath == "" || c.State != store.ClaimPublished && c.State != store.ClaimUnpublishing {
			continue
		}
		if mp, merr := p.e.cfg.Mounts.Mounted(p.e.cfg.StateDir, p.e.realPath(c.TargetPath)); merr == nil && mp.Mounted {
			return true
		}
	}
	return false
}
