package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// ExpandVolume grows a volume to at least size bytes (and at most limit, when not 0; 0 keeps the
// volume's capacity_max, read under its lock, and refuses a size above it: recordedLimit):
// ControllerExpandVolume when the controller can expand, then NodeExpandVolume when the plugin
// says the node must expand too (or only the node can). Shrinking is refused; a plugin that only
// expands offline is refused while the volume is in use. A node expansion is recorded as owed
// (store.Volume.NodeExpandMin) with the new size, before it is sent: it is sent at once where
// the volume is staged or published here, at the next publish where it is not, and one that
// failed or was cut short is sent again by the same expand run again or by reconcile.
func (e *Engine) ExpandVolume(ctx context.Context, volumeID string, size, limit int64) (VolumeInfo, error) {
	_, after, _, err := e.ExpandVolumeFrom(ctx, volumeID, size, limit)
	return after, err
}

// ExpandVolumeFrom is ExpandVolume, and the volume as the expand found it under the volume's
// lock (before): what the expand did is the difference, which a read before the expand,
// outside the lock, cannot tell. The command line compared with such a read, and an expand
// that waited for another volctl's expand to the same size said "expanded" of a volume it
// found at that size and sent nothing for (TestTwoExpandsToOneSizeAtOnceOneSaysAlready).
// grew is what it did to a volume whose size it found below size: Expanded, or, its size not
// known, Measured or Sized (expandLockedSaying); Unchanged otherwise.
func (e *Engine) ExpandVolumeFrom(ctx context.Context, volumeID string, size, limit int64) (before, after VolumeInfo, grew SubmitOutcome, err error) {
	grew = Unchanged
	after, err = byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (VolumeInfo, error) {
		return e.expandVolumeStored(ctx, id, size, limit, &before, &grew)
	})
	return before, after, grew, err
}

// expandVolumeStored is ExpandVolumeFrom of the ID as stored (byStoredID).
func (e *Engine) expandVolumeStored(ctx context.Context, volumeID string, size, limit int64, before *VolumeInfo, grew *SubmitOutcome) (VolumeInfo, error) {
	fail := failVolume("expand", volumeID)
	// Handed over to Nomad, anything it would change is Nomad's, whose copy (what its allocs
	// and expands follow) would keep the old: refused first, under the volume's lock and before
	// the plugin is asked for (volctl's own may not run once Nomad runs it: its missing socket
	// was said, TestExpandOfAHandedOverVolumeWhosePluginIsDownIsRefusedAsHandedOver), where a
	// limit's refusal advised a --limit the handover then refused
	// (TestExpandPastTheCapacityMaxOfAHandedOverVolumeIsNotAdvisedALimit), and a new limit at
	// its size was set, exit 0, nothing said (TestExpandLimitOfAHandedOverVolumeSaysNomadsCopyIsUnchanged).
	// One that changes nothing (the size it has, its own limit) says "already" as before.
	handedOver := func(v store.Volume) error {
		if size <= currentSize(v) && (limit == 0 || limit == v.RequestedMax) {
			return nil
		}
		return e.store.View(ctx, func(tx *store.Tx) error { return refuseHandedOver(tx, v.ID) })
	}
	v, c, unlock, err := e.lockedVolumeChecked(ctx, volumeID, handedOver)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if *before, err = e.volumeStored(ctx, v.ID, false); err != nil {
		return fail(err)
	}
	if limit, err = recordedLimit(v, size, limit); err != nil {
		return fail(err)
	}
	if err := e.growsNoCloneSource(ctx, v, size); err != nil {
		return fail(err)
	}
	return e.expandLockedSaying(ctx, c, v, size, limit, grew)
}

// growsNoCloneSource refuses to grow volume v to size while a clone of it is in flight
// (refuseCloneInFlight): its CreateVolume sent again is answered at the size the source had.
func (e *Engine) growsNoCloneSource(ctx context.Context, v store.Volume, size int64) error {
	if size <= currentSize(v) {
		return nil
	}
	return e.store.View(ctx, func(tx *store.Tx) error { return refuseCloneInFlight(tx, v, "expand") })
}

// recordedLimit is the limit of an expand of volume v to size given limit (0: none given): the
// one given, else v's capacity_max, read under the volume's lock, a size above which is refused
// (nothing sent). The engine is the one place it is applied: the CLI read it before the lock
// and sent that, so a registration lowering it meanwhile (another process, holding the lock
// the expand waited for) let the expand grow the volume past the new limit, and ExpandVolume
// given no limit applied none (TestExpandAppliesTheRecordedLimitUnderTheLock).
//
// A --limit below the capacity_min recorded is refused too, as a registration's capacity_max
// below it is (pendingLimit): the volume kept at its size, the limit was recorded and the record
// held capacity_min 8MiB beside capacity_max 3MiB, a range no spec may hold
// (TestExpandLimitBelowTheRecordedCapacityMinIsRefused).
func recordedLimit(v store.Volume, size, limit int64) (int64, error) {
	if limit != 0 && limit < v.RequestedMin {
		return 0, invalidf("the limit %s is below its capacity_min %s (recorded by its spec): give a --limit of at least %s",
			spec.FormatSize(limit), spec.FormatSize(v.RequestedMin), spec.FormatSize(v.RequestedMin))
	}
	if limit != 0 || v.RequestedMax == 0 {
		return limit, nil
	}
	if size > v.RequestedMax {
		if AboveCapacityMax(v.RequestedMax, currentSize(v), size) {
			return 0, invalidf("%s is above its capacity_max %s; pass --limit to raise it", spec.FormatSize(size), spec.FormatSize(v.RequestedMax))
		}
		return 0, nil // grows nothing: the storage is past its capacity_max already
	}
	return v.RequestedMax, nil
}

// AboveCapacityMax reports whether an expand to size, without --limit, of a volume of capacity_max
// max (0: none) and size cur is refused for it: a size that grows the volume past max. One at
// the size the volume has grows nothing, and pays an owed node expansion: a plugin that answered
// an expand above its --limit left the storage past capacity_max (recorded at the limit), and
// the advised `volctl volume expand ID --size SIZE` at that size, which pays the node
// expansion a failed NodeExpandVolume left owed, was refused
// (TestOwedNodeExpansionPastTheLimitIsPaidByTheExpandAdvised).
func AboveCapacityMax(max, cur, size int64) bool {
	return max != 0 && size > max && size > cur
}

// currentSize is the best known size of a volume: what the plugin reported, else what was asked.
func currentSize(v store.Volume) int64 {
	if v.CapacityBytes > 0 {
		return v.CapacityBytes
	}
	return v.RequestedMin
}

// expandLocked is ExpandVolume with the volume lock held and the plugin connected.
func (e *Engine) expandLocked(ctx context.Context, c *conn, v store.Volume, size, limit int64) (VolumeInfo, error) {
	return e.expandLockedSaying(ctx, c, v, size, limit, new(SubmitOutcome))
}

