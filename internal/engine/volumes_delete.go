package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// refuseClaimed returns a conflict naming the volume's live claims, if it has any, and the
// commands that release them: before, "release them first: volctl volume release / detach"
// named no command to run (TestClaimedVolumeRefusalNamesTheReleaseToRun). A group's claim is
// released by the group's stop, as a claim it refuses says (freeCommand), not by a release of
// its alloc, which left the group running with its volume deleted under it
// (TestClaimedByAGroupNamesTheGroupsStop).
func refuseClaimed(tx *store.Tx, volumeID, verb string) error {
	claims, err := tx.Claims().ByVolume(volumeID)
	if err != nil || len(claims) == 0 {
		return err
	}
	var (
		cmds    []string
		grouped bool
	)
	for _, c := range claims {
		grouped = grouped || c.Group != ""
		if cmd := "`" + freeCommand(c) + "`"; !slices.Contains(cmds, cmd) {
			cmds = append(cmds, cmd)
		}
	}
	how := fmt.Sprintf("%s releases it", cmds[0])
	switch {
	case len(claims) > 1 && !grouped:
		// Off a terminal detach asks for --yes: the command runs as written.
		how = fmt.Sprintf("`%s` releases them all", shellquote.CommandFlags("volctl volume detach", []string{volumeID}, "--yes"))
	case len(cmds) > 1:
		how = fmt.Sprintf("%s release them", listSome(cmds, 5, func(s string) string { return s }))
	}
	// Through a plugin no longer registered (deregistered with --force), a release cannot
	// reach it, nor can the --force deregister's: the forced detach frees the claims without
	// it. Before, both commands advised failed "not registered"
	// (TestVolumeDeregisterAfterForcedPluginDeregisterAdvisesAWayThatWorks).
	if v, err := tx.Volumes().Get(volumeID); err == nil {
		if _, perr := tx.Plugins().Get(v.PluginID); errors.Is(perr, store.ErrNotFound) {
			return conflictf("volume %q has %d live claim(s): %s, and its plugin %q is not registered, so no release can reach it: "+
				"`%s` frees them without the plugin (or register the plugin again and release them), then %s it",
				volumeID, len(claims), describeClaims(claims), v.PluginID, shellquote.CommandFlags("volctl volume detach", []string{volumeID}, "--force", "--yes"), verb)
		} else if perr != nil {
			return perr
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if verb == forcedDeregister {
		// --force released the claims it found, outside the volume's lock; these were made by
		// another volctl since, and may be in use: advising --force again would take them too.
		return conflictf("volume %q was claimed by another volctl after this --force released the claims it found, and has %d live claim(s): %s; "+
			"nothing deregistered, the claims made meanwhile left as they are (they may be in use): release them first (%s), then deregister it",
			volumeID, len(claims), describeClaims(claims), how)
	}
	if verb == "deregister" && !grouped {
		how += fmt.Sprintf(", or `%s` releases them first", shellquote.CommandFlags("volctl volume deregister", []string{volumeID}, "--force", "--yes"))
	}
	return conflictf("volume %q has %d live claim(s): %s; release them first (%s), then %s it",
		volumeID, len(claims), describeClaims(claims), how, verb)
}

// forcedDeregister is refuseClaimed's verb for `volume deregister --force`, whose claims were
// released before it took the volume's lock: a claim it finds was made meanwhile by another
// volctl, which its refusal says instead of advising the --force it was run with
// (TestPausedPairVolumeDeregisterForcedClaim).
const forcedDeregister = "deregister --force"

func describeClaims(claims []store.Claim) string {
	return listSome(claims, 5, func(c store.Claim) string { return fmt.Sprintf("alloc %q (%s, %s)", c.Alloc, c.Mode, c.State) })
}

// DeleteVolume deletes a volume's storage through its plugin and forgets it. Claims are checked
// before DeleteVolume is sent; NOT_FOUND from the plugin counts as deleted. The volume is marked
// deleting before the RPC, so an interrupted delete is finished by reconcile.
func (e *Engine) DeleteVolume(ctx context.Context, id string) error {
	_, err := byStoredID(ctx, e, store.VolumeIDs, id, func(id string) (struct{}, error) { return struct{}{}, e.deleteVolumeStored(ctx, id) })
	return err
}

// deleteVolumeStored is DeleteVolume of the ID as stored (byStoredID).
func (e *Engine) deleteVolumeStored(ctx context.Context, id string) error {
	fail := func(err error) error { return fmt.Errorf("delete volume %q: %w", id, err) }
	unlock, seen, err := e.lockVolumeNoting(ctx, id)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	var v store.Volume
	err = e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if v, err = tx.Volumes().Get(id); err != nil {
			return err
		}
		return refuseClaimed(tx, id, "delete")
	})
	if errors.Is(err, store.ErrNotFound) && seen != "" {
		return fail(goneWhileWaiting(id, seen, "there is nothing to delete"))
	}
	if errors.Is(err, store.ErrNotFound) {
		return notFoundf("delete volume %q: not found", id)
	}
	if err != nil {
		return fail(err)
	}
	c, err := e.connect(ctx, v.PluginID)
	if err != nil {
		return fail(err)
	}
	defer e.done(c)
	if needsControllerHalf(c) {
		return fail(controllerHalfMissing(v.PluginID, fmt.Sprintf("delete volume %q", v.ID)))
	}
	if !c.fp.Controller || !c.fp.Capabilities.Controller.CreateDeleteVolume {
		if v.State == store.VolumeDeleting {
			return fail(e.deleteCapabilityLost(ctx, c, v))
		}
		if v.CSIName != "" {
			// volctl created it through this plugin's CREATE_DELETE_VOLUME, lost since: worded
			// as for a plugin that never could, the one way out forgot the volume and left its
			// storage, unsaid (TestDeleteOfACreatedVolumeThroughAPluginThatLostCreateDeleteSaysTheStorageStays).
			return fail(invalidf("plugin %q no longer has the controller capability CREATE_DELETE_VOLUME, with which volctl created volume %q, so DeleteVolume is not sent: "+
				"start the plugin with that capability again, then delete the volume again; or `%s` forgets it and leaves its storage, external ID %q, on the plugin "+
				"(delete it with the storage provider's tools if nothing uses it)",
				v.PluginID, v.ID, shellquote.Command("volctl volume deregister", v.ID), v.ExternalID))
		}
		return fail(invalidf("plugin %q cannot delete volumes (no CREATE_DELETE_VOLUME controller capability); use `volctl volume deregister` to forget the volume", v.PluginID))
	}
	if v.State == store.VolumeCreating {
		var done bool
		if v, done, err = e.finishCreateForDelete(ctx, c, v); err != nil {
			return fail(err)
		} else if done {
			return nil
		}
	}
	err = e.store.Update(ctx, e.locks.holding(id, func(tx *store.Tx) error {
		if err := refuseClaimed(tx, id, "delete"); err != nil {
			return err
		}
		if err := refuseHandedOver(tx, id); err != nil {
			return err
		}
		if err := refuseSnapshotInFlight(tx, v); err != nil {
			return err
		}
		if err := refuseCloneInFlight(tx, v, "delete"); err != nil {
			return err
		}
		v.State = store.VolumeDeleting
		return tx.Volumes().Update(&v)
	}))
	if err != nil {
		return fail(err)
	}
	e.failpoint("delete:intent")
	if err := e.finishDelete(ctx, c, v); err != nil {
		return fail(err)
	}
	return nil
}

