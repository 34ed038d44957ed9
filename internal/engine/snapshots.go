package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// SnapshotInfo is one snapshot: what volctl recorded when it created it, what the plugin reports
// about it, or both.
type SnapshotInfo struct {
	PluginID         string            `json:"plugin_id"`
	ID               string            `json:"id"`                         // the provider's ID: a volume's snapshot_id, `snapshot delete`'s argument
	Name             string            `json:"name,omitempty"`             // the CSI name volctl created it with
	SourceVolumeID   string            `json:"source_volume_id,omitempty"` // volctl's ID of the source, when recorded (SourceGone: no longer registered)
	SourceExternalID string            `json:"source_external_id"`
	SizeBytes        int64             `json:"size_bytes"`
	ReadyToUse       bool              `json:"ready_to_use"`
	CreatedAt        time.Time         `json:"created_at,omitzero"`
	Parameters       map[string]string `json:"parameters,omitempty"`
	Recorded         bool              `json:"recorded"` // volctl has a record of it (it created it)
	Listed           bool              `json:"listed"`   // the plugin's ListSnapshots reported it just now
	Missing          bool              `json:"missing"`  // recorded, but the plugin's list no longer has it
	// RecordedBy: not recorded through this plugin ID, but through another registered on one
	// of its sockets (one process, one storage, which lists it under both): that ID names it,
	// and deletes it. Name and SourceVolumeID are that record's.
	RecordedBy string `json:"recorded_by,omitempty"`
	// Pending: volctl recorded the intent to create it but not the plugin's answer (a crash, or
	// a plugin that failed in a way that may have made it): ID is empty until `volctl reconcile`
	// finishes it; `snapshot delete PLUGIN NAME` removes it.
	Pending bool `json:"pending"`
	// Deleting: a delete of it is recorded and unfinished (interrupted, or its plugin failed
	// it): a restore from it is refused until `snapshot delete` run again or `volctl reconcile`
	// finishes it. Before, the list showed such a snapshot ready to use and nothing else.
	Deleting bool `json:"deleting"`
	// SourceGone: SourceVolumeID, the source as recorded, names no volume volctl records now
	// (deleted or deregistered since), or one of other storage (the ID registered again for
	// another external ID). The list showed the ID as if it were the volume there
	// (TestSnapshotListSaysASourceVolumeIsGone).
	SourceGone bool `json:"source_gone,omitempty"`
}

// SnapshotList is what ListSnapshots found. Warnings name the plugins whose snapshots could not
// be listed from the plugin, and why: for those, only volctl's records are shown.
type SnapshotList struct {
	Snapshots []SnapshotInfo `json:"snapshots"`
	Warnings  []string       `json:"warnings"`
}

// snapshotName is the CSI name of a snapshot created without one: the volume's CSI name, its
// hash taken over a nonce too, and the second it was asked for (63 characters at most, as a
// volume's); one the plugin's recorded snapshots or intents hold is drawn again. The name is recorded with the intent before the
// first CreateSnapshot, so every retry within the command, and reconcile's replay after a
// crash, sends the same one, and a retried request never makes a second snapshot. The nonce,
// as in a create's name (createName): the volume and the second alone named again a snapshot
// volctl no longer records but the plugin keeps (`snapshot deregister`, then another create in
// the same second or after the clock stepped back to it), and the plugin, idempotent by name,
// answered with that old snapshot, recorded as the new one
// (TestSnapshotWithoutANameAfterOneForgottenIsANewSnapshot). A script that must be idempotent
// across runs (re-run after a crash) passes its own NAME: the plugin then returns the snapshot
// it already made under that name.
func snapshotName(namespace, volumeID string, at time.Time) string {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	return saltedName(namespace, volumeID, hex.EncodeToString(nonce)) + "-" + strconv.FormatInt(at.Unix(), 10)
}

// reachOf is how a connected plugin is reached, and the driver that answered, recorded with its
// snapshots.
func reachOf(c *conn) store.PluginReach {
	return store.PluginReach{Type: c.plugin.Type, Socket: c.plugin.Socket, ControllerSocket: c.plugin.ControllerSocket,
		Provider: c.fp.Provider}
}

// CreateSnapshot snapshots a volume through its plugin (CREATE_DELETE_SNAPSHOT) and records the
// snapshot. An empty name is derived from the volume and the time (see snapshotName). The intent
// (name, source, plugin, parameters, secrets) is committed before CreateSnapshot is sent, so a
// crash leaves a snapshot volctl tracks: reconcile sends CreateSnapshot again under the name
// and records it, or `snapshot delete PLUGIN NAME` does and deletes it.
func (e *Engine) CreateSnapshot(ctx context.Context, volumeID, name string, params map[string]string) (SnapshotInfo, error) {
	info, _, err := e.CreateSnapshotOutcome(ctx, volumeID, name, params)
	return info, err
}

// CreateSnapshotOutcome is CreateSnapshot, and what it did: Created; Unchanged when the plugin
// answered with the snapshot volctl recorded under NAME before (CSI names make CreateSnapshot
// idempotent), which was taken then, not now; Adopted when it answered with one volctl had no
// record of that it dates before the request. Decided as the answer is
// recorded, under the source volume's lock: of two creates of one NAME at once, one says so.
func (e *Engine) CreateSnapshotOutcome(ctx context.Context, volumeID, name string, params map[string]string) (SnapshotInfo, SubmitOutcome, error) {
	var outcome SubmitOutcome
	info, err := byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (SnapshotInfo, error) {
		return e.createSnapshotStored(ctx, id, name, params, &outcome)
	})
	return info, outcome, err
}