// expandLockedSaying is expandLocked saying in grew what it did to a volume it was asked to grow
// past its recorded size: Expanded from a size known (recorded, or listed by the plugin now), or
// Measured or Sized, its size not known before (learntSize).
func (e *Engine) expandLockedSaying(ctx context.Context, c *conn, v store.Volume, size, limit int64, grew *SubmitOutcome) (VolumeInfo, error) {
	fail := failVolume("expand", v.ID)
	if v.State != store.VolumeReady {
		return fail(notReady(v))
	}
	orig := v // as recorded before this expand: what a node-only expansion refused for good leaves
	cur := currentSize(v)
	switch {
	case size <= 0:
		return fail(invalidf("the new size must be positive"))
	case limit != 0 && limit < size:
		return fail(invalidf("the limit %s is below the new size %s", spec.FormatSize(limit), spec.FormatSize(size)))
	case size < cur:
		return fail(invalidf("volumes cannot shrink: %q is %s, %s asked", v.ID, spec.FormatSize(cur), spec.FormatSize(size)))
	case size == cur:
		var note string // what was done of a debt, where nothing was sent
		if v.NodeExpandMin > 0 {
			// The controller expanded it before, the node expansion is still owed: drive it,
			// unless the volume is handed over to Nomad (forced, with the debt: it waits for the
			// take-back, and is grown through Nomad; recheck35, before, it was sent here).
			if err := e.store.View(ctx, func(tx *store.Tx) error { return refuseHandedOver(tx, v.ID) }); err != nil {
				return fail(err)
			}
			sent, err := e.sendOwedNodeStep(ctx, c, v)
			if err != nil {
				return fail(err)
			}
			if !sent && v.NodeExpandGuessed && !c.fp.Capabilities.Node.ExpandVolume {
				// The debt let go, nothing sent: said as such, where `volume expand` printed
				// "expanded on the node" of a step never taken
				// (TestGuessLetGoIsNotSaidExpandedOnTheNode); a --limit given is set all the
				// same, below (TestGuessLetGoStillSetsTheLimitGiven).
				note = guessLetGo(c, v)
			}
			if controllerAloneOwes(c.fp, v) {
				// Paid by the controller's step, no NodeExpandVolume: said as such, not as
				// "expanded on the node".
				note = controllerAlonePaid(c, v)
			}
		}
		if limit != 0 && limit != v.RequestedMax {
			// Nothing to grow, but --limit sets the new capacity_max all the same: it bounds
			// later requests, and needs no RPC. Not below an expansion pending (its answer
			// lost): reconcile sends it again with its own limit, and the storage, maybe that
			// size already, would be recorded past the capacity_max just set, as a registration
			// lowering it is refused (pendingLimit). Before, taken, and then broken
			// (TestExpandLimitBelowAPendingExpansionIsRefused).
			if err := limitBelowPending(v, limit); err != nil {
				return fail(err)
			}
			if err := e.setRequestedMax(ctx, v.ID, limit); err != nil {
				return fail(err)
			}
		}
		info, err := e.Volume(ctx, v.ID)
		info.ExpansionNote = note
		return info, err
	}
	// Nor a larger size under such a limit: the request written over the pending one, the
	// storage, at that size already, was recorded past the capacity_max asked, and the error
	// blamed an answer never sent (TestExpandAboveTheSizeWithALimitBelowAPendingExpansionIsRefused).
	if err := limitBelowPending(v, limit); err != nil {
		return fail(err)
	}
	// A volume handed over to Nomad is grown through Nomad, not behind its back (the lock is
	// held, so no handover can start meanwhile). Nor is one whose storage another record here
	// holds (refuseStorageInUseElsewhere): grown through this record, the storage's size and
	// its node expansion owed would be recorded on this one, and the other's mount, staged and
	// published here, left at the old size with nothing owed to it
	// (`TestExpandOfOneStorageRecordedTwiceIsRefused`).
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		if err := refuseHandedOver(tx, v.ID); err != nil {
			return err
		}
		return refuseStorageInUseElsewhere(tx, v)
	}); err != nil {
		return fail(err)
	}
	*grew = Expanded
	// Its size not known is its capacity not recorded, whatever its capacity_min (a lower
	// bound): a restore of an 8 MiB snapshot asked at least 1 MiB, its plugin answering no
	// size, was taken to be 1 MiB, the plugin never asked, and "expanded to 8MiB" said of a
	// volume that was 8 MiB since its restore (TestExpandOfARestoreOfUnknownSizeAsksItsSizeFirst).
	unknown := v.CapacityBytes == 0
	switch {
	case unknown && v.ExpandMin > 0:
		// An expansion pending, its answer lost: sent again below, where the plugin does not
		// list the volume at the size already (the replay's own look), and its node
		// expansion owed as after any lost answer, which a volume found at the size here
		// would skip.
		*grew = Sized
	case unknown:
		// Its size not known (registered, its plugin reporting none): the plugin may have it
		// at the size asked already, or at any size. Asked first where it can say, the
		// expansion is one from the size it has; said "expanded" before, of a volume it may
		// have grown by nothing (TestCapacityMinOfAVolumeOfUnknownSizeIsNotSaidToExpandIt).
		known, err := e.learntSize(ctx, c, v, size, limit)
		switch {
		case err != nil:
			return fail(err)
		case known >= size:
			*grew = Measured
			return e.Volume(ctx, v.ID)
		case known > 0:
			v.CapacityBytes, cur = known, known
		default:
			// Not listed: a restore is at least its snapshot's recorded size (the CSI spec has
			// none made smaller), which bounds what an expand may ask: one under it was sent,
			// and its answer blamed on the plugin
			// (TestExpandBelowTheSnapshotSizeOfARestoreOfUnknownSizeIsRefused).
			if note, err := e.atLeastItsSource(ctx, v, size, limit); err != nil || note != "" {
				if err != nil {
					return fail(err)
				}
				// Not Measured, whose words say the plugin listed it and its size is recorded
				// (TestExpandOfAnUnlistedRestoreHadAlreadySaysNoListingNorSize).
				*grew = AtLeastSource
				info, err := e.Volume(ctx, v.ID)
				info.ExpansionNote = note
				return info, err
			}
			*grew = Sized
		}
	}
	ctrl, node := c.fp.Controller && c.fp.Capabilities.Controller.ExpandVolume, c.fp.Node && c.fp.Capabilities.Node.ExpandVolume
	// A pending controller expansion through a plugin that now declares node-only expansion is
	// finished by NodeExpandVolume, as any expansion through it is (finishedNodeOnly); with no
	// EXPAND_VOLUME left, or its controller half not registered, it is refused.
	var nodeOnlyNote string
	if v.ExpandMin > 0 && !ctrl {
		if !node || needsControllerHalf(c) {
			return fail(pendingWithoutController(c, v))
		}
		nodeOnlyNote = finishedNodeOnly(v, size)
	}
	if needsControllerHalf(c) {
		// Its controller, not registered, may be what grows the storage: done node-only, the
		// expansion was recorded with a NodeExpandVolume that grew nothing (expand34). Refused,
		// as a create or delete through the node half alone is.
		return fail(controllerHalfMissing(c.plugin.ID, fmt.Sprintf("expand volume %q", v.ID)))
	}
	if !ctrl && !node {
		return fail(invalidf("plugin %q cannot expand volumes (no EXPAND_VOLUME capability)", v.PluginID))
	}
	var (
		claims []store.Claim
		st     store.Staging
	)
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if claims, err = tx.Claims().ByVolume(v.ID); err != nil {
			return err
		}
		if st, err = tx.Stagings().Get(v.ID); errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil {
		return fail(err)
	}
	if err := offlineOnly(c, v, ctrl, claims, st); err != nil {
		return fail(err)
	}

	newSize, nodeRequired := size, node
	guessed := false                  // nodeRequired is a guess after a lost answer, not the plugin's word
	owedBefore := v.NodeExpandMin > 0 // an earlier expand's node expansion, not done yet
	// An earlier run's ControllerExpandVolume whose answer was not recorded: this one is sent
	// again (the expand run again, or reconcile).
	replayed := v.ExpandMin > 0
	earlierMin, earlierMax := v.ExpandMin, v.ExpandMax // the one pending, as read
	var (
		short error // the plugin answered OK with less than size
		over  error // the plugin answered OK with more than limit: done, but not as asked
		// listed: ControllerExpandVolume was not sent (again), the plugin listing the volume at
		// that size already (sendControllerExpand)
		listed int64
	)
	if ctrl {
		// The expansion is recorded as pending, durably, before it is sent: killed before its
		// answer is recorded, volctl leaves the storage grown and the record at the old size,
		// with no node expansion owed. The record says so, and reconcile sends it again
		// (reconcilePendingExpansions); the commit that records the answer clears it.
		//
		// The volume's lock is checked before that write, before ControllerExpandVolume and
		// once it answered, before anything is recorded (stillHeld): a lock file removed
		// meanwhile lets another volctl expand the volume, or claim or delete it, beside this
		// one, which stops, and its answer, read from a volume record the other may have
		// changed, is not written over the other's.
		//
		// Written over a pending one of another size or limit, that one is kept beneath it, put
		// back where this one is refused (keepEarlierExpansion), and by reconcile where a kill
		// left this one pending and the plugin refuses it when sent again (giveWayToBeneath).
		// Before, a kill here lost it: reconcile sent the new size, refused for good, and the
		// earlier expansion, which the plugin may have done, was never recorded
		// (TestExpandKilledAtItsIntentBesideAPendingOneKeepsThePendingOne). One kept beneath
		// already stays: it is the oldest whose answer was lost, and the plugin answers it, sent
		// again, with the size it has, whatever any later one did. Kept instead of it, the one
		// written over dropped it: two expands killed in a row lost the expansion the plugin did
		// (TestChainOfTwoKilledExpandsOverALostOneKeepsTheLostOne).
		beneathMin, beneathMax := v.ExpandBeneathMin, v.ExpandBeneathMax
		if replayed && !(v.ExpandMin == size && v.ExpandMax == limit) && beneathMin == 0 {
			beneathMin, beneathMax = v.ExpandMin, v.ExpandMax
		}
		var secretsBefore spec.Secrets // the record's, where the expansion's replaced them
		replaced := false
		if err := e.store.Update(ctx, e.locks.holding(v.ID, func(tx *store.Tx) error {
			if err := tx.Volumes().SetExpansionIntentOver(v.ID, size, limit, beneathMin, beneathMax); err != nil {
				return err
			}
			var err error
			secretsBefore, replaced, err = recordSecretsSent(tx, v)
			return err
		})); err != nil {
			return fail(err)
		}
		// A refusal (the plugin did nothing, or grew nothing) puts the record's secrets back: a
		// registration it fails records nothing of its spec, and kept, the secrets it was sent
		// with (a mistyped one, which the plugin refused) replaced the ones that work
		// (TestRegistrationWhoseExpansionIsRefusedKeepsTheRecordedSecrets). Kept only while the
		// expansion is pending (its answer lost), for its replay.
		putBack := func() {
			if replaced {
				e.putSecretsBack(ctx, v, secretsBefore)
			}
		}
		e.failpoint("expand:intent")
		if err := e.locks.stillHeld(v.ID); err != nil {
			return fail(err)
		}
		// Sent again (a pending one replayed, an attempt after one whose answer was lost), it is
		// sent only where the plugin does not list the volume at the size already
		// (sendControllerExpand): a plugin that is not idempotent grew it twice.
		var (
			resp    csi.ControllerExpandVolumeResponse
			earlier bool
			err     error
		)
		resp, listed, earlier, err = e.sendControllerExpand(ctx, c, v, size, limit, replayed, nil)
		if lost := e.locks.stillHeld(v.ID); lost != nil {
			return fail(lost)
		}
		if err != nil {
			again := replayed && v.ExpandMin == size && v.ExpandMax == limit // the pending one itself, sent again
			if again && v.ExpandBeneathMin > 0 && !earlier && ctx.Err() == nil &&
				!csi.IsRetryable(err) && !csi.IsTimeout(err) && !csi.IsAnswerUnread(err) {
				putBack()
				return fail(e.giveWayToBeneath(ctx, v, err))
			}
			if csi.IsRetryable(err) || csi.IsTimeout(err) || csi.IsAnswerUnread(err) || earlier || again || ctx.Err() != nil {
				// The plugin may have expanded the storage without volctl reading the answer:
				// the expansion stays pending, and the error says how to learn it (the RPC is
				// idempotent). A refusal of one sent again, in this command or a later one
				// (replayed), says nothing of the attempt whose answer was lost; before, a
				// later command's refusal cleared the mark, the storage grown and the record
				// at the old size with nothing to say so
				// (TestPendingExpansionRefusedWhenSentAgainStaysPending).
				wayOut := ""
				if again && !csi.IsRetryable(err) && !csi.IsTimeout(err) && ctx.Err() == nil {
					// Refused, sent again: a plugin that refuses it for good (past what it can
					// hold) refuses every replay, and the two commands above loop
					// (TestExpandPendingRefusedForGoodNamesAWayOut).
					// At the most the plugin holds already, no larger size is taken: the record can
					// be let go too (TestPendingExpansionOfAVolumeAtThePluginsMaximumCanBeLetGo).
					wayOut = fmt.Sprintf("; if the plugin refuses it for good, an expand to a larger size it takes replaces it: `%s`, with a --limit of at least that size; %s",
						shellquote.CommandFlags("volctl volume expand", []string{v.ID}, "--size SIZE"), pendingExpansionForget(v))
				}
				err = fmt.Errorf("%w (the plugin may have expanded volume %q without volctl reading its answer; it stays recorded at %s, the expansion to %s pending: "+
					"run the same `%s` again, or `volctl reconcile`, which the plugin answers with the size it has%s)",
					err, v.ID, spec.FormatSize(cur), spec.FormatSize(size), expandCommand(v, size, limit), wayOut)
				own := fmt.Sprintf("expansion answer not read (to %s): ", spec.FormatSize(size))
				e.failureEvent(ctx, &store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCControllerExpandVolume,
					Code: csi.EventCode(err), Message: own + err.Error()}, own)
			} else if replayed {
				// Refused, and it was not the pending one (another size or limit, written over
				// it above): this request did nothing, and the earlier one, whose answer was
				// lost, stays pending as it was. Before, the refused size stayed pending in its
				// place, sent again by every reconcile and refused every time, the lost one
				// forgotten (TestRefusedExpandBesideAPendingOneKeepsThePendingOne).
				putBack()
				err = e.keepEarlierExpansion(ctx, v, err)
			} else {
				putBack()
				e.expansionAnswered(ctx, v.ID) // refused: the plugin did nothing
			}
			return fail(err)
		}
		if listed == 0 {
			e.failpoint("rpc:ControllerExpandVolume") // answered, not yet recorded
		}
		if resp.CapacityBytes > 0 {
			newSize = resp.CapacityBytes
		}
		// Owed whenever the plugin says so: to a node that can expand, to one not reachable
		// through this registration yet (a split plugin's node half not registered: the next
		// publish sends it), and to a node service without EXPAND_VOLUME (its halves disagree):
		// the file system is not grown, and expandOnNode says so until it can be.
		nodeRequired = resp.NodeExpansionRequired
		if !nodeRequired && node && (replayed || earlier) {
			// An earlier attempt's answer was lost, and the plugin may have expanded then, its
			// node_expansion_required with it: this answer is to the same request sent again,
			// about a volume the plugin may find at the size already, and one finding nothing
			// to do may say the node need do nothing. Owed all the same where the node can
			// expand (NodeExpandVolume is idempotent): taken at its word, the file system was
			// left at the old size for good, nothing owed
			// (TestExpandRetryAnsweredNodeExpansionNotRequiredStillExpandsTheNode).
			nodeRequired = true
		}
		if !nodeRequired && !c.fp.Node && (replayed || earlier) {
			// The same, through a split plugin's controller half alone: whether its node has a
			// step to take cannot be asked until its node half is registered. Owed, as a guess
			// (NodeExpandGuessed), sent at the next publish where that half can expand, and let
			// go where it turns out to have no EXPAND_VOLUME (letGoOfGuess). Taken at its word,
			// the volume was published with its file system at the old size for good
			// (TestSplitPluginsLostExpandAnswerOwesTheNodeStep).
			nodeRequired, guessed = true, true
		}
		if newSize < size {
			// The spec: the plugin reaches required_bytes or fails (OUT_OF_RANGE). It did
			// neither, so the expand fails; the record keeps the larger of the old size and
			// the one answered (volumes never shrink), and not the request, so that the same
			// expand or create asks again.
			short = fmt.Errorf("plugin %q answered ControllerExpandVolume for volume %q with %s, below the %s asked: the expansion is not done "+
				"(the volume is recorded at %s; run the expand again, or ask the storage provider)",
				v.PluginID, v.ID, spec.FormatSize(newSize), spec.FormatSize(size), spec.FormatSize(max(newSize, cur)))
			if newSize <= cur {
				e.event(ctx, &store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID,
					RPC: csi.RPCControllerExpandVolume, Message: "expansion fell short: " + short.Error()})
				if replayed && !(v.ExpandMin == size && v.ExpandMax == limit) {
					// Another size than the one pending: that one, whose answer was lost, stays
					// pending, as beside a refusal. Cleared, the storage grown by it was left
					// recorded at the old size for good
					// (TestExpandShortAnswerBesideAPendingExpansionKeepsThePendingOne).
					putBack()
					return fail(e.keepEarlierExpansion(ctx, v, short))
				}
				putBack()
				e.expansionAnswered(ctx, v.ID)
				return fail(short)
			}
		}
		// Above the limit: the storage is that size, and an expansion cannot be undone. The
		// record says what the storage is, and the expand fails, saying so.
		over = aboveLimit(v, csi.RPCControllerExpandVolume, newSize, limit)
	}
	v.CapacityBytes = newSize
	if short == nil {
		v.RequestedMin = max(v.RequestedMin, size)
		if limit != 0 {
			v.RequestedMax = limit
		}
	}
	msg := fmt.Sprintf("volume %q expanded to %s", v.ID, spec.FormatSize(newSize))
	switch {
	case cur == 0 && listed == 0:
		msg = fmt.Sprintf("volume %q is %s now, at least the %s asked (its size was not known before, nor listed by plugin %q: it may have had that already)",
			v.ID, spec.FormatSize(newSize), spec.FormatSize(size), v.PluginID)
	case listed > 0:
		msg += "; " + notSentAgain(v, listed)
	}
	switch {
	case short != nil:
		msg = "expansion fell short: " + short.Error()
	case over != nil:
		msg = "expansion went above the limit: " + over.Error()
	}
	if nodeRequired {
		// Owed before it is sent, and in the same commit as the new size: whatever happens to
		// the node expansion, the record says the filesystem may still be the old size.
		v.NodeExpandMin, v.NodeExpandMax = min(size, newSize), limit
		// The controller answered at that size: the node's step alone is owed, sent whenever
		// the volume is on the node (a plugin that expands only offline is sent no
		// ControllerExpandVolume then). A node-only expansion's debt is the whole expansion.
		v.NodeExpandControllerDone = ctrl
		// A guess stays one only where no debt the plugin said was there before it.
		v.NodeExpandGuessed = guessed && (!owedBefore || v.NodeExpandGuessed)
		if over != nil {
			v.NodeExpandMax = 0 // the storage is past the limit already: the node follows it
		}
		// A node-only debt keeps the size recorded before it, which a refusal for good of its
		// NodeExpandVolume at a later publish or reconcile puts back (sendOwedNodeStep); a
		// debt stacked on an earlier node-only one keeps that one's. None where the controller
		// has had it, nor after an earlier debt of the controller's (two sizes to put back).
		switch {
		case ctrl || owedBefore && orig.NodeExpandControllerDone:
			v.NodeOnlyFrom = nil
		case !owedBefore:
			v.NodeOnlyFrom = &store.SizeRecord{CapacityBytes: orig.CapacityBytes, RequestedMin: orig.RequestedMin}
		}
		msg += "; the node expansion is owed"
		if guessed {
			msg += fmt.Sprintf(" (a ControllerExpandVolume answer was lost, and plugin %q's node half, not registered, cannot be asked whether it has a step to take: "+
				"sent when it can, let go if it has no EXPAND_VOLUME)", v.PluginID)
		}
	} else if owedBefore && ctrl && short == nil && controllerAloneOwes(c.fp, v) {
		// A node-only debt through a plugin now controller-only: this ControllerExpandVolume,
		// at a size above the one owed, was all it lacked, its node having no step of its own.
		// Kept, marked had by the controller, it was a debt no path paid
		// (TestExpandPastANodeOnlyDebtThroughAPluginNowControllerOnlyClearsIt).
		msg += "; " + controllerAlonePaid(c, v)
		v.NodeExpandMin, v.NodeExpandMax, v.NodeExpandControllerDone = 0, 0, false
	} else if owedBefore {
		// The controller needs no node step for this expansion, but the file system has not
		// had the earlier one: it is still owed and sent now, bounded by this request's limit
		// (the storage may be past the earlier one's now), none when the answer went over it.
		v.NodeExpandMax = limit
		if over != nil {
			v.NodeExpandMax = 0
		}
		v.NodeExpandControllerDone = v.NodeExpandControllerDone || ctrl // it answered at size, above the size owed
		msg += "; the node expansion owed since an earlier expand is still owed"
	}
	if nodeOnlyNote != "" {
		msg += "; " + nodeOnlyNote
	}
	// Recorded whatever the command's context does now: the plugin answered, and an interrupt
	// here left the storage grown with the record behind it, and said only "nothing written:
	// context canceled" (TestExpandInterruptedAfterTheAnswerIsRecorded), as the owed step's
	// and the node step's records are (WithoutCancel).
	if err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		// The record as it was, for a node-only expansion refused for good to put back
		// (nodeOnlyRefused): a registration's spec (its secrets) is written here with the size.
		if !ctrl {
			if was, err := tx.Volumes().Get(v.ID); err == nil {
				orig = was
			}
		}
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		if ctrl || v.ExpandMin != 0 { // its answer recorded: nothing pending
			// Unless it fell short of an earlier pending one, larger, whose answer was lost:
			// that stays pending (as above).
			pending, pendingMax, beneathMin, beneathMax := int64(0), int64(0), int64(0), int64(0)
			if short != nil && replayed && earlierMin > v.CapacityBytes && !(earlierMin == size && earlierMax == limit) {
				pending, pendingMax, beneathMin, beneathMax = earlierMin, earlierMax, v.ExpandBeneathMin, v.ExpandBeneathMax
			}
			if err := tx.Volumes().SetExpansionIntentOver(v.ID, pending, pendingMax, beneathMin, beneathMax); err != nil {
				return err
			}
		}
		ev := &store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, Message: msg}
		if ctrl { // the plugin's controller did it: the event names its RPC, as a create's does
			ev.RPC = csi.RPCControllerExpandVolume
		}
		return tx.Events().Append(ev)
	})); err != nil {
		return fail(err)
	}
	e.failpoint("expand:node-owed")
	if nodeRequired || owedBefore {
		// ctrl: the ControllerExpandVolume this run sent answered at the size owed, or more.
		if _, err := e.expandOnNode(ctx, c, v, ctrl); err != nil {
			if refused := (*nodeExpandRefused)(nil); !ctrl && errors.As(err, &refused) {
				return fail(e.nodeOnlyRefused(ctx, v, orig, refused, 0))
			}
			if short == nil && over == nil {
				err = &nodeStepFailed{err: err, controllerDone: ctrl}
			}
			return fail(errors.Join(short, over, err))
		}
	}
	if err := errors.Join(short, over); err != nil {
		return fail(err)
	}
	info, err := e.Volume(ctx, v.ID)
	info.ExpansionNote = nodeOnlyNote
	if nodeOnlyNote != "" && info.NodeExpansionOwed > 0 {
		// expandOnNode succeeded with the debt left: the volume is on no path here, and the
		// NodeExpandVolume that is the whole expansion was not sent. Said, where the note alone
		// said "finished" of an expansion nothing had done yet (reconcile's report too).
		info.ExpansionNote += fmt.Sprintf("; that NodeExpandVolume was not sent: volume %q is on no path on this node (no published claim, nothing staged), "+
			"so it is owed, sent when a claim next publishes the volume here, and the storage has not grown until then", v.ID)
	}
	return info, err
}

