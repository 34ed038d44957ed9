package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/store"
)

// DetachResult says what a detach did to each claim.
type DetachResult struct {
	Released []ClaimInfo `json:"released"`
	Failed   []ClaimInfo `json:"failed,omitempty"`
	// Warnings are what a forced detach could not do (it does not stop for them).
	Warnings []string `json:"warnings,omitempty"`
	// ReleasedMeanwhile are the claims the volume had as the detach began that another volctl
	// freed while the detach waited for the volume (a release, another detach): three detaches
	// at once said "has no claims: nothing to detach" twice of a volume claimed as they began
	// (TestDetachThatWaitedForAnotherSaysWhatItReleased).
	ReleasedMeanwhile []ClaimInfo `json:"released_meanwhile,omitempty"`
	// DetachedFrom is the node a forced detach undid the volume's recorded attachment from
	// (its ControllerUnpublishVolume answered), "" for none: a forced detach of a volume with
	// no claims, sending the unpublish owed, said it had "nothing to detach"
	// (TestForcedDetachThatSentTheOwedUnpublishDoesNotSayNothingToDetach).
	DetachedFrom string `json:"detached_from,omitempty"`
	// Unstaged is the staging path a detach of a volume with no claims unstaged, left by an
	// earlier forced detach or a release cut short (undoLeft, as reconcile undoes it); "" for none.
	Unstaged string `json:"unstaged,omitempty"`
	// LeftAttached is the node the volume stays recorded attached to after the detach, its
	// ControllerUnpublishVolume owed (it failed, or cannot be sent): "" when none is. A
	// detach that left it so said "nothing to detach"
	// (TestForcedDetachWhoseOwedUnpublishStillFailsDoesNotSayNothingToDetach).
	LeftAttached string `json:"left_attached,omitempty"`
}

// Detach releases every claim on a volume on this host. With force — for a plugin that is gone —
// the node RPCs are skipped, volctl unmounts its own target and staging paths itself, the
// controller unpublish is still tried, and the claims are freed whatever happens, with warnings.
func (e *Engine) Detach(ctx context.Context, volumeID string, force bool) (DetachResult, error) {
	if err := e.checkMountView(ctx, volumeID); err != nil {
		return DetachResult{}, fmt.Errorf("detach %q: %w", volumeID, err)
	}
	return byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (DetachResult, error) { return e.detachStored(ctx, id, force, true) })
}

// releaseEvery is a plain Detach that leaves what the volume has without claims (a staging, an
// attachment owed) to its caller: a forced deregister, which sends the owed unpublish itself
// and forgets what it cannot undo (sendOwedUnpublish).
func (e *Engine) releaseEvery(ctx context.Context, volumeID string) (DetachResult, error) {
	if err := e.checkMountView(ctx, volumeID); err != nil {
		return DetachResult{}, fmt.Errorf("detach %q: %w", volumeID, err)
	}
	return byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (DetachResult, error) { return e.detachStored(ctx, id, false, false) })
}