// createSnapshotStored is CreateSnapshot of the ID as stored (byStoredID), saying what it did
// in outcome.
func (e *Engine) createSnapshotStored(ctx context.Context, volumeID, name string, params map[string]string, outcome *SubmitOutcome) (SnapshotInfo, error) {
	fail := func(err error) (SnapshotInfo, error) {
		return SnapshotInfo{}, fmt.Errorf("snapshot volume %q: %w", volumeID, err)
	}
	hold, v, c, err := e.heldVolume(ctx, volumeID)
	if err != nil {
		return fail(err)
	}
	defer hold.release()
	defer e.done(c)
	if v.State != store.VolumeReady {
		return fail(notReady(v))
	}
	if err := canSnapshot(c, "snapshot volumes"); err != nil {
		return fail(err)
	}
	intent := store.SnapshotCreate{PluginID: v.PluginID, Name: name, SourceVolumeID: v.ID, SourceExternalID: v.ExternalID,
		Parameters: params, Secrets: v.Secrets, Reach: reachOf(c)}
	replay := false
	err = e.store.Update(ctx, e.locks.holding(v.ID, func(tx *store.Tx) error {
		if name == "" {
			for taken := true; taken; {
				intent.Name = snapshotName(v.Namespace, v.ID, e.cfg.Now())
				var err error
				if taken, err = tx.Snapshots().NameTaken(v.PluginID, intent.Name); err != nil {
					return err
				}
			}
		} else if old, err := tx.Snapshots().GetCreate(v.PluginID, name); err == nil {
			if old.SourceVolumeID != v.ID {
				// Another volume's create of this name, cut short or under way (it holds
				// that volume's lock, not this one's): the plugin may hold that snapshot under
				// the name, and taking the intent for this volume's would overwrite what
				// reconcile finishes it by, and forget it at the plugin's ALREADY_EXISTS,
				// leaving that snapshot on the storage unrecorded.
				return conflictf("snapshot name %q of plugin %q is being created from volume %q (a create of it under way, or cut short): "+
					"choose another name, or let it finish (`volctl reconcile`) or remove it (`%s`) first",
					name, v.PluginID, old.SourceVolumeID, shellquote.Command("volctl volume snapshot delete", v.PluginID, name))
			}
			// An earlier create under this name was cut short: the plugin may have made the
			// snapshot with that request's parameters, and returns it again. Given other
			// parameters, this create is another request: refused, as a volume create
			// replayed with other settings is. Before, it was sent with the earlier ones and
			// said "created", nothing said of the --parameter not applied
			// (TestSnapshotCreateReplayedWithOtherParametersSaysSo).
			if params != nil && !maps.Equal(params, old.Parameters) {
				return conflictf("a create of snapshot %q was cut short with parameters %s, which the plugin may have taken it with; this one gives %s: "+
					"run it again without --parameter (or with those) to finish it, or `%s` first to remove it, then create it with these",
					name, paramWords(old.Parameters), paramWords(params), shellquote.Command("volctl volume snapshot delete", v.PluginID, name))
			}
			intent.Parameters, intent.CreatedAt, replay = old.Parameters, old.CreatedAt, true
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.Snapshots().PutCreate(&intent)
	}))
	if err != nil {
		return fail(err)
	}
	e.failpoint("snapshot:intent")
	rec, did, err := e.finishSnapshot(ctx, c, hold, intent, replay)
	if err != nil {
		return fail(err)
	}
	*outcome = did
	return snapshotInfo(rec), nil
}

// paramWords words parameters for a message: "tier=cold, zone=a", sorted; "none" for none.
func paramWords(params map[string]string) string {
	if len(params) == 0 {
		return "none"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		out = append(out, strconv.Quote(k)+"="+strconv.Quote(params[k]))
	}
	return strings.Join(out, ", ")
}

// finishSnapshot sends CreateSnapshot for a recorded intent and records the snapshot in place
// of the intent. replay says an earlier call may have sent it already. A final error to the only
// CreateSnapshot ever sent means nothing was made, and the intent is forgotten, as it is after
// ALREADY_EXISTS to any of them (the name is another snapshot's); any other failure keeps it for
// reconcile. The caller holds the source volume's lock, hold (nil for a snapshot recorded with
// no source volume), which is let go while the create waits for a delete of the snapshot the
// plugin answered with (snapshotLockAfterItsDelete).
//
// The source volume's lock is checked before CreateSnapshot and once it answered, before
// anything is recorded or forgotten (stillHeld): a lock file removed meanwhile lets another
// volctl finish, or delete, the same snapshot beside this one, which stops, leaving the intent.
func (e *Engine) finishSnapshot(ctx context.Context, c *conn, hold *volumeHold, intent store.SnapshotCreate, replay bool) (rec store.Snapshot, outcome SubmitOutcome, err error) {
	if err := e.locks.stillHeld(intent.SourceVolumeID); err != nil {
		return store.Snapshot{}, Created, err
	}
	send := func(ctx context.Context) (csi.Snapshot, error) {
		return c.client.CreateSnapshot(ctx, csi.CreateSnapshotRequest{
			SourceVolumeID: intent.SourceExternalID, Name: intent.Name, Secrets: intent.Secrets, Parameters: intent.Parameters})
	}
	snap, earlier, err := controllerAnswer(ctx, e, c, csi.RPCCreateSnapshot, send)
	e.failpoint("rpc:CreateSnapshot")
	if lost := e.locks.stillHeld(intent.SourceVolumeID); lost != nil {
		return store.Snapshot{}, Created, lost
	}
	// The snapshot whose lock this create holds, taken while its delete was recorded, and the
	// plugin ID that delete was recorded through (intent's, or a socket mate's).
	lockedID, lockedOf := "", ""
	if err == nil && snap.ID != "" {
		// Answered with a snapshot whose delete is recorded: a delete in flight in another
		// volctl holds the snapshot's lock from that record to its end, and one that has not
		// sent its DeleteSnapshot yet deletes the snapshot this answer is about. Wait for it,
		// then ask again under the lock (no delete of it runs then), and record that answer:
		// before, the create recorded the first answer at once, taking the delete's record
		// back, said it made the snapshot, and the delete deleted it
		// (TestSnapshotCreateAnsweredWithOneAboutToBeDeletedAsksAgainAfterTheDelete). The lock
		// is held to the record, so no delete records itself between. The source volume's lock
		// is let go while it waits (snapshotLockAfterItsDelete): held, a DeleteSnapshot that hung
		// held up every claim and release of the volume for as long as the plugin hung
		// (TestSnapshotCreateWaitingForAHungDeleteDoesNotHoldItsVolume).
		// The delete may be recorded through a socket mate (one process, one storage, one
		// snapshot), whose lock is its own: waited for the same (before, looked for under this
		// plugin ID alone, it was not, and deleted what this create recorded,
		// TestSnapshotCreateWaitsForASocketMatesDeleteOfItsAnswer).
		deleter, verr := viewOne(ctx, e.store, func(tx *store.Tx) (store.SnapshotKey, error) {
			return snapshotDeletingThrough(tx, intent.PluginID, snap.ID)
		})
		if verr != nil {
			return store.Snapshot{}, Created, verr
		}
		if deleter.PluginID != "" {
			unlock, finished, lerr := e.snapshotLockAfterItsDelete(ctx, hold, intent, deleter.PluginID, deleter.SnapshotID)
			var forgot *intentForgotten
			if errors.As(lerr, &forgot) {
				// Not kept for reconcile: the user forgot it (TestSnapshotCreateWaitingForAHungDeleteWhoseIntentIsForgottenMeanwhile).
				return store.Snapshot{}, Created, fmt.Errorf("snapshot %q: %w", intent.Name, lerr)
			}
			if lerr != nil {
				return store.Snapshot{}, Created, fmt.Errorf("snapshot %q: %w (the plugin answered with snapshot %q, whose delete is recorded; it stays recorded as being created: `volctl reconcile` finishes it)", intent.Name, lerr, snap.ID)
			}
			if finished != nil {
				return *finished, Created, nil
			}
			defer unlock()
			lockedID, lockedOf = deleter.SnapshotID, deleter.PluginID
			snap, _, err = controllerAnswer(ctx, e, c, csi.RPCCreateSnapshot, send)
			earlier = true // the first answer's snapshot may be the one made: a refusal now keeps the intent
			if lost := e.locks.stillHeld(intent.SourceVolumeID); lost != nil {
				return store.Snapshot{}, Created, lost
			}
			// The snapshot's lock file removed while held: another volctl's delete of it may hold
			// the lock on a new file and delete what this answer is about. Nothing is recorded;
			// the intent stays for reconcile, which asks again
			// (TestSnapshotCreateThatWaitedForADeleteStopsOnALostSnapshotLock).
			if lost := e.locks.snapshotStillHeld(lockedOf, lockedID); lost != nil {
				return store.Snapshot{}, Created, lostSnapshotLock(intent, lost)
			}
			e.failpoint("snapshot:asked-again") // answered again under the snapshot's lock, not recorded
		} else {
			testHookSnapshotDeleteLookedFor(intent.PluginID, snap.ID)
		}
	}
	if err != nil {
		ev := &store.Event{Kind: "snapshot-create", VolumeID: intent.SourceVolumeID, PluginID: intent.PluginID,
			RPC: csi.RPCCreateSnapshot, Code: csi.EventCode(err)}
		if csi.IsAnswerUnread(err) {
			// The plugin took the snapshot and answered; volctl cannot read the answer (its ID),
			// and asking again gets the same one. Its name is what finds it on the plugin's side.
			ev.Message = fmt.Sprintf("snapshot %q answered unreadably, kept: the plugin took it: %v", intent.Name, err)
			e.event(ctx, ev)
			return store.Snapshot{}, Created, fmt.Errorf("snapshot %q: %w", intent.Name, &keptIntent{cause: err, kept: fmt.Sprintf(
				"plugin %q took the snapshot but its answer cannot be used: it stays recorded as being created; `%s` forgets it, "+
					"then delete the plugin's snapshot named %q with the storage provider's tools: in this order, since reconcile and that delete send CreateSnapshot "+
					"again while it is recorded, which would take it again",
				intent.PluginID, shellquote.Command("volctl volume snapshot delete", intent.PluginID, intent.Name), intent.Name)})
		}
		// ALREADY_EXISTS says the name is another source's snapshot (the CSI spec's "already
		// exists but is incompatible"): names are unique, so the plugin made none of this
		// intent's under it, however many were sent, and no later one will.
		nameTaken := csi.IsAlreadyExists(err)
		if (replay || earlier) && nameTaken {
			// Unless the plugin lists a snapshot of the source that volctl records nothing of: a
			// plugin not idempotent by name answers ALREADY_EXISTS to the same create sent again,
			// and the create was forgotten, the snapshot the lost answer was about left tracked by
			// nothing, and a delete's "stays recorded as being created" untrue
			// (TestReconciledSnapshotCreateAnsweredAlreadyExistsLeavesNoSnapshotOfItsVolumeUntracked,
			// TestPendingSnapshotDeleteAnsweredAlreadyExistsKeepsTheCreateItSaysItKeeps).
			unrecorded, unchecked := e.unrecordedSnapshotsOf(ctx, c, intent)
			if unchecked != "" && c.fp.Capabilities.Controller.ListSnapshots {
				// The listing that would tell failed: kept, for reconcile to ask again; forgotten,
				// a delete said it stayed recorded of a create gone
				// (TestPendingSnapshotDeleteWhoseFirstListingFailedDoesNotSayAForgottenCreateStays).
				own := fmt.Sprintf("snapshot %q left for reconcile: ", intent.Name)
				ev.Message = own + fmt.Sprintf("%v; %s", err, unchecked)
				e.failureEvent(ctx, ev, own)
				return store.Snapshot{}, Created, fmt.Errorf("snapshot %q: %w (sent again after an earlier answer was lost, and whether the plugin holds a snapshot of volume %q that answer was about is not known: %s; "+
					"it stays recorded as being created: `volctl reconcile` asks again, `%s` forgets it)",
					intent.Name, err, intent.SourceVolumeID, unchecked, shellquote.Command("volctl volume snapshot deregister", intent.PluginID, intent.Name))
			}
			if len(unrecorded) > 0 {
				what, how := unrecordedWords(intent.PluginID, unrecorded)
				own := fmt.Sprintf("snapshot %q kept: ", intent.Name)
				ev.Message = own + fmt.Sprintf("%v; the plugin lists %s of volume %q, which volctl records nothing of", err, what, intent.SourceVolumeID)
				e.failureEvent(ctx, ev, own)
				return store.Snapshot{}, Created, fmt.Errorf("snapshot %q: %w (the plugin refuses the name, yet lists %s of volume %q, which volctl records nothing of and the earlier CreateSnapshot under the name, unanswered, may have made: "+
					"it stays recorded as being created; %s if it is this one, `%s` forgets this one)",
					intent.Name, err, what, intent.SourceVolumeID, how, shellquote.Command("volctl volume snapshot deregister", intent.PluginID, intent.Name))
			}
		}
		if csi.IsRetryable(err) || ctx.Err() != nil || ((replay || earlier) && !nameTaken) {
			own := fmt.Sprintf("snapshot %q left for reconcile: ", intent.Name)
			ev.Message = own + err.Error()
			e.failureEvent(ctx, ev, own)
			return store.Snapshot{}, Created, fmt.Errorf("snapshot %q: %w (the plugin may have made it: it stays recorded as being created; `volctl reconcile` finishes it, `%s` removes it)",
				intent.Name, err, shellquote.Command("volctl volume snapshot delete", intent.PluginID, intent.Name))
		}
		if derr := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
			if err := tx.Snapshots().DeleteCreate(intent.PluginID, intent.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			ev.Message = fmt.Sprintf("snapshot %q failed: %v", intent.Name, err)
			return tx.Events().Append(ev)
		}); derr != nil {
			e.log.Warn("forgetting a failed snapshot", "snapshot", intent.Name, "err", derr)
		}
		return store.Snapshot{}, Created, fmt.Errorf("snapshot %q: %w", intent.Name, err)
	}
	resent := replay || earlier
	if resent && snap.SizeBytes <= 0 {
		// Sent again after an earlier answer was lost, and answered without a size: the lost
		// answer may have been the one that said it (a plugin that gives a snapshot's size when
		// it takes it, and not again). What the plugin lists gives it, within the bound on such
		// checks; without it the snapshot is recorded at 0 bytes, unknown, and a restore the
		// plugin answers smaller than the snapshot is not refused
		// (TestSnapshotAnsweredAgainWithoutASizeAfterALostAnswerTakesTheListedSize).
		snap.SizeBytes = e.listedSnapshotSize(ctx, c, snap.ID, intent.Secrets)
	}
	rec = store.Snapshot{
		PluginID: intent.PluginID, SnapshotID: snap.ID, Name: intent.Name, SourceVolumeID: intent.SourceVolumeID,
		SourceExternalID: intent.SourceExternalID, SizeBytes: snap.SizeBytes, ReadyToUse: snap.ReadyToUse,
		Parameters: intent.Parameters, CreatedAt: snap.CreatedAt, Secrets: intent.Secrets, Reach: intent.Reach,
	}
	// What becomes of the intent when the answer is refused: forgotten, unless a CreateSnapshot
	// under the name was sent before and its answer lost, which may have made a snapshot only
	// the name still finds (as after a final error to a call sent again, above).
	fate := "this snapshot is forgotten"
	if resent {
		// Not `snapshot delete NAME`: it finishes the intent first, sending CreateSnapshot again,
		// which gets this answer again.
		fate = fmt.Sprintf("this snapshot stays recorded as being created, since CreateSnapshot was sent again after an earlier answer was lost and the plugin may hold "+
			"a snapshot that answer was about, found by the name %q: `volctl reconcile` sends it again, `%s` forgets it",
			intent.Name, shellquote.Command("volctl volume snapshot deregister", intent.PluginID, intent.Name))
	}
	// A snapshot of this volume recorded under the name, another ID than the answer's: gone from
	// the plugin, which answers a create of a name it holds with that snapshot, unless the
	// plugin still lists it (one that makes a new snapshot for a name it holds), asked here,
	// outside the transaction that forgets it; a plugin that cannot be asked (no ListSnapshots)
	// is taken at its names' word (TestSnapshotCreateAgainForgetsNoSnapshotThePluginStillHolds).
	// One asked whose answer could not be had keeps the record too: gone is not known.
	stillHeld := ""
	var named store.Snapshot
	var ok bool
	if e.store.View(ctx, func(tx *store.Tx) (err error) {
		named, ok, err = recordNamed(tx, intent.PluginID, intent.Name)
		return err
	}) == nil && ok && named.SnapshotID != snap.ID && snapshotCheck(c) != "" {
		if absent, _ := e.snapshotAbsent(ctx, c, named.SnapshotID, named.Secrets); !absent {
			stillHeld = named.SnapshotID
		}
	}
	var dup error
	err = e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		// Checked again in the transaction, as deleteSnapshotStored does: lost after the check
		// above, a delete holding the new file may have recorded its mark since, which the
		// Undelete below would wipe, recording a snapshot that delete then deletes.
		if lockedID != "" {
			if lost := e.locks.snapshotStillHeld(lockedOf, lockedID); lost != nil {
				return lost
			}
		}
		// Created again under the same name, the plugin returned the snapshot it made the first
		// time: that one was made with the first request's parameters.
		mate, err := snapshotOfMate(tx, rec.PluginID, rec.SnapshotID)
		if err != nil {
			return err
		}
		near, err := nearSnapshot(tx, rec.PluginID, rec.SnapshotID)
		if err != nil {
			return err
		}
		old, err := tx.Snapshots().Get(rec.PluginID, rec.SnapshotID)
		d := dated(snap)
		// Another snapshot recorded under this name (a NAME the user gave): the plugin, whose
		// names are unique and which answers a create of a name it holds with that snapshot,
		// made a new one, so the recorded one is gone from it under the name (deleted with the
		// storage provider's tools). Two records of one name left NAME-based commands acting on
		// the dead one: a delete by NAME "deleted" it, and a restore was told to write its ID
		// (TestSnapshotNameReusedAfterItsSnapshotWentLeavesOneRecordPerName).
		var gone store.Snapshot
		if errors.Is(err, store.ErrNotFound) && near.SnapshotID == "" && mate.PluginID == "" {
			if named, ok, nerr := recordNamed(tx, rec.PluginID, rec.Name); nerr != nil {
				return nerr
			} else if ok && named.SnapshotID != rec.SnapshotID && named.SnapshotID != stillHeld && named.SourceVolumeID == rec.SourceVolumeID && named.SourceExternalID == rec.SourceExternalID {
				gone = named // of this volume's storage: another volume's snapshot of the name is not this one's to forget
			}
		}
		switch {
		case mate.PluginID != "":
			// Recorded through another plugin ID on one of this one's sockets: one process,
			// so one storage and one snapshot (sameStorage's rule, for snapshots).
			dup = conflictf("plugin %q answered CreateSnapshot (name %q, volume %q) with snapshot %q, which volctl recorded through plugin %q "+
				"(registered on the same socket: one storage) as volume %q's; it stays %q's, and %s "+
				"(the plugin maps two names onto one snapshot: report it to the plugin's authors)",
				rec.PluginID, rec.Name, rec.SourceVolumeID, rec.SnapshotID, mate.PluginID, mate.SourceVolumeID, mate.SourceVolumeID, fate)
		case err == nil && (old.SourceVolumeID != rec.SourceVolumeID || old.SourceExternalID != rec.SourceExternalID):
			dup = conflictf("plugin %q answered CreateSnapshot (name %q, volume %q) with snapshot %q, which is volume %q's; "+
				"it stays %q's, and %s (the plugin maps two names onto one snapshot: report it to the plugin's authors)",
				rec.PluginID, rec.Name, rec.SourceVolumeID, rec.SnapshotID, old.SourceVolumeID, old.SourceVolumeID, fate)
		case err == nil && old.Name != "" && old.Name != rec.Name:
			// Another request's snapshot: two records of one snapshot would let deleting
			// either delete both, and one would replace the other's record.
			dup = conflictf("plugin %q answered CreateSnapshot (name %q, volume %q) with snapshot %q, which volctl made under the name %q; "+
				"it stays %q, and %s (the plugin maps two names onto one snapshot: report it to the plugin's authors)",
				rec.PluginID, rec.Name, rec.SourceVolumeID, rec.SnapshotID, old.Name, old.Name, fate)
		case errors.Is(err, store.ErrNotFound) && near.SnapshotID != "":
			// The same snapshot to a plugin that reads IDs so (nearStorage's rule, for
			// snapshots): recorded, its delete deleted the other
			// (TestCreateSnapshotAnsweredWithANearSpellingOfAnotherSnapshotIsRefused).
			dup = conflictf("plugin %q answered CreateSnapshot (name %q, volume %q) with snapshot %+q, which differs only in case, Unicode normalisation (compatibility forms too), invisible characters or surrounding white space "+
				"from snapshot %+q (name %q, volume %q) that volctl records through plugin %q; a plugin that reads IDs so takes it for that snapshot, so it is left alone, "+
				"neither recorded nor deleted, and %s (the plugin answered a new snapshot with another one's ID spelled otherwise: report it to the plugin's authors; "+
				"if the plugin is case-sensitive and did make a distinct snapshot under that ID, volctl keeps no record of it: delete it by that exact ID with the storage provider's tools, "+
				"which on a backend that folds IDs deletes snapshot %+q too)",
				rec.PluginID, rec.Name, rec.SourceVolumeID, rec.SnapshotID, near.SnapshotID, near.Name, near.SourceVolumeID, near.PluginID, fate, near.SnapshotID)
		// Its source in another spelling of the same storage ID (spec.SameStorageID: a plugin
		// that reads IDs so) is the volume's: refused as another volume's, the snapshot the
		// plugin made was left untracked, and so was each later one
		// (TestSnapshotAnsweredWithItsSourceInAnotherSpellingIsNotAnotherVolumes).
		case snap.SourceVolumeID != "" && !spec.SameStorageID(snap.SourceVolumeID, rec.SourceExternalID):
			// Its source cut as other plugin IDs are: quoted whole, a source of megabytes was an
			// error of megabytes (TestSnapshotAnsweredWithAHugeForeignSourceIsNotQuotedWhole).
			dup = conflictf("plugin %q answered CreateSnapshot (name %q, volume %q) with snapshot %q of another volume (%q); "+
				"it is not recorded, and %s", rec.PluginID, rec.Name, rec.SourceVolumeID, rec.SnapshotID, spec.Cut(snap.SourceVolumeID, 256), fate)
		case err == nil:
			// The snapshot this name made before, which volctl recorded: nothing new was
			// taken, and the line says so where it said "created" of last night's snapshot
			// (TestSnapshotCreateAgainSaysItExistsAlready). Unless the plugin dates it
			// otherwise: one whose IDs derive from the name took a new one under the old ID,
			// the first gone. Without a date the store keeps (none, or a lie, recorded as the
			// time of the record), the ID is all there is to go by.
			rec.Parameters = old.Parameters
			if d.IsZero() || old.CreatedAt.Equal(d) {
				outcome = Unchanged
			}
			if d.IsZero() {
				// Undated by the plugin: the time recorded stands. Before, the record took the
				// time of this answer, and a nightly create of one NAME dated the first night's
				// snapshot each night anew, which a prune by age never found old
				// (TestUnchangedSnapshotOfAnUndatedPluginKeepsItsRecordedTime).
				rec.CreatedAt = old.CreatedAt
			}
			if outcome == Unchanged && rec.SizeBytes == 0 {
				// The same snapshot, its size not said this time (0, or a negative size read as
				// 0): the size recorded stands. Before, it was recorded at 0 bytes, and a restore
				// the plugin answered smaller than the snapshot, which that size refused, was
				// recorded ready (TestUnchangedSnapshotAnsweredWithoutASizeKeepsItsRecordedSize).
				rec.SizeBytes = old.SizeBytes
			}
		case errors.Is(err, store.ErrNotFound) && !d.IsZero() && d.Before(intent.CreatedAt.Add(-adoptedLeeway)):
			// Not recorded, but dated by the plugin before the intent was: it held a snapshot
			// under the name, which volctl forgot (`snapshot deregister`) or never knew (made
			// through another state dir), and answered with it. Recorded now, it is not said
			// to be taken now (TestSnapshotCreateAnsweredWithOneThePluginHeldSaysSo).
			outcome = Adopted
		}
		if dup != nil {
			if !resent {
				if err := tx.Snapshots().DeleteCreate(intent.PluginID, intent.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			return tx.Events().Append(&store.Event{Kind: "snapshot-create", VolumeID: intent.SourceVolumeID, PluginID: intent.PluginID,
				RPC: csi.RPCCreateSnapshot, Message: "snapshot refused: " + dup.Error()})
		}
		if gone.SnapshotID != "" { // the answer passed every check above: it is this volume's
			if err := tx.Snapshots().Delete(gone.PluginID, gone.SnapshotID); err != nil {
				return err
			}
			if err := tx.Events().Append(&store.Event{Kind: "snapshot-create", VolumeID: gone.SourceVolumeID, PluginID: gone.PluginID, RPC: csi.RPCCreateSnapshot,
				Message: fmt.Sprintf("snapshot %q (%s) forgotten: the plugin answered a create of its name with a new snapshot, %q, so it no longer holds it under that name; "+
					"if it still has it under another, delete it with the storage provider's tools", gone.SnapshotID, gone.Name, rec.SnapshotID)}); err != nil {
				return err
			}
		}
		if err := tx.Snapshots().Put(&rec); err != nil {
			return err
		}
		// An answered CreateSnapshot proves the plugin has this ID now: a recorded delete of an
		// earlier snapshot under it (one the plugin did delete, unanswered) is of one gone, and
		// reconcile finishing it would delete this one
		// (TestReview30fRecordedSnapshotTakenAgainThenReconcile).
		// So is one recorded through the socket mate whose delete this create waited for
		// (lockedOf, whose lock it holds: no delete of it is under way): left, the snapshot
		// just said made was "being deleted" to every restore, and a problem to every
		// reconcile pass (TestSnapshotCreateTakesBackAMatesRecordedDeleteOfItsAnswer).
		// Only one of this very ID: a delete recorded of a near spelling of it, which the create
		// waited for all the same (one snapshot to a plugin that folds IDs), may be of another
		// snapshot to a plugin that does not, and taking it back forgot the user's delete of
		// that one, left on the storage, nothing to finish it
		// (TestSnapshotCreateAnsweredWithANearSpellingKeepsTheOtherSnapshotsRecordedDelete).
		// Kept, its finishing is refused beside this record (refuseNearSnapshotDelete), naming
		// the ways out.
		if lockedOf != "" && lockedOf != rec.PluginID && lockedID == rec.SnapshotID {
			if err := tx.Snapshots().Undelete(lockedOf, lockedID); err != nil {
				return err
			}
		}
		if err := tx.Snapshots().Undelete(rec.PluginID, rec.SnapshotID); err != nil {
			return err
		}
		if err := tx.Snapshots().DeleteCreate(intent.PluginID, intent.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		did := "created"
		switch outcome {
		case Unchanged:
			return nil // made before, and its event recorded then
		case Adopted:
			did = fmt.Sprintf("recorded: the plugin held it under this name, dated %s", snap.CreatedAt.Format(time.RFC3339))
		}
		return tx.Events().Append(&store.Event{Kind: "snapshot-create", VolumeID: intent.SourceVolumeID, PluginID: intent.PluginID,
			RPC: csi.RPCCreateSnapshot, Message: fmt.Sprintf("snapshot %q (%s) of volume %q %s", snap.ID, intent.Name, intent.SourceVolumeID, did)})
	})
	if errors.Is(err, errLockLost) {
		return store.Snapshot{}, Created, lostSnapshotLock(intent, err)
	}
	if err != nil {
		return rec, Created, fmt.Errorf("the plugin made snapshot %q but recording it failed: %w (it stays recorded as being created: `volctl reconcile` finishes it)", snap.ID, err)
	}
	if dup != nil {
		return store.Snapshot{}, Created, dup
	}
	return rec, outcome, nil
}

// dated is the date a plugin gives a snapshot as the store keeps it, the zero time when it gives
// none the store can keep (and the snapshot is recorded with the time of the record).
func dated(snap csi.Snapshot) time.Time {
	t, _ := store.StoredTime(snap.CreatedAt)
	return t
}

// adoptedLeeway is how much earlier than the intent of a create a plugin's date of the
// snapshot it answered with must be for the snapshot to be one it held before (Adopted): a
// minute, for a plugin whose clock is not the host's.
const adoptedLeeway = time.Minute

// snapshotLockAfterItsDelete takes the lock of snapshot id of plugin deleter (intent's plugin, or
// a socket mate: snapshotDeletingThrough), which a delete of it through that plugin ID in another
// volctl holds from its record to its end, for a create the plugin answered with that
// snapshot (finishSnapshot): it waits for the delete to end. Not with the source volume's lock
// held (hold): a DeleteSnapshot that hangs would hold up every claim and release of the volume
// until the delete's timeouts and retries ran out, or for good under a context without a bound.
// So the volume's lock is let go while it waits, and taken again once the delete ended, then the
// snapshot's, in the lock order (volume, then snapshot: waiting for the volume's with the
// snapshot's held would deadlock with a `snapshot deregister`, which takes them in that order);
// a delete of the snapshot that took its lock again meanwhile is waited for the same way. With
// the volume let go, another volctl (reconcile) may have finished the intent, or `snapshot
// deregister` forgotten it: the intent is read again once the volume's lock is taken again,
// and finished is the snapshot recorded under its name then (nothing more to ask), or the
// error says it is gone. The caller holds the snapshot's lock until it has recorded the answer.
func (e *Engine) snapshotLockAfterItsDelete(ctx context.Context, hold *volumeHold, intent store.SnapshotCreate, deleter, id string) (unlock func(), finished *store.Snapshot, err error) {
	for {
		unlock, ok, err := e.locks.trySnapshot(deleter, id)
		if err != nil || ok {
			return unlock, nil, err
		}
		if hold == nil {
			unlock, err := e.locks.snapshot(ctx, deleter, id)
			return unlock, nil, err
		}
		hold.release()
		wait, err := e.locks.snapshot(ctx, deleter, id) // the delete's end
		if err != nil {
			return nil, nil, err
		}
		wait()
		if err := hold.retake(ctx); err != nil {
			return nil, nil, err
		}
		var rec store.Snapshot
		var recorded bool
		err = e.store.View(ctx, func(tx *store.Tx) error {
			_, err := tx.Snapshots().GetCreate(intent.PluginID, intent.Name)
			if errors.Is(err, store.ErrNotFound) {
				rec, recorded, err = recordNamed(tx, intent.PluginID, intent.Name)
				if err == nil && recorded {
					// The record under the name is the create's answer only when no delete of it
					// is recorded: one that is, the snapshot waited for, was not made for this create.
					var deleting store.SnapshotKey
					if deleting, err = snapshotDeletingThrough(tx, intent.PluginID, rec.SnapshotID); err == nil && deleting.PluginID != "" {
						recorded = false
					}
				}
				if err == nil && !recorded {
					err = &intentForgotten{notFoundf("it is no longer recorded as being created, nor as made: another volctl forgot it (`volctl volume snapshot deregister`) "+
						"while this one waited for the delete of snapshot %q, with volume %q's lock let go; nothing more was sent", id, intent.SourceVolumeID)}
				}
			}
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if recorded {
			return nil, &rec, nil // finished by another volctl meanwhile
		}
	}
}

// intentForgotten is snapshotLockAfterItsDelete's error for a create whose intent another volctl
// forgot while it waited: nothing is left for reconcile, and the error must not say it is.
type intentForgotten struct{ err error }

func (f *intentForgotten) Error() string { return f.err.Error() }
func (f *intentForgotten) Unwrap() error { return f.err }

// lostSnapshotLock is the error of a snapshot create that lost the lock of the snapshot it was
// answered with (its delete recorded) before recording it: nothing is recorded of the snapshot,
// and the intent stays for reconcile, which asks again once no delete of it runs.
func lostSnapshotLock(intent store.SnapshotCreate, lost error) error {
	return fmt.Errorf("snapshot %q: %w (nothing is recorded of what the plugin answered: the snapshot stays recorded as being created, and `volctl reconcile` finishes it)", intent.Name, lost)
}

// testHookSnapshotDeleteLookedFor runs, in tests, once a create answered with snapshot ID
// snapshotID has found no delete of it recorded, before it records the snapshot: a delete in
// another volctl that records itself now is not waited for, and its own check keeps the record
// (deleteSnapshotStored's takenAgain; TestSnapshotDeleteRecordedAfterTheCreateLookedKeepsItsRecord).
var testHookSnapshotDeleteLookedFor = func(pluginID, snapshotID string) {}

// nearSnapshot returns the record, through pluginID or a plugin ID on one of its sockets
// (socketMates), of a snapshot whose ID is not snapshotID but is the same once case, Unicode
// normalisation and surrounding white space are set aside (spec.SameStorageID), or a zero Snapshot when
// there is none: what a plugin that reads IDs so takes snapshotID for.
func nearSnapshot(tx *store.Tx, pluginID, snapshotID string) (store.Snapshot, error) {
	recs, err := tx.Snapshots().Near(snapshotID)
	if err != nil {
		return store.Snapshot{}, err
	}
	var mates map[string]bool
	for _, r := range recs {
		if r.SnapshotID == snapshotID || !spec.SameStorageID(r.SnapshotID, snapshotID) {
			continue
		}
		if mates == nil {
			if mates, err = socketMates(tx, pluginID); err != nil {
				return store.Snapshot{}, err
			}
		}
		if mates[r.PluginID] {
			return r, nil
		}
	}
	return store.Snapshot{}, nil
}

// snapshotDeletingThrough returns the recorded delete of snapshot snapshotID through pluginID
// or a socket mate (socketMates: one process, one storage), a zero key when none is: its plugin
// ID and the snapshot ID as the delete spelt it, which names its lock. A near spelling
// (spec.SameStorageID) is the same snapshot to a plugin that reads IDs so, as
// refuseRestoreInFlight and refuseNearSnapshotDelete have it: compared exactly, a restore from
// "SNAP-NIGHTLY" was sent while the delete of "snap-nightly" was recorded
// (TestRestoreFromANearSpellingOfASnapshotBeingDeletedIsRefused). pluginID's own exact one is
// preferred, then its own near one, then a mate's, by plugin ID. The deletes recorded are those
// in flight or cut short: few.
func snapshotDeletingThrough(tx *store.Tx, pluginID, snapshotID string) (store.SnapshotKey, error) {
	deletes, err := tx.Snapshots().ListDeleting()
	if err != nil || len(deletes) == 0 {
		return store.SnapshotKey{}, err
	}
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return store.SnapshotKey{}, err
	}
	var (
		found store.SnapshotKey
		rank  = 4
	)
	for _, d := range deletes { // ordered by plugin ID, then snapshot ID
		if !mates[d.PluginID] || !spec.SameStorageID(d.SnapshotID, snapshotID) {
			continue
		}
		r := 0
		if d.PluginID != pluginID {
			r += 2
		}
		if d.SnapshotID != snapshotID {
			r++
		}
		if r < rank {
			found, rank = store.SnapshotKey{PluginID: d.PluginID, SnapshotID: d.SnapshotID}, r
		}
	}
	return found, nil
}

// snapshotRecordedThrough returns the plugin IDs, pluginID's own and its socket mates'
// (socketMates), under which snapshot snapshotID is recorded.
func snapshotRecordedThrough(tx *store.Tx, pluginID, snapshotID string) (map[string]bool, error) {
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return nil, err
	}
	mates[pluginID] = true
	held := map[string]bool{}
	for id := range mates {
		switch _, err := tx.Snapshots().Get(id, snapshotID); {
		case err == nil:
			held[id] = true
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	return held, nil
}

// snapshotOfMate returns the record of snapshotID made through another plugin ID registered on
// one of pluginID's sockets (socketMates), or a zero Snapshot when there is none.
func snapshotOfMate(tx *store.Tx, pluginID, snapshotID string) (store.Snapshot, error) {
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return store.Snapshot{}, err
	}
	for _, id := range slices.Sorted(maps.Keys(mates)) {
		if id == pluginID {
			continue
		}
		sn, err := tx.Snapshots().Get(id, snapshotID)
		switch {
		case err == nil:
			return sn, nil
		case !errors.Is(err, store.ErrNotFound):
			return store.Snapshot{}, err
		}
	}
	return store.Snapshot{}, nil
}

// canSnapshot refuses a plugin without CREATE_DELETE_SNAPSHOT, or without its controller half,
// saying what could not be done.
func canSnapshot(c *conn, what string) error {
	if needsControllerHalf(c) {
		return controllerHalfMissing(c.plugin.ID, what)
	}
	if !c.fp.Controller || !c.fp.Capabilities.Controller.CreateDeleteSnapshot {
		return invalidf("plugin %q cannot %s (no CREATE_DELETE_SNAPSHOT controller capability)", c.plugin.ID, what)
	}
	return nil
}

// snapshotCapabilityLost is the refusal, by canSnapshotRecorded, to send CreateSnapshot or
// DeleteSnapshot for a snapshot volctl records through a plugin that has lost
// CREATE_DELETE_SNAPSHOT since. A recorded delete that reconcile finishes reports it as it is:
// it names the way out already.
type snapshotCapabilityLost struct{ error }

func (e snapshotCapabilityLost) Unwrap() error { return e.error }

// canSnapshotRecorded is canSnapshot for snapshot name (an ID, or the CSI name of one still
// being created, pending) that volctl records: made, or being made, while the plugin had
// CREATE_DELETE_SNAPSHOT (CreateSnapshot checks it, and nothing else records one), so a plugin
// without it now lost it in a restart. That is said, with what is left where and the ways out
// (the capability back, or `snapshot deregister`), as finishCreate says it of an interrupted
// volume create: before, reconcile reported "cannot create snapshots" every pass, and the
// delete the user tried next "cannot delete snapshots", neither naming the snapshot the plugin
// may hold nor the deregister that ends it (TestSnapshotOfAPluginThatLostCreateDeleteSnapshot).
func canSnapshotRecorded(c *conn, what, name string, pending bool) error {
	if needsControllerHalf(c) || (c.fp.Controller && c.fp.Capabilities.Controller.CreateDeleteSnapshot) {
		return canSnapshot(c, what)
	}
	deregister := shellquote.Command("volctl volume snapshot deregister", c.plugin.ID, name)
	if pending {
		return snapshotCapabilityLost{invalidf("plugin %q no longer has the controller capability CREATE_DELETE_SNAPSHOT, which snapshot %q was being created through, "+
			"so neither CreateSnapshot (to finish it) nor DeleteSnapshot is sent: start the plugin with that capability again, which lets `volctl reconcile` finish it and `%s` delete it; "+
			"or `%s` forgets it (the plugin may hold a snapshot named %q, made by a CreateSnapshot whose answer was lost: delete it with the storage provider's tools)",
			c.plugin.ID, name, shellquote.Command("volctl volume snapshot delete", c.plugin.ID, name), deregister, name)}
	}
	return snapshotCapabilityLost{invalidf("plugin %q no longer has the controller capability CREATE_DELETE_SNAPSHOT, which snapshot %q was made through, so DeleteSnapshot is not sent: "+
		"start the plugin with that capability again, then delete it again (or let `volctl reconcile` finish a delete it recorded); "+
		"or `%s` forgets it and leaves it on the storage (delete it there with the storage provider's tools)",
		c.plugin.ID, name, deregister)}
}

// snapshotConn connects to the plugin of a snapshot: the registered plugin, or, when its record
// is gone (deregistered), the plugin as it was reached when the snapshot was made, which must
// still be the same driver (its name pinned as for a registered plugin). The caller gives the
// connection back with done.
func (e *Engine) snapshotConn(ctx context.Context, pluginID string, reach store.PluginReach) (*conn, error) {
	c, err := e.connect(ctx, pluginID)
	if err == nil && reach.Provider != "" && c.fp.Provider != reach.Provider {
		e.done(c)
		// The ID was registered again for another driver (its volumes gone, the snapshot
		// kept): that driver's NOT_FOUND would make volctl forget a snapshot that still exists.
		return nil, conflictf("plugin %q is now driver %q, but the snapshot was made by %q: no snapshot RPC goes to another driver "+
			"(register %q as plugin %q again to delete it)", pluginID, c.fp.Provider, reach.Provider, reach.Provider, pluginID)
	}
	if err == nil || !errors.Is(err, ErrNotFound) || reach.Type == "" {
		return c, err
	}
	p := store.Plugin{ID: pluginID, Type: reach.Type, Socket: reach.Socket, ControllerSocket: reach.ControllerSocket,
		Fingerprint: store.Fingerprint{Provider: reach.Provider}}
	if c, err = e.connectPlugin(ctx, p, false); err != nil {
		return nil, fmt.Errorf("plugin %q is not registered any more, and reaching it where it was when the snapshot was made failed: %w (start it there, or register it again)", pluginID, err)
	}
	return c, nil
}

// SnapshotDeleted is what a delete of a snapshot found that its success alone does not say: a
// snapshot volctl records nothing of, by the ID or NAME given, which the plugin was asked for
// first. A mistyped name ("nightyl" for "nightly") went to the plugin as an ID nobody has,
// the plugin answered OK (a snapshot it does not know counts as deleted), and volctl said
// "deleted", the snapshot meant still there (TestDeleteSnapshotOfATypoSaysNothingWasDeleted).
type SnapshotDeleted struct {
	// Absent: volctl records no snapshot by that ID or NAME, and the plugin, asked
	// (ListSnapshots or GetSnapshot) under the controller lock the delete was sent under, had
	// none by that ID: nothing was deleted. The delete is done, as a release of a claim that
	// is not there is.
	Absent bool
	// Unchecked: volctl records no snapshot by that ID or NAME and could not ask the plugin
	// whether it has one (it lists no snapshots, or the listing failed): DeleteSnapshot was sent,
	// and its OK is also what a plugin answers for a snapshot it never had.
	Unchecked bool
	// Near are the IDs and NAMEs of the plugin's recorded snapshots the user likely meant, when
	// Absent or Unchecked.
	Near []string
}

// DeleteSnapshotNoted deletes a snapshot through its plugin and forgets volctl's record of it,
// saying what it found of a snapshot volctl records nothing of (SnapshotDeleted). A snapshot
// the plugin does not know counts as deleted (the CSI spec makes DeleteSnapshot idempotent).
// snapshotID may also be the name of a snapshot still being created (see CreateSnapshot): it
// is finished first, to learn its ID. secrets, when not nil, are sent; otherwise the source
// volume's current secrets when volctl still knows the volume, else the secrets the snapshot
// was made with. A snapshot whose plugin was deregistered is deleted through the plugin's
// sockets as they were when it was made.
func (e *Engine) DeleteSnapshotNoted(ctx context.Context, pluginID, snapshotID string, secrets spec.Secrets) (SnapshotDeleted, error) {
	return e.deleteSnapshotNamed(ctx, pluginID, snapshotID, byIDOrName, secrets)
}

// DeleteSnapshotByIDNoted is DeleteSnapshotNoted of snapshotID taken as an ID only, never a
// NAME (`snapshot delete --id`): the way to name a snapshot whose ID is another's NAME, which
// DeleteSnapshotNoted refuses (snapshotWordNamesTwo).
func (e *Engine) DeleteSnapshotByIDNoted(ctx context.Context, pluginID, snapshotID string, secrets spec.Secrets) (SnapshotDeleted, error) {
	return e.deleteSnapshotNamed(ctx, pluginID, snapshotID, byIDOnly, secrets)
}

func (e *Engine) deleteSnapshotNamed(ctx context.Context, pluginID, snapshotID string, how snapshotWord, secrets spec.Secrets) (SnapshotDeleted, error) {
	var res SnapshotDeleted
	_, err := byStoredID(ctx, e, store.PluginIDs, pluginID, func(id string) (struct{}, error) {
		for tries := 1; ; tries++ {
			res = SnapshotDeleted{}
			err := e.deleteSnapshotStored(ctx, id, snapshotID, secrets, how, &res)
			var changed *createsChangedMeanwhile
			if !errors.As(err, &changed) || tries == maxDeleteLooks {
				return struct{}{}, err
			}
		}
	})
	return res, err
}

// maxDeleteLooks is how many times a delete of a snapshot volctl records nothing of reads the
// snapshot creates pending through its plugin again when one began, or recorded the snapshot,
// while it waited for their source volumes' locks (createsChangedMeanwhile).
const maxDeleteLooks = 3

// createsChangedMeanwhile is a delete of a snapshot volctl recorded nothing of, found once it
// held the snapshot's lock to have been recorded since, or a snapshot create pending through
// its plugin whose source volume's lock it does not hold: it is read again from the start
// (deleteSnapshotNamed), and said as a conflict after maxDeleteLooks.
type createsChangedMeanwhile struct{ msg string }

func (c *createsChangedMeanwhile) Error() string        { return c.msg }
func (c *createsChangedMeanwhile) Is(target error) bool { return target == ErrConflict }

// holdPendingCreates takes the source volume's lock of every snapshot create pending through
// pluginID or a socket mate (one storage), in ID order, for a delete of a snapshot volctl
// records nothing of: such a create may have been answered with that very ID and not recorded
// it yet (its answer is recorded under its volume's lock). Held until the delete is recorded,
// no such create records the answer after the delete ends, saying it made a snapshot the
// delete deleted (one answered after the record finds it, finishSnapshot, and waits for the
// snapshot's lock): before, a `snapshot delete --id` while a create was between
// its answer and its record said "deleted", the create said "created", and volctl recorded a
// snapshot the plugin no longer had, a backup that was not there
// (TestSnapshotDeleteByIDWhileItsCreateRecordsLeavesNoRecordOfAGoneSnapshot). held are the
// volume IDs whose locks it holds; release lets them go, once.
func (e *Engine) holdPendingCreates(ctx context.Context, pluginID string) (held map[string]bool, release func(), err error) {
	sources, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]string, error) {
		creates, err := createsPendingThrough(tx, pluginID)
		var ids []string
		for _, c := range creates {
			if c.SourceVolumeID != "" && !slices.Contains(ids, c.SourceVolumeID) {
				ids = append(ids, c.SourceVolumeID)
			}
		}
		slices.Sort(ids)
		return ids, err
	})
	if err != nil {
		return nil, nil, err
	}
	var unlocks []func()
	release = func() {
		for _, u := range slices.Backward(unlocks) {
			u()
		}
		unlocks = nil
	}
	held = map[string]bool{}
	for _, id := range sources {
		unlock, err := e.locks.volume(ctx, id)
		if err != nil {
			release()
			return nil, nil, fmt.Errorf("waiting for volume %q's snapshot create, pending through plugin %q, whose answer may be the snapshot to delete: %w", id, pluginID, err)
		}
		unlocks, held[id] = append(unlocks, unlock), true
	}
	return held, release, nil
}