// nodeStepFailed is an expansion's failure at its node step, its NodeExpandVolume recorded owed
// with the new size: after its ControllerExpandVolume answered at the size asked
// (controllerDone: the storage has grown), or as the whole of a node-only plugin's expansion.
// What is left is the debt that `volume expand` and reconcile pay. A registration whose
// expansion fails so records itself all the same (registerRound); before, a node-only plugin's
// was dropped (TestNodeOnlyRegistrationWhoseNodeStepFailsIsRecorded).
type nodeStepFailed struct {
	err            error
	controllerDone bool
}

func (n *nodeStepFailed) Error() string { return n.err.Error() }
func (n *nodeStepFailed) Unwrap() error { return n.err }

// payOwedNodeStep sends the node expansion volume v owes (v.NodeExpandMin) through plugin c
// when a spec submitted again asks at least that size (capacityMin), as `volume expand` to the
// size the volume has does: a registration or create killed at its node step (expand:node-owed)
// and run again found the size recorded, sent nothing and exited 0, the file system the alloc
// sees still the old size, the storage too for a node-only plugin
// (TestRegistrationRunAgainAfterAKillAtItsNodeStepFinishesIt). paid says the debt is paid; a
// failure is a nodeStepFailed, the command's record standing. A volume on no path here keeps
// it for its next publish, as an expand leaves it. The caller holds the volume lock.
//
// A volume handed over to Nomad keeps its debt for the take-back, as reconcile leaves it: the
// same create again (nothing to do) was refused, advising to take the volume back from Nomad
// (TestCreateAgainOfAHandedOverVolumeOwingANodeStepIsNotRefused). A guessed debt let go (the
// node has no step of its own) is not paid, nothing sent: it was said "expanded"
// (TestCreateAgainThatLetsAGuessGoIsNotSaidExpanded).
func (e *Engine) payOwedNodeStep(ctx context.Context, c *conn, v store.Volume, capacityMin int64) (paid bool, err error) {
	if v.NodeExpandMin <= 0 || capacityMin < v.NodeExpandMin {
		return false, nil
	}
	var handed bool
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		_, err := tx.Handovers().Get(v.ID)
		handed = err == nil
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}); err != nil || handed {
		return false, err
	}
	sent, err := e.sendOwedNodeStep(ctx, c, v)
	if refused := (*refusedForGood)(nil); errors.As(err, &refused) {
		return false, err // nothing owed now: the record is put back
	}
	if err != nil {
		return false, &nodeStepFailed{err: err, controllerDone: v.NodeExpandControllerDone}
	}
	if !sent {
		return false, nil
	}
	after, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(v.ID) })
	return err == nil && after.NodeExpandMin == 0, err
}

// finishedNodeOnly says that volume v's pending controller expansion (v.ExpandMin: a
// ControllerExpandVolume sent, its answer never read) is finished by this expand to size as a
// node-only one: its plugin came back declaring node EXPAND_VOLUME without the controller's,
// which in the CSI spec says NodeExpandVolume is the whole expansion, the one rule volctl
// follows for every volume of that plugin (TestPendingExpansionThroughAPluginThatLostControllerExpand).
func finishedNodeOnly(v store.Volume, size int64) string {
	return fmt.Sprintf("the pending controller expansion to %s (a ControllerExpandVolume whose answer was never read; recorded at %s) was finished node-only, to %s: "+
		"plugin %q now declares node EXPAND_VOLUME without the controller's, so its NodeExpandVolume is the whole expansion",
		spec.FormatSize(v.ExpandMin), spec.FormatSize(currentSize(v)), spec.FormatSize(size), v.PluginID)
}

// pendingWithoutController is the refusal to go on with volume v's pending expansion (a
// ControllerExpandVolume sent and its answer never read, recorded only while the plugin had the
// controller capability EXPAND_VOLUME: v.ExpandMin) through plugin c, whose controller half is
// not registered, or which came back from a restart with no EXPAND_VOLUME at all: nothing can
// learn the storage's size or grow the file system. (With the node's EXPAND_VOLUME alone the
// plugin declares node-only expansion, and expandLocked finishes it so: finishedNodeOnly.)
// Nothing is sent; the pending mark stays for the plugin with the capability back, and the
// refusal names the way out for a plugin that will not have it again: forget the volume and
// register it anew, which the storage does not notice
// (TestPendingExpansionWithNoExpandCapabilityWayOut).
func pendingWithoutController(c *conn, v store.Volume) error {
	if needsControllerHalf(c) {
		return controllerHalfMissing(c.plugin.ID, fmt.Sprintf("finish volume %q's pending expansion to %s (ControllerExpandVolume sent, its answer never read)",
			v.ID, spec.FormatSize(v.ExpandMin)))
	}
	return conflictf("volume %q's expansion to %s is pending (a ControllerExpandVolume whose answer volctl never read: the storage may or may not have grown), "+
		"but plugin %q no longer has the controller capability EXPAND_VOLUME, nor the node's, so nothing can learn the storage's size or grow the file system; "+
		"the volume stays recorded at %s: start the plugin with an EXPAND_VOLUME capability again, then run `volctl reconcile` (or the expand again); %s",
		v.ID, spec.FormatSize(v.ExpandMin), c.plugin.ID, spec.FormatSize(currentSize(v)), pendingExpansionForget(v))
}

// forgetAndRecordAnew is the way to record volume v anew, at the size its storage has:
// deregistering forgets it (its claims released first) without touching the storage, and
// registering it again records it at the size its spec says. forgets is what the deregister
// forgets with it.
func forgetAndRecordAnew(v store.Volume, forgets string) string {
	return fmt.Sprintf("`%s` (which releases its claims first, if any, and forgets %s), then `volctl volume register` of its spec with external_id = %s (the storage is not touched)",
		shellquote.CommandFlags("volctl volume deregister", []string{v.ID}, "--force", "--yes"), forgets, spec.HCLQuoted(v.ExternalID))
}

// pendingExpansionForget is the way out of volume v's pending expansion for a plugin that will
// not have EXPAND_VOLUME again: deregistering forgets the volume and its pending mark without
// touching the storage, and registering it again records it at the size its spec says.
func pendingExpansionForget(v store.Volume) string {
	return fmt.Sprintf("or, if plugin %q will not have it again, forget the volume and record it anew at the size the storage provider shows: %s",
		v.PluginID, forgetAndRecordAnew(v, "the pending expansion"))
}

// offlineOnly refuses to expand volume v while it is on the node (a claim, or a staging or
// attachment recorded with none: an unpublish owed) through plugin c when c has not said it
// expands such a volume: VOLUME_EXPANSION ONLINE alone says ControllerExpandVolume may grow a
// volume published and available on a node; with OFFLINE only the CSI spec says it SHALL NOT,
// and with neither the plugin never said it can (a restart that dropped ONLINE). ctrl says
// ControllerExpandVolume would be sent; a node-only expansion, which NodeExpandVolume does on
// the node, is refused for an offline-only plugin's claims alone, as before. Nothing is sent.
func offlineOnly(c *conn, v store.Volume, ctrl bool, claims []store.Claim, st store.Staging) error {
	pc := c.fp.Capabilities.Plugin
	if pc.VolumeExpansionOnline || (!ctrl && !pc.VolumeExpansionOffline) {
		return nil
	}
	says := "only expands volumes offline"
	if !pc.VolumeExpansionOffline {
		says = "does not say it expands volumes in use (its GetPluginCapabilities has no VOLUME_EXPANSION ONLINE)"
	}
	if len(claims) > 0 {
		return conflictf("plugin %q %s and %q is in use by %s: release its claims first", v.PluginID, says, v.ID, describeClaims(claims))
	}
	if !ctrl || (!st.Staged && !st.ControllerPublished) {
		return nil
	}
	on := fmt.Sprintf("staged at %s", st.StagingPath)
	if st.ControllerPublished {
		on = fmt.Sprintf("recorded attached to node %q", attachedNode(st))
	}
	return conflictf("plugin %q %s and %q is %s with no claim, so ControllerExpandVolume is not sent: `volctl reconcile` undoes that once plugin %q can "+
		"(or `%s` forgets it), then expand again", v.PluginID, says, v.ID, on, v.PluginID,
		forceDetachCommand(v.ID))
}

// aboveLimit is the error for a plugin that answered an expansion (rpc) of v OK with answered
// bytes, above the limit asked (none when limit is 0): the storage is that size now, and
// cannot be shrunk back.
func aboveLimit(v store.Volume, rpc string, answered, limit int64) error {
	if limit == 0 || answered <= limit {
		return nil
	}
	return &grownPastLimit{answered: answered, err: fmt.Errorf("plugin %q answered %s for volume %q with %s, above the limit %s asked: the storage is that size now "+
		"and volumes cannot shrink (it is recorded at %s; check the plugin's allocation unit or ask the storage provider)",
		v.PluginID, rpc, v.ID, spec.FormatSize(answered), spec.FormatSize(limit), spec.FormatSize(answered))}
}

// grownPastLimit is aboveLimit's error: the storage answered bytes, more than asked.
type grownPastLimit struct {
	answered int64
	err      error
}

func (g *grownPastLimit) Error() string { return g.err.Error() }
func (g *grownPastLimit) Unwrap() error { return g.err }

// expandOnNode sends the NodeExpandVolume a volume is owed where it is on this node: for each
// published claim at its target, else at its staging path when it is staged only. Once every
// one succeeded, the debt is cleared. A volume on no path here keeps it for its next publish
// (sent reports whether anything was sent). A failure leaves it owed, and says how to go on.
// Where the plugin now declares the controller's EXPAND_VOLUME, a ControllerExpandVolume to the
// size owed is sent first (controllerBeforeNode), unless controllerDone: the caller's own
// ControllerExpandVolume answered for that size in this run. The caller holds the volume lock; v is the volume as last read or written under it.
func (e *Engine) expandOnNode(ctx context.Context, c *conn, v store.Volume, controllerDone bool) (sent bool, err error) {
	if v.NodeExpandMin <= 0 || !c.fp.Node {
		return false, nil
	}
	if !c.fp.Capabilities.Node.ExpandVolume && v.NodeExpandGuessed {
		return false, e.letGoOfGuess(ctx, c, v)
	}
	if controllerAloneOwes(c.fp, v) {
		return e.payControllerAlone(ctx, c, v, controllerDone)
	}
	if !c.fp.Capabilities.Node.ExpandVolume {
		return false, fmt.Errorf("volume %q is owed a node expansion to %s (%s), but plugin %q's node service "+
			"does not have the capability EXPAND_VOLUME, so NodeExpandVolume cannot be sent: the file system is not expanded; "+
			"start the plugin with that capability, then run `%s` again or `volctl reconcile`",
			v.ID, spec.FormatSize(v.NodeExpandMin), owedHow(v), v.PluginID, owedExpandCommand(v))
	}
	var (
		claims []store.Claim
		st     store.Staging
		staged bool
	)
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if claims, err = tx.Claims().ByVolume(v.ID); err != nil {
			return err
		}
		st, err = tx.Stagings().Get(v.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		staged = err == nil && st.Staged
		return err
	}); err != nil {
		if ctx.Err() != nil {
			// Interrupted with the node step owed (the size and the debt recorded): say so, and
			// what finishes it, as a failed NodeExpandVolume does. Before, only "nothing
			// written: context canceled" (TestExpandInterruptedBeforeTheNodeStepSaysItIsOwed).
			return false, fmt.Errorf("%w: volume %q is recorded at %s with its node expansion (NodeExpandVolume) owed, not sent: run `%s` again or `volctl reconcile`",
				err, v.ID, spec.FormatSize(v.NodeExpandMin), owedExpandCommand(v))
		}
		return false, err
	}
	var (
		reqs    []csi.NodeExpandVolumeRequest
		whom    []string
		mounted map[string]bool
	)
	if staged || slices.ContainsFunc(claims, func(cl store.Claim) bool { return cl.State == store.ClaimPublished }) {
		// Recorded published or staged is not mounted after a reboot, until restored: sent
		// there, NodeExpandVolume named a bare directory on the state dir's disk (a plugin
		// growing the file system it finds there grows the host's), and its answer cleared the
		// debt the restore's publish would have paid. A path not mounted is skipped, and with
		// none, the debt waits for the next publish
		// (TestExpandAfterARebootWaitsForTheRestore, TestRestoreExpandsOnlyWhatIsMountedAgain).
		var err error
		if mounted, err = e.cfg.Mounts.MountsUnder(e.cfg.StateDir); err != nil {
			// Said as every failure here is: the node step owed, and what sends it
			// (TestExpandWithTheTableUnreadableSaysTheNodeStepIsOwed).
			return false, fmt.Errorf("volume %q: finding where it is mounted for NodeExpandVolume: %w: volume %q is recorded at %s with its node expansion (NodeExpandVolume) owed, not sent: run `%s` again or `volctl reconcile`",
				v.ID, err, v.ID, spec.FormatSize(v.NodeExpandMin), owedExpandCommand(v))
		}
	}
	skipped := 0        // published claims whose targets are not mounted now, and claims being restored
	var covered []error // published claims whose targets another mount covers since
	for i := range claims {
		cl := &claims[i]
		if cl.Degraded && !cl.Releasing {
			// Being restored (its mount lost, its publish not yet made again): its target is
			// sent nothing now, and the debt stays for its restore's publish. Cleared by the
			// other claims' step, the restored one was never grown
			// (TestExpandWithAClaimMidRestoreKeepsItOwed), as a published target not mounted.
			skipped++
			continue
		}
		if cl.State != store.ClaimPublished || cl.Releasing {
			continue
		}
		if !mounted[e.realPath(cl.TargetPath)] {
			skipped++
			continue
		}
		// Nor one covered since it was published: what the path shows is the cover's file
		// system, which NodeExpandVolume grew (or failed on), the plugin's OK clearing the debt
		// of a volume never grown (TestExpandDoesNotSendNodeExpandAtACoveredTarget).
		if err := e.targetCovered(*cl); err != nil {
			skipped++
			covered = append(covered, err)
			continue
		}
		reqs = append(reqs, e.nodeExpandRequest(c, v, cl, cl.TargetPath, st))
		whom = append(whom, fmt.Sprintf("alloc %q", cl.Alloc))
	}
	if len(covered) > 0 {
		// Said, the debt kept: the volume was said "expanded" otherwise, its claims at the old
		// size. Nothing is sent at the staging either: the alloc sees the cover.
		return false, fmt.Errorf("volume %q's node expansion (NodeExpandVolume) to %s stays owed, not sent: %w",
			v.ID, spec.FormatSize(v.NodeExpandMin), errors.Join(covered...))
	}
	if len(reqs) == 0 && staged && c.stages() && mounted[e.realPath(st.StagingPath)] {
		// With the capability of a claim the staging serves (one staging, one capability), one
		// being released too: without it, a plugin works the access type out from the path, a
		// directory, and took a block volume for a mounted file system, resizing one on the raw
		// device (TestNodeExpandAtABlockVolumesStagingPathSaysItIsABlockVolume,
		// TestNodeExpandAtABlockVolumesStagingPathWhileItsClaimIsReleasedSaysItIsABlockVolume).
		if of := stagingCapabilityOf(v, claims); of != nil {
			reqs = append(reqs, e.nodeExpandRequest(c, v, of, st.StagingPath, st))
			whom = append(whom, "its staging")
		}
	}
	if len(reqs) == 0 {
		return false, nil // sent at the volume's next publish
	}
	var (
		answered int64
		over     error // the controller's step went above the limit: said naming it
	)
	if !controllerDone {
		if answered, over, err = e.controllerBeforeNode(ctx, c, &v); err != nil {
			return true, err
		}
		for i := range reqs {
			reqs[i].CapacityMax = v.NodeExpandMax // 0 once the storage went past the limit: the node follows it
		}
	}
	// Each target is sent its NodeExpandVolume though another's failed: a plugin refusing one
	// target (its mount wedged) kept every claim after it at the old size, through each expand
	// and reconcile after, for as long as that one failed; the debt is cleared only when all
	// succeeded (TestNodeExpandFailingForOneClaimStillSendsItToTheOthers). A failure that is
	// the plugin's or the run's, not the target's, stops the rest (nodeExpandStopsTheRest).
	var failed, refusals []error
	for i, req := range reqs {
		got, err := e.sendNodeExpand(ctx, c, v, req, whom[i])
		if err != nil {
			failed = append(failed, err)
			if nf := (*nodeExpandFailed)(nil); errors.As(err, &nf) && !nf.earlier && finalRefusal(ctx, nf.cause) {
				refusals = append(refusals, fmt.Errorf("for %s: %w", nf.whom, nf.cause))
			}
			if e.nodeExpandStopsTheRest(ctx, v, err) {
				break
			}
			continue
		}
		answered = max(answered, got)
	}
	if len(failed) > 0 {
		err := errors.Join(append([]error{over}, failed...)...)
		if len(refusals) == len(reqs) && over == nil && answered == 0 {
			// Every target refused for good, no attempt before the refusal reaching the
			// plugin: nothing grew (nodeOnlyRefused).
			err = &nodeExpandRefused{err: err, refusals: errors.Join(refusals...)}
		}
		return true, err
	}
	if skipped > 0 {
		// Not sent at every published claim's target: the debt stays until a publish (the
		// restore of those claims) finds them all mounted. Cleared here, the claims restored
		// after were never sent it, each at the old size where a target has its own device
		// (TestRestoreOfTwoClaimsPaysTheDebtAtBoth, TestExpandWithOneTargetLostKeepsItOwed).
		return false, over
	}
	return true, errors.Join(over, e.nodeExpanded(ctx, v, answered))
}