// finishCreateForDelete finishes volume v's interrupted create so that it can be deleted: the
// plugin may have made the volume under the create's CSI name (an answer lost, or one it cannot
// use), and CreateVolume under that name is the only way to learn its ID (docs/architecture.md,
// What a create cannot know); forgetting the record without it left the storage on the plugin,
// tracked by nothing, under a "deleted". Answered, the volume is recorded and returned, for the
// delete to go on. An answer that may come later (the plugin unreachable, a retryable code, a
// cancel) leaves the create recorded, and the error says to delete again. Otherwise the record
// is forgotten (done): a plugin refusing the create for good holds nothing under the name (CSI's
// CreateVolume answers OK for a volume it holds), and the delete succeeds; one whose answer
// cannot be used (it made the volume), or that holds another volume under the name
// (ALREADY_EXISTS) or answers with another volctl volume's storage, has the record forgotten and
// the error saying it was not deleted, naming the CSI name to find it by. A cleanup of an
// unusable answer that failed leaves the volume deleting (createFailed): that error is returned.
// The caller holds the volume lock.
func (e *Engine) finishCreateForDelete(ctx context.Context, c *conn, v store.Volume) (_ store.Volume, done bool, err error) {
	ferr := e.finishCreate(ctx, c, v, true, listedSnapshot{forDelete: true})
	if errors.Is(ferr, errLockLost) {
		return v, true, ferr // another volctl drives the volume now: nothing more is written
	}
	cause := ferr // the call's own error, without what the create says of its intent
	if k := new(keptIntent); errors.As(ferr, &k) {
		cause = k.cause
	}
	cur, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(v.ID) })
	switch {
	case errors.Is(err, store.ErrNotFound):
		if d := new(deletedAgain); errors.As(ferr, &d) {
			// The plugin answered with the volume it made, which volctl could not use and
			// deleted (DeleteVolume answered OK), and the create forgot its intent: the delete
			// asked for is done (before, it failed with the create's error, exit 1, with nothing
			// left, TestDeleteOfAnInterruptedCreateAnsweredUnusablyIsADelete).
			e.event(ctx, &store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
				Message: fmt.Sprintf("volume %q deleted: its create was interrupted, and CreateVolume under its name %q, sent again, answered with a volume volctl could not use, which it deleted (%v)", v.ID, v.CSIName, d)})
			return v, true, nil
		}
		return v, true, ferr
	case err != nil:
		return v, true, errors.Join(ferr, err)
	case ferr == nil && cur.State == store.VolumeReady:
		return cur, false, nil
	case cur.State != store.VolumeCreating:
		return cur, true, ferr
	case csi.IsRetryable(ferr) || csi.IsTimeout(ferr) || ctx.Err() != nil:
		return cur, true, fmt.Errorf("its create was interrupted, and CreateVolume under its name %q, sent again to learn what the plugin made, failed: %w; "+
			"nothing was deleted and the volume stays recorded being created: run the delete again once the plugin answers", cur.CSIName, cause)
	case wasNotSent(ferr):
		// Refused before it was sent (another driver behind the socket, the driver's name not
		// learnt): the plugin was asked nothing, and may hold the volume. Before, a refusal of
		// ErrConflict read as "answers the name with another's volume", one of a question's
		// INTERNAL as a refusal for good, and the record was forgotten, the storage the lost
		// create made left tracked by nothing
		// (TestDeleteOfAnInterruptedCreateThroughAnotherDriverKeepsTheRecord,
		// TestDeleteOfAnInterruptedCreateWhoseDriverCheckFailsKeepsTheRecord).
		return cur, true, fmt.Errorf("its create was interrupted, and CreateVolume under its name %q, to be sent again to learn what the plugin made, was not sent: %w; "+
			"nothing was deleted and the volume stays recorded being created: run the delete again once the registered plugin answers on its socket; "+
			"if it never will, `%s` forgets it, and whatever the plugin made under the name %q is left for the storage provider's tools",
			cur.CSIName, cause, shellquote.Command("volctl volume deregister", v.ID), cur.CSIName)
	case csi.IsRefusedCredentials(ferr):
		// Refused the secrets sent (rotated on the backend, say): the plugin did not look the
		// name up, so it says nothing of what it holds under it. Before, taken for a refusal for
		// good, the volume was forgotten and the storage the lost create made left tracked by
		// nothing (TestDeleteOfAnInterruptedCreateRefusedCredentialsKeepsTheRecord).
		return cur, true, fmt.Errorf("its create was interrupted, and CreateVolume under its name %q, sent again to learn what the plugin made, was refused the secrets sent: %w; "+
			"the plugin did not look the name up, and may hold the volume: nothing was deleted and the volume stays recorded being created: run the delete again once the plugin takes the secrets recorded with the create; "+
			"if it never will (they were rotated), `%s` forgets it, and whatever the plugin made under the name %q is left for the storage provider's tools",
			cur.CSIName, cause, shellquote.Command("volctl volume deregister", v.ID), cur.CSIName)
	}
	// The plugin does not give the volume: forget it, saying whether something may be left.
	// An answer refused as not made for this request (another content source than asked, a
	// clone or restore answered with its source) names a volume the plugin holds under the
	// name, left alone: the delete forgot the record and said "deleted", that volume recorded
	// nowhere (TestDeleteOfAnInterruptedCreateAnsweredWithAnotherSourceIsNotSaidDeleted).
	leftAlone := errors.Is(ferr, csi.ErrLeftAlone)
	kept := csi.IsAnswerUnread(ferr) || csi.IsAlreadyExists(ferr) || errors.Is(ferr, ErrConflict) || leftAlone
	msg := fmt.Sprintf("volume %q forgotten: its create was interrupted, and plugin %q refuses to create it again under its name %q (%v)", v.ID, v.PluginID, cur.CSIName, cause)
	if kept {
		msg = fmt.Sprintf("volume %q forgotten, not deleted: its create was interrupted, and plugin %q does not give the volume it holds under the name %q (%v)", v.ID, v.PluginID, cur.CSIName, cause)
	}
	err = e.store.Update(context.WithoutCancel(ctx), e.locks.holding(v.ID, func(tx *store.Tx) error {
		if err := tx.Volumes().Delete(v.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
			Code: csi.EventCode(cause), Message: msg})
	}))
	if err != nil {
		return cur, true, errors.Join(ferr, err)
	}
	e.removeStagingDir(ctx, v.PluginID, v.ID)
	if kept && errors.Is(ferr, ErrConflict) {
		// The answer was another's volume (published to a node, or another recorded volume's
		// storage): advised deleted "with the storage provider's tools", the user would delete
		// the data in use the refusal left alone
		// (TestDeleteOfAnInterruptedCreateAnsweredWithAPublishedVolumeDoesNotAdviseDeletingIt).
		return cur, true, fmt.Errorf("forgotten but not deleted: its create was interrupted, and plugin %q answers its name %q with another's volume (%w); "+
			"leave that volume alone: it is not this create's", v.PluginID, cur.CSIName, cause)
	}
	if leftAlone {
		// The refusal's own advice stands: it says what the answer was, and what to do of it.
		return cur, true, fmt.Errorf("forgotten but not deleted: its create was interrupted, and plugin %q answers its name %q with a volume not made for it (%w)", v.PluginID, cur.CSIName, cause)
	}
	if kept {
		return cur, true, fmt.Errorf("forgotten but not deleted: its create was interrupted, and plugin %q does not give the volume it holds under the name %q (%w); "+
			"delete that volume with the storage provider's tools", v.PluginID, cur.CSIName, cause)
	}
	return cur, true, nil
}