// createsPendingThrough returns the snapshot creates pending through pluginID or one of its
// socket mates, by plugin ID and name.
func createsPendingThrough(tx *store.Tx, pluginID string) ([]store.SnapshotCreate, error) {
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return nil, err
	}
	mates[pluginID] = true
	var all []store.SnapshotCreate
	for _, id := range slices.Sorted(maps.Keys(mates)) {
		creates, err := tx.Snapshots().ListCreates(id)
		if err != nil {
			return nil, err
		}
		all = append(all, creates...)
	}
	return all, nil
}

// unrecordedStill checks, in the transaction that records a delete of snapshot snapshotID,
// which volctl recorded nothing of when the delete read it, that it still records nothing of
// it through pluginID or a mate (recorded through heldBefore), and that every snapshot create
// pending through them is one whose source volume's lock the delete holds (held): otherwise
// the delete is read again (createsChangedMeanwhile).
func unrecordedStill(tx *store.Tx, pluginID, snapshotID string, heldBefore, held map[string]bool) error {
	if len(heldBefore) > 0 {
		return &createsChangedMeanwhile{msg: fmt.Sprintf("snapshot %q was recorded through plugin %q by another volctl's snapshot create while this delete waited: "+
			"nothing was deleted; run the delete again", snapshotID, slices.Sorted(maps.Keys(heldBefore))[0])}
	}
	creates, err := createsPendingThrough(tx, pluginID)
	if err != nil {
		return err
	}
	for _, c := range creates {
		if c.SourceVolumeID != "" && !held[c.SourceVolumeID] {
			return &createsChangedMeanwhile{msg: fmt.Sprintf("snapshot %q of volume %q began being created through plugin %q while this delete of snapshot %q waited, and its answer may be that snapshot: "+
				"nothing was deleted; run the delete again once it is done", c.Name, c.SourceVolumeID, c.PluginID, snapshotID)}
		}
	}
	return nil
}