// detachStored is Detach of the ID as stored (byStoredID); left says a volume with no claims
// has what it still records of its staging and attachment undone (detachLeft).
func (e *Engine) detachStored(ctx context.Context, volumeID string, force, left bool) (DetachResult, error) {
	var res DetachResult
	fail := func(err error) (DetachResult, error) {
		return res, fmt.Errorf("detach %q: %w", volumeID, err)
	}
	if err := e.checkVolumeExists(ctx, volumeID); err != nil {
		return fail(err)
	}
	var (
		seen   store.VolumeState
		before []store.Claim // the volume's claims, read when the lock had to be waited for
	)
	unlock, err := e.lockVolumeLooking(ctx, volumeID, func(tx *store.Tx) {
		if v, verr := tx.Volumes().Get(volumeID); verr == nil {
			seen = v.State
			before, _ = tx.Claims().ByVolume(volumeID)
		}
	})
	if err != nil {
		return fail(err)
	}
	defer unlock()

	var (
		v      store.Volume
		claims []store.Claim
	)
	// Checked inside the transaction (holding): a detach that waited for the database while its
	// lock file was removed and another volctl locked a new one marks no claim releasing.
	err = e.store.Update(ctx, e.locks.holding(volumeID, func(tx *store.Tx) error {
		var err error
		if v, err = tx.Volumes().Get(volumeID); err != nil {
			return err
		}
		if claims, err = tx.Claims().ByVolume(volumeID); err != nil {
			return err
		}
		if len(claims) == 0 {
			// Nothing of volctl's to detach: what is attached belongs to Nomad's allocs, and
			// a forced detach's controller unpublish would pull it from under them.
			if err := refuseHandedOver(tx, volumeID); err != nil {
				return err
			}
		}
		for i := range claims {
			if !claims[i].Releasing {
				claims[i].Releasing = true
				if err := tx.Claims().Update(&claims[i]); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	if errors.Is(err, store.ErrNotFound) && seen != "" {
		err = goneWhileWaiting(volumeID, seen, "there is nothing to detach")
	}
	if err != nil {
		return fail(err)
	}
	for _, b := range before {
		if !slices.ContainsFunc(claims, func(c store.Claim) bool { return c.ID == b.ID }) {
			res.ReleasedMeanwhile = append(res.ReleasedMeanwhile, claimInfo(b))
		}
	}
	if force {
		var lost error
		res.Warnings, res.DetachedFrom, res.Unstaged, lost = e.forceDetach(ctx, v, claims)
		res.LeftAttached = e.leftAttached(ctx, v.ID)
		if lost != nil {
			// It frees the claims in one write, its last: stopped or failed, it freed none,
			// and each stays recorded, releasing. Before, --json said "released": [] with no
			// `failed`, a detach with nothing to free to a script
			// (TestForcedDetachStoppedBelowListsTheClaimsFailed).
			for _, cl := range claims {
				res.Failed = append(res.Failed, claimInfo(cl))
			}
			return fail(lost)
		}
		for _, cl := range claims {
			res.Released = append(res.Released, claimInfo(cl))
		}
		return res, nil
	}
	if len(claims) == 0 && left {
		// What an earlier forced detach (or a release cut short) left: a staging, an
		// attachment owed. Undone as reconcile undoes it, under the volume's lock held; before,
		// "nothing to detach" was said of a volume recorded attached, nothing sent
		// (TestDetachOfAVolumeOwedAnUnpublishDoesNotSayNothingToDetach).
		err := e.detachLeft(ctx, v, &res)
		res.LeftAttached = e.leftAttached(ctx, v.ID)
		if err != nil {
			return fail(err)
		}
		return res, nil
	}
	var errs []error
	for _, cl := range claims {
		_, err := e.drive(ctx, cl.ID, store.OutcomeReleased)
		if errors.Is(err, ErrNotFound) {
			err = nil // freed meanwhile: released all the same
		}
		if err != nil {
			res.Failed = append(res.Failed, claimInfo(cl))
			errs = append(errs, fmt.Errorf("alloc %q: %w", cl.Alloc, err))
			continue
		}
		res.Released = append(res.Released, claimInfo(cl))
	}
	// A release that could not send the last ControllerUnpublishVolume (the plugin lost
	// PUBLISH_UNPUBLISH_VOLUME) keeps the attachment recorded, owed: said, as the other two
	// paths say it (TestDetachWhoseReleaseKeepsTheAttachmentSaysLeftAttached).
	res.LeftAttached = e.leftAttached(ctx, v.ID)
	if len(errs) > 0 {
		return fail(errors.Join(errs...))
	}
	return res, nil
}

// detachLeft undoes what volume v, with no claims, still has recorded of its staging or
// attachment (undoLeft), saying in res what it undid. The caller holds the volume's lock.
func (e *Engine) detachLeft(ctx context.Context, v store.Volume, res *DetachResult) error {
	before, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Staging, error) { return tx.Stagings().Get(v.ID) })
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil // nothing left
	case err != nil:
		return err
	}
	c, err := e.connect(ctx, v.PluginID)
	if err != nil {
		return fmt.Errorf("volume %q has no claims, but its %s recorded, left to undo: %w (`volctl reconcile` undoes it once the plugin answers)", v.ID, leftWords(before), err)
	}
	defer e.done(c)
	_, err = e.undoLeft(ctx, c, v)
	after, aerr := viewOne(ctx, e.store, func(tx *store.Tx) (store.Staging, error) { return tx.Stagings().Get(v.ID) })
	if aerr != nil && !errors.Is(aerr, store.ErrNotFound) {
		return errors.Join(err, aerr)
	}
	if before.StagingPath != "" && after.StagingPath == "" {
		res.Unstaged = before.StagingPath
	}
	if before.ControllerPublished && !after.ControllerPublished {
		// The node it was sent for: a row recorded without one names the plugin's, not "this
		// node" (TestPlainDetachOfALegacyAttachmentSaysTheNodeItSentTheUnpublishFor).
		res.DetachedFrom = cmp.Or(before.NodeID, c.fp.NodeID)
	}
	if err != nil {
		if aerr != nil {
			after = before // gone meanwhile: named as it was
		}
		return fmt.Errorf("volume %q has no claims, but its %s recorded, left to undo: %w (it stays recorded: `volctl reconcile` undoes it once the plugin takes it)", v.ID, leftWords(after), err)
	}
	return nil
}

// leftWords names what a staging row left without claims records: its staging, its attachment.
func leftWords(st store.Staging) string {
	switch {
	case st.StagingPath != "" && st.ControllerPublished:
		return fmt.Sprintf("staging at %s and attachment to node %q are", st.StagingPath, attachedNode(st))
	case st.ControllerPublished:
		return fmt.Sprintf("attachment to node %q is", attachedNode(st))
	}
	return fmt.Sprintf("staging at %s is", st.StagingPath)
}

// leftAttached is the node volume volumeID stays recorded attached to with no claim (its
// ControllerUnpublishVolume owed, which reconcile sends), "" when it is not, or when that
// cannot be read. Not of a volume handed over to Nomad, whose attachment waits for the
// take-back, as the forced detach's warning says: "reconcile sends it" of it was advice that
// did nothing (TestForcedDetachOfAVolumeHandedOverToNomadDoesNotPromiseReconcileSendsTheUnpublish).
func (e *Engine) leftAttached(ctx context.Context, volumeID string) string {
	node, err := viewOne(context.WithoutCancel(ctx), e.store, func(tx *store.Tx) (string, error) {
		st, err := tx.Stagings().Get(volumeID)
		if err != nil || !st.ControllerPublished {
			return "", err
		}
		if n, err := tx.Claims().CountByVolume(volumeID); err != nil || n > 0 {
			return "", err // held by a claim left: not owed
		}
		switch _, err := tx.Handovers().Get(volumeID); {
		case err == nil:
			return "", nil
		case !errors.Is(err, store.ErrNotFound):
			return "", err
		}
		return attachedNode(st), nil
	})
	if err != nil {
		return ""
	}
	return node
}

// forceDetach drops a volume's claims without the node RPCs. It returns what it could not do.
// Before each step that undoes something (a claim's mounts, the staging's, the attachment) and
// in its last write, it checks that the volume's lock is still held (stillHeld): once its file
// was removed, another volctl may have claimed the volume on a new one, and these steps would
// undo that claim's mounts and attachment. It stops then, with errLockLost, leaving the claims
// marked releasing for the next release or reconcile.
// coveredBeforeForce refuses a forced detach of volume v, before it undoes anything, where a
// claim's published target or the staging shows another file system mounted over what volctl's
// publish or stage made (targetCovered, stagingCover): its unmounts go on until nothing is
// mounted at the path, and took the cover down with what the alloc wrote into it, the claim said
// released (TestForcedDetachLeavesWhatCoversAPublishedTarget, TestForcedDetachLeavesWhatCoversTheStaging).
// A release and reconcile leave a cover so; the detach stops, the claims left marked releasing,
// naming the umount and the detach to run again. A claim being restored (degraded) is not held
// to its record, as a release does not hold it. A read that fails is left to the detach, as before.
func (e *Engine) coveredBeforeForce(ctx context.Context, v store.Volume, claims []store.Claim) error {
	again := forceDetachCommand(v.ID)
	for _, cl := range claims {
		if cl.Degraded {
			continue
		}
		var ct *coveredTarget
		if err := e.targetCovered(cl); errors.As(err, &ct) {
			if e.mountedInsideItsPublishDir(cl) {
				// The topmost mount at the target mounted inside a mount over the claim's
				// publish directory, volctl's own path made for this claim alone: a plugin's
				// doing, which the detach unmounts
				// (TestForcedDetachUnmountsAMountOverTheClaimsPublishDirectory), as a release's
				// unstage takes a mount over the plugin's staging directory for the plugin's
				// (unstageUncovered). Not a hand's mount over such a target, whose parent is
				// the target's own (TestForcedDetachLeavesAHandsCoverOfATargetInsideAMountOverItsPublishDirectory).
				continue
			}
			ct.releasing = true
			return fmt.Errorf("the forced detach stops before undoing anything: %w; or, the plugin gone, once the cover is unmounted, `%s` again", err, again)
		}
	}
	st, hasStaging, err := e.getStaging(ctx, v.ID)
	switch {
	case err != nil:
		// Not left to the read after the claims' unmounts: one that answered then would have
		// the staging unmounted, cover and all, never compared.
		return fmt.Errorf("reading volume %q's staging: %w: the forced detach stops before undoing anything, the claims left marked releasing; run `%s` again", v.ID, err, again)
	case !hasStaging || st.StagingPath == "":
		return nil
	}
	switch over, replaced, err := e.stagingCover(st); {
	case err != nil:
	case over > 0:
		// A conflict, as a covered target's stop is (exit 4 both).
		return conflictf("the forced detach stops before undoing anything: volume %q's staging %s has %d mount(s) stacked over the one it was staged with (mounted there since), "+
			"which it would unmount with the volume's; its claims are left marked releasing: unmount them (`%s`, %d time(s)), then run `%s` again",
			v.ID, st.StagingPath, over, shellquote.Command("umount", st.StagingPath), over, again)
	case replaced:
		return conflictf("the forced detach stops before undoing anything: volume %q's staging %s no longer shows what it was staged with (another file system mounted in its place since), "+
			"which it would unmount; its claims are left marked releasing: unmount what is there (`%s`, until `findmnt %s` lists nothing), then run `%s` again",
			v.ID, st.StagingPath, shellquote.Command("umount", st.StagingPath), shellquote.Arg(st.StagingPath), again)
	}
	return nil
}

// mountedInsideItsPublishDir says the topmost mount at claim cl's target was mounted on a mount
// over the claim's publish directory (parentReader): the target made inside a mount a plugin put
// over the directory. False where the table cannot say.
func (e *Engine) mountedInsideItsPublishDir(cl store.Claim) bool {
	pr, ok := e.cfg.Mounts.(parentReader)
	if !ok {
		return false
	}
	parent, err := pr.TopParentAt(e.realPath(cl.TargetPath))
	return err == nil && parent != "" && parent == filepath.Clean(e.realPath(filepath.Dir(cl.TargetPath)))
}

func (e *Engine) forceDetach(ctx context.Context, v store.Volume, claims []store.Claim) (warnings []string, detachedFrom, unstaged string, err error) {
	// The warnings are returned, not logged: the caller shows them (the command line prints
	// each one), and logging them as well would print everything twice.
	warn := func(format string, args ...any) {
		warnings = append(warnings, fmt.Sprintf(format, args...))
	}
	if len(claims) > 0 {
		warn("forced detach of volume %q: NodeUnpublishVolume and NodeUnstageVolume are skipped; volctl unmounts its own paths and frees %d claim(s) without the plugin", v.ID, len(claims))
		defer func() {
			if err != nil { // stopped: the claims are not freed, whatever the first warning said
				warnings[0] = fmt.Sprintf("forced detach of volume %q: NodeUnpublishVolume and NodeUnstageVolume are skipped; it stopped before freeing its %d claim(s), which stay recorded, releasing", v.ID, len(claims))
			}
		}()
	}
	if err := e.coveredBeforeForce(ctx, v, claims); err != nil {
		return warnings, detachedFrom, unstaged, err
	}
	for _, cl := range claims {
		if err := e.locks.stillHeld(v.ID); err != nil {
			return warnings, detachedFrom, unstaged, err
		}
		if err := e.unbind(ctx, &cl); err != nil {
			if mb, bc := (*mountedBelow)(nil), (*bindCoveredError)(nil); errors.As(err, &mb) || errors.As(err, &bc) {
				// The bind stays mounted whatever the detach does, and freed, no claim would name
				// it for any later command to unbind (TestForcedDetachOfAnOuterVolumeLeavesNoBindWithoutAClaim,
				// TestForcedDetachOfACoveredBindLeavesNoBindWithoutAClaim).
				// The detach stops here: the claims stay marked releasing, and a detach (or
				// release, or reconcile) once what is below is gone finishes them.
				return warnings, detachedFrom, unstaged, fmt.Errorf("alloc %q: %w: the forced detach stops here, nothing more undone, volume %q's claims left marked releasing; "+
					"once that is released or unmounted, run `%s` again", cl.Alloc, err, v.ID, forceDetachCommand(v.ID))
			}
			warn("alloc %q: %v", cl.Alloc, err)
		}
		// The claim's publish directory first (publish/<alloc>/<volume>, volctl's own, made
		// for this claim alone): a plugin that mounted over it and made the target inside
		// leaves the claim's first target mount hidden under that mount, which unmounting the
		// target alone does not reach
		// (`TestForcedDetachUnmountsAMountOverTheClaimsPublishDirectory`).
		dir := filepath.Dir(cl.TargetPath)
		for _, path := range []string{dir, cl.TargetPath} {
			if err := forceUnmount(e.cfg.StateDir, e.realPath(path)); err != nil {
				warn("alloc %q: %v", cl.Alloc, err)
			}
		}
		e.locks.removeEmptyDirs(ctx, e.realPath(cl.TargetPath), filepath.Join(e.cfg.StateDir, publishDir))
		if left, err := e.mountsLeft(dir); err != nil {
			warn("checking the mount table for alloc %q's publish directory %s: %v", cl.Alloc, dir, err)
		} else if len(left) > 0 {
			warn("alloc %q's publish directory %s of volume %q is still mounted at %s after a forced detach unmounted it: unmount it by hand",
				cl.Alloc, dir, v.ID, e.mountNames(left))
		}
	}
	if err := e.locks.stillHeld(v.ID); err != nil {
		return warnings, detachedFrom, unstaged, err
	}
	st, hasStaging, err := e.getStaging(ctx, v.ID)
	if err != nil {
		// Not a warning: taken for no staging, the last write (on a context of its own) freed
		// the claims and deleted the staging row, the staging never unmounted and the
		// attachment never undone recorded nowhere, with exit 0 (an interrupt here:
		// TestInterruptedForcedDetachDoesNotForgetTheAttachment). The claims stay releasing.
		return warnings, detachedFrom, unstaged, fmt.Errorf("reading volume %q's staging: %w: the forced detach stops here, its claims' paths unmounted and the claims left marked releasing; run `%s` again",
			v.ID, err, forceDetachCommand(v.ID))
	}
	if hasStaging && st.StagingPath != "" {
		mounted, _ := e.mountsLeft(st.StagingPath)
		uerr := forceUnmount(e.cfg.StateDir, e.realPath(st.StagingPath))
		if uerr != nil {
			warn("volume %q's staging: %v", v.ID, uerr)
		}
		e.locks.removeEmptyDirs(ctx, e.realPath(st.StagingPath), filepath.Join(e.cfg.StateDir, stagingDir))
		// A mount the plugin made below the staging path is not volctl's own to unmount.
		switch left, err := e.mountsLeft(st.StagingPath); {
		case err != nil:
			warn("checking the mount table for volume %q's staging at %s: %v", v.ID, st.StagingPath, err)
		case len(left) > 0:
			warn("volume %q's staging at %s is still mounted at %s, which the plugin made and a forced detach does not unmount: unmount it by hand",
				v.ID, st.StagingPath, e.mountNames(left))
		case uerr == nil && len(mounted) > 0:
			// Said as done, with the step skipped: with no claims, it said "nothing to
			// detach", `{"released": []}`, of a staging it took down behind the plugin's back
			// (TestForcedDetachOfAStagedVolumeWithNoClaimsSaysItUnmountedTheStaging).
			unstaged = st.StagingPath
			if len(claims) == 0 {
				warn("forced detach of volume %q: NodeUnstageVolume is skipped; volctl unmounted its staging at %s itself", v.ID, st.StagingPath)
			}
		}
	}
	// The controller unpublish is tried whatever the records say (it is idempotent), but a
	// plugin out of reach is only worth a warning when an attachment is known to be left.
	// A known attachment that could not be undone stays recorded, with no claim and no staging,
	// so that reconcile sends ControllerUnpublishVolume once the plugin answers again.
	attached := hasStaging && st.ControllerPublished
	capLost := "" // the attachment record dropped because the plugin lost the capability, said so
	if h, handed, err := e.handedOver(ctx, v.ID); err != nil || handed {
		// A volume handed over anyway (forced) with local claims: the attachment may be
		// Nomad's allocs' now, and stays recorded when it is known (nothing to say when none
		// is: the plugin attaches nothing, or the claims never got it attached).
		switch {
		case !attached:
		case err != nil:
			warn("ControllerUnpublishVolume not sent: reading whether the volume is handed over to Nomad: %v (`volctl reconcile` sends it)", err)
		default:
			warn("%s", keptForNomad(v, attachedNode(st), h, e.recordedBlockAfterTakeBack(ctx, v.PluginID)))
		}
	} else if c, err := e.connect(ctx, v.PluginID); err != nil {
		if attached {
			warn("ControllerUnpublishVolume of volume %q from node %q not sent, so it may still be attached there (`volctl reconcile` sends it once the plugin answers): %v",
				v.ID, attachedNode(st), err)
		}
	} else {
		defer e.done(c)
		othersAttachment := false
		if c.controllerPublishes() && !attached {
			// No attachment recorded: the plugin is asked first where it can say. One it lists
			// on its node is another orchestrator's (another volctl state dir on the plugin,
			// Nomad) or made by hand, and maybe in use, as a claim finds it (attachedAlready):
			// left as it is, and said. Before, ControllerUnpublishVolume detached it from under
			// the other's live claim, and the detach said "nothing to detach"
			// (TestForcedDetachWithNothingRecordedLeavesAnotherStateDirsAttachment).
			if othersAttachment, _ = e.attachedAlready(ctx, c, v); othersAttachment {
				warn("plugin %q lists volume %q (external ID %q) attached to node %q, an attachment this volctl state dir never recorded: another orchestrator (another volctl state dir, or Nomad) may be using it, "+
					"so ControllerUnpublishVolume was not sent and the attachment is left as it is; release the volume where it is claimed, or, if nothing uses it, detach it with the storage provider's tools",
					c.plugin.ID, v.ID, v.ExternalID, c.fp.NodeID)
			}
		}
		nodeID := st.NodeID
		if nodeID == "" {
			nodeID = c.fp.NodeID
		}
		if othersAttachment {
			// Nothing sent: said above.
		} else if c.controllerPublishes() && nodeID == "" {
			// No node recorded and none the plugin gives (registered by its controller half
			// alone): CSI reads an empty node_id as every node, and the unpublish pulled the
			// volume from under another orchestrator's allocs on other nodes, saying "nothing to
			// detach" (TestForcedDetachThroughAControllerOnlyRegistrationSendsNoUnpublishForEveryNode).
			warn("%s", noNodeToUnpublish(c, v, attached))
		} else if c.controllerPublishes() {
			// Sent once, and checked as a release's is: a plugin that still lists the volume
			// published to the node keeps it recorded attached, owed. Under the plugin's
			// publish lock, as a release's (undoUnused): the agent does not stop it meanwhile.
			unlock, err := e.locks.publishing(ctx, c.plugin)
			if err == nil {
				// The wait for the publish lock may have been long (the agent holds it).
				if lost := e.locks.stillHeld(v.ID); lost != nil {
					unlock()
					return warnings, detachedFrom, unstaged, lost
				}
				err = e.unpublishChecked(ctx, c, v, nodeID, e.attempt)
				unlock()
			}
			switch {
			case err != nil && !csi.IsIgnorable(err) && attached:
				warn("ControllerUnpublishVolume of volume %q from node %q failed, so it may still be attached there: %v (`volctl reconcile` sends it again)",
					v.ID, attachedNode(st), err)
			case errors.As(err, new(*owedError)):
				// The plugin lists the volume published to this node after its answer, an
				// attachment volctl had not recorded: recorded now, owed, as the error says
				// (before, it said so and deleted the row: reconcile sent nothing,
				// TestForcedDetachDoesNotPromiseToKeepAnAttachmentItDrops).
				warn("%v", err)
				st = store.Staging{VolumeID: v.ID, PluginID: v.PluginID, NodeID: nodeID}
				attached = true
			case err != nil && !csi.IsIgnorable(err):
				// Named: the plugin's error alone said neither (TestForcedDetachUnpublishWarningNamesTheVolume).
				warn("ControllerUnpublishVolume of volume %q from node %q (no attachment recorded) failed: %v", v.ID, nodeID, err)
			default:
				if attached {
					detachedFrom = nodeID // the node it was sent for: a row recorded without one says "this node" (TestForcedDetachOfALegacyRowSaysTheNodeItDetached)
				}
				attached = false
			}
		} else if controllerHalfAway(c) {
			// The plugin still advertises the capability, or is registered by a node-only
			// process; its controller half is not registered. Registered again, it takes the unpublish: the attachment stays
			// recorded, owed, for reconcile (before, the record was dropped as for a capability
			// lost, and the volume stayed attached with nothing left to detach it).
			if attached {
				// With the way out where there is no controller half to register (a driver
				// that never had one, its row an older volctl's): the volume's forced
				// deregistration, as a release's kept attachment says
				// (TestForcedDetachThroughANeverControllerPluginNamesAWayOutThatWorks).
				why, fix := keptAttachmentWhy(v, c)
				warn("ControllerUnpublishVolume not sent: %s; the attachment to node %q stays recorded, owed: %s and `volctl reconcile` sends it; "+
					"or detach the volume from that node with the storage provider's tools and run `%s` to forget it with the volume (register the volume again to go on using it)",
					why, attachedNode(st), fix, shellquote.CommandFlags("volctl volume deregister", []string{v.ID}, "--force", "--yes"))
			}
		} else {
			if attached {
				// Recorded only while the plugin had PUBLISH_UNPUBLISH_VOLUME: it lost it since. The
				// record is dropped with an event, as a release drops it (undoUnused).
				capLost = fmt.Sprintf("volume %q was recorded as attached to node %q, but %s, so ControllerUnpublishVolume is not sent and the record is dropped; if the volume is still attached, detach it with the storage provider's tools",
					v.ID, attachedNode(st), lostUnpublish(c.fp, v.PluginID))
				warn("%s", capLost)
			}
			attached = false // the plugin attaches nothing now
		}
	}
	err = e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		for _, cl := range claims {
			if err := tx.Claims().Free(cl.ID, store.OutcomeForced); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err := tx.Events().Append(&store.Event{Kind: "release", VolumeID: v.ID, Alloc: cl.Alloc, PluginID: v.PluginID,
				Message: fmt.Sprintf("%s claim dropped by a forced detach (was %s)", cl.Mode, cl.State)}); err != nil {
				return err
			}
		}
		if capLost != "" {
			if err := tx.Events().Append(&store.Event{Kind: "capability-lost", VolumeID: v.ID, PluginID: v.PluginID, Message: capLost}); err != nil {
				return err
			}
		}
		if attached {
			left := store.Staging{VolumeID: v.ID, PluginID: st.PluginID, NodeID: st.NodeID,
				ControllerPublished: true, PublishContext: st.PublishContext}
			return tx.Stagings().Put(&left)
		}
		if err := tx.Stagings().Delete(v.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}))
	if errors.Is(err, errLockLost) {
		return warnings, detachedFrom, unstaged, err
	}
	if err != nil {
		// Not a warning beside a success: the claims stay recorded, releasing, their mounts
		// taken down, and the detach reported them released with exit 0
		// (TestForcedDetachWhoseFreeFailsDoesNotSayReleased).
		return warnings, detachedFrom, unstaged, fmt.Errorf("freeing the claims: %w (the claims stay recorded, releasing, what was mounted for them taken down: `%s` again frees them once the state can be written)",
			err, forceDetachCommand(v.ID))
	}
	return warnings, detachedFrom, unstaged, nil
}

// owedUnpublish returns a volume's staging row when it records an attachment no live claim
// holds: what a forced detach that could not send ControllerUnpublishVolume leaves, so that
// reconcile sends it. ok is false when no such unpublish is owed. Nothing may forget such a
// record by the way (deregistering the volume or its plugin refuses): only reconcile, a
// delete or volume deregister --force, which send it first, and --force says so when it
// still cannot.
func owedUnpublish(tx *store.Tx, volumeID string) (st store.Staging, ok bool, err error) {
	st, err = tx.Stagings().Get(volumeID)
	if errors.Is(err, store.ErrNotFound) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	ok, err = unpublishOwed(tx, st)
	return st, ok, err
}

// unpublishOwed says whether staging row st records an attachment no live claim holds.
func unpublishOwed(tx *store.Tx, st store.Staging) (bool, error) {
	if !st.ControllerPublished {
		return false, nil
	}
	n, err := tx.Claims().CountByVolume(st.VolumeID)
	return err == nil && n == 0, err
}

// attachedNode names the node a staging row records the volume attached to; a row from
// before node IDs were recorded means this one.
func attachedNode(st store.Staging) string { return cmp.Or(st.NodeID, "this node") }