// refuseSnapshotInFlight refuses to delete volume v while a snapshot of it is recorded as being
// created: its CreateSnapshot was interrupted, or its create is still running, waiting, and the
// plugin may have made it. Deleted under
// it, the source is gone, so no CreateSnapshot sent again could finish it (a plugin answers
// NOT_FOUND for the source), and reconcile would report it every pass. A snapshot create holds
// the volume's lock, as the delete does, so none is recorded while the delete runs.
func refuseSnapshotInFlight(tx *store.Tx, v store.Volume) error {
	creates, err := tx.Snapshots().ListCreates(v.PluginID)
	if err != nil {
		return err
	}
	for _, sc := range creates {
		if sc.SourceVolumeID == v.ID {
			// Not "interrupted": a create in another volctl waiting for a delete of the
			// snapshot its plugin answered with lets the volume's lock go while it waits
			// (snapshotLockAfterItsDelete), and its intent reads the same as one cut short.
			return conflictf("volume %q has a snapshot being created, %q, through plugin %q, which may have made it: its create may be still running in another volctl "+
				"(waiting for a delete of the snapshot the plugin answered with), or was interrupted. Let that create end, or run `volctl reconcile` to finish it, or `%s`; then delete the volume",
				v.ID, sc.Name, sc.PluginID, shellquote.Command("volctl volume snapshot delete", sc.PluginID, sc.Name))
		}
	}
	return nil
}

// refuseCloneInFlight refuses to delete volume v while a volume of its plugin is recorded as
// being created as a clone of it (its clone_id resolved to v's storage, cloneSource): its
// CreateVolume is in flight, or was interrupted, and only one sent again, which clones from v,
// finishes it. Deleted under it, every CreateVolume after was answered NOT_FOUND for the
// source, and reconcile reported the clone's create every pass for good
// (TestCrashInARestoreOrAClone). A clone's record marked deleting counts too: a create deleting
// a CreateVolume answer it cannot use marks its record so (createFailed), then puts it back to
// being created, to be sent again (TestSourceDeleteRefusedDuringACloneCleanup). The state does
// not tell that record from a finished clone whose own delete was interrupted, so the delete of
// the source waits for that one too, until reconcile finishes it
// (TestSourceDeleteWaitsForAnInterruptedDeleteOfItsClone). It is refuseRestoreInFlight's
// counterpart for a clone; the other way round, cloneSource refuses a source being deleted.
// A clone through a plugin ID on one of v's plugin's sockets (socketMates: one storage) counts
// as one through its own, as a restore does; before, the source was deleted under it
// (TestSourceDeleteRefusedWhileACloneThroughASocketMateIsInFlight).
//
// An expand of v that grows it is refused the same way (verb "expand"): the clone's CreateVolume
// sent again is answered with the clone the plugin made at the source's size then, which the
// answer's check, reading the source's size now, took for a clone too small, deleted and forgot
// (TestCloneReplayedAfterItsSourceGrewIsNotDeletedAsSmaller).
func refuseCloneInFlight(tx *store.Tx, v store.Volume, verb string) error {
	if v.ExternalID == "" {
		return nil
	}
	mates, err := socketMates(tx, v.PluginID)
	if err != nil {
		return err
	}
	for _, state := range []store.VolumeState{store.VolumeCreating, store.VolumeDeleting} {
		vols, err := tx.Volumes().List(store.VolumeFilter{State: state})
		if err != nil {
			return err
		}
		for _, o := range vols {
			switch {
			// A clone_id in another spelling of the storage ID (spec.SameStorageID) clones it on a
			// plugin that reads IDs so (TestSourceDeleteRefusedWhileACloneFromItsNearSpellingIsInFlight).
			case o.ID == v.ID || !mates[o.PluginID] || !spec.SameStorageID(o.CloneID, v.ExternalID):
			case state == store.VolumeCreating:
				return conflictf("volume %q is being created as a clone of volume %q (its CreateVolume is in flight, or was interrupted, and only one sent again, which clones from %q, finishes it): "+
					"run `volctl reconcile` to finish that create, or `%s`, then %s volume %q",
					o.ID, v.ID, v.ID, shellquote.Command("volctl volume delete", o.ID), verb, v.ID)
			default:
				return conflictf("volume %q, a clone of volume %q, is being deleted: its delete was interrupted, or its create is deleting a volume the plugin answered with that it cannot use, "+
					"after which it sends CreateVolume again, which clones from %q: run `volctl reconcile` to finish it, then %s volume %q",
					o.ID, v.ID, v.ID, verb, v.ID)
			}
		}
	}
	return nil
}