// snapshotWord is how a delete or deregister takes the word that names its snapshot.
type snapshotWord int

const (
	// byIDOrName: the usage's SNAPSHOT_ID|NAME, an ID volctl records first, else the NAME of
	// a pending or recorded snapshot; a word that is one snapshot's ID and another's NAME is
	// refused (snapshotWordNamesTwo).
	byIDOrName snapshotWord = iota
	// byIDOnly: an ID, never a NAME (--id).
	byIDOnly
	// finishingDelete: reconcile finishing a recorded delete (snapshot_deletes) of the
	// snapshot with that ID: an ID only, and nothing done (errNoDeleteToFinish) unless the
	// delete is still recorded when it records its own.
	finishingDelete
)

// snapshotWordNamesTwo refuses a word given for a snapshot (delete, deregister) that is the ID
// of the recorded snapshot rec and the NAME of another snapshot volctl records, or of one
// being created, through the plugin: a plugin whose IDs are a prefix and the NAME asked makes
// one ("snap-b", NAMEd "b") for the NAME of another ("snap-b", ID "snap-snap-b"), and a plugin
// may answer a CreateSnapshot with any ID. Before, the ID won, and `snapshot delete PLUGIN
// snap-b` deleted the one the user may not have meant, saying "deleted"
// (TestSnapshotDeleteOfAWordThatIsOneSnapshotsIDAndAnothersNameIsRefused). A snapshot whose
// ID and NAME are the same word is not two.
func snapshotWordNamesTwo(tx *store.Tx, pluginID string, rec store.Snapshot, verb string) error {
	named, err := recordsNamed(tx, pluginID, rec.SnapshotID)
	if err != nil {
		return err
	}
	var others []string
	for _, sn := range named {
		if sn.SnapshotID != rec.SnapshotID {
			others = append(others, fmt.Sprintf("the NAME of snapshot %q", sn.SnapshotID))
		}
	}
	// A create pending under the word is another snapshot's only where the word is not rec's
	// own NAME too: a create of rec's NAME again (its ID its NAME) is rec's, which the plugin
	// answers with it (TestSnapshotDeleteRecordedAfterTheCreateLookedKeepsItsRecord).
	if rec.Name != rec.SnapshotID {
		switch _, err := tx.Snapshots().GetCreate(pluginID, rec.SnapshotID); {
		case err == nil:
			others = append(others, "the NAME of a snapshot being created (pending)")
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	if len(others) == 0 {
		return nil
	}
	return conflictf("%q is the ID of snapshot %q (NAME %q) and %s, all recorded through plugin %q: nothing was done; "+
		"`%s` takes it as the ID, or name the other by its ID (`%s` shows each)",
		rec.SnapshotID, rec.SnapshotID, rec.Name, strings.Join(others, " and "), pluginID,
		shellquote.CommandFlags("volctl volume snapshot "+verb, []string{pluginID, rec.SnapshotID}, "--id"), "volctl volume snapshot list "+shellquote.Flag("--plugin", pluginID))
}

// errNoDeleteToFinish is deleteSnapshotStored's answer, when finishing a recorded delete, that
// none is recorded (any more): another volctl finished or forgot it meanwhile.
var errNoDeleteToFinish = errors.New("no snapshot delete is recorded")

// deleteSnapshotStored is DeleteSnapshot of the ID as stored (byStoredID), the word taken as
// how says. finishingDelete is reconcile's: it does nothing (errNoDeleteToFinish) unless the
// recorded delete is still recorded when it records its own, so that a snapshot made since
// under an ID the plugin reuses is never deleted; the ID is never taken for a NAME, which
// would delete another snapshot.
// res, when not nil, is told what the delete found of a snapshot volctl records nothing of.
func (e *Engine) deleteSnapshotStored(ctx context.Context, pluginID, snapshotID string, secrets spec.Secrets, how snapshotWord, res *SnapshotDeleted) (err error) {
	finishing := how == finishingDelete
	fail := func(err error) error {
		return fmt.Errorf("delete snapshot %q of plugin %q: %w", snapshotID, pluginID, err)
	}
	if snapshotID == "" {
		return fail(invalidf("the snapshot ID is empty"))
	}
	var (
		rec      store.Snapshot
		recorded bool
		intent   store.SnapshotCreate
		pending  bool
	)
	err = e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		rec, err = tx.Snapshots().Get(pluginID, snapshotID)
		if err == nil {
			recorded = true
			if how != byIDOrName {
				return nil
			}
			return snapshotWordNamesTwo(tx, pluginID, rec, "delete")
		}
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if how != byIDOrName {
			return notMatesSnapshot(tx, pluginID, snapshotID)
		}
		intent, err = tx.Snapshots().GetCreate(pluginID, snapshotID)
		if errors.Is(err, store.ErrNotFound) {
			if rec, recorded, err = recordByName(tx, pluginID, snapshotID); err != nil || recorded {
				return err
			}
			return notMatesSnapshot(tx, pluginID, snapshotID)
		}
		pending = err == nil
		return err
	})
	if err != nil {
		return fail(err)
	}
	if recorded && rec.SnapshotID != snapshotID {
		// Named by its NAME (the usage's SNAPSHOT_ID|NAME): the plugin knows it by its ID. Sent
		// the name, a plugin answered OK for an ID it did not know, and the snapshot stayed.
		snapshotID = rec.SnapshotID
	}
	named := "" // the NAME a pending snapshot was named by, once its ID is learnt
	if pending {
		if rec, err = e.finishPendingForDelete(ctx, intent); err != nil || rec.SnapshotID == "" {
			if err != nil {
				return fail(err)
			}
			return nil
		}
		recorded, named, snapshotID = true, snapshotID, rec.SnapshotID
	}
	// The check and the record of the delete are one transaction: a restore recording its
	// intent after it sees the delete recorded and is refused (createVolume), where one
	// recorded after a check in a read-only view, and cut short before its CreateVolume, was
	// NOT_FOUND for good once the snapshot was gone
	// (TestSnapshotDeleteRefusesARestoreRecordedAfterItsCheck).
	//
	// The snapshot's lock is held from here across the DeleteSnapshot and its record, as
	// deregister takes it: a deregister meanwhile waits, or forgot the delete first and
	// reconcile's finishing sends nothing (TestReview30fDeregisterDuringReconcilesDelete). So
	// does the user's delete: before, only reconcile's held it, and a deregister in another
	// volctl during the user's delete said the snapshot was left while the delete in flight
	// deleted it (TestDeregisterDuringAnotherVolctlsSnapshotDeleteDoesNotSayItIsLeft); two
	// deletes of one snapshot (the user's and reconcile's) take turns.
	var sourcesHeld map[string]bool // unrecorded: the volumes of the creates pending through the plugin
	letSourcesGo := func() {}
	if !recorded && !finishing {
		held, release, err := e.holdPendingCreates(ctx, pluginID)
		if err != nil {
			return fail(err)
		}
		defer release()
		sourcesHeld, letSourcesGo = held, release
	}
	unlock, err := e.locks.snapshot(ctx, pluginID, snapshotID)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	var already bool // an earlier delete, killed or unanswered, recorded it: it may be gone
	goneMeanwhile := false
	var heldBefore map[string]bool // the plugin IDs, its own and its mates', that recorded it when the delete was
	if err := e.store.Update(ctx, func(tx *store.Tx) error {
		if err := refuseRestoreInFlight(tx, pluginID, snapshotID); err != nil {
			return err
		}
		var err error
		if heldBefore, err = snapshotRecordedThrough(tx, pluginID, snapshotID); err != nil {
			return err
		}
		if sourcesHeld != nil {
			if err := unrecordedStill(tx, pluginID, snapshotID, heldBefore, sourcesHeld); err != nil {
				return err
			}
		}
		// Recorded when read, before the lock: another volctl's delete (or deregister) may have
		// held the snapshot while this one waited, and forgotten it. It is then one volctl records
		// nothing of, asked after as such below (res.Absent): before, the delete went on from
		// the record read, the plugin answered OK for a snapshot it no longer had, and two
		// deletes at once both said "deleted", recording it twice
		// (TestSnapshotDeletedByAnotherVolctlMeanwhileIsNotDeletedTwice).
		if recorded && !finishing {
			if _, err := tx.Snapshots().Get(pluginID, snapshotID); errors.Is(err, store.ErrNotFound) {
				goneMeanwhile = true
			} else if err != nil {
				return err
			}
		}
		if err := refuseNearSnapshotDelete(tx, pluginID, snapshotID); err != nil {
			return err
		}
		if already, err = tx.Snapshots().MarkDeleting(pluginID, snapshotID); err == nil && finishing && !already {
			err = errNoDeleteToFinish // rolls the mark back
		}
		return err
	}); err != nil {
		if errors.Is(err, errNoDeleteToFinish) {
			return err
		}
		return fail(err)
	}
	// The delete recorded: a create answered with the snapshot from here on finds it, and waits
	// for the snapshot's lock, held to the end, with its own volume's let go
	// (snapshotLockAfterItsDelete). The pending creates' volumes are let go too: held, a
	// DeleteSnapshot the plugin hung on held up every claim and release of them, volumes this
	// snapshot may have nothing to do with
	// (TestUnrecordedSnapshotDeleteHungOnThePluginDoesNotHoldAPendingCreatesVolume).
	letSourcesGo()
	if goneMeanwhile {
		recorded = false // its secrets and source, as recorded, are still the snapshot's
	}
	e.failpoint("snapshot:deleting") // the delete recorded, DeleteSnapshot not sent
	// kept is whether the snapshot is known to be there still, when this returns an error. An
	// earlier delete's record says it may be gone: this one failing before its DeleteSnapshot
	// (the plugin unreachable) learns nothing that forgets it
	// (TestSnapshotDeleteAgainThatSendsNothingKeepsTheRecordedDelete).
	kept := !already
	defer func() {
		if err != nil && kept {
			// Nothing deleted it: restores from it may go on. Otherwise the mark stays, for the
			// delete again to finish.
			if uerr := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
				return tx.Snapshots().Undelete(pluginID, snapshotID)
			}); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
	}()
	c, err := e.snapshotConn(ctx, pluginID, rec.Reach)
	if err != nil {
		return fail(err)
	}
	defer e.done(c)
	if err := canSnapshotRecorded(c, "delete snapshots", snapshotID, false); err != nil && (recorded || finishing) {
		return fail(err)
	} else if err != nil {
		return fail(canSnapshot(c, "delete snapshots"))
	}
	if secrets == nil {
		secrets = rec.Secrets
		if rec.SourceVolumeID != "" {
			v, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(rec.SourceVolumeID) })
			switch {
			case err == nil && v.PluginID == pluginID && v.ExternalID == rec.SourceExternalID:
				// The volume's current secrets, which may have been rotated; not those of another
				// volume registered under the ID since (other storage, maybe another tenant's):
				// TestSnapshotDeleteAfterItsSourceIDWasReusedSendsTheRecordedSecrets.
				secrets = v.Secrets
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return fail(err)
			}
		}
	}
	// The snapshot's lock file removed since it was taken: another volctl may hold the lock on a
	// new file, and a create of it there recorded it as made (it waits for no delete then).
	// Nothing is sent, and nothing undone: the recorded delete stays unless that create took it
	// back, for reconcile or the delete again to finish.
	if lost := e.locks.snapshotStillHeld(pluginID, snapshotID); lost != nil {
		kept = false
		return fail(lost)
	}
	// A snapshot volctl records nothing of, by ID or NAME, with no earlier delete of it
	// unfinished: the plugin is asked whether it has it, under the controller lock the delete
	// is sent under, where it can be asked. The ID is most often a name mistyped, which the
	// plugin answers OK for as for any ID it does not know: the result says that nothing was
	// there to delete (res.Absent), rather than "deleted". The delete is sent all the same, and
	// recorded as before: what it finds is only said.
	send, absent, asked := e.retry, false, false
	if !recorded && !already && !finishing && res != nil {
		send = func(ctx context.Context, c *conn, rpc string, call func(context.Context) error) error {
			absent, asked = e.snapshotAbsent(ctx, c, snapshotID, secrets)
			return e.retry(ctx, c, rpc, call)
		}
	}
	listed, unchecked, err := e.teardownChecked(ctx, c, send, csi.RPCDeleteSnapshot, func(ctx context.Context) error {
		if recorded {
			// A recorded snapshot is asked after first, under the same controller lock and
			// once the socket is known to be the registered driver's, where the plugin can say:
			// one whose IDs derive from names gives a gone snapshot's ID to the next of that
			// name, maybe another tool's of another volume, and a delete by the record sent
			// DeleteSnapshot of that one, someone else's backup, saying "deleted"
			// (TestSnapshotDeleteByNameDoesNotDeleteAnotherVolumesSnapshotUnderItsID).
			if err := e.notAnotherSourcesSnapshot(ctx, c, rec, secrets); err != nil {
				return err
			}
		}
		return c.client.DeleteSnapshot(ctx, csi.DeleteSnapshotRequest{SnapshotID: snapshotID, Secrets: secrets})
	}, func(ctx context.Context) (bool, error) { return e.listsSnapshot(ctx, c, snapshotID, secrets) })
	if err != nil && !csi.IsIgnorable(err) {
		if csi.IsRetryable(err) || csi.IsTimeout(err) || ctx.Err() != nil {
			// The plugin may have deleted it: restores from it are refused until a delete
			// again finishes.
			kept = false
			return fail(fmt.Errorf("%w (the delete stays recorded, and a restore from the snapshot is refused until `%s` or `volctl reconcile` finishes it)",
				err, shellquote.Command("volctl volume snapshot delete", pluginID, snapshotID)))
		}
		// A final refusal: the plugin keeps it, unless an earlier delete, unanswered, may have
		// deleted it: the mark stays then unless the plugin lists it. Reconcile, which sends
		// no secrets of the user's, never forgets the user's delete on a refusal: it stays for
		// the user to finish or deregister (TestReview30fReconcileWithoutTheDeletesSecrets).
		switch {
		case !already:
			kept = true
		case !finishing:
			kept, _ = e.listsSnapshot(ctx, c, snapshotID, secrets)
		}
		return fail(err)
	}
	if listed {
		kept = true
		// The snapshot (someone's data) is still there: forgetting its record would leave it
		// unaccounted for while saying it was deleted.
		err := stillListed(pluginID, csi.RPCDeleteSnapshot, err, "snapshot", snapshotID, snapshotCheck(c))
		msg := "delete not finished, snapshot kept: " + err.Error() // volctl's words, naming the snapshot
		e.failureEvent(ctx, &store.Event{Kind: "snapshot-delete", VolumeID: rec.SourceVolumeID, PluginID: pluginID, RPC: snapshotCheck(c),
			Message: msg}, msg)
		// The way out names the ID: the record is the ID's, and a NAME that found the snapshot
		// pending finds nothing now (a delete by it is of a snapshot ID nobody has).
		again := "`" + shellquote.Command("volctl volume snapshot delete", pluginID, snapshotID) + "`"
		if named != "" {
			again += fmt.Sprintf(" (by its ID: its name %q found it only while it was pending)", named)
		}
		if !recorded {
			// A snapshot volctl records nothing of (another tool's): no record stays, and a
			// deregister of it finds none (TestDeleteOfAnUnrecordedSnapshotStillListedAdvisesNoDeregisterOfNothing).
			return fail(fmt.Errorf("%w (volctl records nothing of it: %s sends DeleteSnapshot again; if the plugin keeps listing it, delete it with the storage provider's tools)", err, again))
		}
		return fail(fmt.Errorf("%w (the snapshot stays recorded: %s sends DeleteSnapshot again and forgets it once the plugin answers OK or NOT_FOUND and no longer lists it; "+
			"if the plugin keeps listing it, `%s` forgets the record and leaves the snapshot)", err, again,
			shellquote.Command("volctl volume snapshot deregister", pluginID, snapshotID)))
	}
	note := e.uncheckedNote(unchecked, err, pluginID, csi.RPCDeleteSnapshot, "snapshot", snapshotID, secrets)
	kept = false
	var takenAgain error
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		// Lost meanwhile (the file removed while DeleteSnapshot was in flight): the answer is
		// not recorded over what another volctl holding the new file may have written.
		if lost := e.locks.snapshotStillHeld(pluginID, snapshotID); lost != nil {
			return lost
		}
		// The delete recorded above gone while a record of the ID is there: a snapshot create
		// answered with this ID since and recorded it (finishSnapshot's Undelete), from another
		// volctl, which holds the source volume's lock, not this snapshot's. The plugin may have
		// made it after this DeleteSnapshot (one that names snapshots by their name makes them
		// anew under the same ID): forgetting the record would leave the snapshot another
		// command just said it made unrecorded (TestSnapshotDeleteRecordedAfterTheCreateLookedKeepsItsRecord).
		// Kept, a snapshot the DeleteSnapshot did delete (the create answered before it) shows
		// as missing in `snapshot list` of a plugin that lists snapshots, and the delete again
		// forgets it. One that does not shows volctl's records alone, never missing: the user
		// checks with the storage's own tools, and a deregister forgets the record of one gone;
		// the delete again, advised blindly, deleted the snapshot the create had said it made
		// (takenAgainAdvice; TestSnapshotTakenAgainAdviceWithoutListSnapshots).
		if recorded {
			marked, err := tx.Snapshots().Deleting(pluginID, snapshotID)
			if err != nil {
				return err
			}
			if now, err := tx.Snapshots().Get(pluginID, snapshotID); err == nil && !marked {
				takenAgain, err = takenAgainKept(tx, c, pluginID, snapshotID, pluginID, now)
				return err
			} else if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		// A snapshot not recorded when the delete was, through this plugin ID or a socket mate
		// (one process, one storage), and recorded now: a create answered with this ID, which had
		// looked for a delete of it before this one was recorded, recorded it meanwhile, from
		// another volctl. As above, its record is kept and the delete says so; before, the check
		// ran only for a snapshot the delete found recorded, under its own plugin ID: the delete
		// said "deleted", the create "made", and nothing said the snapshot the create's record
		// names may be gone (TestSnapshotDeleteOfAnUnrecordedSnapshotCrossingACreateOfItSaysSo).
		if !recorded {
			now, err := snapshotRecordedThrough(tx, pluginID, snapshotID)
			if err != nil {
				return err
			}
			for _, p := range slices.Sorted(maps.Keys(now)) {
				if heldBefore[p] {
					continue
				}
				made, err := tx.Snapshots().Get(p, snapshotID)
				if err != nil {
					return err
				}
				if err := tx.Snapshots().Undelete(pluginID, snapshotID); err != nil {
					return err
				}
				takenAgain, err = takenAgainKept(tx, c, pluginID, snapshotID, p, made)
				return err
			}
		}
		if err := tx.Snapshots().Undelete(pluginID, snapshotID); err != nil {
			return err
		}
		if recorded {
			if err := tx.Snapshots().Delete(pluginID, snapshotID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		msg := fmt.Sprintf("snapshot %q deleted", snapshotID)
		if absent {
			msg = fmt.Sprintf("snapshot %q not found, nothing deleted: plugin %q had no snapshot by that ID, and volctl recorded none by that ID or name", snapshotID, pluginID)
		}
		return tx.Events().Append(&store.Event{Kind: "snapshot-delete", VolumeID: rec.SourceVolumeID, PluginID: pluginID,
			RPC: csi.RPCDeleteSnapshot, Message: msg + note})
	})
	if err != nil {
		return fail(err)
	}
	if res != nil && !recorded && !already && !finishing && (absent || !asked) {
		near, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]string, error) { return nearSnapshots(tx, pluginID, snapshotID) })
		if err != nil {
			return fail(err)
		}
		res.Absent, res.Unchecked, res.Near = absent, !asked, near
	}
	if takenAgain != nil {
		return fail(takenAgain)
	}
	return nil
}