// nodeExpandRefused is expandOnNode's failure when every target's NodeExpandVolume was refused
// for good by the plugin (a final code: OUT_OF_RANGE, INVALID_ARGUMENT, ...), none grown.
type nodeExpandRefused struct {
	err      error // every target's failure, with what pays it were it owed
	refusals error // the plugin's refusals alone, each naming its target
}

func (e *nodeExpandRefused) Error() string { return e.err.Error() }
func (e *nodeExpandRefused) Unwrap() error { return e.err }

// finalRefusal reports whether err, a NodeExpandVolume's failure, is the plugin's final word on
// the size asked: OUT_OF_RANGE (a size it does not support) or INVALID_ARGUMENT, which it
// answers without growing anything and a retry gets again. Anything else (INTERNAL, a timeout,
// an unreadable answer, the run's end) may have grown it, and stays owed.
func finalRefusal(ctx context.Context, err error) bool {
	var ce *csi.Error
	return ctx.Err() == nil && errors.As(err, &ce) && !csi.IsAnswerUnread(err) && csi.IsSizeRefused(err)
}

// nodeOnlyRefused puts volume v's record back as it was before this expand (orig), the plugin
// having refused for good the NodeExpandVolume that is the whole of a node-only expansion at
// every target: it grew nothing. Recorded at the size refused, with the step owed, the volume
// showed a capacity the plugin never reached, the advised expand again and reconcile met the
// same refusal each time, and an expand to a size the plugin takes was refused as a shrink
// (TestNodeOnlyExpansionRefusedForGoodIsNotRecordedAtTheSizeRefused).
//
// earlier is the size of a debt recorded by an earlier expand, refused when a later publish,
// reconcile or expand to the size recorded sent it (sendOwedNodeStep), 0 for this expand's own.
func (e *Engine) nodeOnlyRefused(ctx context.Context, v, orig store.Volume, refused *nodeExpandRefused, earlier int64) error {
	// Every field this expand wrote, the request's capacity_min among them: left at the size
	// refused, a registered volume (no size recorded) still read as that size, and a smaller
	// expand was refused as a shrink
	// (TestNodeOnlyExpansionRefusedForGoodOfARegisteredVolumeIsNotRecordedAtTheSizeRefused).
	// The whole record as it was stored before this expand wrote it: a registration's spec (a
	// mistyped secret the plugin refused) was written with the size, and kept, sent to the
	// plugin by every claim after (TestNodeOnlyRegistrationRefusedForGoodKeepsTheRecordedSecrets).
	v = orig
	// What was owed before stays so: an earlier node step (its debt, orig's), and a
	// ControllerExpandVolume whose answer was lost, the record's only sign the storage may have
	// grown, which the commit before this node step cleared
	// (TestNodeOnlyRefusalOfAPendingExpansionKeepsThePendingMark,
	// TestNodeOnlyExpansionRefusedForGoodAfterATimedOutOneIsNotRecordedAtTheSizeRefused).
	msg := fmt.Sprintf("expansion refused: plugin %q refused the NodeExpandVolume that is the whole of its expansion at every target, so this expand grew nothing; volume %q stays recorded at %s",
		v.PluginID, v.ID, spec.FormatSize(currentSize(orig)))
	if earlier > 0 {
		msg = fmt.Sprintf("expansion refused: plugin %q refused for good, at every target, the NodeExpandVolume owed since an earlier expand to %s, the whole of its expansion, "+
			"so the storage never grew; volume %q is recorded back at %s, its size before that expand",
			v.PluginID, spec.FormatSize(earlier), v.ID, spec.FormatSize(currentSize(orig)))
	}
	switch {
	case orig.NodeExpandMin > 0:
		msg += fmt.Sprintf(", its node expansion to %s still owed, as before", spec.FormatSize(orig.NodeExpandMin))
	case orig.ExpandMin > 0:
		msg += fmt.Sprintf(", with the ControllerExpandVolume to %s an earlier expand sent still pending, as before", spec.FormatSize(orig.ExpandMin))
	default:
		msg += ", nothing owed: expand it to a size the plugin supports"
	}
	if err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		if orig.ExpandMin > 0 {
			if err := tx.Volumes().SetExpansionIntentOver(v.ID, orig.ExpandMin, orig.ExpandMax, orig.ExpandBeneathMin, orig.ExpandBeneathMax); err != nil {
				return err
			}
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCNodeExpandVolume, Message: msg + ": " + refused.refusals.Error()})
	})); err != nil {
		return errors.Join(refused, fmt.Errorf("volume %q: putting its record back at %s: %w (it stays recorded at the size refused, its node expansion owed)", v.ID, spec.FormatSize(currentSize(orig)), err))
	}
	// The plugin's refusals alone: each target's failure said "it stays owed: run ... again",
	// of a debt no longer recorded, the same expand refused again
	// (TestNodeOnlyExpansionRefusedForGoodDoesNotSayItStaysOwed).
	return &refusedForGood{fmt.Errorf("%s: %w", msg, refused.refusals)}
}

// sendOwedNodeStep sends the node expansion volume v owes since an earlier expand
// (expandOnNode), for a publish, reconcile or an expand to the size recorded. Where it is a
// node-only debt whose size before is recorded (NodeOnlyFrom) and the plugin refuses it for
// good at every target, nothing grew: the record is put back at that size, nothing owed
// (nodeOnlyRefused). Before, only the expand that recorded the debt put it back: refused at
// the next publish, the volume stayed recorded at the size refused, the advised expand again
// met the same refusal, and an expand to a size the plugin takes was refused as a shrink
// (TestNodeOnlyExpansionRefusedForGoodAtTheNextPublishIsNotRecordedAtTheSizeRefused). The
// caller holds the volume lock.
//
// What is put back is the record as stored, read again after the refusal, its size fields
// alone changed: the caller's copy may hold what is not recorded (a registration's new secrets,
// refused: TestNodeOnlyDebtRefusedAtARegistrationAgainKeepsTheRecordedSecrets), and a
// ControllerExpandVolume sent first (controllerBeforeNode, a plugin back with the controller's
// EXPAND_VOLUME) recorded the storage grown, the debt the controller's now, which is not put
// back (TestNodeOnlyDebtWhoseControllerStepWasJustTakenIsNotPutBack).
func (e *Engine) sendOwedNodeStep(ctx context.Context, c *conn, v store.Volume) (sent bool, err error) {
	sent, err = e.expandOnNode(ctx, c, v, false)
	refused := (*nodeExpandRefused)(nil)
	if err == nil || !errors.As(err, &refused) {
		return sent, err
	}
	stored, rerr := viewOne(context.WithoutCancel(ctx), e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(v.ID) })
	if rerr != nil || stored.NodeExpandMin <= 0 || stored.NodeExpandControllerDone {
		return sent, err
	}
	from := stored.NodeOnlyFrom
	if from == nil {
		// A debt an older volctl recorded, without the size before it (migration 0034): the
		// plugin's listing says what the storage is, where it can; else no size is guessed,
		// and the way out is said, where every failure advised the same expand again and
		// reconcile, each refused alike for good
		// (TestMigratedNodeOnlyDebtRefusedForGoodDoesNotAdviseTheSameRefusal).
		listed := e.sizeListed(context.WithoutCancel(ctx), c, stored)
		if listed <= 0 || listed >= stored.NodeExpandMin {
			return sent, &refusedForGood{fmt.Errorf("plugin %q refused for good, at every target, the NodeExpandVolume owed to volume %q since an earlier expand to %s, "+
				"the whole of its expansion, so the storage never grew; that debt was recorded by an older volctl, without the size before it, and the plugin lists no size of the volume below it, "+
				"so the record cannot be put back: it stays at %s, owed, until the volume is recorded anew at the size the storage provider shows: %s: %w",
				stored.PluginID, stored.ID, spec.FormatSize(stored.NodeExpandMin), spec.FormatSize(stored.NodeExpandMin), forgetAndRecordAnew(stored, "the debt"), refused.refusals)}
		}
		from = &store.SizeRecord{CapacityBytes: listed, RequestedMin: min(stored.RequestedMin, listed)}
	}
	orig := stored
	orig.CapacityBytes, orig.RequestedMin = from.CapacityBytes, from.RequestedMin
	orig.NodeExpandMin, orig.NodeExpandMax, orig.NodeExpandGuessed, orig.NodeOnlyFrom = 0, 0, false, nil
	return sent, e.nodeOnlyRefused(ctx, stored, orig, refused, stored.NodeExpandMin)
}

// refusedForGood is nodeOnlyRefused's error: the record put back, nothing of this expansion
// owed or pending (a mark pending is an earlier expand's).
type refusedForGood struct{ error }

func (e *refusedForGood) Unwrap() error { return e.error }

// nodeExpandStopsTheRest says whether err, volume v's NodeExpandVolume failing for one target,
// says the others would fail alike: the run cut short, the volume's lock lost, the plugin
// unreachable, hung or busy past the retries. A plugin's refusal of that target, or an answer
// below the size asked, is that target's.
func (e *Engine) nodeExpandStopsTheRest(ctx context.Context, v store.Volume, err error) bool {
	return ctx.Err() != nil || e.locks.stillHeld(v.ID) != nil ||
		csi.IsUnavailable(err) || csi.IsDeadlineExceeded(err) || csi.IsRetryable(err)
}

// owedHow says how volume v's node expansion came to be owed: its controller's answer, or a
// node-only expansion (whose NodeExpandVolume is the whole of it).
func owedHow(v store.Volume) string {
	if v.NodeExpandControllerDone {
		return "its controller answered node_expansion_required"
	}
	return "owed as a node-only expansion, or its controller's answer not recorded"
}

// controllerAloneOwes reports whether volume v's owed node expansion is, through a plugin
// fingerprinted fp, the controller's step alone: owed as a node-only expansion (its controller
// never had the size, NodeExpandControllerDone false; not a guess, which letGoOfGuess lets go)
// through a plugin that now declares the controller's EXPAND_VOLUME and not the node's. A node
// without EXPAND_VOLUME has no step of its own (CSI sends it no NodeExpandVolume), so the
// ControllerExpandVolume is the whole expansion now. Before, every path stopped at the node's
// missing capability (a claim's publish in silence), the storage at the old size for good while
// the volume was recorded at the new one, and the advice named a node capability this plugin
// does not need (TestOwedNodeOnlyExpansionThroughAPluginNowControllerOnlyGrowsTheStorage).
func controllerAloneOwes(fp *csi.Fingerprint, v store.Volume) bool {
	return v.NodeExpandMin > 0 && !v.NodeExpandControllerDone && !v.NodeExpandGuessed &&
		fp.Node && !fp.Capabilities.Node.ExpandVolume && fp.Controller && fp.Capabilities.Controller.ExpandVolume
}

// payControllerAlone pays volume v's owed expansion through plugin c where controllerAloneOwes:
// the ControllerExpandVolume to the size owed (controllerExpandOwed, waiting as nodeStepFirst
// says: a plugin that expands only offline, with the volume on the node, or a controller half not
// registered), whose record clears the debt, with an event; or, where controllerDone (the
// caller's own answered for it), the debt cleared alone. Reconcile's step off the node
// (expandOffNode) and a claim's before the attach (expandBeforeAttach) send the same through
// controllerExpandOwed. The caller holds the volume lock.
func (e *Engine) payControllerAlone(ctx context.Context, c *conn, v store.Volume, controllerDone bool) (sent bool, err error) {
	var over error
	if !controllerDone {
		// On the node as reconcile's step off it judges (expandOffNode): a claim or a staging.
		onNode, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]string, error) { return tx.Volumes().OnNode(v.PluginID) })
		if err != nil {
			return false, err
		}
		send, wait := nodeStepFirst(c, v, slices.Contains(onNode, v.ID))
		if wait != nil {
			return false, wait
		}
		if !send {
			return false, nil
		}
		// Its record clears the debt (controllerExpandOwed, one commit).
		_, over, err = e.controllerExpandOwed(ctx, c, &v, nil)
		return true, errors.Join(over, err)
	}
	err = e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		if err := tx.Volumes().SetNodeExpansion(v.ID, 0, 0); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCControllerExpandVolume, Message: controllerAlonePaid(c, v)})
	}))
	return true, err
}

// controllerAlonePaid says what controllerExpandOwed or payControllerAlone did of volume v's
// debt where controllerAloneOwes.
func controllerAlonePaid(c *conn, v store.Volume) string {
	return fmt.Sprintf("volume %q's expansion to %s, owed as a node-only one, was had through plugin %q's controller (ControllerExpandVolume), which alone expands now: "+
		"its node service has no EXPAND_VOLUME, so no NodeExpandVolume is owed", v.ID, spec.FormatSize(v.NodeExpandMin), c.plugin.ID)
}