// deleteCapabilityLost is the refusal to send DeleteVolume to finish volume v's interrupted
// delete (state deleting: recorded while plugin c had CREATE_DELETE_VOLUME, which the delete
// checks) through c, which lost the capability in a restart, as finishCreate refuses to finish
// an interrupted create. Before, reconcile sent DeleteVolume to a plugin that does not
// advertise it every pass, its problem saying to run the delete again or reconcile, and the
// delete again said "cannot delete volumes", neither saying the storage may be left
// (TestInterruptedDeleteThroughAPluginThatLostCreateDelete).
func (e *Engine) deleteCapabilityLost(ctx context.Context, c *conn, v store.Volume) error {
	cleanup, err := viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) { return tx.Volumes().CreateCleanup(v.ID) })
	if err != nil {
		return err
	}
	return invalidf("plugin %q no longer has the controller capability CREATE_DELETE_VOLUME, so DeleteVolume is not sent for volume %q, marked deleting: "+
		"start the plugin with that capability again, which lets `volctl reconcile` finish it; or `%s` forgets it (%s; %s)",
		c.plugin.ID, v.ID, shellquote.Command("volctl volume deregister", v.ID), unfinishedDelete(cleanup), deleteMayBeLeft(v, cleanup))
}

// deleteMayBeLeft says that volume v's unfinished delete may have left its storage. A record
// marked deleting is a volume delete not finished, or a create's removal of a volume the plugin
// answered with that volctl could not use (createFailed); and in either, DeleteVolume may not
// have been sent yet, or its answer been an error or lost. cleanup says the record is such a
// removal (volumes.create_cleanup, migration 0022; one recorded before says neither): that
// storage may be another's, a volume a plugin mapping two names onto one answered the create
// with, published elsewhere or recorded by another state dir, whose question (unusableAnswerHeld)
// is what kept the DeleteVolume unsent. Before, its deregistration said to delete it with the
// storage provider's tools if the plugin still held it: another's data, deleted by hand
// (TestDeregisterOfAnUnfinishedCreateCleanupDoesNotAdviseDeletingAnothersStorage).
func deleteMayBeLeft(v store.Volume, cleanup bool) string {
	if cleanup {
		return fmt.Sprintf("the DeleteVolume of that storage, external ID %q, may not have been sent, or its answer was an error or lost, so it may still exist; "+
			"and it may be another's: a plugin that maps two names onto one volume answers a create with a volume made by another create, here, in another state dir or by another orchestrator, "+
			"which holds its data: delete it with the storage provider's tools only once you know no node has it published and nothing else records it",
			v.ExternalID)
	}
	return fmt.Sprintf("the DeleteVolume of its storage, external ID %q, may not have been sent, or its answer was an error or lost, so that storage may still exist: if plugin %q still holds it, delete it with the storage provider's tools",
		v.ExternalID, v.PluginID)
}

// unfinishedDelete says what a volume marked deleting is (deleteMayBeLeft): a create removing
// an answer it could not use (cleanup), or a delete not finished or a removal recorded before
// migration 0022, which the record cannot tell apart.
func unfinishedDelete(cleanup bool) string {
	if cleanup {
		return "its create's removal of a volume the plugin answered with that volctl could not use was not finished"
	}
	return "its delete, or its create's removal of a volume the plugin answered with that volctl could not use, was not finished"
}

// refuseSharedDelete refuses to delete volume v's storage while another volctl volume records
// it (sameStorage: state from before a check saw the two were one, such as one plugin reached
// through two spellings of its socket): DeleteVolume would delete that volume's data too. So
// too while another volume records it but for case, Unicode normalisation or surrounding white
// space (nearStorage): register is not held to that rule, and a plugin that reads IDs so takes
// DeleteVolume of v's spelling for the other's storage; before, `volume delete` of a volume
// registered on "DATA-1" deleted the data of the one created as "data-1"
// (TestDeleteOfANearSpellingOfAnotherVolumesStorageIsRefused). No override sends it anyway:
// a refused delete can be undone, deleted data cannot; the ways out are named. It is checked
// before DeleteVolume is sent, by a delete and by reconcile finishing one.
func refuseSharedDelete(tx *store.Tx, v store.Volume) error {
	deregister := shellquote.Command("volctl volume deregister", v.ID)
	if err := refuseDeleteOfItsSource(tx, v, deregister); err != nil {
		return err
	}
	same, err := sameStorage(tx, v.PluginID, v.ExternalID, v.ID)
	if err != nil {
		return err
	}
	if len(same) > 0 {
		o := same[0]
		return conflictf("volume %q's storage (external ID %q on plugin %q) is also recorded as volume %q: deleting it would delete %q's data; "+
			"`%s` forgets %q and leaves the storage to %q", v.ID, spec.Cut(v.ExternalID, 256), v.PluginID, o.ID, o.ID, deregister, v.ID, o.ID)
	}
	o, stored, err := nearStorage(tx, v.PluginID, v.ExternalID, v.ID)
	if err != nil || o == "" {
		return err
	}
	return conflictf("volume %q's external ID %+q on plugin %q differs only in case, Unicode normalisation (compatibility forms too), invisible characters or surrounding white space from volume %q's %+q: "+
		"a plugin that reads IDs so (a case-insensitive backend, one that trims or normalises the IDs it is sent) takes DeleteVolume of it for %q's storage, "+
		"so it is not sent. If they are one volume, `%s` forgets %q and leaves the storage to %q; if the plugin is case-sensitive and holds them as two volumes, "+
		"`%s` and delete %+q with the storage provider's tools (volctl sends no such DeleteVolume: on a backend that folds IDs, that deletes %q's data)",
		v.ID, spec.Cut(v.ExternalID, 256), v.PluginID, o, spec.Cut(stored, 256), o, deregister, v.ID, o, deregister, spec.Cut(v.ExternalID, 256), o)
}