// listedSnapshotSize is the size the plugin gives snapshot id when asked for it (findsSnapshot),
// within the bound on such checks; 0, unknown, when it cannot be asked, does not answer, or gives
// none.
func (e *Engine) listedSnapshotSize(ctx context.Context, c *conn, id string, secrets spec.Secrets) int64 {
	if snapshotCheck(c) == "" {
		return 0
	}
	var listed csi.Snapshot
	var found bool
	_ = e.boundCheck(ctx, func(ctx context.Context) error {
		var err error
		listed, found, err = e.findsSnapshot(ctx, c, id, secrets)
		return err
	})
	if !found || listed.ID != id {
		return 0 // named before a later page failed, it is the plugin's word all the same
	}
	return max(listed.SizeBytes, 0)
}

// snapshotAbsent asks the plugin, within the bound on such checks, whether it has snapshot id
// (findsSnapshot): absent when it answered that it has none; checked when it answered at all. A
// plugin that cannot be asked, or whose answer cannot be had, is neither. The caller holds the
// plugin's controller lock.
func (e *Engine) snapshotAbsent(ctx context.Context, c *conn, id string, secrets spec.Secrets) (absent, checked bool) {
	if snapshotCheck(c) == "" {
		return false, false
	}
	var found bool
	err := e.boundCheck(ctx, func(ctx context.Context) error {
		var err error
		_, found, err = e.findsSnapshot(ctx, c, id, secrets)
		return err
	})
	switch {
	case found:
		// Named before the listing failed (a next_token that loops, a later page's error): the
		// plugin's word all the same, as findsSnapshotNear's callers take it. Read as not asked,
		// a create again forgot the record of a snapshot the plugin had just listed
		// (TestSnapshotCreateAgainForgetsNoSnapshotTheListingNamedBeforeItLooped).
		return false, true
	case err != nil:
		return false, false
	}
	return true, true
}

// notAnotherSourcesSnapshot refuses, as a conflict, a delete of recorded snapshot rec that the
// plugin lists as a snapshot of another source than the one recorded (spec.SameStorageID): its
// ID names another snapshot now, which the delete would destroy. A plugin that cannot be
// asked, a check that fails, a snapshot not listed, or one listed with no source leave the
// delete to go on as before: only the plugin's word that the ID is another volume's stops it.
func (e *Engine) notAnotherSourcesSnapshot(ctx context.Context, c *conn, rec store.Snapshot, secrets spec.Secrets) error {
	if snapshotCheck(c) == "" || rec.SourceExternalID == "" {
		return nil
	}
	var (
		snap  csi.Snapshot
		found bool
	)
	another := func(s csi.Snapshot) bool { return ofAnotherSource(s, rec) }
	// An entry naming another source decides, whatever failed after it (findsSnapshotNear);
	// a check that failed before one leaves the delete to go on, as the doc says.
	_ = e.boundCheck(ctx, func(ctx context.Context) error {
		var err error
		snap, found, _, err = e.findsSnapshotNear(ctx, c, rec.SnapshotID, secrets, another)
		return err
	})
	if !found || !another(snap) {
		return nil
	}
	return conflictf("plugin %q lists snapshot %q as a snapshot of %q, not of %s, which volctl recorded it of: the ID names another snapshot now "+
		"(a plugin that derives IDs from names gives a gone snapshot's to the next of its name), which a delete would destroy; nothing was sent: "+
		"`%s` forgets volctl's record and leaves the plugin's snapshot",
		// The source as the plugin listed it, scrubbed of the secrets the listing was sent
		// (a delete's --secret, which the state may not hold).
		c.plugin.ID, rec.SnapshotID, csi.Scrubber(slices.Collect(maps.Values(secrets.Plain())))(spec.Cut(snap.SourceVolumeID, 256)), recordedSource(rec),
		shellquote.CommandFlags("volctl volume snapshot deregister", []string{rec.PluginID, rec.SnapshotID}, "--id"))
}

// nearSnapshots is the IDs and NAMEs of plugin pluginID's recorded snapshots the user likely
// meant by id, which names none of them (nearAmong).
func nearSnapshots(tx *store.Tx, pluginID, id string) ([]string, error) {
	all, err := tx.Snapshots().List(pluginID)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, sn := range all {
		if sn.PluginID != pluginID {
			continue
		}
		keys = append(keys, sn.SnapshotID)
		if sn.Name != "" && sn.Name != sn.SnapshotID {
			keys = append(keys, sn.Name)
		}
	}
	return nearAmong(id, keys), nil
}

// takenAgainKept is the conflict a delete of snapshotID through pluginID answers when a
// snapshot create answered with the same ID recorded it meanwhile as made, through recordedBy
// (pluginID or a socket mate): the record is kept, the event appended in tx says so, and the
// conflict names the way out (takenAgainAdvice). The second error is tx's.
func takenAgainKept(tx *store.Tx, c *conn, pluginID, snapshotID, recordedBy string, made store.Snapshot) (conflict, err error) {
	through := ""
	if recordedBy != pluginID {
		through = fmt.Sprintf(", through its socket mate %q", recordedBy)
	}
	conflict = conflictf("plugin %q answered %s for snapshot %q, but a snapshot create (another volctl's, of volume %q%s) was answered with the same ID meanwhile and recorded it as %q: "+
		"the plugin may have made it again after this delete, so its record is kept; %s",
		pluginID, csi.RPCDeleteSnapshot, snapshotID, made.SourceVolumeID, through, made.Name, takenAgainAdvice(c, recordedBy, snapshotID))
	return conflict, tx.Events().Append(&store.Event{Kind: "snapshot-delete", VolumeID: made.SourceVolumeID, PluginID: pluginID,
		RPC: csi.RPCDeleteSnapshot, Message: "delete answered, record kept: " + conflict.Error()})
}

// takenAgainAdvice is the way out of a delete that kept the record of snapshot snapshotID, which
// a create recorded again while the delete was answered: the snapshot is there (made again) or
// not (this delete took it). `snapshot list` tells which only for a plugin that lists snapshots
// (it shows a record the plugin no longer lists as missing); for one that does not, it shows
// volctl's records alone, and only the storage's own tools tell, so the delete again, which
// would delete a snapshot made again, is not the advice there: a deregister of one gone is.
func takenAgainAdvice(c *conn, pluginID, snapshotID string) string {
	if c.fp.Controller && c.fp.Capabilities.Controller.ListSnapshots {
		return fmt.Sprintf("`%s` shows it missing if this delete took it, and `%s` then forgets it",
			shellquote.Command("volctl volume snapshot list "+shellquote.Flag("--plugin", pluginID)), shellquote.Command("volctl volume snapshot delete", pluginID, snapshotID))
	}
	return fmt.Sprintf("plugin %q does not list snapshots (no LIST_SNAPSHOTS controller capability), so volctl cannot tell whether this delete took it: "+
		"check with the storage provider's own tools whether snapshot %q is there; if it is not, `%s` forgets its record (sending nothing); "+
		"if it is, it is the snapshot the create made: keep it (a delete again would delete it)",
		pluginID, snapshotID, shellquote.Command("volctl volume snapshot deregister", pluginID, snapshotID))
}

// refuseRestoreInFlight refuses to delete snapshot snapshotID of plugin pluginID while a volume
// of the plugin is recorded as being created from it: its CreateVolume is in flight, or was
// interrupted, and only a CreateVolume sent again, which restores from the snapshot, finishes
// it. Deleted under it, every CreateVolume after was answered NOT_FOUND, which keeps the intent
// of a create sent before (that one may have made the volume), and reconcile reported the create
// every pass for good (TestSnapshotDeleteRefusedWhileAVolumeIsBeingRestoredFromIt). It is the
// counterpart of refuseSnapshotInFlight, which keeps a volume a snapshot is being taken of. A
// restore through another plugin ID on one of the plugin's sockets (socketMates: one process,
// one storage) counts as one through it: before, the delete went on under it.
func refuseRestoreInFlight(tx *store.Tx, pluginID, snapshotID string) error {
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return err
	}
	for _, state := range []store.VolumeState{store.VolumeCreating, store.VolumeDeleting} {
		vols, err := tx.Volumes().List(store.VolumeFilter{State: state})
		if err != nil {
			return err
		}
		for _, v := range vols {
			// A near spelling (spec.SameStorageID) is the same snapshot to a plugin that reads IDs
			// so, as refuseNearSnapshotDelete has it
			// (TestSnapshotDeleteRefusedWhileARestoreFromItsNearSpellingIsInFlight).
			if !mates[v.PluginID] || !spec.SameStorageID(v.SnapshotID, snapshotID) {
				continue
			}
			if state == store.VolumeCreating {
				return conflictf("volume %q is being created from snapshot %q (its CreateVolume is in flight, or was interrupted, and only one sent again, which restores from the snapshot, finishes it): "+
					"run `volctl reconcile` to finish that create, or `%s`, then delete the snapshot",
					v.ID, snapshotID, shellquote.Command("volctl volume delete", v.ID))
			}
			// Marked deleting by its create's cleanup (an answer it cannot use, deleted again,
			// after which it is put back to being created and sent again, restoring from the
			// snapshot), as refuseCloneInFlight counts a clone's: looked for among those being
			// created alone, a delete of the snapshot went on under the cleanup, and the restore
			// was NOT_FOUND at every reconcile pass after
			// (TestSnapshotDeleteRefusedWhileARestoreCleansUpAnUnusableAnswer). A volume's own
			// delete needs no snapshot.
			cleanup, err := tx.Volumes().CreateCleanup(v.ID)
			if err != nil {
				return err
			}
			if cleanup {
				return conflictf("volume %q is being created from snapshot %q: its create is deleting a volume the plugin answered with that it cannot use, "+
					"after which it sends CreateVolume again, which restores from the snapshot: run `volctl reconcile` to finish that create, or `%s`, then delete the snapshot",
					v.ID, snapshotID, shellquote.Command("volctl volume delete", v.ID))
			}
		}
	}
	return nil
}

// refuseNearSnapshotDelete refuses to send DeleteSnapshot of snapshotID through pluginID while
// volctl records, through it or a plugin ID on one of its sockets, another snapshot whose ID
// differs from it only so that spec.SameStorageID takes them for one (nearSnapshot): a plugin
// that reads IDs so deletes that snapshot. Such a pair is what an older volctl, whose
// CreateSnapshot took no such answer for another's, may have recorded, or a delete of an ID
// volctl does not record typed in another case; before, `snapshot delete mem ONE` beside a
// recorded "one" deleted one's data and left its record naming a snapshot gone
// (TestDeleteOfANearSpellingOfAnotherSnapshotIsRefused). No override sends it anyway, as
// refuseSharedDelete's rule for volumes: a refused delete can be undone, deleted data cannot. It
// is checked in the transaction that records the delete, by a delete and by reconcile finishing
// one.
func refuseNearSnapshotDelete(tx *store.Tx, pluginID, snapshotID string) error {
	near, err := nearSnapshot(tx, pluginID, snapshotID)
	if err != nil || near.SnapshotID == "" {
		return err
	}
	what := fmt.Sprintf("snapshot %+q of plugin %q differs only in case, Unicode normalisation (compatibility forms too), invisible characters or surrounding white space from snapshot %+q (name %q, volume %q) that volctl records through plugin %q: "+
		"a plugin that reads IDs so (a case-insensitive backend, one that trims or normalises the IDs it is sent) takes DeleteSnapshot of it for that snapshot, so nothing was sent. ",
		spec.Cut(snapshotID, 256), pluginID, spec.Cut(near.SnapshotID, 256), near.Name, near.SourceVolumeID, near.PluginID)
	if _, err := tx.Snapshots().Get(pluginID, snapshotID); errors.Is(err, store.ErrNotFound) {
		// Not recorded: no deregister can forget it (it fails, "no record of it"). Before, the
		// advice named one all the same (TestNearSnapshotDeleteOfAnUnrecordedIDAdvisesACommandThatWorks).
		return conflictf("%s"+
			"volctl records no snapshot %+q of plugin %q: if you meant snapshot %+q, delete it by that ID (`%s`); if the plugin is case-sensitive and holds %+q as a snapshot of its own, "+
			"delete it with the storage provider's tools (volctl sends no such DeleteSnapshot: on a backend that folds IDs, that deletes snapshot %+q)",
			what, spec.Cut(snapshotID, 256), pluginID, spec.Cut(near.SnapshotID, 256), shellquote.Command("volctl volume snapshot delete", near.PluginID, near.SnapshotID),
			spec.Cut(snapshotID, 256), spec.Cut(near.SnapshotID, 256))
	} else if err != nil {
		return err
	}
	deregister := shellquote.Command("volctl volume snapshot deregister", pluginID, snapshotID)
	return conflictf("%s"+
		"If they are one snapshot, `%s` forgets %+q and leaves the snapshot to the other record; if the plugin is case-sensitive and holds them as two snapshots, "+
		"`%s` and delete %+q with the storage provider's tools (volctl sends no such DeleteSnapshot: on a backend that folds IDs, that deletes snapshot %+q)",
		what, deregister, spec.Cut(snapshotID, 256), deregister, spec.Cut(snapshotID, 256), spec.Cut(near.SnapshotID, 256))
}