// controllerBeforeNode sends, before volume v's owed NodeExpandVolume (v is on the node), the
// ControllerExpandVolume to the size owed that its controller may not have had, and returns the
// capacity it answered (0: none sent, or not said); nodeStepFirst says when. A step that must
// wait (a plugin that expands only offline, a controller half not registered) is an error
// saying so: the NodeExpandVolume is not sent, the expansion stays owed. A failure, or an
// answer below the size owed, leaves the node expansion owed (NodeExpandVolume not sent), and
// says so. The answer is recorded (NodeExpandControllerDone), in v too: a NodeExpandVolume that
// fails after it is sent again alone. over is an answer above the debt's limit (controllerExpandOwed).
//
// A step that must wait may have been had already: a claim killed inside its step before the
// attach (the step answered, not recorded) is driven on by reconcile with the attach's intent
// recorded, so the volume may be attached, and its publish found the expansion waiting for the
// release, the claim's own. Where the plugin lists the volume at the size owed, the step is
// recorded and the NodeExpandVolume sent alone (controllerExpandOwed asks the listing, and sends
// nothing when the step must wait; TestOwedControllerStepKilledBeforeTheAttach).
func (e *Engine) controllerBeforeNode(ctx context.Context, c *conn, v *store.Volume) (answered int64, over, err error) {
	send, wait := nodeStepFirst(c, *v, true)
	if !send && wait == nil {
		return 0, nil, nil
	}
	return e.controllerExpandOwed(ctx, c, v, wait)
}

// nodeStepFirst decides what volume v's owed node expansion needs first through plugin c, with
// the volume on the node (onNode: a claim, a staging or an attachment) or off it. The debt
// does not always say the controller has had its size: a node-only expansion (and a pending
// controller expansion finished node-only, finishedNodeOnly) records the new size with a
// NodeExpandVolume owed that is then the whole expansion, and a debt recorded before migration
// 0017 says nothing. So unless the controller's answer is recorded with the debt
// (NodeExpandControllerDone), a plugin that now declares the controller's EXPAND_VOLUME is sent
// ControllerExpandVolume to the size owed first (send), idempotent where the storage has it:
// taken alone, the NodeExpandVolume grew nothing, the volume recorded at the new size, nothing
// owed, the storage at the old one (TestOwedNodeExpansionThroughAPluginBackWithControllerExpandSendsItFirst).
// The plugin's declaration when the work is sent rules, as for a pending expansion. For a plugin
// without VOLUME_EXPANSION ONLINE (one that expands only offline) the CSI spec says
// ControllerExpandVolume SHALL NOT be sent for a volume on the node: the expansion waits for the
// volume to be off it (offlineExpansionWaits), where mend33b sent the NodeExpandVolume alone
// (TestOwedNodeExpansionOfAnOfflineOnlyPluginWaitsWhileTheVolumeIsOnTheNode); and through a
// node half alone of a plugin that advertises CONTROLLER_SERVICE, whose controller may be what
// grows the storage, it waits for that half to be registered
// (TestOwedNodeExpansionThroughANodeHalfAloneWaitsForTheControllerHalf).
func nodeStepFirst(c *conn, v store.Volume, onNode bool) (send bool, wait error) {
	switch {
	case v.NodeExpandMin <= 0 || v.NodeExpandControllerDone:
		return false, nil
	case needsControllerHalf(c):
		return false, controllerHalfMissing(c.plugin.ID, fmt.Sprintf("send the ControllerExpandVolume volume %q's owed expansion to %s may need before its NodeExpandVolume "+
			"(it was owed as a node-only expansion; the expansion stays owed, NodeExpandVolume not sent, until then)", v.ID, spec.FormatSize(v.NodeExpandMin)))
	case !c.fp.Controller || !c.fp.Capabilities.Controller.ExpandVolume:
		return false, nil // node-only: the NodeExpandVolume is the whole expansion
	case c.fp.Capabilities.Plugin.VolumeExpansionOnline || !onNode:
		return true, nil
	}
	return false, offlineExpansionWaits(c, v)
}

// offlineExpansionWaits is the conflict of volume v's owed expansion through plugin c, which
// has the controller's EXPAND_VOLUME without VOLUME_EXPANSION ONLINE, while the volume is on the
// node: the controller has not had the size, and may not be sent it now.
func offlineExpansionWaits(c *conn, v store.Volume) error {
	says := "expands volumes only offline (VOLUME_EXPANSION OFFLINE, not ONLINE)"
	if !c.fp.Capabilities.Plugin.VolumeExpansionOffline {
		says = "does not say it expands volumes in use (its GetPluginCapabilities has no VOLUME_EXPANSION ONLINE)"
	}
	return conflictf("volume %q is owed its expansion to %s, which its controller has not had (it was owed as a node-only expansion), and plugin %q %s: "+
		"ControllerExpandVolume is not sent while the volume is on this node, and NodeExpandVolume alone would not grow it, so nothing is sent and the expansion stays owed "+
		"(the volume is recorded at %s, the storage may be smaller): it is done once the volume is off the node: release its claims, then the next claim sends "+
		"ControllerExpandVolume before it attaches the volume, or `volctl reconcile` sends it while the volume is unclaimed",
		v.ID, spec.FormatSize(v.NodeExpandMin), v.PluginID, says, spec.FormatSize(currentSize(v)))
}

// controllerExpandOwed sends the ControllerExpandVolume of volume v's owed node expansion
// (nodeStepFirst said to), and records its answer with the debt (NodeExpandControllerDone), so
// that it is not sent again, nor waited for by a plugin that expands only offline; v is
// updated as recorded. A failure, or an answer below the size owed, leaves the expansion owed
// as it was, and says so (err). An answer above the debt's limit (NodeExpandMax) is recorded, the
// storage being that size, with the limit dropped from the node's step (the node follows the
// storage), and returned as over, naming ControllerExpandVolume: before, it was found only in
// the node's answer and said as NodeExpandVolume's, or, by a plugin that expands only offline,
// not at all (expand35).
//
// The step may have been sent before without its answer recorded: a volctl killed between
// the two, a mark whose commit failed, an answer lost. The CSI spec makes the RPC idempotent,
// but a plugin that is not (one that grows the volume by the difference each call) grows the
// volume twice when asked twice. So where the plugin can say a volume's size (LIST_VOLUMES or
// GET_VOLUME), it is asked first, and a volume it lists at the size owed or more has had its
// controller's step: recorded so, not sent again (sendControllerExpand,
// TestOwedControllerStepAnsweredButNotRecordedIsNotSentAgain). A plugin that cannot say is
// sent it again, on the spec's word. wait, when not nil, says why the step may not be sent now
// (nodeStepFirst): only the listing is asked, and wait returned unless it has the size.
func (e *Engine) controllerExpandOwed(ctx context.Context, c *conn, v *store.Volume, wait error) (answered int64, over, err error) {
	if err := e.locks.stillHeld(v.ID); err != nil {
		return 0, nil, err
	}
	// The controller's step the whole expansion (controllerAloneOwes): its record clears the
	// debt, in the same commit, as nothing is owed the node; recorded apart, a kill between the
	// two left a debt no path would pay (TestOwedNodeOnlyExpansionPaidByTheControllerAloneSurvivesAKillBeforeItIsCleared).
	alone := controllerAloneOwes(c.fp, *v)
	resp, listed, _, err := e.sendControllerExpand(ctx, c, *v, v.NodeExpandMin, v.NodeExpandMax, true, wait)
	if wait != nil && err != nil {
		return 0, nil, wait // not listed at the size: the step waits, nothing sent
	}
	if lost := e.locks.stillHeld(v.ID); lost != nil {
		return 0, nil, lost
	}
	if err == nil && listed == 0 && resp.CapacityBytes > 0 && resp.CapacityBytes < v.NodeExpandMin {
		err = fmt.Errorf("plugin %q answered OK with %s, below the %s asked: the storage is not expanded", v.PluginID,
			spec.FormatSize(resp.CapacityBytes), spec.FormatSize(v.NodeExpandMin))
	}
	if err != nil {
		own := fmt.Sprintf("node expansion to %s still owed, its ControllerExpandVolume failed: ", spec.FormatSize(v.NodeExpandMin))
		e.failureEvent(ctx, &store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCControllerExpandVolume,
			Code: csi.EventCode(err), Message: own + err.Error()}, own)
		if csi.IsUnimplemented(err) {
			// It declares the capability (nodeStepFirst checked): sent again, it answers the
			// same, and "run it again" alone sent the user round in circles, as the node's
			// UNIMPLEMENTED did (TestOwedControllerStepUnimplementedByAControllerThatDeclaresIt).
			return 0, nil, fmt.Errorf("volume %q is recorded at %s with its node expansion owed, and plugin %q declares the controller capability EXPAND_VOLUME "+
				"but answered the ControllerExpandVolume sent before the NodeExpandVolume %w: the storage is not expanded, and the same answer comes back until its controller implements it "+
				"(the expansion stays owed, NodeExpandVolume not sent: restart the plugin with a controller that expands, or without the capability, or ask its vendor, then run `%s` or `volctl reconcile`)",
				v.ID, spec.FormatSize(v.NodeExpandMin), v.PluginID, err, owedExpandCommand(*v))
		}
		return 0, nil, fmt.Errorf("volume %q is recorded at %s with its node expansion owed, and plugin %q now declares the controller's EXPAND_VOLUME, "+
			"so the ControllerExpandVolume to that size is sent before the NodeExpandVolume (the storage may not have it: it was owed as a node-only expansion), "+
			"and it failed: %w (the expansion stays owed, NodeExpandVolume not sent: run `%s` again or `volctl reconcile`)",
			v.ID, spec.FormatSize(v.NodeExpandMin), v.PluginID, err, owedExpandCommand(*v))
	}
	if listed == 0 {
		e.failpoint("rpc:ControllerExpandVolume") // answered, its step not recorded yet
	}
	over = aboveLimit(*v, csi.RPCControllerExpandVolume, resp.CapacityBytes, v.NodeExpandMax)
	var msg string
	switch {
	case listed > 0:
		msg = fmt.Sprintf("volume %q's owed expansion to %s: %s; the NodeExpandVolume alone is owed", v.ID, spec.FormatSize(v.NodeExpandMin), notSentAgain(*v, listed))
	case over != nil:
		msg = "owed expansion's controller step went above the limit: " + over.Error()
	}
	if err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		if resp.CapacityBytes > currentSize(*v) || over != nil {
			// Rounded up: what the storage is now, as an expand records it; past the limit, the
			// node's step follows the storage, as an expand's does.
			cur, err := tx.Volumes().Get(v.ID)
			if err != nil {
				return err
			}
			cur.CapacityBytes = max(cur.CapacityBytes, resp.CapacityBytes)
			if over != nil {
				cur.NodeExpandMax = 0
			}
			if err := tx.Volumes().Update(&cur); err != nil {
				return err
			}
		}
		if msg != "" {
			if err := tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCControllerExpandVolume, Message: msg}); err != nil {
				return err
			}
		}
		if alone {
			if err := tx.Volumes().SetNodeExpansion(v.ID, 0, 0); err != nil {
				return err
			}
			return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCControllerExpandVolume, Message: controllerAlonePaid(c, *v)})
		}
		return tx.Volumes().SetNodeExpansionControllerDone(v.ID)
	})); err != nil {
		// Not recorded: the next attempt lists the volume at its size (where the plugin can
		// say), or sends it again, which the plugin answers the same.
		e.log.Warn("recording an owed expansion's controller step", "volume", v.ID, "err", err)
	} else {
		e.failpoint("expand:controller-done")
	}
	v.CapacityBytes = max(v.CapacityBytes, resp.CapacityBytes)
	v.NodeExpandControllerDone = true
	if over != nil {
		v.NodeExpandMax = 0
	}
	if alone {
		v.NodeExpandMin, v.NodeExpandMax, v.NodeExpandControllerDone = 0, 0, false
	}
	return resp.CapacityBytes, over, nil
}

// sendControllerExpand sends volume v's ControllerExpandVolume to size (at most limit, when not 0)
// holding the plugin's controller lock, with retries, and returns its answer, and whether an
// earlier attempt may have reached the plugin (sendAnswered's earlier).
//
// It may be had already when it is sent: again after an attempt whose answer was lost (the
// plugin grew the volume, its answer did not arrive: a retryable failure, which retry sends
// again), and, when listFirst, before its first attempt (an expansion pending since an earlier
// run, an owed node expansion's controller step: a volctl killed between the answer and its
// record, a record whose commit failed, an answer lost). The CSI spec makes the RPC
// idempotent; a plugin that is not (one that grows the volume by the difference each call)
// grows it once more each time it is asked. So where the plugin can say a volume's size
// (sizeListed), it is asked before each such send, and a volume listed at size or more has had
// it: not sent (again), answered with the size listed, returned as listed (0 when it was
// sent); node_expansion_required is not known then (the caller owes the node's step where the
// node can expand). Before, the retry within one `volume expand` sent it again unasked, and the
// storage grew to 7MiB for the 4MiB asked (TestExpandRetryAfterALostAnswerAsksTheListingFirst);
// the owed step asked (TestOwedControllerStepAnsweredButNotRecordedIsNotSentAgain). A plugin
// that cannot say is sent it again, on the spec's word. wait, when not nil, says why the step
// may not be sent now (nodeStepFirst): only the listing is asked, and wait returned unless it
// has the size.
func (e *Engine) sendControllerExpand(ctx context.Context, c *conn, v store.Volume, size, limit int64, listFirst bool, wait error) (
	resp csi.ControllerExpandVolumeResponse, listed int64, earlier bool, err error) {
	err = e.withController(ctx, c, func(ctx context.Context) error {
		if listFirst {
			if l := e.sizeListed(ctx, c, v); l >= size {
				resp.CapacityBytes, listed = l, l
				return nil
			}
			if wait != nil {
				return wait
			}
		}
		sent := 0
		var last error
		err := e.retry(ctx, c, csi.RPCControllerExpandVolume, func(ctx context.Context) error {
			if sent > 0 {
				if l := e.sizeListed(ctx, c, v); l >= size {
					resp, listed, last = csi.ControllerExpandVolumeResponse{CapacityBytes: l}, l, nil
					return nil
				}
			}
			sent++
			resp, last = c.client.ControllerExpandVolume(ctx, csi.ControllerExpandVolumeRequest{
				VolumeID: v.ExternalID, CapacityMin: size, CapacityMax: limit, Secrets: v.Secrets})
			return last
		})
		earlier = sent > 1 || sent == 1 && (listed > 0 || err != nil && !errors.Is(err, last))
		return err
	})
	return resp, listed, earlier, err
}