// refuseDeleteOfItsSource refuses to delete a clone or restore v whose storage is its own source:
// the volume it was cloned from (clone_id, the source's storage ID), or the one its snapshot was
// taken of (snapshotSources). An older volctl recorded such an answer as the new volume (a plugin
// that restores in place, or hands the source over; csi.createdVolume refuses it now), and
// DeleteVolume of it deletes the source's data, which volctl may no longer record
// (TestDeleteOfARestoreRecordedAsItsSourceIsRefused). deregister is the way out it names.
func refuseDeleteOfItsSource(tx *store.Tx, v store.Volume, deregister string) error {
	if v.ExternalID == "" || v.CloneID == "" && v.SnapshotID == "" {
		return nil
	}
	var source, what string
	if v.CloneID != "" && spec.SameStorageID(v.ExternalID, v.CloneID) {
		source, what = v.CloneID, "the volume it was cloned from"
	} else if v.SnapshotID != "" {
		sources, err := snapshotSources(tx, v.PluginID, v.SnapshotID)
		if err != nil {
			return err
		}
		for _, s := range sources {
			if s != "" && spec.SameStorageID(v.ExternalID, s) {
				source, what = s, fmt.Sprintf("the volume snapshot %q it was restored from was taken of", spec.Cut(v.SnapshotID, 256))
				break
			}
		}
		if source != "" {
			// A restore recorded under the source's freed ID, the source gone before its
			// CreateVolume (sourcesStillHeld), is a volume of its own
			// (TestRestoreGivenItsDeletedSourcesFreedIDIsRecorded).
			gone, err := tx.Volumes().SourceGone(v.ID)
			if err != nil || gone {
				return err
			}
		}
	}
	if source == "" {
		return nil
	}
	return conflictf("volume %q's storage (external ID %q on plugin %q) is %s (%q), not a volume of its own: the plugin answered its create with the source, "+
		"which an older volctl recorded; deleting it would delete the source's data, so DeleteVolume is not sent: `%s` forgets %q and leaves the storage alone",
		v.ID, spec.Cut(v.ExternalID, 256), v.PluginID, what, spec.Cut(source, 256), deregister, v.ID)
}