// notMatesSnapshot refuses a delete through pluginID of a snapshot it does not record that
// another plugin ID on one of its sockets records (snapshotOfMate): one process, one storage,
// so the plugin lists that snapshot under both IDs, and `snapshot list` of this one shows it
// as a plugin snapshot volctl does not record. Deleted through this ID, the other's record was
// left naming a snapshot gone, and the user, told an unrecorded snapshot was deleted, had
// deleted a recorded one (TestDeleteSnapshotThroughASocketMateOfTheIDThatRecordsItIsRefused).
func notMatesSnapshot(tx *store.Tx, pluginID, snapshotID string) error {
	mate, err := snapshotOfMate(tx, pluginID, snapshotID)
	if err != nil || mate.PluginID == "" {
		return err
	}
	return conflictf("snapshot %q is recorded by plugin %q (of volume %q), registered on the same socket as plugin %q: "+
		"nothing was sent; `%s` deletes it and its record", snapshotID, mate.PluginID, mate.SourceVolumeID, pluginID,
		shellquote.Command("volctl volume snapshot delete", mate.PluginID, snapshotID))
}

// recordNamed is the snapshot of pluginID recorded under name, if one is (a plugin's snapshot
// names are unique: NameTaken).
func recordNamed(tx *store.Tx, pluginID, name string) (store.Snapshot, bool, error) {
	named, err := recordsNamed(tx, pluginID, name)
	if err != nil || len(named) == 0 {
		return store.Snapshot{}, false, err
	}
	return named[0], true, nil
}

// recordsNamed are the snapshots of pluginID recorded under name, by ID.
func recordsNamed(tx *store.Tx, pluginID, name string) ([]store.Snapshot, error) {
	all, err := tx.Snapshots().List(pluginID)
	if err != nil {
		return nil, err
	}
	var named []store.Snapshot
	for _, sn := range all {
		if sn.Name == name && sn.PluginID == pluginID {
			named = append(named, sn)
		}
	}
	return named, nil
}

// recordByName is recordNamed for a command that names a snapshot by its NAME (delete,
// deregister, a restore's snapshot_id given a name): the one snapshot recorded under it, and a
// refusal naming each ID when the name is two snapshots' (a plugin that made a new one for a
// name it held, still listing the old: TestSnapshotCreateAgainForgetsNoSnapshotThePluginStillHolds).
// Before, it took the first by ID, and `snapshot delete PLUGIN NAME` deleted that one, saying
// nothing of the other (TestSnapshotDeleteByANameTwoRecordsHoldIsRefused).
func recordByName(tx *store.Tx, pluginID, name string) (store.Snapshot, bool, error) {
	named, err := recordsNamed(tx, pluginID, name)
	if err != nil {
		return store.Snapshot{}, false, err
	}
	switch len(named) {
	case 0:
		return store.Snapshot{}, false, nil
	case 1:
		return named[0], true, nil
	}
	ids := make([]string, len(named))
	for i, sn := range named {
		ids[i] = strconv.Quote(sn.SnapshotID)
	}
	return store.Snapshot{}, false, conflictf("the name %q is that of %d snapshots volctl records through plugin %q (%s): nothing was done; name the one meant by its ID (`%s` shows each)",
		name, len(named), pluginID, strings.Join(ids, ", "), "volctl volume snapshot list "+shellquote.Flag("--plugin", pluginID))
}

// keptIntent is a create's error that keeps its intent (a snapshot's or a volume's): the
// plugin made what was asked but its answer cannot be used (csi.IsAnswerUnread), or an answer
// may come later, or an earlier call's answer was lost. cause is the call's own error, kept
// what became of the intent; a delete finishing the intent words its own outcome from cause.
type keptIntent struct {
	cause error
	kept  string
}

func (u *keptIntent) Error() string { return fmt.Sprintf("%v (%s)", u.cause, u.kept) }
func (u *keptIntent) Unwrap() error { return u.cause }

// finishPendingForDelete finishes a snapshot still being created so that it can be deleted: the
// only way to learn a snapshot's ID from its name is CreateSnapshot under that name. A plugin
// that refuses for good (its source volume is gone, say) made nothing volctl can find: the
// intent is forgotten and an empty record returned.
func (e *Engine) finishPendingForDelete(ctx context.Context, intent store.SnapshotCreate) (store.Snapshot, error) {
	var hold *volumeHold
	if intent.SourceVolumeID != "" {
		var err error
		if hold, err = e.locks.holdVolume(ctx, intent.SourceVolumeID); err != nil {
			return store.Snapshot{}, err
		}
		defer hold.release()
	}
	// Read again under the volume's lock, as reconcile does: another volctl holding it while
	// this one waited may have forgotten the create (a deregister, another delete of the NAME)
	// or finished it. Before, CreateSnapshot went out under the NAME with no intent recorded,
	// the plugin took a snapshot nobody asked for, and a lost answer left it tracked by nothing
	// under a "stays recorded as being created" (TestPendingSnapshotDeleteThatWaitedForItsDeregisterSendsNoCreate).
	type reread struct {
		intent  store.SnapshotCreate
		pending bool
		rec     store.Snapshot
		made    bool
	}
	now, err := viewOne(ctx, e.store, func(tx *store.Tx) (reread, error) {
		var r reread
		var err error
		switch r.intent, err = tx.Snapshots().GetCreate(intent.PluginID, intent.Name); {
		case err == nil:
			r.pending = true
			return r, nil
		case !errors.Is(err, store.ErrNotFound):
			return r, err
		}
		r.rec, r.made, err = recordByName(tx, intent.PluginID, intent.Name)
		return r, err
	})
	switch {
	case err != nil:
		return store.Snapshot{}, err
	case now.made:
		return now.rec, nil // finished meanwhile: the delete goes on with its record
	case !now.pending:
		return store.Snapshot{}, notFoundf("snapshot %q of volume %q: its create, pending when this delete read it, was forgotten or finished by another volctl while this one waited for the volume's lock, "+
			"and nothing is recorded under the name now; nothing was sent (`%s` shows what the plugin has)",
			intent.Name, intent.SourceVolumeID, "volctl volume snapshot list "+shellquote.Flag("--plugin", intent.PluginID))
	}
	intent = now.intent
	c, err := e.snapshotConn(ctx, intent.PluginID, intent.Reach)
	if err != nil {
		return store.Snapshot{}, err
	}
	defer e.done(c)
	if err := canSnapshotRecorded(c, "delete snapshots", intent.Name, true); err != nil {
		return store.Snapshot{}, err
	}
	rec, _, err := e.finishSnapshot(ctx, c, hold, intent, true)
	if err == nil {
		return rec, nil
	}
	if csi.IsAnswerUnread(err) {
		// The plugin has the snapshot, but its ID cannot be learned to delete it: forget the
		// intent, as asked, and say it was not deleted.
		var u *keptIntent
		if errors.As(err, &u) {
			err = u.cause // the RPC's error alone: finishSnapshot's words say the intent stays
		}
		ferr := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
			if err := tx.Snapshots().DeleteCreate(intent.PluginID, intent.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return tx.Events().Append(&store.Event{Kind: "snapshot-delete", VolumeID: intent.SourceVolumeID, PluginID: intent.PluginID,
				RPC: csi.RPCCreateSnapshot, Message: fmt.Sprintf("snapshot %q forgotten, not deleted: its ID cannot be learned from the plugin (%v)", intent.Name, err)})
		})
		return store.Snapshot{}, errors.Join(fmt.Errorf("snapshot %q forgotten but not deleted: plugin %q has it, and its answer naming it cannot be used (%w); delete it with the storage provider's tools",
			intent.Name, intent.PluginID, err), ferr)
	}
	var cause *csi.Error
	if csi.IsRetryable(err) || ctx.Err() != nil || !errors.As(err, &cause) {
		return store.Snapshot{}, err
	}
	if wasNotSent(err) {
		// Refused before it was sent (another driver behind the socket, the driver's name not
		// learnt): the plugin was asked nothing, and may hold the snapshot. Before, a refusal of
		// a final code read as the plugin's for good, and the intent was forgotten under a
		// "deleted" (TestSnapshotDeleteOfAPendingCreateWhoseDriverCheckFailsKeepsTheIntent), as
		// a volume's delete did (finishCreateForDelete).
		return store.Snapshot{}, fmt.Errorf("snapshot %q stays recorded as being created, and nothing was deleted: CreateSnapshot under its name, the only way to learn its ID, was not sent (%w): "+
			"run the delete again once the registered plugin answers on its socket; if it never will, `%s` forgets it, and whatever the plugin took under the name is left for the storage provider's tools",
			intent.Name, err, shellquote.Command("volctl volume snapshot deregister", intent.PluginID, intent.Name))
	}
	if csi.IsRefusedCredentials(err) {
		// Refused the secrets sent: the plugin did not look the name up, and its listing, sent
		// the same secrets, is refused too. Before, the intent was forgotten, the snapshot the
		// lost CreateSnapshot took left tracked by nothing
		// (TestSnapshotDeleteOfAPendingCreateRefusedCredentialsKeepsTheIntent).
		return store.Snapshot{}, fmt.Errorf("snapshot %q stays recorded as being created, and nothing was deleted: plugin %q refused the secrets sent with CreateSnapshot under its name, "+
			"the only way to learn its ID (%w), so whether the earlier CreateSnapshot, unanswered, made it is not known: run the delete again once the plugin takes the secrets recorded with the create; "+
			"if it never will, `%s` forgets it, and whatever the plugin took under the name is left for the storage provider's tools",
			intent.Name, intent.PluginID, cause, shellquote.Command("volctl volume snapshot deregister", intent.PluginID, intent.Name))
	}
	// Refused for good: by CSI the plugin holds no snapshot under the name (it answers OK for
	// one it made). But a CreateSnapshot under it went unanswered before (the create is
	// recorded), and may have made one that a plugin keeping to CSI less than it says no longer
	// gives: one the plugin lists of the volume that volctl records nothing of keeps the create
	// recorded, and nothing is deleted. Before, it was forgotten under a "deleted", the
	// snapshot left on the storage, tracked by nothing (TestFaultSequencesTimeouts, seed 200290).
	if csi.IsAlreadyExists(err) {
		// finishSnapshot listed the plugin's snapshots for this refusal already, and kept the
		// create where one of the volume's is not recorded (its error says which), or forgot
		// it, the listing showing none.
		var kept bool
		if verr := e.store.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
			_, gerr := tx.Snapshots().GetCreate(intent.PluginID, intent.Name)
			kept = gerr == nil
			return nil
		}); verr == nil && kept {
			return store.Snapshot{}, fmt.Errorf("nothing was deleted: %w", err)
		}
		// Forgotten there: a listing asked again that names one now (a listing that lags a
		// create) is said, with the delete that takes it, and not as a create that "stays
		// recorded" (TestPendingSnapshotDeleteWhoseListingLagsSaysTheCreateForgottenAndNamesTheSnapshot).
	}
	unrecorded, unchecked := e.unrecordedSnapshotsOf(ctx, c, intent)
	forgotten := csi.IsAlreadyExists(err)
	if len(unrecorded) > 0 && !forgotten {
		what, how := unrecordedWords(intent.PluginID, unrecorded)
		return store.Snapshot{}, fmt.Errorf("snapshot %q stays recorded as being created, and nothing was deleted: plugin %q refuses to create it again under its name (%w), "+
			"the only way to learn its ID, and lists %s of volume %q, which volctl records nothing of and the earlier CreateSnapshot under the name, unanswered, may have made: "+
			"%s if it is this one; `%s` forgets this one",
			intent.Name, intent.PluginID, cause, what, intent.SourceVolumeID, how, shellquote.Command("volctl volume snapshot deregister", intent.PluginID, intent.Name))
	}
	checked := "the plugin lists no snapshot of the volume that volctl records nothing of"
	var lagging error
	switch {
	case len(unrecorded) > 0:
		what, how := unrecordedWords(intent.PluginID, unrecorded)
		checked = fmt.Sprintf("its listing showed no snapshot of the volume that volctl records nothing of; asked again, it lists %s", what)
		lagging = fmt.Errorf("snapshot %q was forgotten, and nothing was deleted: plugin %q refuses to create it again under its name (%w), and its listing then showed no snapshot of volume %q "+
			"that volctl records nothing of; asked again, it lists %s, which the earlier CreateSnapshot under the name, unanswered, may have made: %s if it is this one",
			intent.Name, intent.PluginID, cause, intent.SourceVolumeID, what, how)
	case unchecked != "":
		checked = unchecked
	}
	ferr := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if err := tx.Snapshots().DeleteCreate(intent.PluginID, intent.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "snapshot-delete", VolumeID: intent.SourceVolumeID, PluginID: intent.PluginID,
			RPC: csi.RPCCreateSnapshot, Message: fmt.Sprintf("snapshot %q forgotten: the plugin refuses to create it again (%v); %s", intent.Name, cause, checked)})
	})
	if lagging != nil {
		return store.Snapshot{}, errors.Join(lagging, ferr)
	}
	return store.Snapshot{}, ferr
}