// learntSize asks plugin c the size of volume v, whose size is not recorded (expandLocked, asked
// to grow it to size, limit), where the plugin can say (sizeListed); 0 where it cannot. A size
// of size or more is recorded, with the event that says so: the volume is not grown, and the
// request (the spec's capacity_min) is met, unless it is above limit, which fails (invalid:
// volumes cannot shrink), the size recorded all the same.
func (e *Engine) learntSize(ctx context.Context, c *conn, v store.Volume, size, limit int64) (int64, error) {
	rpc := volumeCheck(c)
	if rpc == "" {
		return 0, nil
	}
	var known int64
	if err := e.withController(ctx, c, func(ctx context.Context) error {
		known = e.sizeListed(ctx, c, v)
		return nil
	}); err != nil || known < size {
		return known, err
	}
	// Above the limit asked (a capacity_max below the size the volume has): nothing can make
	// it that, as for a volume recorded at that size; the size learnt is recorded, the
	// request is not, and the error says so.
	var over error
	if limit != 0 && known > limit {
		over = invalidf("volume %q is %s as plugin %q lists it, above the limit %s asked: volumes cannot shrink (its size was not known before, and is recorded now)",
			v.ID, spec.FormatSize(known), v.PluginID, spec.FormatSize(limit))
	}
	err := e.store.Update(ctx, e.locks.holding(v.ID, func(tx *store.Tx) error {
		v.CapacityBytes = known
		msg := fmt.Sprintf("volume %q is %s as plugin %q lists it, at least the %s asked: its size was not known before, and it was not grown (ControllerExpandVolume not sent)",
			v.ID, spec.FormatSize(known), v.PluginID, spec.FormatSize(size))
		if over == nil {
			v.RequestedMin = max(v.RequestedMin, size)
			if limit != 0 {
				v.RequestedMax = limit
			}
		} else {
			msg = over.Error()
		}
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: rpc, Message: msg})
	}))
	return known, errors.Join(err, over)
}

// atLeastItsSource applies to an expand of volume v, of unknown size and not listed by its
// plugin, the size of the snapshot it was restored from (sourceSize: the CSI spec makes none
// smaller): a limit below it is refused, nothing sent or recorded; a size at or under it is
// had already, ControllerExpandVolume not sent, the request recorded with an event, as a volume
// its plugin lists at the size is (learntSize): note says so, "" when the bound does not apply.
//
// Restores only: a snapshot's size never changes, where a cloned volume's record says its size
// now, not when it was cloned, and a clone of a 1 MiB source grown to 8 MiB since was said "at
// least 8MiB", nothing sent, of storage still 1 MiB
// (TestExpandOfACloneOfUnknownSizeIsNotSizedByItsSourceGrownSince).
func (e *Engine) atLeastItsSource(ctx context.Context, v store.Volume, size, limit int64) (note string, err error) {
	if v.SnapshotID == "" {
		return "", nil
	}
	bound, err := viewOne(ctx, e.store, func(tx *store.Tx) (int64, error) { return sourceSize(tx, v) })
	if err != nil || bound <= 0 {
		return "", err
	}
	from := fmt.Sprintf("snapshot %q it was restored from", v.SnapshotID)
	if limit != 0 && limit < bound {
		return "", invalidf("volume %q is at least %s, the recorded size of the %s (its own size is not known, and plugin %q cannot list it), above the limit %s asked: volumes cannot shrink; nothing was sent",
			v.ID, spec.FormatSize(bound), from, v.PluginID, spec.FormatSize(limit))
	}
	if size > bound {
		return "", nil
	}
	note = fmt.Sprintf("volume %q is at least %s, the recorded size of the %s (plugin %q cannot list it, and its own size is not known), at least the %s asked: it was not grown (ControllerExpandVolume not sent)",
		v.ID, spec.FormatSize(bound), from, v.PluginID, spec.FormatSize(size))
	return note, e.store.Update(ctx, e.locks.holding(v.ID, func(tx *store.Tx) error {
		cur, err := tx.Volumes().Get(v.ID)
		if err != nil {
			return err
		}
		cur.RequestedMin = max(cur.RequestedMin, size)
		if limit != 0 {
			cur.RequestedMax = limit
		}
		if err := tx.Volumes().Update(&cur); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, Message: note})
	}))
}

// notSentAgain says that volume v's ControllerExpandVolume was not sent (again) because plugin
// lists the volume at listed already (sendControllerExpand).
func notSentAgain(v store.Volume, listed int64) string {
	return fmt.Sprintf("ControllerExpandVolume not sent again: plugin %q lists the volume at %s already "+
		"(it had the expansion, sent before and its answer not read or not recorded)", v.PluginID, spec.FormatSize(listed))
}

// sizeListed is the size plugin c lists volume v at (LIST_VOLUMES, else GET_VOLUME), asked
// before a ControllerExpandVolume that may have been had already is sent (sendControllerExpand);
// 0 when it cannot say, or did not answer (logged: the RPC is sent then, on the spec's word).
// The caller holds the plugin's controller lock.
func (e *Engine) sizeListed(ctx context.Context, c *conn, v store.Volume) int64 {
	rpc := volumeCheck(c)
	if rpc == "" {
		return 0
	}
	listed, _, err := e.listedSize(ctx, c, rpc, v.ExternalID)
	if err != nil {
		e.log.Debug("asking the size of a volume before its ControllerExpandVolume is sent again", "volume", v.ID, "rpc", rpc, "err", err)
		return 0
	}
	return listed
}

// expandBeforeAttach sends, as a claim begins publishing volume v and before anything puts
// it on the node (ControllerPublishVolume, NodeStageVolume), the ControllerExpandVolume its owed
// node expansion waits for through a plugin that expands only offline (nodeStepFirst): the
// volume is off the node only now, and the claim's publish sends the NodeExpandVolume after it
// (expandOnPublish). v is updated as the step is recorded (controllerExpandOwed). It never fails
// the claim: a failure leaves the expansion owed, with an event saying so.
func (e *Engine) expandBeforeAttach(ctx context.Context, c *conn, v *store.Volume, p *checkpoint) {
	if v.NodeExpandMin <= 0 || v.NodeExpandControllerDone || c.fp.Capabilities.Plugin.VolumeExpansionOnline {
		return
	}
	if p.st.Staged || (p.st.ControllerPublished && !p.attachIntent) {
		return
	}
	if send, _ := nodeStepFirst(c, *v, false); !send {
		return
	}
	u, err := p.usage(ctx)
	if err != nil || u.attached > 0 || u.staging > 0 || u.handover != nil {
		return
	}
	_, over, err := e.controllerExpandOwed(ctx, c, v, nil)
	if err = errors.Join(over, err); err != nil {
		e.log.Warn("owed expansion's controller step before the attach", "volume", v.ID, "err", err)
	}
}

// stagingCapabilityOf is a claim whose capability volume v's staging was made with: one of
// claims past admission (being released or not), else, with none, one standing for the volume's
// capabilities when they all have one attachment mode; nil when they do not (a NodeExpandVolume
// at the staging is then not sent: the debt stays for the next publish).
func stagingCapabilityOf(v store.Volume, claims []store.Claim) *store.Claim {
	for i := range claims {
		if claims[i].State != store.ClaimTaken {
			return &claims[i]
		}
	}
	if len(v.Capabilities) == 0 || slices.ContainsFunc(v.Capabilities, func(c spec.Capability) bool { return c.AttachmentMode != v.Capabilities[0].AttachmentMode }) {
		return nil
	}
	cl := &store.Claim{AccessMode: v.Capabilities[0].AccessMode, AttachmentMode: v.Capabilities[0].AttachmentMode}
	if mo := v.MountOptions; mo != nil && cl.AttachmentMode == spec.FileSystem {
		cl.FSType, cl.MountFlags = mo.FSType, mo.MountFlags
	}
	return cl
}

// nodeExpandRequest is the NodeExpandVolume a volume is owed, at path (a claim's target, or the
// staging path, with the capability of claim cl when given). Its staging path is where st, the volume's staging row,
// records it staged, and none where it is not: a plugin that gained STAGE_UNSTAGE_VOLUME since
// the volume was published without a staging has nothing staged, and a plugin that finds the
// device through the staging mount fails on the path a staging would have had.
func (e *Engine) nodeExpandRequest(c *conn, v store.Volume, cl *store.Claim, path string, st store.Staging) csi.NodeExpandVolumeRequest {
	req := csi.NodeExpandVolumeRequest{VolumeID: v.ExternalID, VolumePath: path,
		CapacityMin: v.NodeExpandMin, CapacityMax: v.NodeExpandMax, Secrets: v.Secrets}
	if cl != nil {
		vc := capability(cl)
		req.Capability = &vc
	}
	if c.stages() && st.Staged {
		req.StagingPath = st.StagingPath
	}
	return req
}

// sendNodeExpand sends one owed NodeExpandVolume, for whom (a claim, or the staging), and
// returns the capacity the plugin answered (0 when it does not say). A failure, and an answer
// OK below the size asked (the spec: the plugin reaches required_bytes or fails, OUT_OF_RANGE),
// is logged as an event and returned saying the expansion stays owed.
func (e *Engine) sendNodeExpand(ctx context.Context, c *conn, v store.Volume, req csi.NodeExpandVolumeRequest, whom string) (int64, error) {
	if err := e.locks.stillHeld(v.ID); err != nil {
		return 0, err
	}
	answered, earlier, err := sendAnswered(ctx, e, c, csi.RPCNodeExpandVolume, func(ctx context.Context) (int64, error) {
		return c.client.NodeExpandVolume(ctx, req)
	})
	if lost := e.locks.stillHeld(v.ID); lost != nil {
		return 0, lost
	}
	if err == nil {
		e.failpoint("rpc:NodeExpandVolume")
		if answered == 0 || answered >= req.CapacityMin {
			return answered, nil
		}
		err = fmt.Errorf("plugin %q answered OK with %s, below the %s asked: the file system is not expanded", v.PluginID, spec.FormatSize(answered), spec.FormatSize(req.CapacityMin))
	}
	own := fmt.Sprintf("node expansion to %s at %s failed, still owed: ", spec.FormatSize(req.CapacityMin), req.VolumePath)
	e.failureEvent(ctx, &store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCNodeExpandVolume,
		Code: csi.EventCode(err), Message: own + err.Error()}, own)
	if csi.IsUnimplemented(err) {
		// Its node declared EXPAND_VOLUME (expandOnNode checked): sent again, it answers the same,
		// and "run it again" alone sent the user round in circles.
		return 0, fmt.Errorf("the node expansion of volume %q to %s for %s (at %s) failed: plugin %q declares the node capability EXPAND_VOLUME "+
			"but answered NodeExpandVolume %w: the file system is not expanded, and the same answer comes back until its node service implements it "+
			"(it stays owed: restart the plugin with a node service that expands, or ask its vendor, then run `%s` or `volctl reconcile`)",
			v.ID, spec.FormatSize(v.NodeExpandMin), whom, req.VolumePath, v.PluginID, err, owedExpandCommand(v))
	}
	return 0, &nodeExpandFailed{cause: err, earlier: earlier, whom: whom,
		msg: fmt.Sprintf("the node expansion of volume %q to %s for %s (at %s) failed: %v (it stays owed: run `%s` again or `volctl reconcile`)",
			v.ID, spec.FormatSize(v.NodeExpandMin), whom, req.VolumePath, err, owedExpandCommand(v))}
}

// nodeExpandFailed is sendNodeExpand's failure of one target: the RPC's error (cause), whether
// an attempt before the last reached the plugin (earlier: it may have grown it, whatever the
// last answer says), whom it was for, and msg, the failure with what pays it.
type nodeExpandFailed struct {
	cause   error
	earlier bool
	whom    string
	msg     string
}

func (e *nodeExpandFailed) Error() string { return e.msg }
func (e *nodeExpandFailed) Unwrap() error { return e.cause }

// nodeExpanded clears a volume's owed node expansion. answered is the largest capacity the
// node answered (0 when it did not say): above the recorded size (a plugin that expands only
// on the node, or one that rounded up), it is recorded, since it is what the storage is, unless
// the controller answered the expansion, whose answer stands; above
// the limit asked, the debt is cleared (the node did expand) and the error says so.
func (e *Engine) nodeExpanded(ctx context.Context, v store.Volume, answered int64) error {
	// Where the controller answered the expansion (NodeExpandControllerDone), its answer is the
	// storage's size: a node answering more (a node that lies, or counts another unit) was
	// recorded, the record past what the plugin lists, and an expand to a size between them
	// refused as a shrink (TestNodeExpandAnswerAboveTheControllersIsNotTakenAsTheStoragesSize).
	// Nor is such an answer held to the limit: the expand failed saying the storage was "that
	// size now", recorded at it, of a size neither recorded nor the storage's
	// (TestNodeExpandAnswerAboveTheLimitAfterTheControllersSaysWhatIsRecorded).
	takeAnswer := answered > currentSize(v) && !v.NodeExpandControllerDone
	var over error
	if !v.NodeExpandControllerDone {
		over = aboveLimit(v, csi.RPCNodeExpandVolume, answered, v.NodeExpandMax)
	}
	msg := fmt.Sprintf("volume %q expanded on the node to %s", v.ID, spec.FormatSize(max(v.NodeExpandMin, answered)))
	if answered > currentSize(v) && !takeAnswer {
		msg = fmt.Sprintf("volume %q expanded on the node (NodeExpandVolume answered %s, above the %s its controller answered, which stays recorded as its size)",
			v.ID, spec.FormatSize(answered), spec.FormatSize(currentSize(v)))
	}
	if over != nil {
		msg = "node expansion went above the limit: " + over.Error()
	}
	err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		if takeAnswer {
			cur, err := tx.Volumes().Get(v.ID)
			if err != nil {
				return err
			}
			if answered > cur.CapacityBytes {
				cur.CapacityBytes = answered
				if err := tx.Volumes().Update(&cur); err != nil {
					return err
				}
			}
		}
		if err := tx.Volumes().SetNodeExpansion(v.ID, 0, 0); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCNodeExpandVolume,
			Message: msg})
	}))
	return errors.Join(err, over)
}

// letGoOfGuess clears volume v's node expansion owed as a guess (NodeExpandGuessed: after a lost
// ControllerExpandVolume answer, the node half not reachable to ask) now that plugin c's node
// half is reached and has no EXPAND_VOLUME: a node the CSI spec sends no NodeExpandVolume has no
// step of its own, so none was owed. An event says so. The caller holds the volume lock.
func (e *Engine) letGoOfGuess(ctx context.Context, c *conn, v store.Volume) error {
	return e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		if err := tx.Volumes().SetNodeExpansion(v.ID, 0, 0); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, Message: guessLetGo(c, v)})
	}))
}

// guessLetGo says what letGoOfGuess did.
func guessLetGo(c *conn, v store.Volume) string {
	return fmt.Sprintf("the node expansion to %s owed to volume %q as a guess (its ControllerExpandVolume answer was lost while plugin %q's node half could not be asked) is let go: "+
		"that node half has no EXPAND_VOLUME, so it has no step to take; no NodeExpandVolume was sent", spec.FormatSize(v.NodeExpandMin), v.ID, c.plugin.ID)
}