// finishDelete sends DeleteVolume for a volume in state deleting and forgets it. An attachment
// or staging left without a claim is undone first: a plugin may refuse to delete an attached
// volume, and the record of it would keep the volume's row.
//
// Each step checks first that the volume's lock is still held (stillHeld): before the RPCs
// that undo what is left, before DeleteVolume, and once it answered, before the volume is
// forgotten or kept. A lock file removed meanwhile lets another volctl drive the same delete,
// or another command on the volume, beside this one, which stops, leaving the volume deleting.
func (e *Engine) finishDelete(ctx context.Context, c *conn, v store.Volume) error {
	if err := e.locks.stillHeld(v.ID); err != nil {
		return err
	}
	// A split plugin's controller half not registered is not a lost capability: the driver has
	// it, and the refusal names the half to register, as the delete's own does.
	if needsControllerHalf(c) {
		return controllerHalfMissing(v.PluginID, fmt.Sprintf("send the DeleteVolume volume %q is marked deleting for", v.ID))
	}
	if !c.fp.Controller || !c.fp.Capabilities.Controller.CreateDeleteVolume {
		return e.deleteCapabilityLost(ctx, c, v)
	}
	if err := e.store.View(ctx, func(tx *store.Tx) error { return refuseSharedDelete(tx, v) }); err != nil {
		if errors.Is(err, ErrConflict) {
			return e.keepRefusedDelete(ctx, v, err, true)
		}
		return err
	}
	if err := e.undoLeftStaging(ctx, c, v); err != nil {
		if errors.As(err, new(*keptAttachmentError)) {
			// No retry of the delete can send it: the volume goes back to ready.
			return e.keepRefusedDelete(ctx, v, conflictf("%v", err), false)
		}
		return fmt.Errorf("undoing %s: %w (the volume is marked deleting; run the delete again or `volctl reconcile` once plugin %q answers)",
			e.leftBehind(ctx, v), err, v.PluginID)
	}
	var unchecked error   // why whether the plugin still lists the volume could not be checked
	var beforeNote string // the event's words when the nodes holding it could not be checked
	var answer error      // the plugin's answer taken as done: nil (OK) or NOT_FOUND
	if v.ExternalID != "" {
		if err := e.locks.stillHeld(v.ID); err != nil {
			return err
		}
		// A create's cleanup (createFailed) sends no DeleteVolume whose question of the nodes
		// holding the volume failed: the storage is volctl's only if none does
		// (unusableAnswerHeld, cleanupUnchecked).
		cleanup := false
		if publishedCheck(c) != "" {
			var err error
			if cleanup, err = viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) { return tx.Volumes().CreateCleanup(v.ID) }); err != nil {
				return err
			}
		}
		var (
			listed bool
			err    error
			asked  bool  // whether the nodes holding the volume were learnt
			before error // why they could not be
			// sentBefore is the answer to a DeleteVolume an earlier attempt sent, its question
			// having failed (nil: none sent): a later attempt that learns the nodes says so.
			sentBefore error
		)
		// The listing before DeleteVolume and the one after it share one bound (checkBudget).
		listed, unchecked, err = e.teardownChecked(withCheckBudget(ctx, e.newCheckBudget()), c, e.retry, csi.RPCDeleteVolume, func(ctx context.Context) error {
			// Asked here, in DeleteVolume's attempt: after checkSockets has checked that the
			// registered driver answers on the socket (another driver is asked nothing), under
			// the controller lock DeleteVolume is sent under. An attempt after one whose check
			// failed asks again.
			if !asked {
				var nodes []string
				before = e.boundCheck(ctx, func(ctx context.Context) error {
					var err error
					nodes, err = e.publishedNodes(ctx, c, v.ExternalID)
					return err
				})
				asked = before == nil
				if len(nodes) > 0 {
					return heldByNodes{e.publishedElsewhere(ctx, c, v, nodes, sentBefore)}
				}
				if before != nil && cleanup {
					return cleanupHeld{before}
				}
			}
			sentBefore = c.client.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: v.ExternalID, Secrets: v.Secrets})
			return sentBefore
		}, func(ctx context.Context) (bool, error) { return e.listsVolume(ctx, c, v.ExternalID) })
		if lost := e.locks.stillHeld(v.ID); lost != nil {
			return lost
		}
		if held := (cleanupHeld{}); errors.As(err, &held) {
			return e.cleanupUnchecked(ctx, v, v.ExternalID, held.err)
		}
		if held := (heldByNodes{}); errors.As(err, &held) {
			// Nothing was sent, or one DeleteVolume before the question could be asked (the error
			// says so) and the plugin still lists the volume: it is kept, ready.
			return e.keepRefusedDelete(ctx, v, held.err, true)
		}
		if !asked && before != nil && (err == nil || csi.IsIgnorable(err)) {
			e.log.Warn(fmt.Sprintf("plugin %q: whether a node holds volume %q (published there) could not be checked before DeleteVolume, which it answered %s", v.PluginID, v.ID, answerWord(err)),
				"err", before)
			beforeNote = fmt.Sprintf(" (not checked that no node held it before DeleteVolume: %v)", before)
		}
		if err != nil && !csi.IsIgnorable(err) {
			if csi.IsFailedPrecondition(err) {
				// The plugin refuses for the volume's own state (snapshots, in use elsewhere): it
				// still exists, and stays usable rather than stuck deleting; unless the plugin
				// no longer lists it (refusedButGone).
				if gone := e.refusedButGone(ctx, c, v, err); gone != nil {
					return gone
				}
				return e.keepRefusedDelete(ctx, v, err, false)
			}
			e.failureEvent(ctx, &store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCDeleteVolume,
				Code: csi.EventCode(err), Message: "delete failed: " + err.Error()}, "delete failed: ")
			if csi.IsAnswerUnread(err) {
				// The plugin answered, but what cannot be read; every DeleteVolume gets the same
				// answer, so running the delete again cannot finish it. Whether the storage is gone
				// is the plugin's listing's to say, as after an OK: it said "deleted the storage"
				// of a volume the plugin still listed (TestDeleteAnswerUnreadDoesNotSayDeletedWhileStillListed).
				return fmt.Errorf("%w (%s; another delete gets the same answer, so the volume stays marked deleting; `%s` forgets it)",
					err, e.unreadDeleteSays(ctx, c, v), shellquote.Command("volctl volume deregister", v.ID))
			}
			return fmt.Errorf("%w (the volume is marked deleting; run the delete again or `volctl reconcile`)", err)
		}
		answer = err
		if listed {
			// The storage (someone's data) is still there: forgetting it would leak it while
			// saying it was deleted. The plugin may be deleting it in the background, or answer
			// NOT_FOUND for a volume it holds (a lookup that failed, an ID it mangled).
			err := stillListed(v.PluginID, csi.RPCDeleteVolume, err, "volume", v.ExternalID, volumeCheck(c))
			msg := "delete not finished, volume kept deleting: " + err.Error() // volctl's words, naming the volume
			e.failureEvent(ctx, &store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, RPC: volumeCheck(c),
				Message: msg}, msg)
			return fmt.Errorf("%w (volume %q stays marked deleting: running the delete again or `volctl reconcile` sends DeleteVolume again and forgets the volume once the plugin answers OK or NOT_FOUND and no longer lists it; "+
				"if the plugin keeps listing it, `%s` forgets the volume and leaves the storage)", err, v.ID, shellquote.Command("volctl volume deregister", v.ID))
		}
	}
	e.failpoint("rpc:DeleteVolume")
	note := beforeNote + e.uncheckedNote(unchecked, answer, v.PluginID, csi.RPCDeleteVolume, "volume", v.ExternalID, v.Secrets)
	err := e.store.Update(ctx, e.locks.holding(v.ID, func(tx *store.Tx) error {
		if err := tx.Volumes().Delete(v.ID); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID,
			RPC: csi.RPCDeleteVolume, Message: fmt.Sprintf("volume %q deleted", v.ID) + note})
	}))
	if err == nil {
		e.removeStagingDir(ctx, v.PluginID, v.ID)
	}
	return err
}

// listsVolumeChecked asks whether the plugin lists volume externalID (listsVolume), under its
// controller lock, within the check's bound (controllerCheck).
func (e *Engine) listsVolumeChecked(ctx context.Context, c *conn, externalID string) (listed bool, err error) {
	err = e.controllerCheck(ctx, c, func(ctx context.Context) error {
		var err error
		listed, err = e.listsVolume(ctx, c, externalID)
		return err
	})
	return listed, err
}

// unreadDeleteSays words what the plugin's listing says of volume v after a DeleteVolume
// answered unreadably: still there, gone, or not known (it cannot list, or the listing failed).
func (e *Engine) unreadDeleteSays(ctx context.Context, c *conn, v store.Volume) string {
	asked := volumeCheck(c)
	if asked == "" || v.ExternalID == "" {
		return "whether the plugin deleted the storage cannot be told: it cannot list its volumes"
	}
	listed, err := e.listsVolumeChecked(ctx, c, v.ExternalID)
	switch {
	case err != nil:
		return fmt.Sprintf("whether the plugin deleted the storage cannot be told: %s failed: %v", asked, err)
	case listed:
		return fmt.Sprintf("plugin %q still lists volume %q (%s): the storage is there, deleted in the background or not at all", v.PluginID, v.ExternalID, asked)
	}
	return fmt.Sprintf("plugin %q no longer lists volume %q (%s): it deleted the storage", v.PluginID, v.ExternalID, asked)
}