// unrecordedSnapshotsOf lists the snapshots of intent's source volume that plugin c lists
// (ListSnapshots, with the source's ID and the intent's secrets; a plugin ignoring that filter
// paged through) and volctl records nothing of, under its plugin or another on its socket: up
// to maxUnrecordedShown of them, the listing stopped there, and within the bounds of a
// check's listing (maxCheckPages, Config.ListTime). unchecked says why the plugin could not be
// asked ("" when it was): it has no LIST_SNAPSHOTS, or the listing failed, ids then being what
// its pages named before it failed. A NOT_FOUND source lists nothing.
func (e *Engine) unrecordedSnapshotsOf(ctx context.Context, c *conn, intent store.SnapshotCreate) (ids []string, unchecked string) {
	if !c.fp.Capabilities.Controller.ListSnapshots {
		return nil, "the plugin cannot list snapshots (no LIST_SNAPSHOTS controller capability), so that could not be checked"
	}
	recorded := map[string]bool{} // the IDs volctl records for the plugin and those on its sockets
	err := e.store.View(ctx, func(tx *store.Tx) error {
		mates, err := socketMates(tx, intent.PluginID)
		for id := range mates {
			var sns []store.Snapshot
			if err == nil {
				sns, err = tx.Snapshots().List(id)
			}
			for _, sn := range sns {
				recorded[sn.SnapshotID] = true
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Sprintf("volctl's records could not be read to check that (%v)", err)
	}
	// A check's bound (ListCheck), not a listing shown's (ListTime): it runs under the source
	// volume's lock, which every claim and release of it waits for
	// (TestPendingSnapshotDeleteListingHasTheChecksTimeBound).
	err = boundList(ctx, e.cfg.ListCheck, "the bound on listing a plugin's snapshots", func(ctx context.Context) error {
		return e.listPages(ctx, c, csi.RPCListSnapshots, maxCheckPages, func(ctx context.Context, token string) (string, bool, error) {
			if token == "" {
				ids = ids[:0] // listed again from the start (listPages)
			}
			page, err := c.client.ListSnapshots(ctx, csi.ListSnapshotsRequest{SourceVolumeID: intent.SourceExternalID, StartingToken: token, Secrets: intent.Secrets})
			if err != nil {
				return "", false, err
			}
			for _, sn := range page.Snapshots {
				// The source spelled otherwise (spec.SameStorageID) is the same: dropped, the
				// snapshot the plugin made was forgotten with the create
				// (TestPendingSnapshotDeleteSeesASnapshotListedUnderItsSourcesOtherSpelling).
				// One listed without a source, answered to a listing asked for the volume's, may be
				// the volume's: dropped, the create was forgotten and the snapshot left tracked by
				// nothing (TestPendingSnapshotDeleteSeesASourcelessEntryOfTheFilteredListing).
				ours := sn.SourceVolumeID == "" || spec.SameStorageID(sn.SourceVolumeID, intent.SourceExternalID)
				if ours && !recorded[sn.ID] && !slices.Contains(ids, sn.ID) && len(ids) < maxUnrecordedShown {
					ids = append(ids, sn.ID)
				}
			}
			return page.NextToken, len(ids) == maxUnrecordedShown, nil
		})
	})
	switch {
	case csi.IsNotFound(err):
		return nil, ""
	case err != nil:
		// What pages named before the listing failed is the plugin's word all the same: dropped,
		// a pending delete forgot the create while the plugin had named the snapshot it made
		// (TestPendingSnapshotDeleteKeepsTheCreateWhenTheListingNamedItsSnapshotBeforeItFailed).
		unchecked = fmt.Sprintf("the plugin's snapshots could not be listed to check that (%v)", err)
	}
	// In one order whatever the plugin's (CSI promises none between calls): the words naming
	// them are how the agent tells a standing problem from a new one, and a plugin listing from
	// a map made the same kept create a new warning every pass
	// (TestAgentLogsAKeptSnapshotCreateOnceWhateverOrderThePluginListsIn).
	slices.Sort(ids)
	return ids, unchecked
}

// unrecordedWords names snapshots ids of plugin pluginID that volctl records nothing of, and the
// delete that takes one away.
func unrecordedWords(pluginID string, ids []string) (what, how string) {
	if len(ids) == 1 {
		return fmt.Sprintf("snapshot %q", spec.Cut(ids[0], 256)), fmt.Sprintf("`%s` deletes it", shellquote.Command("volctl volume snapshot delete", pluginID, ids[0]))
	}
	return "snapshots " + listSome(ids, maxUnrecordedShown, func(id string) string { return fmt.Sprintf("%q", spec.Cut(id, 256)) }),
		fmt.Sprintf("`%s` deletes one", shellquote.Command("volctl volume snapshot delete", pluginID, "SNAPSHOT_ID"))
}

// maxUnrecordedShown is how many snapshots volctl records nothing of unrecordedSnapshotsOf
// gathers: one is enough to keep a create, a few say what the plugin holds.
const maxUnrecordedShown = 5

// reconcileSnapshots finishes the snapshots whose creation was cut short.
func (e *Engine) reconcileSnapshots(ctx context.Context, rep *ReconcileReport) {
	var intents []store.SnapshotCreate
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		intents, err = tx.Snapshots().ListCreates("")
		return err
	}); err != nil {
		rep.problem("", "", fmt.Errorf("snapshots being created: %w", err))
		return
	}
	for _, in := range intents {
		var rec store.Snapshot
		ctx := onVolume(ctx, cmp.Or(in.SourceVolumeID, "snapshot "+in.Name))
		err := func() error {
			var hold *volumeHold
			if in.SourceVolumeID != "" {
				var err error
				if hold, err = e.locks.holdVolume(ctx, in.SourceVolumeID); err != nil {
					return err
				}
				defer hold.release()
			}
			// Another volctl may have finished it meanwhile.
			if err := e.store.View(ctx, func(tx *store.Tx) error {
				var err error
				in, err = tx.Snapshots().GetCreate(in.PluginID, in.Name)
				return err
			}); err != nil {
				return err
			}
			c, err := e.snapshotConn(ctx, in.PluginID, in.Reach)
			if err != nil {
				return err
			}
			defer e.done(c)
			if err := canSnapshotRecorded(c, "create snapshots", in.Name, true); err != nil {
				return err
			}
			rec, _, err = e.finishSnapshot(ctx, c, hold, in, true)
			return err
		}()
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			// The volume named too: a problem is shown as its message alone ("Problem: ...").
			rep.problem(in.SourceVolumeID, "", fmt.Errorf("snapshot %q of volume %q (plugin %q): %w", in.Name, in.SourceVolumeID, in.PluginID, err))
		default:
			rep.did("snapshotted", in.SourceVolumeID, "", "snapshot %q (%s) of volume %q created (interrupted earlier)",
				rec.SnapshotID, in.Name, in.SourceVolumeID)
		}
	}
}

// reconcileSnapshotDeletes finishes the snapshot deletes recorded (snapshot_deletes) and cut
// short, killed or unanswered, as an interrupted volume delete is finished: DeleteSnapshot sent
// again, and the record and the recorded delete forgotten once the plugin answers OK or
// NOT_FOUND and no longer lists it, or the recorded delete alone once the plugin refuses for
// good or still lists it (deleteSnapshotStored). Before, it stayed until the user ran the
// delete again, and every restore from the snapshot was refused meanwhile
// (TestReconcileFinishesARecordedSnapshotDelete).
func (e *Engine) reconcileSnapshotDeletes(ctx context.Context, rep *ReconcileReport) {
	var dels []store.SnapshotDelete
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		dels, err = tx.Snapshots().ListDeleting()
		return err
	}); err != nil {
		rep.problem("", "", fmt.Errorf("snapshots being deleted: %w", err))
		return
	}
	for _, d := range dels {
		subject := "snapshot\x00" + d.PluginID + "\x00" + d.SnapshotID
		err := e.deleteSnapshotStored(onVolume(ctx, "snapshot "+d.SnapshotID), d.PluginID, d.SnapshotID, nil, finishingDelete, nil)
		switch {
		case errors.Is(err, errNoDeleteToFinish): // another volctl finished it meanwhile
		case err != nil && !e.deleteRecorded(ctx, d):
			rep.problemAbout(subject, err) // nothing left to forget: a create recorded the ID again meanwhile
		case csi.IsRefusedCredentials(err):
			// Reconcile sends the source volume's secrets, or none: never the --secret a delete
			// was given, which volctl keeps nowhere. The way out is that delete again, with them
			// (TestReconcileAdvisesTheSnapshotDeleteWithItsSecrets).
			rep.problemAbout(subject, fmt.Errorf("%w (volctl keeps no secret a delete was given, and reconcile sent none of them: "+
				"`%s` (or --secret-file KEY=FILE) sends the delete again with the secrets the plugin needs; "+
				"`%s` forgets the delete and leaves the snapshot)", err,
				// The flag in the command's own words: written after it, a snapshot ID starting
				// with "-" (which follows "--") made --secret two more arguments, refused
				// (TestSnapshotDeleteWithSecretsAdviceRunsForADashedID).
				shellquote.CommandFlags("volctl volume snapshot delete", []string{d.PluginID, d.SnapshotID}, shellquote.Flag("--secret", "KEY=VALUE")),
				shellquote.Command("volctl volume snapshot deregister", d.PluginID, d.SnapshotID)))
		case errors.As(err, new(snapshotCapabilityLost)):
			rep.problemAbout(subject, err) // it names the deregister already
		case err != nil:
			rep.problemAbout(subject, fmt.Errorf("%w (`%s` forgets the delete and leaves the snapshot)", err,
				shellquote.Command("volctl volume snapshot deregister", d.PluginID, d.SnapshotID)))
		default:
			rep.did("deleted", "", "", "snapshot %q of plugin %q deleted (interrupted earlier)", d.SnapshotID, d.PluginID)
		}
	}
}

// deleteRecorded says whether snapshot delete d is still recorded; true when that cannot be read.
func (e *Engine) deleteRecorded(ctx context.Context, d store.SnapshotDelete) bool {
	marked, err := viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) { return tx.Snapshots().Deleting(d.PluginID, d.SnapshotID) })
	return marked || err != nil
}

// ListSnapshots lists the snapshots of one plugin, or of every registered plugin when pluginID
// is empty. A plugin with LIST_SNAPSHOTS is asked (with secrets, when not nil, else with its
// volumes' recorded secrets when they agree: pluginVolumeSecrets), and its answer
// is merged with volctl's records (which add the CSI name, the source's volctl ID and the
// parameters); for a plugin without it, or one that cannot be reached, volctl's records are
// shown and a warning says so. Snapshots still being created are listed as pending.
func (e *Engine) ListSnapshots(ctx context.Context, pluginID string, secrets spec.Secrets) (SnapshotList, error) {
	return byStoredID(ctx, e, store.PluginIDs, pluginID, func(id string) (SnapshotList, error) { return e.listSnapshotsStored(ctx, id, secrets) })
}

// listSnapshotsStored is ListSnapshots of the ID as stored (byStoredID).
func (e *Engine) listSnapshotsStored(ctx context.Context, pluginID string, secrets spec.Secrets) (SnapshotList, error) {
	out := SnapshotList{Snapshots: []SnapshotInfo{}, Warnings: []string{}}
	var (
		plugins []store.Plugin
		records []store.Snapshot
		intents []store.SnapshotCreate
		vols    []store.Volume
		mates   map[string][]store.Snapshot
		deletes []store.SnapshotDelete
	)
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if deletes, err = tx.Snapshots().ListDeleting(); err != nil {
			return err
		}
		// A plugin deregistered with --force keeps its snapshots' records, listed as the
		// unfiltered listing lists them (below); not found only with none (before, refused
		// as not registered: `snapshot list --plugin ID`, the way to find them to delete,
		// showed none, TestSnapshotListOfAForceDeregisteredPluginShowsItsRecords).
		gone := false
		if plugins, err = oneOrAll(pluginID, tx.Plugins().Get, tx.Plugins().List); errors.Is(err, store.ErrNotFound) && pluginID != "" {
			plugins, gone = nil, true
		} else if err != nil {
			return err
		}
		if records, err = tx.Snapshots().List(pluginID); err != nil {
			return err
		}
		if intents, err = tx.Snapshots().ListCreates(pluginID); err != nil {
			return err
		}
		if gone && len(records) == 0 && len(intents) == 0 {
			return store.ErrNotFound
		}
		if vols, err = tx.Volumes().List(store.VolumeFilter{PluginID: pluginID}); err != nil {
			return err
		}
		mates, err = matesRecords(tx, plugins, records, pluginID == "")
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return out, notFoundf("list snapshots: plugin %q is not registered", pluginID)
	}
	if err != nil {
		return out, fmt.Errorf("list snapshots: %w", err)
	}
	byPlugin := map[string][]store.Snapshot{}
	for _, r := range records {
		byPlugin[r.PluginID] = append(byPlugin[r.PluginID], r)
	}
	// A snapshot the plugin reports names its source by external ID; volctl's ID is more useful.
	volumeOf := map[[2]string]string{}
	for _, v := range vols {
		if v.ExternalID != "" {
			volumeOf[[2]string{v.PluginID, v.ExternalID}] = v.ID
		}
	}

	for _, p := range plugins {
		recs := byPlugin[p.ID]
		delete(byPlugin, p.ID)
		sec := secrets
		if sec == nil {
			var warning string
			if sec, warning = pluginVolumeSecrets(p.ID, vols); warning != "" {
				out.Warnings = append(out.Warnings, warning)
			}
		}
		listed, why := e.listPluginSnapshots(ctx, p, pluginID != "" || len(recs) > 0, sec)
		listed, left := withoutOversizedIDs(p.ID, listed)
		if left != "" {
			out.Warnings = append(out.Warnings, left)
		}
		if why != "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("plugin %q: %s: showing volctl's records only", p.ID, why))
		}
		out.Snapshots = append(out.Snapshots, mergeSnapshots(p.ID, listed, recs, mates[p.ID], why == "", volumeOf)...)
	}
	// Records of plugins no longer registered (deregistered with --force).
	for _, id := range slices.Sorted(maps.Keys(byPlugin)) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("plugin %q is not registered: showing volctl's records only", id))
		out.Snapshots = append(out.Snapshots, mergeSnapshots(id, nil, byPlugin[id], nil, false, volumeOf)...)
	}
	for _, in := range intents {
		out.Snapshots = append(out.Snapshots, SnapshotInfo{PluginID: in.PluginID, Name: in.Name, SourceVolumeID: in.SourceVolumeID,
			SourceExternalID: in.SourceExternalID, CreatedAt: in.CreatedAt, Parameters: maps.Clone(in.Parameters),
			Recorded: true, Pending: true})
	}
	if err := markSourcesGone(ctx, e, out.Snapshots); err != nil {
		return out, err
	}
	deleting := make(map[[2]string]bool, len(deletes))
	for _, d := range deletes {
		deleting[[2]string{d.PluginID, d.SnapshotID}] = true
	}
	for i, s := range out.Snapshots {
		// A snapshot recorded through another ID on its plugin's socket is deleted, and its
		// delete recorded, through that ID.
		out.Snapshots[i].Deleting = s.ID != "" && (deleting[[2]string{s.PluginID, s.ID}] || s.RecordedBy != "" && deleting[[2]string{s.RecordedBy, s.ID}])
	}
	sort.SliceStable(out.Snapshots, func(i, j int) bool {
		a, b := out.Snapshots[i], out.Snapshots[j]
		if a.PluginID != b.PluginID {
			return a.PluginID < b.PluginID
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	})
	return out, nil
}

// markSourcesGone sets SourceGone on each of snaps whose recorded source volume volctl no longer
// records as that storage: one read of each distinct source. A source recorded without an
// external ID yet (being created) is taken as it.
func markSourcesGone(ctx context.Context, e *Engine, snaps []SnapshotInfo) error {
	type source struct {
		recorded bool
		external string
	}
	return e.store.View(ctx, func(tx *store.Tx) error {
		sources := map[string]source{}
		for i, s := range snaps {
			if s.SourceVolumeID == "" {
				continue
			}
			src, seen := sources[s.SourceVolumeID]
			if !seen {
				v, err := tx.Volumes().Get(s.SourceVolumeID)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				src = source{recorded: err == nil, external: v.ExternalID}
				sources[s.SourceVolumeID] = src
			}
			// Listed in another spelling of the same storage ID (spec.SameStorageID: a plugin
			// that reads IDs so), the source is the one recorded, not gone
			// (TestSnapshotListedWithAnotherSourceSpellingIsNotSourceGone).
			other := src.external != "" && s.SourceExternalID != "" && !spec.SameStorageID(src.external, s.SourceExternalID)
			snaps[i].SourceGone = !src.recorded || other
		}
		return nil
	})
}

// pluginVolumeSecrets is what ListSnapshots sends a plugin when no secrets are given: the
// secrets its volumes were recorded with, when they all carry the same ones (one credential for
// the plugin, the usual case). When they differ, none are sent and the warning says so.
func pluginVolumeSecrets(pluginID string, vols []store.Volume) (spec.Secrets, string) {
	var (
		found spec.Secrets
		from  string
	)
	for _, v := range vols {
		if v.PluginID != pluginID || len(v.Secrets) == 0 {
			continue
		}
		if found == nil {
			found, from = v.Secrets, v.ID
			continue
		}
		if !maps.Equal(found.Plain(), v.Secrets.Plain()) {
			return nil, fmt.Sprintf("plugin %q: volumes %q and %q have different secrets, so none were sent with ListSnapshots (pass --secret)",
				pluginID, from, v.ID)
		}
	}
	return found, ""
}

// listPluginSnapshots pages through a plugin's ListSnapshots. why is non-empty when the plugin
// was not (fully) listed; a plugin without a controller service is skipped quietly unless
// the caller cares about it (it was named, or volctl has records of it).
func (e *Engine) listPluginSnapshots(ctx context.Context, p store.Plugin, cares bool, secrets spec.Secrets) (snaps []csi.Snapshot, why string) {
	// Not recorded: listing is a read, and must not wait behind another process's write for a
	// fingerprint that is only shown (the next connection that writes records it).
	c, err := e.connectPlugin(ctx, p, false)
	if err != nil {
		return nil, err.Error()
	}
	defer e.done(c)
	switch {
	case !c.fp.Controller && !cares:
		return nil, ""
	case !c.fp.Controller || !c.fp.Capabilities.Controller.ListSnapshots:
		return nil, "cannot list snapshots (no LIST_SNAPSHOTS controller capability)"
	}
	// The controller lock in turns (controllerTurns), not for the whole listing: a plugin that
	// pages slowly would hold every create, delete and publish of it for as long.
	turns := &controllerTurns{e: e, c: c}
	defer turns.release()
	// And in time (Config.ListTime): a plugin that pages without end, slowly and with a fresh
	// token each time, is stopped neither by a repeated token nor, for hours, by maxListPages.
	// And in memory (Config.ListMemory): one that answers every page full, fast, would fill the
	// host's memory before either bound.
	held, pages := 0, 0
	err = boundList(ctx, e.cfg.ListTime, "the bound on listing a plugin's snapshots", func(ctx context.Context) error {
		return e.listPages(ctx, c, csi.RPCListSnapshots, maxListPages, func(ctx context.Context, token string) (string, bool, error) {
			if token == "" {
				snaps, held, pages = snaps[:0], 0, 0 // listed again from the start (listPages)
			}
			var page csi.ListSnapshotsResponse
			if err := turns.call(ctx, func(ctx context.Context) error {
				var err error
				page, err = c.client.ListSnapshots(ctx, csi.ListSnapshotsRequest{StartingToken: token, Secrets: secrets})
				e.failpoint("rpc:ListSnapshots")
				return err
			}); err != nil {
				return "", false, err
			}
			pages++
			if held += listedSize(page.Snapshots); held > e.cfg.ListMemory {
				return "", false, fmt.Errorf("%s: the plugin's listing passed %d bytes (%d snapshots in %d pages), "+
					"the bound on what volctl holds of one listing (a plugin paging without end, or listing far more "+
					"snapshots than one host's volumes make): list them with the plugin's own tools",
					csi.RPCListSnapshots, e.cfg.ListMemory, len(snaps)+len(page.Snapshots), pages)
			}
			snaps = append(snaps, page.Snapshots...)
			return page.NextToken, false, nil
		})
	})
	if err != nil {
		return nil, err.Error()
	}
	return snaps, ""
}