// expandOnPublish sends a volume's owed node expansion once a claim has published it (the
// volume was on no path here when it was expanded, or the expansion failed). The claim stays
// published whatever happens: a failure leaves the expansion owed for `volume expand` or
// reconcile, and is logged, not returned. It is sent as expandOnNode sends it, at every
// published claim's target, this one's among them, the debt cleared once all succeeded:
// sent at this claim's alone, the debt was cleared with other claims' targets never sent it
// (an expand killed between two targets, or a target the plugin refused), and nothing sent it
// again (TestExpandKilledBetweenTwoTargetsThenAClaimClearsNoDebtUnsent).
func (e *Engine) expandOnPublish(ctx context.Context, c *conn, v store.Volume, cl *store.Claim) {
	// A node without EXPAND_VOLUME: a debt owed as a guess is let go (expandOnNode), any other
	// waits, not worth a warning at every publish.
	if v.NodeExpandMin <= 0 || !c.fp.Node || !c.fp.Capabilities.Node.ExpandVolume && !v.NodeExpandGuessed && !controllerAloneOwes(c.fp, v) {
		return
	}
	_, err := e.sendOwedNodeStep(ctx, c, v) // an answer above the limit: recorded with its event
	var wait *kindError
	if errors.As(err, &wait) {
		// The expansion waits (a plugin that expands only offline, a controller half not
		// registered): said where `volctl events` and the dashboard show it.
		own := fmt.Sprintf("node expansion to %s still owed, not sent at the publish: ", spec.FormatSize(v.NodeExpandMin))
		e.failureEvent(ctx, &store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, Message: own + err.Error()}, own)
	}
	if err != nil {
		e.log.Warn("owed node expansion", "volume", v.ID, "alloc", cl.Alloc, "err", err)
	}
}

// limitBelowPending refuses --limit below volume v's pending expansion (its answer lost):
// reconcile sends it again with its own limit, and the storage, maybe that size already, would
// be recorded past the capacity_max set, as a registration lowering it is refused
// (pendingLimit; TestExpandLimitBelowAPendingExpansionIsRefused). nil when it is not. A
// --limit of at least the pending size is named as the way out of a pending one the plugin
// refuses for good, where reconcile alone goes round
// (TestPendingExpansionWayOutUnderALowerCapacityMaxIsNotCircular).
func limitBelowPending(v store.Volume, limit int64) error {
	pending := pendingMost(v)
	if limit == 0 || pending == 0 || limit >= pending {
		return nil
	}
	return conflictf("volume %q has an expansion to %s pending (ControllerExpandVolume was sent to plugin %q and its answer not recorded: the storage may be that size already), "+
		"and --limit %s is below it: run `volctl reconcile` to finish that expansion first, then set the limit again; or, if the plugin refuses that expansion for good, "+
		"expand with a --limit of at least it, which replaces it: `%s`",
		v.ID, spec.FormatSize(pending), v.PluginID, spec.FormatSize(limit),
		shellquote.CommandFlags("volctl volume expand", []string{v.ID}, "--size SIZE", shellquote.Flag("--limit", spec.FormatSize(pending))))
}

// pendingMost is the larger of volume v's pending expansion and the one kept beneath it, both
// sent again with the limit set now: a limit below either would bound a storage that may be
// that size already.
func pendingMost(v store.Volume) int64 {
	return max(v.ExpandMin, v.ExpandBeneathMin)
}

// keepEarlierExpansion puts back v's pending expansion, which a refused request for another size
// or limit wrote over (its intent), and says so with cause, the refusal.
func (e *Engine) keepEarlierExpansion(ctx context.Context, v store.Volume, cause error) error {
	if err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		return tx.Volumes().SetExpansionIntentOver(v.ID, v.ExpandMin, v.ExpandMax, v.ExpandBeneathMin, v.ExpandBeneathMax)
	})); err != nil {
		return errors.Join(cause, fmt.Errorf("putting back volume %q's pending expansion to %s: %w", v.ID, spec.FormatSize(v.ExpandMin), err))
	}
	return fmt.Errorf("%w (volume %q's earlier expansion to %s, whose answer was lost, stays pending: the plugin may have grown it; `volctl reconcile` sends it again, "+
		"and the plugin answers with the size it has)", cause, v.ID, spec.FormatSize(v.ExpandMin))
}

// giveWayToBeneath puts back volume v's expansion kept beneath its pending one (v.ExpandBeneathMin)
// once the pending one, sent again, was refused (cause): a kill left it pending where the
// refusal, when its own command ran, put the earlier one back (keepEarlierExpansion). The
// earlier one's answer was lost too, and the plugin answers it, sent again, with the size it
// has, which is recorded then. Kept pending in its place, the refused size was sent again by
// every reconcile, and the earlier expansion, which the plugin may have done, was never
// recorded (TestExpandKilledAtItsIntentBesideAPendingOneKeepsThePendingOne).
func (e *Engine) giveWayToBeneath(ctx context.Context, v store.Volume, cause error) error {
	if err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		return tx.Volumes().SetExpansionIntent(v.ID, v.ExpandBeneathMin, v.ExpandBeneathMax)
	})); err != nil {
		return errors.Join(cause, fmt.Errorf("putting back volume %q's earlier pending expansion to %s: %w", v.ID, spec.FormatSize(v.ExpandBeneathMin), err))
	}
	err := fmt.Errorf("%w (sent again, the expansion of volume %q to %s is refused: it is let go, and the earlier expansion to %s, whose answer was lost too, is pending in its place: "+
		"the plugin may have grown the volume; `volctl reconcile` sends it again, and the plugin answers with the size it has)", cause, v.ID, spec.FormatSize(v.ExpandMin), spec.FormatSize(v.ExpandBeneathMin))
	e.event(ctx, &store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCControllerExpandVolume, Code: csi.EventCode(cause),
		Message: err.Error()})
	return err
}

// expansionAnswered clears a volume's pending expansion once the plugin answered it with a
// refusal, which says it did nothing (the answers it took are recorded with their size in the
// same commit, expandLocked). Failing to clear it leaves it for reconcile, which sends the RPC
// again: the plugin refuses it again, or answers it, and either is recorded then.
func (e *Engine) expansionAnswered(ctx context.Context, volumeID string) {
	if err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		return tx.Volumes().SetExpansionIntent(volumeID, 0, 0)
	}); err != nil {
		e.log.Warn("clearing a refused expansion", "volume", volumeID, "err", err)
	}
}

// reconcilePendingExpansions sends again the ControllerExpandVolume of each volume whose
// expansion is recorded as pending (vols, as the pass listed them): volctl was killed, or lost
// the answer, after it was sent and before its answer was recorded, so the storage may be grown
// with the record at the old size and no node expansion owed. The RPC is idempotent: the
// plugin answers with the size it has, which is recorded with the node expansion it requires,
// sent where the volume is on this node (expandLocked).
func (e *Engine) reconcilePendingExpansions(ctx context.Context, rep *ReconcileReport, vols []store.Volume) {
	for _, listed := range vols {
		if listed.ExpandMin <= 0 || listed.State != store.VolumeReady || ctx.Err() != nil {
			continue
		}
		ctx := onVolume(ctx, listed.ID)
		var (
			info    VolumeInfo
			done    bool
			pending = listed.ExpandMin // as read under the lock, named in a failure
		)
		err := func() error {
			v, c, unlock, err := e.lockedVolume(ctx, listed.ID)
			if err != nil {
				return err
			}
			defer unlock()
			pending = v.ExpandMin
			if v.ExpandMin <= 0 || v.State != store.VolumeReady {
				return nil // answered since the pass listed it
			}
			if v.ExpandMin <= currentSize(v) {
				e.expansionAnswered(ctx, v.ID) // the record has the size already
				return nil
			}
			if _, handed, err := e.handedOver(ctx, v.ID); err != nil || handed {
				return err // handed over anyway (forced): it waits for the volume to be taken back
			}
			// Not under a clone of it in flight, whatever named the source (its storage ID, a
			// socket mate's ID): that clone's CreateVolume sent again is answered at the size the
			// source had (growsNoCloneSource; TestCloneByStorageIDOfASourceWithAnExpansionPendingIsRefused).
			if err := e.store.View(ctx, func(tx *store.Tx) error {
				return refuseCloneInFlight(tx, v, "run `volctl reconcile` again, which finishes the expansion of")
			}); err != nil {
				return err
			}
			info, err = e.expandLocked(ctx, c, v, v.ExpandMin, v.ExpandMax)
			done = err == nil
			return err
		}()
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			rep.problem(listed.ID, "", fmt.Errorf("volume %q: its expansion to %s, pending since an expand that did not record the answer: %w",
				listed.ID, spec.FormatSize(pending), err))
		case done:
			note := ""
			if info.ExpansionNote != "" {
				note = "; " + info.ExpansionNote
			}
			rep.did("expanded", listed.ID, "", "volume %q expanded to %s (the expand pending since an earlier run, its answer not recorded)%s",
				listed.ID, spec.FormatSize(info.CapacityBytes), note)
		}
	}
}

// reconcileExpansions sends the node expansions still owed to volumes on this node (with a
// claim or a staging, as the pass listed them); the others' wait for their next publish.
func (e *Engine) reconcileExpansions(ctx context.Context, rep *ReconcileReport, vols []store.Volume, claims []store.Claim, stagings []store.Staging) {
	here := map[string]bool{}
	for _, cl := range claims {
		here[cl.VolumeID] = true
	}
	for _, st := range stagings {
		here[st.VolumeID] = true
	}
	plugins := map[string]*store.Plugin{} // read once a debt off the node needs it; nil: not registered
	for _, listed := range vols {
		if listed.NodeExpandMin > 0 && !listed.NodeExpandControllerDone && listed.State == store.VolumeReady && !here[listed.ID] {
			if e.offNodeStepMayBeOwed(ctx, plugins, listed) {
				e.expandOffNode(ctx, rep, listed.ID)
			}
			continue
		}
		if listed.NodeExpandMin <= 0 || listed.State != store.VolumeReady || !here[listed.ID] {
			continue
		}
		ctx := onVolume(ctx, listed.ID)
		var sent bool
		paid := ""                   // the controller's step the whole expansion (controllerAloneOwes): said so
		owed := listed.NodeExpandMin // the debt as read under the lock: another process may have changed it since the listing
		err := func() error {
			v, c, unlock, err := e.lockedVolume(ctx, listed.ID)
			if err != nil {
				return err
			}
			defer unlock()
			owed = v.NodeExpandMin
			if _, handed, err := e.handedOver(ctx, v.ID); err != nil || handed {
				return err // handed over anyway (forced): it waits for the take-back
			}
			if controllerAloneOwes(c.fp, v) {
				paid = controllerAlonePaid(c, v)
			}
			sent, err = e.sendOwedNodeStep(ctx, c, v)
			return err
		}()
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			rep.problem(listed.ID, "", fmt.Errorf("volume %q: %w", listed.ID, err))
		case sent && paid != "":
			// Said as the expand and reconcile off the node say it, not "expanded on the node"
			// (TestReconcilePayingAnOwedExpansionByTheControllerAloneOnTheNodeDoesNotSayNodeExpanded).
			rep.did("expanded", listed.ID, "", "%s", paid)
		case sent:
			// The size sent, read under the lock: the listing's, stale after another process's
			// expand, was said (TestReconcileBesideAnExpandSaysTheSizeItExpandedOnTheNode).
			rep.did("expanded", listed.ID, "", "volume %q expanded on the node to %s (owed since an earlier expand)",
				listed.ID, spec.FormatSize(owed))
		}
	}
}

// offNodeStepMayBeOwed decides from the store whether volume v's debt, off this node as the pass
// listed it, may be owed the controller step expandOffNode sends: not when its plugin's recorded
// fingerprint says the plugin expands ONLINE (the step goes with the node's, at the publish) or
// has no controller EXPAND_VOLUME (node-only: the NodeExpandVolume is the whole expansion) or
// that its controller half is not registered (it waits for it). Before, expandOffNode took the
// volume's lock and connected to the plugin for every such debt to find that out, and a
// reconcile waited for another process's hold on the volume with nothing to send
// (TestReconcileDecidesAnOffNodeDebtFromTheStore). A plugin not fingerprinted yet, or whose row
// cannot be read, is left to expandOffNode. plugins caches the rows read, by ID. A fingerprint
// gone stale (the plugin restarted with the controller's step since) is caught by the next
// claim, which connects and sends the step before it attaches the volume (expandBeforeAttach).
func (e *Engine) offNodeStepMayBeOwed(ctx context.Context, plugins map[string]*store.Plugin, v store.Volume) bool {
	p, seen := plugins[v.PluginID]
	if !seen {
		err := e.store.View(ctx, func(tx *store.Tx) error {
			row, err := tx.Plugins().Get(v.PluginID)
			if err == nil {
				p = &row
			}
			return err
		})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return true
		}
		plugins[v.PluginID] = p
	}
	if p == nil {
		return false // not registered: nothing can be sent (expandOffNode's connect said no more)
	}
	fp := recordedFingerprint(*p)
	if fp == nil {
		return true
	}
	send, _ := nodeStepFirst(&conn{plugin: *p, fp: fp}, v, false)
	return send && !fp.Capabilities.Plugin.VolumeExpansionOnline
}

// expandOffNode sends, while volume id is off this node (no claim, nothing staged or attached,
// as the pass listed it), the ControllerExpandVolume its owed node expansion waits for through
// a plugin that expands only offline (nodeStepFirst), and records it: the next claim then sends
// the NodeExpandVolume alone. Nothing else is sent for a debt off the node (its NodeExpandVolume
// waits for the next publish), and a plugin that cannot be reached is not a problem here: the
// next claim sends it before it attaches the volume (expandBeforeAttach).
func (e *Engine) expandOffNode(ctx context.Context, rep *ReconcileReport, id string) {
	ctx = onVolume(ctx, id)
	var (
		owed       int64
		sent, paid bool // paid: the controller's step the whole expansion (controllerAloneOwes)
	)
	err := func() error {
		v, c, unlock, err := e.lockedVolume(ctx, id)
		if err != nil {
			e.log.Debug("owed expansion's controller step", "volume", id, "err", err)
			return nil
		}
		defer unlock()
		if c.fp.Capabilities.Plugin.VolumeExpansionOnline || v.State != store.VolumeReady {
			return nil // an ONLINE plugin is sent it with the node's step, on the node
		}
		if send, _ := nodeStepFirst(c, v, false); !send {
			return nil
		}
		var onNode []string
		if err := e.store.View(ctx, func(tx *store.Tx) error {
			onNode, err = tx.Volumes().OnNode(v.PluginID)
			return err
		}); err != nil || slices.Contains(onNode, v.ID) {
			return err // claimed or staged since the pass listed it
		}
		// Handed over to Nomad (forced, with the expansion owed): Nomad may have it published on
		// any node, which nothing here lists, and it is grown through Nomad, not behind its back.
		// The expansion waits for the take-back, as a pending one does (recheck35: it was sent,
		// TestOwedControllerStepOfAHandedOverVolumeWaitsForTheTakeBack).
		if _, handed, err := e.handedOver(ctx, v.ID); err != nil || handed {
			return err
		}
		owed, sent, paid = v.NodeExpandMin, true, controllerAloneOwes(c.fp, v)
		_, over, err := e.controllerExpandOwed(ctx, c, &v, nil)
		return errors.Join(over, err)
	}()
	switch {
	case err != nil:
		rep.problem(id, "", fmt.Errorf("volume %q: %w", id, err))
	case sent && paid:
		rep.did("expanded", id, "", "volume %q expanded by its controller to %s while off the node (plugin expands only offline; owed since an earlier expand): "+
			"its node service has no EXPAND_VOLUME, so that is the whole expansion", id, spec.FormatSize(owed))
	case sent:
		rep.did("expanded", id, "", "volume %q expanded by its controller to %s while off the node (plugin expands only offline; owed since an earlier expand): "+
			"its NodeExpandVolume is sent when a claim next publishes it", id, spec.FormatSize(owed))
	}
}