// refusedButGone checks, after the plugin refused volume v's DeleteVolume FAILED_PRECONDITION
// (refused, the error), that it still has the volume the refusal speaks of: an earlier attempt
// whose answer was lost may have deleted it, the retry refused by a plugin that checks its
// precondition before it looks the volume up, or the plugin deleted it and refused all the
// same. Put back to ready, such a volume is one whose claims fail NOT_FOUND. Where the plugin
// can say what it holds (volumeCheck), it is asked, under its controller lock, within the
// check's bound: a volume it no longer lists stays deleting, the event and the returned error
// saying so, and the next delete or reconcile sends DeleteVolume again and forgets it once the
// plugin answers OK or NOT_FOUND and no longer lists it (finishDelete). nil where the plugin
// lists it, cannot be asked, or the asking fails: the refusal is taken at its word, as
// before. The caller holds the volume lock.
func (e *Engine) refusedButGone(ctx context.Context, c *conn, v store.Volume, refused error) error {
	asked := volumeCheck(c)
	if asked == "" || v.ExternalID == "" {
		return nil
	}
	listed, err := e.listsVolumeChecked(ctx, c, v.ExternalID)
	if err != nil {
		e.log.Warn(fmt.Sprintf("plugin %q refused DeleteVolume for volume %q FAILED_PRECONDITION, and whether it still lists the volume could not be checked", v.PluginID, v.ID), "err", err)
		return nil
	}
	if listed {
		return nil
	}
	if lost := e.locks.stillHeld(v.ID); lost != nil {
		return lost
	}
	msg := fmt.Sprintf("delete not finished, volume kept deleting: plugin %q refused DeleteVolume FAILED_PRECONDITION but no longer lists volume %q (%s): it may have deleted it (an earlier attempt whose answer was lost, or this one)",
		v.PluginID, v.ExternalID, asked)
	e.failureEvent(ctx, &store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCDeleteVolume,
		Code: csi.EventCode(refused), Message: msg + ": " + refused.Error()}, msg)
	// The way out when the refusal repeats: a plugin that checks its precondition before it
	// looks the volume up refuses every attempt the same, and the retry alone was advised
	// (TestDeleteRefusedButGoneForGoodNamesTheWayOut).
	return fmt.Errorf("%w; but plugin %q no longer lists volume %q (external ID %q; %s): it may have deleted it (an earlier attempt whose answer was lost, or this one), so the volume stays marked deleting: "+
		"running the delete again or `volctl reconcile` sends DeleteVolume again and forgets the volume once the plugin answers OK or NOT_FOUND and no longer lists it; "+
		"if the plugin keeps refusing so, `%s` forgets the volume (the storage, if the plugin still has it, is left)",
		refused, v.PluginID, v.ID, v.ExternalID, asked, shellquote.Command("volctl volume deregister", v.ID))
}

// leftBehind words what undoLeftStaging failed to undo for volume v, for its error: the
// attachment, naming the node and the plugin, when one is recorded.
func (e *Engine) leftBehind(ctx context.Context, v store.Volume) string {
	st, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Staging, error) { return tx.Stagings().Get(v.ID) })
	if err != nil || !st.ControllerPublished {
		return "what its last claim left"
	}
	return fmt.Sprintf("its attachment to node %q through plugin %q, left by its last claim", attachedNode(st), v.PluginID)
}

// keepRefusedDelete puts a volume whose DeleteVolume the plugin (or refuseSharedDelete) refused
// back to ready. theirs says the refusal is that the storage is another's: recorded here under
// another volume (refuseSharedDelete), or published to a node (publishedElsewhere).
//
// A volume marked deleting as its create's cleanup (createFailed: the answer to its
// CreateVolume, which volctl could not use, recorded to be deleted again; migration 0022) was
// never a volume to put back: that answer was refused, and one published elsewhere or recorded
// here under another volume is not this create's at all (a plugin mapping two names onto one
// volume answered with it). Before, a cleanup cut short (a kill after the record, before its
// question; a DeleteVolume refused) and finished by reconcile or `volume delete` was refused
// here and put back to ready: state dir B recorded state dir A's published storage as its own
// volume, whose claims ignored A's access mode and whose delete, once A released it, deleted
// A's data (TestCreateCleanupKilledThenReconciledDoesNotRecordTheAnswer), and an answer 1 GiB
// past capacity_max was a volume to claim (TestCreateCleanupRefusedByThePluginStaysDeleting).
// Now the cleanup's refusal does what the cleanup does (keepPublishedAnswer, refuseSharedStorage):
// storage that is another's is left alone and the create forgotten (CSI's idempotency by name
// makes that storage what any CreateVolume under the name made: nothing else is left under it);
// a plugin refusing for the volume's own state leaves it deleting, for the next attempt.
func (e *Engine) keepRefusedDelete(ctx context.Context, v store.Volume, cause error, theirs bool) error {
	var cleanup bool
	err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		cur, err := tx.Volumes().Get(v.ID)
		if err != nil {
			return err
		}
		if cleanup, err = tx.Volumes().CreateCleanup(v.ID); err != nil {
			return err
		}
		ev := &store.Event{Kind: "volume-delete", VolumeID: v.ID, PluginID: v.PluginID, Message: deleteRefusedKept + cause.Error()}
		if errors.As(cause, new(*csi.Error)) { // the plugin's refusal, not volctl's own
			ev.RPC, ev.Code = csi.RPCDeleteVolume, csi.CodeOf(cause).String()
		}
		switch {
		case cleanup && theirs:
			if err := tx.Volumes().Delete(v.ID); err != nil {
				return err
			}
			ev.Kind, ev.Message = "volume-create", fmt.Sprintf("create forgotten: its cleanup of volume %q, an answer volctl could not use, refused: %v", spec.Cut(cur.ExternalID, 256), cause)
		case cleanup:
			ev.Kind, ev.Message = "volume-create", fmt.Sprintf("create's cleanup of volume %q, an answer volctl could not use, refused, kept deleting: %v", spec.Cut(cur.ExternalID, 256), cause)
		default:
			cur.State = store.VolumeReady
			if err := tx.Volumes().Update(&cur); err != nil {
				return err
			}
		}
		return tx.Events().Append(ev)
	})
	if err != nil {
		return fmt.Errorf("%w (the volume is marked deleting and putting it back failed: %v; run `volctl reconcile`)", cause, err)
	}
	switch {
	case cleanup && theirs:
		e.removeStagingDir(ctx, v.PluginID, v.ID)
		return fmt.Errorf("%w (volume %q was its create's removal of volume %q, which plugin %q answered its CreateVolume (name %q) with and volctl could not use: "+
			"that volume is not this create's, and is left alone, neither deleted nor recorded; the create is forgotten)",
			cause, v.ID, spec.Cut(v.ExternalID, 256), v.PluginID, v.CSIName)
	case cleanup:
		return fmt.Errorf("%w (volume %q stays marked deleting: it is its create's removal of volume %q, which plugin %q answered its CreateVolume with and volctl could not use, never a volume to claim; "+
			"running the delete again or `volctl reconcile` sends DeleteVolume again; `%s` forgets it and leaves the storage)",
			cause, v.ID, spec.Cut(v.ExternalID, 256), v.PluginID, shellquote.Command("volctl volume deregister", v.ID))
	}
	return fmt.Errorf("%w (the volume is kept, ready)", cause)
}