// withoutOversizedIDs leaves out of a plugin's listing the snapshots it names by an ID past
// csi.MaxObjectID, and says how many it left out and how large their IDs are (warning; "" when
// none). No such snapshot is volctl's (a create answered with one is refused), and one could
// neither be read in a table nor given to snapshot delete: before, `snapshot list` printed a row
// a megabyte wide, padding every other row to it. A snapshot whose source volume it names so is
// listed without that source, and said to be: before, it was left out too, and one volctl had
// recorded was then shown missing from the plugin's complete listing, though listed
// (TestRecordedSnapshotListedWithAnOversizedSourceIsNotMissing).
func withoutOversizedIDs(pluginID string, listed []csi.Snapshot) (kept []csi.Snapshot, warning string) {
	left, largest, unsourced, largestSource := 0, 0, 0, 0
	kept = slices.DeleteFunc(listed, func(s csi.Snapshot) bool {
		if len(s.ID) > csi.MaxObjectID {
			left, largest = left+1, max(largest, len(s.ID))
			return true
		}
		return false
	})
	for i := range kept {
		if n := len(kept[i].SourceVolumeID); n > csi.MaxObjectID {
			kept[i].SourceVolumeID = ""
			unsourced, largestSource = unsourced+1, max(largestSource, n)
		}
	}
	var warnings []string
	if left > 0 {
		warnings = append(warnings, fmt.Sprintf("plugin %q listed %s with a snapshot ID of up to %d bytes, past the %d volctl takes (the CSI spec says 128): "+
			"not shown (no snapshot volctl made has one; list them with the plugin's own tools)",
			pluginID, snapshotCount(left), largest, csi.MaxObjectID))
	}
	if unsourced > 0 {
		warnings = append(warnings, fmt.Sprintf("plugin %q listed %s naming the source volume by an ID of up to %d bytes, past the %d volctl takes: "+
			"shown without that source (a snapshot volctl made shows the source it recorded)",
			pluginID, snapshotCount(unsourced), largestSource, csi.MaxObjectID))
	}
	return kept, strings.Join(warnings, "; ")
}

// snapshotCount is "1 snapshot", "2 snapshots".
func snapshotCount(n int) string {
	if n == 1 {
		return "1 snapshot"
	}
	return fmt.Sprintf("%d snapshots", n)
}

// matesRecords returns, for each plugin listed, the snapshots recorded through the other plugin
// IDs registered on one of its sockets (socketMates): one process, one storage, whose listing
// under either ID holds the snapshots recorded through both. recs are the records read already,
// every plugin's when all is set; a mate's are read here otherwise.
func matesRecords(tx *store.Tx, plugins []store.Plugin, recs []store.Snapshot, all bool) (map[string][]store.Snapshot, error) {
	read := map[string][]store.Snapshot{}
	for _, r := range recs {
		read[r.PluginID] = append(read[r.PluginID], r)
	}
	out := map[string][]store.Snapshot{}
	for _, p := range plugins {
		mates, err := socketMates(tx, p.ID)
		if err != nil {
			return nil, err
		}
		for _, id := range slices.Sorted(maps.Keys(mates)) {
			if id == p.ID {
				continue
			}
			theirs, ok := read[id]
			if !ok && !all {
				if theirs, err = tx.Snapshots().List(id); err != nil {
					return nil, err
				}
				read[id] = theirs
			}
			out[p.ID] = append(out[p.ID], theirs...)
		}
	}
	return out, nil
}

// mergeSnapshots joins what a plugin listed with volctl's records of its snapshots. When the
// plugin was listed (complete), a record it did not report is marked missing. A snapshot it
// listed that a socket mate records (matesRecs) is not this ID's, and says whose it is.
func mergeSnapshots(pluginID string, listed []csi.Snapshot, recs, matesRecs []store.Snapshot, complete bool, volumeOf map[[2]string]string) []SnapshotInfo {
	byID := map[string]store.Snapshot{}
	for _, r := range recs {
		byID[r.SnapshotID] = r
	}
	ofMate := map[string]store.Snapshot{}
	for _, r := range matesRecs {
		if _, ok := ofMate[r.SnapshotID]; !ok {
			ofMate[r.SnapshotID] = r
		}
	}
	out := make([]SnapshotInfo, 0, len(listed)+len(recs))
	at := map[string]int{}        // where in out each listed snapshot is
	replaced := map[string]bool{} // recorded IDs listed as another source's snapshot
	for _, s := range listed {
		if i, seen := at[s.ID]; seen {
			// A plugin paging while snapshots come and go may repeat one. One entry saying it
			// is not ready makes it not ready, as the restore's check reads such a listing
			// (findsSnapshot): before, the first entry was shown, ready, and the listing a
			// restore refused as not ready advises showed the snapshot ready
			// (TestSnapshotListingThatDisagreesWithItselfShowsItNotReady).
			if !s.ReadyToUse {
				out[i].ReadyToUse = false
			}
			continue
		}
		at[s.ID] = len(out)
		info := SnapshotInfo{PluginID: pluginID, ID: s.ID, SourceExternalID: s.SourceVolumeID,
			SizeBytes: s.SizeBytes, ReadyToUse: s.ReadyToUse, CreatedAt: s.CreatedAt, Listed: true,
			SourceVolumeID: volumeOf[[2]string{pluginID, s.SourceVolumeID}]}
		if r, ok := byID[s.ID]; ok && ofAnotherSource(s, r) {
			// Listed under the recorded ID as a snapshot of another source: not the one recorded
			// (a plugin that derives IDs from names gave a gone one's ID to another's), shown as
			// the plugin's own beside the record, which is missing; before, web's snapshot was
			// shown as db's, "db (gone)", and db's backup as there
			// (TestSnapshotListDoesNotGiveARecordToAnotherVolumesSnapshotUnderItsID).
			replaced[s.ID] = true
		} else if ok {
			info.Recorded, info.Name, info.Parameters = true, r.Name, maps.Clone(r.Parameters)
			if info.SourceVolumeID == "" {
				info.SourceVolumeID = r.SourceVolumeID
			}
			if info.CreatedAt.IsZero() {
				info.CreatedAt = r.CreatedAt
			}
		} else if r, ok := ofMate[s.ID]; ok {
			info.RecordedBy, info.Name = r.PluginID, r.Name
			if info.SourceVolumeID == "" {
				info.SourceVolumeID = r.SourceVolumeID
			}
		}
		out = append(out, info)
	}
	for _, r := range recs {
		if _, seen := at[r.SnapshotID]; seen && !replaced[r.SnapshotID] {
			continue
		}
		info := snapshotInfo(r)
		info.Missing = complete
		out = append(out, info)
	}
	return out
}

// recordedSource words the source snapshot rec is recorded of: "volume "db"'s storage "vol-1"".
func recordedSource(rec store.Snapshot) string {
	if rec.SourceVolumeID == "" {
		return fmt.Sprintf("storage %q", rec.SourceExternalID)
	}
	return fmt.Sprintf("volume %q's storage %q", rec.SourceVolumeID, rec.SourceExternalID)
}

// ofAnotherSource says whether listed snapshot s, under record r's ID, is of another source
// than the one recorded, as the plugin says (spec.SameStorageID): one listed with no source, or
// a record of none, is taken for the record's.
func ofAnotherSource(s csi.Snapshot, r store.Snapshot) bool {
	return s.SourceVolumeID != "" && r.SourceExternalID != "" && !spec.SameStorageID(s.SourceVolumeID, r.SourceExternalID)
}

func snapshotInfo(r store.Snapshot) SnapshotInfo {
	return SnapshotInfo{
		PluginID: r.PluginID, ID: r.SnapshotID, Name: r.Name, SourceVolumeID: r.SourceVolumeID,
		SourceExternalID: r.SourceExternalID, SizeBytes: r.SizeBytes, ReadyToUse: r.ReadyToUse,
		CreatedAt: r.CreatedAt, Parameters: maps.Clone(r.Parameters), Recorded: true,
	}
}

// DeregisterSnapshot forgets volctl's record of a snapshot without sending anything to its
// plugin: the way out for a snapshot the plugin keeps listing after answering DeleteSnapshot
// OK (DeleteSnapshot keeps its record then), as `volume deregister` is for a volume. snapshotID
// may also be the name of a snapshot still being created (pending): its intent is forgotten,
// and reconcile no longer finishes it. The snapshot itself, if the plugin has it, is left as it
// is: the returned warnings say so, naming it, and so does the event, so that nothing is lost
// without a word (it is left to the storage provider's tools). The source volume's lock is
// held, as a create and reconcile finishing one hold it.
func (e *Engine) DeregisterSnapshot(ctx context.Context, pluginID, snapshotID string) (warnings []string, err error) {
	return e.deregisterSnapshotNamed(ctx, pluginID, snapshotID, byIDOrName)
}

// DeregisterSnapshotByID is DeregisterSnapshot of snapshotID taken as an ID only, never a
// NAME (`snapshot deregister --id`), as DeleteSnapshotByIDNoted.
func (e *Engine) DeregisterSnapshotByID(ctx context.Context, pluginID, snapshotID string) (warnings []string, err error) {
	return e.deregisterSnapshotNamed(ctx, pluginID, snapshotID, byIDOnly)
}

func (e *Engine) deregisterSnapshotNamed(ctx context.Context, pluginID, snapshotID string, how snapshotWord) (warnings []string, err error) {
	return byStoredID(ctx, e, store.PluginIDs, pluginID, func(id string) ([]string, error) {
		return e.deregisterSnapshotStored(ctx, id, snapshotID, how)
	})
}

// snapshotEndedHere says when and how the event log last recorded the end of plugin pluginID's
// snapshot named by id (its ID or NAME): deleted or deregistered, as endedHere says it of a
// volume. Three deregisters of one snapshot at once: the two that read after the first's
// commit never saw it, and said only that volctl had no record of it, as of a mistyped ID
// (TestSnapshotDeregisteredHereIsSaidToBe). Up to 500 of each kind's events of the plugin are
// read, newest first: an error path's cost.
func (e *Engine) snapshotEndedHere(ctx context.Context, pluginID, id string) string {
	filters, match := snapshotEndings(id, pluginID)
	return e.lastEnding(ctx, filters, 500, match)
}

// snapshotEndings are the event filters and the match of the events that ended the record of
// snapshot id through any of pluginIDs: its delete or its deregister.
func snapshotEndings(id string, pluginIDs ...string) ([]store.EventFilter, func(store.Event) bool) {
	quoted, named := fmt.Sprintf("%q", id), "("+id+")"
	var filters []store.EventFilter
	for _, p := range pluginIDs {
		filters = append(filters, store.EventFilter{Kind: "snapshot-delete", PluginID: p}, store.EventFilter{Kind: "snapshot-deregister", PluginID: p})
	}
	return filters, func(ev store.Event) bool {
		return (strings.Contains(ev.Message, quoted) || strings.Contains(ev.Message, named)) && !strings.HasPrefix(ev.Message, "delete answered, record kept")
	}
}

// deregisterSnapshotStored is DeregisterSnapshot of the ID as stored (byStoredID), the word
// taken as how says (byIDOrName or byIDOnly).
func (e *Engine) deregisterSnapshotStored(ctx context.Context, pluginID, snapshotID string, how snapshotWord) (warnings []string, err error) {
	given := snapshotID // its ID, or the NAME of a pending or recorded one
	fail := func(err error) ([]string, error) {
		return nil, fmt.Errorf("deregister snapshot %q of plugin %q: %w", given, pluginID, err)
	}
	if snapshotID == "" {
		return fail(invalidf("the snapshot ID is empty"))
	}
	// The record or intent, first without a lock, to learn which volume's lock to take.
	source := func(tx *store.Tx) (volumeID string, err error) {
		rec, err := tx.Snapshots().Get(pluginID, snapshotID)
		if err == nil && how == byIDOrName {
			err = snapshotWordNamesTwo(tx, pluginID, rec, "deregister")
		}
		if err == nil {
			return rec.SourceVolumeID, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		if how == byIDOnly {
			// No NAME looked up: a recorded delete of the ID alone is one to forget.
			if marked, merr := tx.Snapshots().Deleting(pluginID, snapshotID); merr != nil || marked {
				return "", merr
			}
			return "", store.ErrNotFound
		}
		in, err := tx.Snapshots().GetCreate(pluginID, snapshotID)
		if errors.Is(err, store.ErrNotFound) {
			if marked, merr := tx.Snapshots().Deleting(pluginID, snapshotID); merr != nil || marked {
				return "", merr // a recorded delete alone: deregister forgets it
			}
			// A recorded snapshot named by its NAME, as delete finds one (the usage's
			// SNAPSHOT_ID|NAME, and `snapshot list`'s NAME column): it said "volctl has no
			// record of it" of a snapshot listed under that name
			// (TestSnapshotDeregisterByNameOfARecordedSnapshot).
			if rec, named, nerr := recordByName(tx, pluginID, snapshotID); nerr != nil || named {
				snapshotID = rec.SnapshotID
				return rec.SourceVolumeID, nerr
			}
		}
		return in.SourceVolumeID, err
	}
	volumeID, err := viewOne(ctx, e.store, source)
	if errors.Is(err, store.ErrNotFound) {
		nf := notFoundf("volctl has no record of it (`%s` lists those it has)", "volctl volume snapshot list "+shellquote.Flag("--plugin", pluginID))
		if ended := e.snapshotEndedHere(ctx, pluginID, snapshotID); ended != "" {
			return fail(&hereNotFound{err: fmt.Errorf("%w; %s", nf, ended)})
		}
		return fail(nf)
	}
	if err != nil {
		return fail(err)
	}
	if volumeID != "" {
		unlock, err := e.locks.volume(ctx, volumeID)
		if err != nil {
			return fail(err)
		}
		defer unlock()
	}
	// Reconcile finishing a recorded delete holds it across its DeleteSnapshot: told the
	// snapshot is left, the user must not have it deleted by a delete in flight.
	unlockSnap, err := e.locks.snapshot(ctx, pluginID, snapshotID)
	if err != nil {
		return fail(err)
	}
	defer unlockSnap()
	e.failpoint("snapshot:deregistering") // the snapshot's lock taken, nothing forgotten yet
	var warning string
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		// The snapshot's lock file removed since it was taken: another volctl's delete may hold
		// the lock on a new file, its mark recorded and its DeleteSnapshot on its way; wiping
		// that mark and the record would say the snapshot is left while it deletes it
		// (TestSnapshotDeregisterStopsOnALostSnapshotLock). Nothing is forgotten.
		if lost := e.locks.snapshotStillHeld(pluginID, snapshotID); lost != nil {
			return lost
		}
		// A recorded delete of it (one killed or unanswered) is forgotten with it: reconcile,
		// which finishes recorded deletes, would otherwise delete what the user chose to leave.
		marked, err := tx.Snapshots().Deleting(pluginID, snapshotID)
		if err != nil {
			return err
		}
		if err := tx.Snapshots().Undelete(pluginID, snapshotID); err != nil {
			return err
		}
		rec, err := tx.Snapshots().Get(pluginID, snapshotID)
		var msg string
		switch {
		case err == nil:
			if err := tx.Snapshots().Delete(pluginID, snapshotID); err != nil {
				return err
			}
			warning = fmt.Sprintf("snapshot %q of plugin %q is forgotten, not deleted: if the plugin still has it, it stays there; "+
				"delete it with the storage provider's tools", snapshotID, pluginID)
			msg = fmt.Sprintf("snapshot %q (%s) deregistered; its storage was not touched", snapshotID, rec.Name)
			volumeID = rec.SourceVolumeID
		case !errors.Is(err, store.ErrNotFound):
			return err
		default:
			in, err := tx.Snapshots().GetCreate(pluginID, snapshotID)
			if how == byIDOnly && err == nil {
				err = store.ErrNotFound // a pending create's NAME: not what an ID names
			}
			if errors.Is(err, store.ErrNotFound) && marked {
				warning = fmt.Sprintf("the delete of snapshot %q of plugin %q, which volctl does not record, is forgotten unfinished: the plugin may still have it, "+
					"and restores from it are no longer refused", snapshotID, pluginID)
				msg = fmt.Sprintf("recorded delete of snapshot %q forgotten; nothing was sent", snapshotID)
				break
			}
			if err != nil {
				return err
			}
			if err := tx.Snapshots().DeleteCreate(pluginID, snapshotID); err != nil {
				return err
			}
			warning = fmt.Sprintf("snapshot named %q of plugin %q, whose creation was cut short, is forgotten: the plugin may have made it, "+
				"and if so it stays there, unknown to volctl; delete it with the storage provider's tools", snapshotID, pluginID)
			msg = fmt.Sprintf("pending snapshot %q deregistered; what the plugin may have made was not touched", snapshotID)
			volumeID = in.SourceVolumeID
		}
		return tx.Events().Append(&store.Event{Kind: "snapshot-deregister", VolumeID: volumeID, PluginID: pluginID, Message: msg})
	})
	if errors.Is(err, store.ErrNotFound) {
		// Read before the locks, forgotten while this waited for them: not one to look for in
		// another state dir, which a plain "not found" sends the user to (IsGoneMeanwhile).
		return fail(&goneMeanwhile{msg: "volctl has no record of it any more: another volctl deleted or deregistered it while this command waited"})
	}
	if err != nil {
		return fail(err)
	}
	return []string{warning}, nil
}