// lockedVolume starts an operation on one existing volume: it takes the volume's lock, reads the
// volume and connects to its plugin. The caller must call unlock when err is nil, which gives
// the connection back too.
func (e *Engine) lockedVolume(ctx context.Context, id string) (v store.Volume, c *conn, unlock func(), err error) {
	return e.lockedVolumeChecked(ctx, id, nil)
}

// lockedVolumeChecked is lockedVolume that runs check (when given) on the volume's record read
// under its lock before it connects to the plugin: a refusal that needs no plugin is said as
// itself, not as the plugin's socket missing (TestExpandOfAHandedOverVolumeWhosePluginIsDownIsRefusedAsHandedOver).
func (e *Engine) lockedVolumeChecked(ctx context.Context, id string, check func(store.Volume) error) (v store.Volume, c *conn, unlock func(), err error) {
	hold, v, c, err := e.heldVolumeChecked(ctx, id, check)
	if err != nil {
		return v, nil, nil, err
	}
	return v, c, func() { e.done(c); hold.release() }, nil
}

// heldVolume is lockedVolume with the volume's lock as a volumeHold, which the operation may let
// go while it waits for another volctl and take again (finishSnapshot); the caller releases it,
// and gives c back (done).
func (e *Engine) heldVolume(ctx context.Context, id string) (hold *volumeHold, v store.Volume, c *conn, err error) {
	return e.heldVolumeChecked(ctx, id, nil)
}

// heldVolumeChecked is heldVolume with check (lockedVolumeChecked).
func (e *Engine) heldVolumeChecked(ctx context.Context, id string, check func(store.Volume) error) (hold *volumeHold, v store.Volume, c *conn, err error) {
	unlock, seen, err := e.lockVolumeNoting(ctx, id)
	if err != nil {
		return nil, v, nil, err
	}
	err = e.store.View(ctx, func(tx *store.Tx) error {
		v, err = tx.Volumes().Get(id)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound) && seen != "":
		err = goneWhileWaiting(id, seen, "create the volume again, then run this again")
	case errors.Is(err, store.ErrNotFound):
		err = notFoundf("volume %q not found", id)
	}
	if err == nil && check != nil {
		err = check(v)
	}
	if err == nil {
		c, err = e.connect(ctx, v.PluginID)
	}
	if err != nil {
		unlock()
		return nil, v, nil, err
	}
	return &volumeHold{locks: e.locks, id: id, unlock: unlock}, v, c, nil
}

// expandCommand is the command that expands v to size again, bounded by limit (none when 0),
// its words quoted for a shell. It names --size, which expand requires: `volctl volume expand
// ID` alone, as advised before, was refused (TestExpandAdviceRunsAsAdvised); and the limit the
// expand was given, without which the same expand run again sends no limit_bytes and lets the
// plugin grow the volume past it, for good (TestExpandAdviceKeepsTheLimit).
func expandCommand(v store.Volume, size, limit int64) string {
	flags := []string{shellquote.Flag("--size", spec.FormatSize(size))}
	if limit != 0 {
		flags = append(flags, shellquote.Flag("--limit", spec.FormatSize(limit)))
	}
	return shellquote.CommandFlags("volctl volume expand", []string{v.ID}, flags...)
}

// payOwedNodeStep is the claim and release that pay volume v's owed NodeExpandVolume ("`claim`,
// then `release`"): a claim of it here publishes it, which sends it. A volume that takes no
// writer is claimed --read-only: advised bare, the claim asked for a writer and was refused
// ("no capability matching a writable capability"), the debt never paid
// (TestNomadRegisterOwedNodeExpansionAdviceWorksForAReaderOnlyVolume).
func payOwedNodeStep(v store.Volume) string {
	claim := []string{"--alloc", "expand"}
	if !slices.ContainsFunc(v.Capabilities, func(c spec.Capability) bool { return !c.AccessMode.ReaderOnly() }) && len(v.Capabilities) > 0 {
		claim = append(claim, "--read-only")
	}
	return fmt.Sprintf("`%s`, then `%s`", shellquote.CommandFlags("volctl volume claim", []string{v.ID}, claim...),
		shellquote.CommandFlags("volctl volume release", []string{v.ID}, "--alloc", "expand"))
}

// payOwedWords is what pays volume v's owed NodeExpandVolume, as a refusal that waits for it
// advises it (deregister's, a handover's): the claim and release of payOwedNodeStep where a
// publish here sends it (the plugin's recorded node service has EXPAND_VOLUME, or its controller
// alone owes it), else what volume status says it waits for (owedExpansionWaits): the claim and
// release advised through a node without EXPAND_VOLUME sent nothing, and the refusal came back
// with the same advice (TestDeregisterAdviceForANodeExpansionOwedToANodeWithoutExpandVolumePaysNothing).
func payOwedWords(tx *store.Tx, v store.Volume) (string, error) {
	p, err := tx.Plugins().Get(v.PluginID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if fp := recordedFingerprint(p); err == nil && fp != nil && fp.Node && (fp.Capabilities.Node.ExpandVolume || controllerAloneOwes(fp, v)) {
		return "claim it once to finish the expansion (" + payOwedNodeStep(v) + ")", nil
	}
	st, serr := tx.Stagings().Get(v.ID)
	if serr != nil && !errors.Is(serr, store.ErrNotFound) {
		return "", serr
	}
	return "first: " + owedExpansionWaits(v, p, err == nil, nil, st, nil), nil
}

// owedExpandCommand is the command that drives v's owed node expansion: expand to the size v
// is recorded at (a plugin that rounded its controller answer up left it above the size owed,
// and expand refuses a size below it: TestOwedExpandAdviceAfterARoundedAnswer), which pays the
// debt, with the node expansion's limit.
func owedExpandCommand(v store.Volume) string {
	return expandCommand(v, max(v.NodeExpandMin, currentSize(v)), v.NodeExpandMax)
}

// recordSecretsSent records v's secrets, the ones its expansion is about to be sent with, where
// the record holds others: a registration again with rotated secrets grows the volume with the
// spec's (expandRegistered), and a replay of that expansion, its answer lost, by `volume expand`
// or reconcile sends the record's; the old ones, which the plugin refuses every time, were
// recorded until the registration's own commit
// (TestRegistrationExpansionWithRotatedSecretsLostAnswerFinishesAsAdvised).
// It returns the secrets the record held, and whether it replaced them.
func recordSecretsSent(tx *store.Tx, v store.Volume) (before spec.Secrets, replaced bool, err error) {
	cur, err := tx.Volumes().Get(v.ID)
	if err != nil || maps.Equal(cur.Secrets, v.Secrets) {
		return nil, false, err
	}
	before, cur.Secrets = cur.Secrets, v.Secrets
	return before, true, tx.Volumes().Update(&cur)
}

// putSecretsBack records before as volume v's secrets again where the record still holds those
// its refused expansion was sent with (v's: recordSecretsSent). A failure is logged: the
// expansion's error is what the command reports.
func (e *Engine) putSecretsBack(ctx context.Context, v store.Volume, before spec.Secrets) {
	if err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		cur, err := tx.Volumes().Get(v.ID)
		if err != nil || !maps.Equal(cur.Secrets, v.Secrets) {
			return err
		}
		cur.Secrets = before
		return tx.Volumes().Update(&cur)
	})); err != nil {
		e.log.Warn(fmt.Sprintf("volume %q: putting back the secrets recorded before a refused expansion", v.ID), "err", err)
	}
}

// setRequestedMax records a volume's new capacity_max, read again in the commit (an owed node
// expansion may have been paid just before), with a volume-expand event saying so.
func (e *Engine) setRequestedMax(ctx context.Context, volumeID string, limit int64) error {
	return e.store.Update(ctx, e.locks.holding(volumeID, func(tx *store.Tx) error {
		v, err := tx.Volumes().Get(volumeID)
		if err != nil {
			return err
		}
		was := v.RequestedMax
		v.RequestedMax = limit
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		// An expansion pending (its answer lost; the caller refused a limit below it) is sent
		// again by reconcile with the limit written with it, and its success records that as
		// capacity_max: the one set here goes with it, as a registration's does (pendingLimit).
		// Before, reconcile sent the earlier limit, or none, and wrote it back over this one
		// (TestExpandLimitSetBesideAPendingExpansionBoundsItsReplay).
		if v.ExpandMin > 0 {
			if err := tx.Volumes().SetExpansionLimit(v.ID, limit); err != nil {
				return err
			}
		}
		return tx.Events().Append(&store.Event{Kind: "volume-expand", VolumeID: v.ID, PluginID: v.PluginID,
			Message: fmt.Sprintf("volume %q capacity_max set to %s (was %s); its size, %s, is unchanged", v.ID, spec.FormatSize(limit), describeLimit(was), spec.FormatSize(currentSize(v)))})
	}))
}

// describeLimit words a capacity_max, 0 being none.
func describeLimit(n int64) string {
	if n == 0 {
		return "none"
	}
	return spec.FormatSize(n)
}

// owedExpansionWaits says why volume v's owed node expansion (NodeExpandMin) is not done yet and
// what does it, from what the store has (its plugin p, known or not, as last fingerprinted; its
// claims; its staging row st): what the publish's event, reconcile and `volume expand` say when
// they meet it, for `volume status` (NodeExpansionWaits), where before it showed the size owed
// alone, in --json only (expand35). "" when nothing is owed.
func owedExpansionWaits(v store.Volume, p store.Plugin, known bool, claims []store.Claim, st store.Staging, handed *HandoverInfo) string {
	if v.NodeExpandMin <= 0 {
		return ""
	}
	if handed != nil {
		// Handed over (forced, with the debt): reconcile sends nothing and expand and claims are
		// refused until the take-back; this named them, and not the take-back
		// (TestOwedExpansionOfAHandedOverVolumeSaysItWaitsForTheTakeBack).
		return fmt.Sprintf("volume %q is handed over to Nomad at %s: the expansion waits for it to be taken back (%s); until then volctl sends nothing for it",
			v.ID, handed.Address, handed.whatToRun())
	}
	if !known {
		return fmt.Sprintf("plugin %q is not registered: nothing can send it; register the plugin, then run `volctl reconcile`", v.PluginID)
	}
	fp := recordedFingerprint(p)
	if fp == nil {
		return fmt.Sprintf("plugin %q has not been reached yet: `volctl reconcile` (or a claim) reaches it and sends what is owed", v.PluginID)
	}
	if !fp.Node {
		return fmt.Sprintf("plugin %q has no node service registered on this host: NodeExpandVolume cannot be sent here; register its node service, then run `volctl reconcile`", v.PluginID)
	}
	published, restoring := false, false
	for _, cl := range claims {
		published = published || (cl.State == store.ClaimPublished && !cl.Releasing)
		restoring = restoring || (cl.Degraded && !cl.Releasing)
	}
	onNode := len(claims) > 0 || st.Staged || st.ControllerPublished
	send, wait := nodeStepFirst(&conn{plugin: p, fp: fp}, v, onNode)
	switch {
	case controllerAloneOwes(fp, v) && wait != nil:
		return wait.Error()
	case controllerAloneOwes(fp, v):
		return fmt.Sprintf("volume %q was owed its expansion as a node-only one, and plugin %q now expands through its controller alone (its node service has no EXPAND_VOLUME): "+
			"`%s` or the next claim's publish sends ControllerExpandVolume, the whole expansion now", v.ID, v.PluginID, owedExpandCommand(v))
	case !fp.Capabilities.Node.ExpandVolume:
		return fmt.Sprintf("plugin %q's node service does not have the capability EXPAND_VOLUME, so NodeExpandVolume cannot be sent: the file system is not expanded; "+
			"start the plugin with that capability, then run `%s` or `volctl reconcile`", v.PluginID, owedExpandCommand(v))
	case wait != nil:
		return wait.Error()
	case restoring && !published:
		return fmt.Sprintf("volume %q has a claim being restored on this node (its mount lost, a reboot or a plugin restart): "+
			"its restore's publish sends the NodeExpandVolume (`volctl reconcile` restores it)", v.ID)
	case published || st.Staged:
		return fmt.Sprintf("volume %q is on this node, and the NodeExpandVolume has not been sent or failed (`%s` says why): "+
			"`volctl reconcile` or `%s` sends it", v.ID, "volctl events "+shellquote.Flag("--volume", v.ID), owedExpandCommand(v))
	case send && fp.Capabilities.Plugin.VolumeExpansionOnline:
		// Reconcile leaves an ONLINE plugin's step to the publish (expandOffNode): this said
		// "expands only offline" and advised a reconcile that sent nothing
		// (TestStatusOfAnOwedStepThroughAnOnlinePluginDoesNotSayOfflineOnly).
		return fmt.Sprintf("volume %q is on no path on this node, and plugin %q has not had the size through its controller "+
			"(the expansion was owed as a node-only one): the next claim's publish sends ControllerExpandVolume, then the NodeExpandVolume", v.ID, v.PluginID)
	case send:
		return fmt.Sprintf("volume %q is on no path on this node, and plugin %q, which expands only offline, has not had the size through its controller "+
			"(the expansion was owed as a node-only one): `volctl reconcile` or the next claim sends ControllerExpandVolume while the volume is off the node, "+
			"and the claim's publish the NodeExpandVolume", v.ID, v.PluginID)
	}
	return fmt.Sprintf("volume %q is on no path on this node: the NodeExpandVolume is sent when a claim next publishes it here", v.ID)
}

// passPaysOwed says whether a reconcile pass sends something of volume v's owed node expansion
// (a ControllerExpandVolume, the NodeExpandVolume), from the same rows owedExpansionWaits reads,
// as reconcileExpansions decides it: on the node (a claim or a staging row), what expandOnNode
// sends where nothing waits; off it, the controller's step expandOffNode sends through a plugin
// that expands only offline (offNodeStepMayBeOwed). A plugin not reached yet may be: the pass
// fingerprints it. For the summary's owed work (owedNodeStep).
func passPaysOwed(v store.Volume, p store.Plugin, known bool, claims []store.Claim, st store.Staging) bool {
	if v.NodeExpandMin <= 0 || !known || v.State != store.VolumeReady {
		return false
	}
	fp := recordedFingerprint(p)
	if fp == nil {
		return true
	}
	c := &conn{plugin: p, fp: fp}
	if len(claims) == 0 && st.VolumeID == "" {
		send, _ := nodeStepFirst(c, v, false)
		return !v.NodeExpandControllerDone && send && !fp.Capabilities.Plugin.VolumeExpansionOnline
	}
	// On the node, what the pass keeps there: a claim published and not being released (whose
	// staging stays with it). A claim releasing is released first, and the expansion's step then
	// finds nothing to send at; a staging no claim uses is unstaged: listed as a node-expand
	// reconcile sends, it sent nothing and said nothing
	// (TestOwedNodeExpansionOfAVolumeWhoseClaimIsReleasingIsWhatReconcileDoes).
	// A claim not at rest and not releasing stays too (one being restored, one left node-staged):
	// the pass drives it to its publish, which pays the debt
	// (TestStatusSummaryListsANodeExpansionOwedOnAVolumeWhoseClaimIsBeingRestored).
	if !slices.ContainsFunc(claims, func(cl store.Claim) bool { return !cl.Releasing }) {
		return false
	}
	if _, wait := nodeStepFirst(c, v, true); wait != nil || !fp.Node {
		return false
	}
	return controllerAloneOwes(fp, v) || fp.Capabilities.Node.ExpandVolume
}