// event appends to the event log in its own transaction, logging (not returning) a failure:
// the event log is a record, and failing to write it must not fail the operation it describes.
func (e *Engine) event(ctx context.Context, ev *store.Event) {
	ev.Message = stopWords(ctx, ev.Message)
	if err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error { return e.appendEvent(tx, ev) }); err != nil {
		e.log.Warn("writing the event log", "err", err)
	}
}

// heldByNodes is publishedElsewhere's refusal, returned from DeleteVolume's attempt in its
// stead: finishDelete keeps the volume, ready, since nothing was sent.
type heldByNodes struct{ err error }

func (h heldByNodes) Error() string { return h.err.Error() }
func (h heldByNodes) Unwrap() error { return h.err }

// cleanupHeld is finishDelete's answer, from DeleteVolume's attempt in its stead, for a
// create's cleanup whose question of the nodes holding the volume failed (err): nothing sent.
type cleanupHeld struct{ err error }

// No Unwrap: the question's own code (UNAVAILABLE) is not the attempt's to retry or judge.
func (h cleanupHeld) Error() string { return h.err.Error() }

// publishedElsewhere is the refusal to send DeleteVolume for volume v, which plugin c reports
// published to nodes (publishedNodes) after the delete undid what this state dir recorded of
// it (undoLeftStaging): no claim of v is recorded (refuseClaimed), so what published it is not
// this state dir's claim of v. It is another volctl state dir's claim of the same storage
// (registered there too), Nomad's, another volume recorded here on the same storage through
// another plugin instance (not a socket mate: refuseSharedDelete does not see it), or an
// attachment made by hand, any of which may be using the data; and a plugin that does not
// refuse DeleteVolume of a published volume (CSI says it SHOULD answer FAILED_PRECONDITION;
// many do not) deletes it from under them. Nomad refuses to delete a volume with claims; so
// does volctl, for its own claims and for these, with no flag to send it anyway (a refused
// delete can be undone, deleted data cannot). The node that is the plugin's own here is
// refused too: an attachment left by this state dir's own crash is recorded (the claim's
// intent is written before ControllerPublishVolume is sent) and was undone above, so one left
// there is another state dir's on this host, or another volume's. The error names the volume,
// the plugin, the nodes, what the listing was, the volumes recorded here on the same storage
// with their claims and the commands that release them, and the ways out.
//
// sentBefore, when not nil, is the answer to the DeleteVolume an earlier attempt of the same
// delete sent, before the plugin could say which nodes hold the volume (that question failed,
// and a failed one is not held against the delete): the error says it was sent once, not
// "not sent" (TestDeleteRetriedAfterAFailedQuestionSaysItSentOne; before, it said DeleteVolume
// was not sent, the volume "as it was").
func (e *Engine) publishedElsewhere(ctx context.Context, c *conn, v store.Volume, nodes []string, sentBefore error) error {
	asked := publishedCheck(c)
	shown := listSome(nodes, 5, func(n string) string {
		if n == c.fp.NodeID {
			return fmt.Sprintf("node %q (this host's, for plugin %q)", spec.Cut(n, 256), v.PluginID)
		}
		return fmt.Sprintf("node %q", spec.Cut(n, 256)) // quoted cut: the plugin's answer
	})
	var here []string // volumes recorded here on the same storage, with their claims
	err := e.store.View(ctx, func(tx *store.Tx) error {
		same, err := tx.Volumes().List(store.VolumeFilter{ExternalID: v.ExternalID})
		if err != nil {
			return err
		}
		for _, o := range same {
			if o.ID == v.ID {
				continue
			}
			claims, err := tx.Claims().ByVolume(o.ID)
			if err != nil {
				return err
			}
			if len(claims) == 0 {
				here = append(here, fmt.Sprintf("volume %q (plugin %q) records the same external ID here, with no claim", o.ID, o.PluginID))
				continue
			}
			var cmds []string
			for _, cl := range claims {
				if cmd := "`" + freeCommand(cl) + "`"; !slices.Contains(cmds, cmd) {
					cmds = append(cmds, cmd)
				}
			}
			here = append(here, fmt.Sprintf("volume %q (plugin %q) records the same external ID here, claimed by %s (%s)",
				o.ID, o.PluginID, describeClaims(claims), listSome(cmds, 5, func(s string) string { return s })))
		}
		return nil
	})
	who := "another volctl state dir with the same storage registered, Nomad, or an attachment made by hand"
	switch {
	case err != nil:
		who += fmt.Sprintf(" (the volumes recorded here on the same storage could not be read: %v)", err)
	case len(here) > 0:
		who = listSome(here, 3, func(s string) string { return s }) + "; or " + who
	}
	notSent := "DeleteVolume not sent"
	if sentBefore != nil {
		notSent = fmt.Sprintf("DeleteVolume not sent again: an earlier attempt of this delete sent it once, answered %v, before the plugin could be asked which nodes hold the volume (if the plugin acted on it, the data may be gone or going)", sentBefore)
	}
	return conflictf("volume %q (external ID %q) is published to %s: plugin %q says so (%s published_node_ids), and this volctl state dir records no claim of it there. "+
		"Whatever published it may be using its data: %s. %s (a plugin may delete a published volume's data: CSI does not make it refuse), and the volume is kept: "+
		"release it where it is claimed, or, if nothing uses it, detach it from the node with the storage provider's tools, then delete it again; "+
		"`%s` forgets it here and leaves the storage",
		v.ID, spec.Cut(v.ExternalID, 256), shown, v.PluginID, possessive(asked), who, notSent, shellquote.Command("volctl volume deregister", v.ID))
}
