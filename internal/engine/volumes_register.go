package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// RegisterVolume records an existing volume of a registered, reachable plugin. With a controller
// service, the plugin must confirm the volume's capabilities first. Registering an ID again
// updates it by Nomad's rules: name, external_id, plugin_id, parameters and topology cannot
// change, capacity can only grow, and an empty context keeps the stored one.
func (e *Engine) RegisterVolume(ctx context.Context, sv spec.Volume) (VolumeInfo, error) {
	info, _, err := e.RegisterVolumeOutcome(ctx, sv)
	return info, err
}

// Registration is what a registration did (SubmitOutcome: Created for a volume registered
// anew), decided under the volume's lock, and, when it updated a volume registered before,
// which of the spec's fields it changed (Changed; "secrets" names them, never their values).
// A registration of the spec the volume is registered with writes nothing and records no event:
// before, each run of the same `volctl volume register` recorded "updated by a new
// registration" and printed "registered" (TestRegisterAgainSaysWhatItDid).
type Registration struct {
	Outcome SubmitOutcome
	Changed []string
}

// RegisterVolumeOutcome is RegisterVolume, and what it did.
func (e *Engine) RegisterVolumeOutcome(ctx context.Context, sv spec.Volume) (VolumeInfo, Registration, error) {
	var r Registration
	info, err := bySpecID(sv.ID, func(id string) (VolumeInfo, error) { sv.ID = id; return e.registerVolume(ctx, sv, &r) })
	return info, r, err
}

// registerVolume is RegisterVolume of the ID as stored (bySpecID), saying what it did in r.
func (e *Engine) registerVolume(ctx context.Context, sv spec.Volume, r *Registration) (VolumeInfo, error) {
	fail := failVolume("register", sv.ID)
	c, unlock, err := e.lockSpecVolume(ctx, &sv)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	if needsControllerHalf(c) {
		return fail(noControllerHalf(store.VolumeFromSpec(sv)))
	}
	// The plugin's validation and the record are two steps, and a volume recording the same
	// storage is locked by its own ID, not this one's: another volctl's delete of it may run
	// between them, deleting the storage this register then recorded as ready, every claim of
	// it failing NotFound (TestRegisterOfAnotherVolumesStorageWhileItIsDeletedRecordsNothing).
	// A volume that recorded the storage before the validation and records it no more after
	// sends the register round again: the plugin is asked once more whether it has it.
	for round := 1; ; round++ {
		info, left, err := e.registerRound(ctx, c, sv, r)
		if left && round < 3 {
			continue
		}
		if err != nil {
			_, err = fail(err)
			return info, err // what a registration recorded despite the error, if it did
		}
		return info, nil
	}
}

// registerRound validates sv through the plugin and records it, under sv's lock. left says
// that a volume recording the same storage when it began, before the validation, records it no
// more (deleted or deregistered by another volctl meanwhile): nothing is recorded, and the
// validation no longer says whether the plugin has the storage.
func (e *Engine) registerRound(ctx context.Context, c *conn, sv spec.Volume, r *Registration) (_ VolumeInfo, left bool, _ error) {
	*r = Registration{Outcome: Created}
	fail := func(err error) (VolumeInfo, bool, error) { return VolumeInfo{}, left, err }
	if node := c.fp.AccessibleTopology; node != nil && sv.TopologyRequest != nil {
		// Recorded as the node spells its keys, as a create's answer is (spelledAsNode): a spec
		// requiring {Zone=a} of a node in {zone=a} is admitted here (keys fold) and went to
		// Nomad as written, placed on no node
		// (TestExportNomadOfARegisteredVolumeWithAFoldedTopologyKeyIsPlaceableByNomad).
		sv.TopologyRequest = spelledTopologyRequest(sv.TopologyRequest, node.Segments)
	}
	recordedBefore, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Volume, error) {
		if err := registersTopology(tx, c, sv); err != nil {
			return nil, err
		}
		return sameStorage(tx, sv.PluginID, sv.ExternalID, sv.ID)
	})
	if err != nil {
		return fail(err)
	}
	if c.fp.Controller {
		volumeContext := sv.Context
		if len(volumeContext) == 0 {
			// Registered again without a context, the stored one is kept (mergeRegistered),
			// and it is the volume's context the plugin validates (CSI: volume_context MUST
			// match the volume's); before, an empty one was sent
			// (TestRegisterAgainWithoutAContextValidatesTheStoredOne).
			old, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(sv.ID) })
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return fail(err)
			}
			volumeContext = old.Context
		}
		err := e.retry(ctx, c, csi.RPCValidateVolumeCapabilities, func(ctx context.Context) error {
			return c.client.ValidateVolumeCapabilities(ctx, csi.ValidateVolumeCapabilitiesRequest{
				VolumeID: sv.ExternalID, VolumeContext: volumeContext, Capabilities: volumeCapabilities(sv),
				Parameters: sv.Parameters, Secrets: sv.Secrets,
			})
		})
		var ce *csi.Error
		if errors.As(err, &ce) && csi.IsDeadlineExceeded(err) {
			// The timeout's hint advises reconcile, which finishes what an operation recorded:
			// a registration records nothing until the plugin validates the volume
			// (TestRegisterValidateTimeoutDoesNotAdviseReconcile).
			ce.Hint = fmt.Sprintf("plugin %q did not answer in time, or reported a timeout of its own, and may still be working: a registration records nothing until the plugin validates the volume, so run the register again", c.plugin.ID)
			if ce.TimedOut {
				// Cut off by its own long timeout, how to raise it, as every other long RPC's
				// hint says: a plugin slower than that failed every register again
				// (TestRegisterValidateTimeoutSaysHowToRaiseTheTimeout).
				ce.Hint += "; " + longTimeoutAdvice(c.plugin, c.timeouts.Long)
			}
		}
		if err != nil {
			return fail(e.nothingRecorded(ctx, err, fmt.Sprintf("volume %q", sv.ID), func(tx *store.Tx) error {
				_, err := tx.Volumes().Get(sv.ID)
				return err
			}))
		}
	}
	// Failed at its node step, the storage grown and the node's step owed (recorded), the
	// registration is recorded all the same, as `volume expand` leaves that debt: before, its
	// error advised only the expand or reconcile that pays it, and followed, both succeeded with
	// the registration's other changes (a capability, mount options) never recorded and nothing
	// saying so (TestRegistrationWhoseNodeStepFailsFinishesAsAdvised).
	var owedOnNode *nodeStepFailed
	grown, err := e.expandRegistered(ctx, c, sv)
	if past := (*grownPastLimit)(nil); errors.As(err, &past) && !errors.As(err, &owedOnNode) {
		// The expansion's size is recorded (the storage has it), the spec's other changes not:
		// said, with what records them. Before, the error blamed the size alone, and the next
		// claim mounted without the mount flag the spec added
		// (TestRegistrationWhoseExpansionWentAboveTheLimitSaysTheRestIsNotRecorded).
		return fail(fmt.Errorf("%w; the registration is not recorded, only the size the plugin grew the volume to: set the spec's capacity_max to at least %s and register it again",
			err, spec.FormatSize(past.answered)))
	}
	if rg := (*refusedForGood)(nil); errors.As(err, &rg) {
		// Refused for good, the record put back: nothing of it pending, whatever an earlier
		// expand left pending; "once that is finished, register again" named that one, and
		// followed, the same refusal came back
		// (TestNodeOnlyRegistrationRefusedBesideAPendingExpansionDoesNotSayItsOwnIsPending).
		return fail(fmt.Errorf("%w; the registration is not recorded: register the spec with a capacity the plugin supports", err))
	}
	if err != nil && !errors.As(err, &owedOnNode) {
		// The expansion left pending (its answer lost, unread or short), which the error's
		// advice finishes: the spec's other changes are not recorded, and that advice, followed,
		// recorded the size alone, nothing saying so
		// (TestRegistrationWhoseExpansionAnswerIsLostFinishesAsAdvised).
		if now, gerr := viewOne(context.WithoutCancel(ctx), e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(sv.ID) }); gerr == nil && now.ExpandMin > 0 {
			return fail(fmt.Errorf("%w; the registration is not recorded, only the expansion it asked, left pending: once that is finished, register the spec again to record the rest", err))
		}
		return fail(err)
	}
	nodeErr := err
	e.failpoint("register:validated") // the plugin validated (and grew) it, nothing recorded yet

	// With the storage grown and recorded, the registration is recorded whatever the command's
	// context does now, as the expansion's record is: interrupted at the node step, it was
	// refused "nothing written", the registration lost and the node step's own error, naming
	// the debt, dropped (TestRegistrationInterruptedAtItsNodeStepIsRecorded).
	wctx := ctx
	if nodeErr != nil {
		wctx = context.WithoutCancel(ctx)
	}
	// Recorded only while the volume's lock is still held, as every other operation's record
	// is: its file removed by hand while the plugin validated let another volctl's delete take
	// a new one, delete the storage and the record, and this register record the volume anew,
	// ready, with its storage gone (TestLockFileDeletedWhileRegisterValidatesRecordsNothing).
	err = e.store.Update(wctx, e.locks.holding(sv.ID, func(tx *store.Tx) error {
		if err := pluginStillRegistered(tx, c); err != nil {
			return err
		}
		old, err := tx.Volumes().Get(sv.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if err := notStoredOtherwise(tx, store.VolumeIDs, sv.ID); err != nil {
				return err
			}
			// One plugin volume under two IDs would let each one's claims ignore the other's
			// access mode: two writers on a single-node-writer volume.
			same, err := sameStorage(tx, sv.PluginID, sv.ExternalID, sv.ID)
			if err != nil {
				return err
			}
			if len(same) == 0 && len(recordedBefore) > 0 {
				left = true
				return conflictf("external ID %q on plugin %q was volume %q's when this register began, and that volume was deleted or deregistered meanwhile (another volctl): "+
					"whether the plugin still has the storage is not known; nothing is recorded: register again",
					sv.ExternalID, sv.PluginID, recordedBefore[0].ID)
			}
			if len(same) > 0 {
				through, err := throughMate(tx, same[0], sv.PluginID)
				if err != nil {
					return err
				}
				cleanup := false
				if same[0].State == store.VolumeDeleting {
					if cleanup, err = tx.Volumes().CreateCleanup(same[0].ID); err != nil {
						return err
					}
				}
				if cleanup {
					// A create's cleanup of an answer volctl could not use (migration 0022): not
					// a delete the user asked for, perhaps never sent, and the storage perhaps
					// another's, the one being registered. "Finish that delete" deleted it
					// (TestRegisterOfStorageACreateCleanupRecordsDoesNotAdviseDeletingIt).
					return conflictf("external ID %q on plugin %q is recorded by volume %q%s as its create's cleanup: an answer its CreateVolume got that volctl could not use, "+
						"marked to be deleted again (its DeleteVolume may not have been sent): if that storage is this spec's (another's, which the plugin answered that create with), "+
						"`%s` forgets the mark and leaves the storage, then register this spec again",
						sv.ExternalID, sv.PluginID, same[0].ID, through, shellquote.Command("volctl volume deregister", same[0].ID))
				}
				if same[0].State == store.VolumeDeleting {
					// Its delete was sent (the plugin still lists it, or the answer was lost):
					// a register of that volume is refused while it is deleting, and the storage
					// may be going. Before, it was advised, and its deregister said to keep the
					// storage (TestRegisterOfStorageBeingDeletedSaysSo).
					return conflictf("external ID %q on plugin %q is volume %q's%s, which is being deleted (its DeleteVolume sent: the plugin may be deleting the storage): "+
						"it is not recorded as volume %q; finish that delete first (`volctl reconcile`, or `%s` again), and register this spec only if the plugin still has the storage after it "+
						"(a delete the plugin keeps refusing: `%s` forgets volume %q and leaves what the plugin has)",
						sv.ExternalID, sv.PluginID, same[0].ID, through, sv.ID, shellquote.Command("volctl volume delete", same[0].ID),
						shellquote.Command("volctl volume deregister", same[0].ID), same[0].ID)
				}
				// With the ways out: the other record updated, or let go for this one
				// (TestRegisterOfStorageAnotherVolumeRecordsNamesTheWayOut).
				return conflictf("external ID %q on plugin %q is already registered as volume %q%s; "+
					"one plugin volume under two IDs would let their claims ignore each other's access mode: "+
					"to change that volume, register the spec with %s; to record the storage as volume %q instead, `%s` first (it keeps the storage), then register this spec again",
					sv.ExternalID, sv.PluginID, same[0].ID, through, asRecorded(same[0], sv), sv.ID, shellquote.Command("volctl volume deregister", same[0].ID))
			}
			v := store.VolumeFromSpec(sv)
			v.State = store.VolumeReady
			if err := tx.Volumes().Insert(&v); err != nil {
				return err
			}
			return tx.Events().Append(&store.Event{Kind: "volume-register", VolumeID: v.ID, PluginID: v.PluginID,
				Message: fmt.Sprintf("volume %q registered (external ID %q)", v.ID, v.ExternalID)})
		case err != nil:
			return err
		}
		if old.State == store.VolumeDeleting {
			cleanup, err := tx.Volumes().CreateCleanup(old.ID)
			if err != nil {
				return err
			}
			if cleanup && spec.SameStorageID(old.ExternalID, sv.ExternalID) {
				// Its own create's cleanup of this very storage (an answer the create could not
				// use): "finish that first" sent DeleteVolume of the storage being registered
				// (TestRegisterOfACreateCleanupsStorageUnderItsOwnIDDoesNotAdviseDeletingIt), as
				// the same storage under another ID was advised before (registerRound, above).
				return conflictf("volume %q records external ID %q on plugin %q as its create's cleanup: an answer its CreateVolume got that volctl could not use, "+
					"marked to be deleted again (its DeleteVolume may not have been sent): to keep that storage as this spec's, `%s` forgets the mark and leaves the storage, then register this spec again",
					old.ID, old.ExternalID, old.PluginID, shellquote.Command("volctl volume deregister", old.ID))
			}
		}
		switch old.State {
		case store.VolumeReady:
		case store.VolumeCreating:
			// Finishing the create makes storage the register does not name, which the
			// deregister the next refusal advised then forgot unsaid, the plugin left holding it
			// (TestRegisterOverAnInterruptedCreateAdviceFollowedLeavesNoStorageUnrecorded).
			return conflictf("volume %q is recorded creating (a `volctl volume create` interrupted before its CreateVolume's answer was recorded): a register does not replace it, "+
				"and `volctl reconcile` would finish that create, making new storage, not %q; to register this spec instead, `%s` forgets the unfinished create "+
				"(saying what it may have made, to delete with the storage provider), then register this spec again",
				old.ID, sv.ExternalID, shellquote.Command("volctl volume deregister", old.ID))
		case store.VolumeDeleting:
			// Finishing the delete sends DeleteVolume of the storage, this one where the spec
			// names it: said, as of the same storage under another ID
			// (TestRegisterOverAnInterruptedDeleteSaysFinishingItDeletesTheStorage).
			return conflictf("volume %q is being deleted (a `volctl volume delete` interrupted after its DeleteVolume was sent: the plugin may be deleting the storage, external ID %q): "+
				"finish that delete first (`volctl reconcile`, or `%s` again), which deletes that storage, and register this spec only if the plugin still has the storage it names after it "+
				"(to keep what the plugin has, `%s` forgets the delete and leaves the storage, then register this spec again)",
				old.ID, old.ExternalID, shellquote.Command("volctl volume delete", old.ID), shellquote.Command("volctl volume deregister", old.ID))
		default:
			return conflictf("volume %q is %s; run `volctl reconcile` to finish that first", old.ID, old.State)
		}
		if err := checkImmutable(old, sv, true); err != nil {
			return err
		}
		if err := refuseCapabilityInUse(tx, old.ID, sv.Capabilities); err != nil {
			return err
		}
		limit, err := pendingLimit(old, sv.CapacityMin, sv.CapacityMax)
		if err != nil {
			return err
		}
		v := mergeRegistered(old, sv)
		changed := registrationChanges(old, sv)
		switch {
		case grown != Unchanged:
			r.Outcome, r.Changed = grown, changed
		case len(changed) > 0 || limitChanges(old, limit):
			r.Outcome, r.Changed = Updated, changed
		default:
			// The spec the volume is registered with: nothing to write.
			r.Outcome = Unchanged
			return nil
		}
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		if limitChanges(old, limit) {
			if err := tx.Volumes().SetExpansionLimit(old.ID, limit); err != nil {
				return err
			}
		}
		msg := fmt.Sprintf("volume %q updated by a new registration", v.ID)
		if len(changed) > 0 {
			msg += " (" + strings.Join(changed, ", ") + ")"
		}
		return tx.Events().Append(&store.Event{Kind: "volume-register", VolumeID: v.ID, PluginID: v.PluginID, Message: msg})
	}))
	if err != nil {
		return fail(errors.Join(err, nodeErr))
	}
	if nodeErr != nil {
		// What is recorded goes back beside the error, for --json to print: a script read an
		// empty list of a registration the error said was recorded
		// (TestRegistrationRecordedDespiteItsNodeStepIsInItsJSON).
		info, _ := e.Volume(context.WithoutCancel(ctx), sv.ID)
		if owedOnNode.controllerDone {
			return info, left, fmt.Errorf("the registration is recorded and the storage grown, but not yet the file system on this node: %w", nodeErr)
		}
		return info, left, fmt.Errorf("the registration is recorded, with its expansion owed (plugin %q expands on the node alone, and that step failed): %w", sv.PluginID, nodeErr)
	}
	info, err := e.Volume(ctx, sv.ID)
	return info, false, err
}

// expandRegistered grows an already registered volume whose re-registration asks for more than
// its known size, when the plugin can expand; otherwise the larger request is only recorded by
// the registration itself. It runs before the registration's update so that the expansion
// compares against the stored size, not the new request.
// It says what it did: Expanded or Sized (expandLockedSaying) when it grew the volume or made
// sure of its size, Unchanged when it did neither.
func (e *Engine) expandRegistered(ctx context.Context, c *conn, sv spec.Volume) (SubmitOutcome, error) {
	var refused bool
	old, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) {
		old, err := tx.Volumes().Get(sv.ID)
		if err != nil {
			return old, err
		}
		// The registration's own checks, made again in its transaction, refuse these: a
		// registration they refuse grows nothing (before, a spec dropping the capability a live
		// claim holds was refused after the storage was grown under that claim,
		// TestRegisterRefusedGrowsNothing).
		_, limitErr := pendingLimit(old, sv.CapacityMin, sv.CapacityMax)
		inUse := refuseCapabilityInUse(tx, old.ID, sv.Capabilities)
		if inUse != nil && !errors.Is(inUse, ErrConflict) {
			return old, inUse
		}
		refused = old.State != store.VolumeReady || checkImmutable(old, sv, true) != nil || limitErr != nil || inUse != nil
		return old, nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Unchanged, nil
	case err != nil:
		return Unchanged, err
	case refused:
		return Unchanged, nil // the registration's own checks report it
	case sv.CapacityMin <= currentSize(old):
		// At the size asked already, with its node step maybe still owed: paid, as the
		// registration asks that size of the file system too.
		withSecrets := old
		withSecrets.Secrets = sv.Secrets
		if paid, err := e.payOwedNodeStep(ctx, c, withSecrets, sv.CapacityMin); err != nil || paid {
			return Expanded, err
		}
		return Unchanged, nil
	case !canExpand(c):
		return Unchanged, nil
	}
	// Sent with the spec's secrets, which the registration records and its capability check
	// sent: registering again is how a rotated credential reaches volctl, and the record's old
	// one, sent here, was refused, failing every such registration that also grows the volume
	// (TestRegisterAgainWithRotatedSecretsExpandsWithThem). The expansion's record keeps them,
	// as the plugin took them.
	if err := e.growsNoCloneSource(ctx, old, sv.CapacityMin); err != nil {
		return Unchanged, err
	}
	grown := old
	grown.Secrets = sv.Secrets
	grew := Unchanged
	if _, err = e.expandLockedSaying(ctx, c, grown, sv.CapacityMin, specLimit(old, sv), &grew); err != nil {
		return Unchanged, err
	}
	return grew, nil
}

// aboveRecordedMax refuses a spec submitted again (verb: "register", "create") for volume old
// whose capacity_min is above old's recorded capacity_max when it gives no capacity_max of its
// own, which keeps the recorded one: the expansion to capacity_min would grow the volume past
// it, as an expand without --limit is refused to (recordedLimit). A size the volume has already
// grows nothing, and is no refusal.
func aboveRecordedMax(old store.Volume, capacityMin, capacityMax int64, verb string) error {
	if capacityMax != 0 || !AboveCapacityMax(old.RequestedMax, currentSize(old), capacityMin) {
		return nil
	}
	return conflictf("volume %q is recorded with a capacity_max of %s, and this spec's capacity_min %s is above it (a spec without capacity_max keeps the recorded one): "+
		"nothing was sent; give a capacity_max of at least %s, then %s it again",
		old.ID, spec.FormatSize(old.RequestedMax), spec.FormatSize(capacityMin), spec.FormatSize(capacityMin), verb)
}

// specLimit is the limit of the expansion a spec submitted again asks of volume old: its
// capacity_max, else the one recorded (aboveRecordedMax refused a capacity_min above it).
// Sent with none, the expansion grew the volume past the capacity_max the record kept.
func specLimit(old store.Volume, sv spec.Volume) int64 {
	if sv.CapacityMax != 0 {
		return sv.CapacityMax
	}
	return old.RequestedMax
}

// canExpand reports whether the plugin has any way to grow a volume.
func canExpand(c *conn) bool {
	return expands(c.fp)
}

// expands reports whether a plugin fingerprinted as fp has an EXPAND_VOLUME capability it can
// use: its controller's, or its node's.
func expands(fp *csi.Fingerprint) bool {
	return (fp.Controller && fp.Capabilities.Controller.ExpandVolume) || (fp.Node && fp.Capabilities.Node.ExpandVolume)
}

// checkImmutable refuses a re-submitted spec that changes what Nomad does not let change.
// External IDs are compared only for registration: a created volume's comes from the plugin.
func checkImmutable(old store.Volume, sv spec.Volume, register bool) error {
	type field struct {
		name     string
		was, now any
		// text: volctl's own names, compared in NFC (sameInNFC), so that what an older volctl
		// stored decomposed is not a change; the stored spelling is kept. The plugin's strings
		// (external and snapshot IDs, parameters, topology) are sent to it and compare as bytes.
		text bool
	}
	fields := []field{
		{"name", old.Name, sv.Name, true},
		{"namespace", old.Namespace, sv.Namespace, true},
		{"plugin_id", old.PluginID, sv.PluginID, true},
		{"parameters", nilIfEmpty(old.Parameters), nilIfEmpty(sv.Parameters), false},
		{"topology_request", topologyOrNil(old.TopologyRequest), topologyOrNil(sv.TopologyRequest), false},
	}
	if register {
		// A register spec holds no preferred topology (a create's placement wish, spent once
		// the volume is made): the required ones are what it can restate. Compared whole, the
		// registration volume create's refusal advises for a volume created with a preferred
		// topology was refused (TestRegisterAdvisedForAVolumeCreatedWithAPreferredTopology).
		fields[4] = field{"topology_request", topologyOrNil(requiredOnly(old.TopologyRequest)), topologyOrNil(sv.TopologyRequest), false}
		fields = append(fields, field{"external_id", old.ExternalID, sv.ExternalID, false})
	} else {
		fields = append(fields,
			field{"snapshot_id", old.SnapshotID, sv.SnapshotID, false},
			field{"clone_id", old.CloneID, sv.CloneID, false})
	}
	advice := "deregister and register it again to change it"
	if !register {
		advice = "a created volume keeps it: delete the volume and create it again to change it"
	}
	for _, f := range fields {
		same := reflect.DeepEqual(f.was, f.now)
		if was, ok := f.was.(*spec.TopologyRequest); ok {
			same = reflect.DeepEqual(keysFolded(was), keysFolded(f.now.(*spec.TopologyRequest)))
		}
		if same || f.text && sameInNFC(f.was.(string), f.now.(string)) {
			continue
		}
		change := fmt.Sprintf("it is %s, the spec says %s", describe(f.was), describe(f.now))
		if was, ok := f.was.(map[string]string); ok {
			change = describeMapChange(was, f.now.(map[string]string))
		}
		if f.name == "namespace" {
			// Deleting a created volume to move it would delete its data: deregistered, it
			// keeps its storage, which a registration by its external ID takes back.
			return conflictf("volume %q: namespace cannot be changed (%s); %s", old.ID, change, spec.MoveNamespace(old.ID))
		}
		return conflictf("volume %q: %s cannot be changed (%s); %s", old.ID, f.name, change, advice)
	}
	if sv.CapacityMin != 0 && sv.CapacityMin < old.RequestedMin {
		return conflictf("volume %q: capacity_min cannot shrink (from %s to %s): volumes never shrink; "+
			"set capacity_min to %s or more in the spec, or leave the volume as it is", old.ID,
			spec.FormatSize(old.RequestedMin), spec.FormatSize(sv.CapacityMin), spec.FormatSize(old.RequestedMin))
	}
	return nil
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "empty"
		}
		return fmt.Sprintf("%q", x)
	case map[string]string:
		if x == nil {
			return "empty"
		}
		keys := sort.StringSlice(slicesFromKeys(x))
		keys.Sort()
		return "{" + strings.Join(keys, ", ") + "}"
	case *spec.TopologyRequest:
		if !hasTopologyRequest(x) {
			return "empty"
		}
		// The topologies themselves: counts alone read the same on both sides of a change
		// of zone (TestTopologyRequestChangeRefusalSaysWhatChanged).
		var parts []string
		if len(x.Required) > 0 {
			parts = append(parts, "required "+formatTopologies(x.Required))
		}
		if len(x.Preferred) > 0 {
			parts = append(parts, "preferred, in order, "+strings.Join(topologyWords(x.Preferred), ", "))
		}
		return strings.Join(parts, "; ")
	}
	return fmt.Sprint(v)
}

// describeMapChange says which keys of a map differ and how, in key order: `kind is "x", the
// spec says "y"; zone is not set, the spec says "a"`.
func describeMapChange(was, now map[string]string) string {
	keys := slicesFromKeys(was)
	for k := range now {
		if _, ok := was[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	value := func(m map[string]string, k string) string {
		if v, ok := m[k]; ok {
			return fmt.Sprintf("%q", v)
		}
		return "not set"
	}
	var parts []string
	for _, k := range keys {
		if a, b := value(was, k), value(now, k); a != b {
			parts = append(parts, fmt.Sprintf("%s is %s, the spec says %s", k, a, b))
		}
	}
	return strings.Join(parts, "; ")
}

func slicesFromKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// requiredOnly is t without its preferred topologies.
func requiredOnly(t *spec.TopologyRequest) *spec.TopologyRequest {
	if t == nil {
		return nil
	}
	return &spec.TopologyRequest{Required: t.Required}
}

// keysFolded is t with its segments' keys in lower case, as checkImmutable compares them: a
// key in another case is the same key to the CSI spec and to volctl's matching, and a
// registration records the node's spelling (registerRound), so the same spec registered again,
// or one recorded before in the spec's spelling, is no change.
func keysFolded(t *spec.TopologyRequest) *spec.TopologyRequest {
	if t == nil {
		return nil
	}
	fold := func(ts []spec.Topology) []spec.Topology {
		if ts == nil {
			return nil
		}
		out := make([]spec.Topology, len(ts))
		for i, x := range ts {
			segs := make(map[string]string, len(x.Segments))
			for k, v := range x.Segments {
				segs[strings.ToLower(k)] = v
			}
			out[i] = spec.Topology{Segments: segs}
		}
		return out
	}
	return &spec.TopologyRequest{Required: fold(t.Required), Preferred: fold(t.Preferred)}
}

func topologyOrNil(t *spec.TopologyRequest) *spec.TopologyRequest {
	if t == nil || (len(t.Required) == 0 && len(t.Preferred) == 0) {
		return nil
	}
	return t
}

// refuseCapabilityInUse refuses a registration again whose capabilities leave out one that a
// live claim of volume id holds, as Nomad refuses it ("not compatible with existing capability
// in use"). Taken, the volume recorded capabilities the plugin had validated without the one
// its claims are published, staged and attached under, and a claim admitted under it without
// the lock, waiting for the registration's to publish, went on to publish under a capability
// the volume no longer had. It is checked in the registration's transaction, which a claim's
// admission either committed before (the claim is seen) or reads after (the new capabilities).
func refuseCapabilityInUse(tx *store.Tx, id string, caps []spec.Capability) error {
	claims, err := tx.Claims().ByVolume(id)
	if err != nil {
		return err
	}
	for _, c := range claims {
		used := spec.Capability{AccessMode: c.AccessMode, AttachmentMode: c.AttachmentMode}
		if slices.Contains(caps, used) {
			continue
		}
		way := wayOut(c)
		if way == "" {
			way = " (once its release is finished)"
		}
		return conflictf("volume %q is in use as %s/%s by %s, and this spec's capabilities (%s) leave that one out: "+
			"keep it in the spec's capabilities, or release the volume's claims first%s, then register it again",
			id, used.AccessMode, used.AttachmentMode, holder(c), describeCapabilities(caps), way)
	}
	return nil
}

// asRecorded words what spec sv must say to register again volume v, which records sv's
// storage: v's ID, and each of the fields a registration cannot change (checkImmutable) where sv
// says otherwise. Advised with the ID alone, the registration of a spec whose storage a socket
// mate's volume, or one of another namespace, records was refused in turn, "plugin_id cannot be
// changed" (TestRegisterOfStorageRecordedThroughASocketMateAdvisesARegistrationThatWorks).
// So were a spec's parameters, required topology and capacity_min below the recorded one, which
// checkImmutable refuses too (TestRegisterOfRecordedStorageAdvisesARegistrationThatKeepsItsImmutableFields).
func asRecorded(v store.Volume, sv spec.Volume) string {
	out := []string{fmt.Sprintf("id = %q", v.ID)}
	for _, f := range []struct{ name, was, now string }{
		{"name", v.Name, sv.Name}, {"namespace", v.Namespace, sv.Namespace}, {"plugin_id", v.PluginID, sv.PluginID},
	} {
		if !sameInNFC(f.was, f.now) {
			out = append(out, fmt.Sprintf("%s = %q", f.name, f.was))
		}
	}
	if was := nilIfEmpty(v.Parameters); !reflect.DeepEqual(was, nilIfEmpty(sv.Parameters)) {
		words := "none"
		if len(was) > 0 {
			words = formatSegments(was)
		}
		out = append(out, fmt.Sprintf("the parameters volume %q is recorded with (%s)", v.ID, words))
	}
	if was := topologyOrNil(requiredOnly(v.TopologyRequest)); !reflect.DeepEqual(was, topologyOrNil(sv.TopologyRequest)) {
		words := "none"
		if was != nil {
			words = "required " + formatTopologies(was.Required)
		}
		out = append(out, fmt.Sprintf("the topology_request volume %q is recorded with (%s)", v.ID, words))
	}
	if sv.CapacityMin != 0 && sv.CapacityMin < v.RequestedMin {
		out = append(out, fmt.Sprintf("capacity_min of at least %s", spec.FormatSize(v.RequestedMin)))
	}
	return strings.Join(out, ", ")
}

// limitChanges says whether limit, a registration's for volume old's pending expansions
// (pendingLimit), is not the limit of each already: of the pending one, or of the one kept
// beneath it. Compared with the pending one's alone, a registration at its limit left the one
// beneath with its own, which its replay then recorded as capacity_max, undoing the
// registration's (TestRegisterCapacityMaxEqualToThePendingLimitBoundsTheOneBeneath).
func limitChanges(old store.Volume, limit int64) bool {
	return limit != old.ExpandMax || old.ExpandBeneathMin > 0 && limit != old.ExpandBeneathMax
}

// pendingLimit is the limit volume old's pending expansion (old.ExpandMin: a ControllerExpandVolume
// sent, its answer not recorded, which the same expand or reconcile sends again with the limit
// recorded with it, and records as the volume's capacity_max) keeps under a registration again
// with capacity_max (0: none): that capacity_max, the registration's word being the later one. A
// capacity_max below the pending size is refused: the plugin may have grown the volume to it
// already, and reconcile finishing it is what says. Before, the registration was taken and the
// pending expansion kept its limit: reconcile sent it again with that, recorded it as the
// volume's capacity_max, undoing the registration's, and grew the volume past the capacity_max
// registered since (TestRegisterLoweringCapacityMaxUnderAPendingExpansion).
//
// A capacity_max below the size the volume has is refused too: a volume does not shrink, and
// taken, the registration recorded a requested range whose minimum was above its maximum, which
// no spec may hold, undoing the limit an expand had set (TestRegisterAgainWithACapacityMaxBelowTheVolumesSize).
// So is one below the capacity_min recorded, which a registration only raises
// (mergeRegistered): a volume whose plugin never gave its size (0) let any capacity_max by,
// and the record held capacity_min 2GiB beside capacity_max 1GiB
// (TestRegisterAgainWithACapacityMaxBelowTheRecordedCapacityMin).
//
// A capacity_min above the capacity_max recorded, the spec giving none (the registration then
// keeps the recorded one), is refused as well: the expansion it asked was sent with no limit,
// grew the volume past its capacity_max, and the record held capacity_min above capacity_max
// (TestRegisterAgainAboveTheRecordedCapacityMaxKeepsTheLimit; aboveRecordedMax).
func pendingLimit(old store.Volume, capacityMin, capacityMax int64) (int64, error) {
	if err := aboveRecordedMax(old, capacityMin, capacityMax, "register"); err != nil {
		return 0, err
	}
	switch {
	case capacityMax != 0 && old.CapacityBytes > capacityMax:
		return 0, conflictf("volume %q is %s, and this spec's capacity_max %s is below it: a volume does not shrink; "+
			"give a capacity_max of at least %s, or leave it out, then register it again",
			old.ID, spec.FormatSize(old.CapacityBytes), spec.FormatSize(capacityMax), spec.FormatSize(old.CapacityBytes))
	case capacityMax != 0 && old.RequestedMin > capacityMax:
		return 0, conflictf("volume %q is recorded with a capacity_min of %s, and this spec's capacity_max %s is below it: a registration again keeps the larger capacity_min; "+
			"give a capacity_max of at least %s, or leave it out, then register it again",
			old.ID, spec.FormatSize(old.RequestedMin), spec.FormatSize(capacityMax), spec.FormatSize(old.RequestedMin))
	case old.ExpandMin <= 0 || capacityMax == 0:
		return old.ExpandMax, nil
	case capacityMax < pendingMost(old):
		return 0, conflictf("volume %q has an expansion to %s pending (ControllerExpandVolume was sent to plugin %q and its answer not recorded: the storage may be that size already), "+
			"and this spec's capacity_max %s is below it: run `volctl reconcile` to finish that expansion first, then register it again",
			old.ID, spec.FormatSize(pendingMost(old)), old.PluginID, spec.FormatSize(capacityMax))
	}
	return capacityMax, nil
}

// registrationChanges names what a registration of sv changes of old, a volume registered
// before, as mergeRegistered applies it: its capabilities, mount options and secrets (as a
// create would refuse to, createChanges), its context when the spec gives one, and the
// capacity it asks for.
func registrationChanges(old store.Volume, sv spec.Volume) []string {
	changed := createChanges(old, sv)
	if len(sv.Context) > 0 && !maps.Equal(old.Context, sv.Context) {
		changed = append(changed, "context")
	}
	if sv.CapacityMin > old.RequestedMin {
		changed = append(changed, "capacity_min")
	}
	if sv.CapacityMax != 0 && sv.CapacityMax != old.RequestedMax {
		changed = append(changed, "capacity_max")
	}
	return changed
}

// mergeRegistered applies a re-registration to the stored volume.
func mergeRegistered(old store.Volume, sv spec.Volume) store.Volume {
	v := old
	v.Capabilities = sv.Capabilities
	v.MountOptions = sv.MountOptions
	v.Secrets = sv.Secrets
	if len(sv.Context) > 0 {
		v.Context = sv.Context
	}
	if sv.CapacityMin > v.RequestedMin {
		v.RequestedMin = sv.CapacityMin
	}
	if sv.CapacityMax != 0 {
		v.RequestedMax = sv.CapacityMax
	}
	return v
}

// failVolume is how a command on one volume fails: the error, prefixed with what it was doing.
// nothingRecorded is err, a registration's failure before it recorded the volume or plugin
// (or sent anything that changes storage), saying so when the caller's context ended it (Ctrl-C, SIGTERM): "register volume "v":
// ValidateVolumeCapabilities: SIGTERM received" alone left the user asking whether the volume
// was registered (TestInterruptedOperationsRecordTheSignal).
//
// what names the record the registration would write ("volume \"v\""), and get reads it: one
// registered already (a registration again, updating it) stays registered as it was, which the
// error says, where it said "nothing is registered" of a volume or plugin that is
// (TestInterruptedReRegisterSaysTheVolumeStaysRegistered). get is asked only once interrupted.
func (e *Engine) nothingRecorded(ctx context.Context, err error, what string, get func(tx *store.Tx) error) error {
	if ctx.Err() == nil {
		return err
	}
	if e.store.View(context.WithoutCancel(ctx), get) == nil {
		return fmt.Errorf("%w (interrupted: nothing is changed, %s stays registered as it was; run the register again)", err, what)
	}
	return fmt.Errorf("%w (interrupted: nothing is registered; run the register again)", err)
}

func failVolume(doing, id string) func(error) (VolumeInfo, error) {
	return func(err error) (VolumeInfo, error) {
		return VolumeInfo{}, fmt.Errorf("%s volume %q: %w", doing, id, err)
	}
}

// lockSpecVolume begins RegisterVolume and CreateVolume: it fills in sv's default namespace,
// takes the volume's lock and connects to its plugin, setting sv's plugin ID as stored. The caller runs unlock when done.
func (e *Engine) lockSpecVolume(ctx context.Context, sv *spec.Volume) (c *conn, unlock func(), err error) {
	if sv.Namespace == "" {
		sv.Namespace = spec.DefaultNamespace
	}
	if unlock, err = e.locks.volume(ctx, sv.ID); err != nil {
		return nil, nil, err
	}
	// The spec's plugin_id (NFC) names a plugin an older volctl stored decomposed too
	// (byStoredID): the volume is recorded with the plugin's ID as stored.
	c, err = byStoredID(ctx, e, store.PluginIDs, sv.PluginID, func(id string) (*conn, error) { return e.connect(ctx, id) })
	if err != nil {
		unlock()
		return nil, nil, err
	}
	sv.PluginID = c.plugin.ID
	unlockVolume := unlock
	return c, func() { e.done(c); unlockVolume() }, nil
}

// pluginStillRegistered refuses, in the transaction that records a volume (register, and a
// create's intent), a plugin deregistered since the command connected to it (c): `plugin
// deregister` from another process checks, in its own transaction, that no volume uses the
// plugin, and a volume recorded after that one would be left on a plugin that is gone, which it
// refuses to leave without --force. It refuses too a plugin registered again meanwhile as
// another plugin: on other sockets, or recorded as another driver (GetPluginInfo's name) than
// the one this command talked to. Nothing refuses that re-registration while no volume uses the
// plugin, and the volume would be recorded as validated (or created) by a driver that is no
// longer the plugin's. It compares the row's identity fields only (its sockets and its driver),
// read by the Get it makes anyway: a probe's health columns, a fingerprint refreshed by a
// restart of the same driver, or a registration again as it was do not trip it.
func pluginStillRegistered(tx *store.Tx, c *conn) error {
	id := c.plugin.ID
	p, err := tx.Plugins().Get(id)
	if errors.Is(err, store.ErrNotFound) {
		return conflictf("plugin %q was deregistered by another volctl meanwhile (register it again, then run this again)", id)
	}
	if err != nil {
		return err
	}
	was, now := pluginSockets(c.plugin), pluginSockets(p)
	driver := ""
	if c.fp != nil {
		driver = c.fp.Provider
	}
	if !slices.Equal(was, now) || (p.Fingerprint.Provider != "" && driver != "" && p.Fingerprint.Provider != driver) {
		return conflictf("plugin %q was registered again by another volctl meanwhile, as driver %q on %s (this command talked to driver %q on %s); "+
			"nothing was recorded: run this again, against the plugin as it is now registered",
			id, p.Fingerprint.Provider, strings.Join(now, ", "), driver, strings.Join(was, ", "))
	}
	return nil
}

// DeregisterVolumeReleasing forgets a volume without touching its storage. It is refused while the volume
// has live claims, naming them; with force, the claims are released first. It is refused too
// while a ControllerUnpublishVolume is owed (the volume is recorded attached with no claim: a
// forced detach could not send it), naming the node and the plugin: forgetting the volume would
// forget the attachment. With force it is sent first, as reconcile sends it, and when the
// plugin still cannot take it the attachment is forgotten, which the returned warnings and the
// event say.
// It says which claims force released first (released, also when the deregistration then
// fails): a forced deregister released an alloc's claim, its mounts gone, and said only that
// the volume was deregistered (TestForcedDeregisterSaysWhichClaimsItReleased).
func (e *Engine) DeregisterVolumeReleasing(ctx context.Context, id string, force bool) (released []ClaimInfo, warnings []string, err error) {
	warnings, err = byStoredID(ctx, e, store.VolumeIDs, id, func(id string) ([]string, error) { return e.deregisterVolumeStored(ctx, id, force, &released) })
	return released, warnings, err
}

// deregisterVolumeStored is DeregisterVolume of the ID as stored (byStoredID), adding to
// released the claims force released.
func (e *Engine) deregisterVolumeStored(ctx context.Context, id string, force bool, released *[]ClaimInfo) (warnings []string, err error) {
	var seen store.VolumeState // the volume's state before this waited for its lock (lockVolumeNoting)
	fail := func(err error) ([]string, error) {
		switch {
		case errors.Is(err, store.ErrNotFound) && seen != "":
			err = goneWhileWaiting(id, seen, "there is nothing to deregister")
		case errors.Is(err, store.ErrNotFound):
			return nil, notFoundf("deregister volume %q: not found", id)
		}
		return nil, fmt.Errorf("deregister volume %q: %w", id, err)
	}
	if force {
		// A volume handed over to Nomad is refused before anything is released: its refusal is
		// the record's alone, and before, --force released the live claims through the plugin
		// (their allocs' mounts gone) and was refused after, deregistering nothing
		// (TestForcedDeregisterOfAHandedOverVolumeReleasesNothing). The transaction below asks
		// again, under the lock.
		if err := e.store.View(ctx, func(tx *store.Tx) error { return refuseHandedOver(tx, id) }); err != nil {
			return fail(err)
		}
		res, err := e.releaseEvery(ctx, id)
		*released = append(*released, res.Released...)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fail(err)
		}
		e.failpoint("deregister:detached") // its claims released, the volume's lock not taken yet
	}
	unlock, seen, err := e.lockVolumeNoting(ctx, id)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	var unsent error // why the owed ControllerUnpublishVolume could not be sent (force)
	if force {
		if unsent, err = e.sendOwedUnpublish(ctx, id); err != nil {
			return fail(err)
		}
	}
	if !force {
		e.refreshForOwed(ctx, id)
	}
	e.failpoint("deregister:locked") // under the volume's lock (an owed unpublish sent), nothing forgotten yet
	var (
		pluginID string
		forgot   string
	)
	err = e.store.Update(ctx, e.locks.holding(id, func(tx *store.Tx) error {
		forgot = ""
		v, err := tx.Volumes().Get(id)
		if err != nil {
			return err
		}
		pluginID = v.PluginID
		verb := "deregister"
		if force {
			verb = forcedDeregister
		}
		// The handover first: a claim's refusal advises --force, which a handed-over volume refuses.
		if err := refuseHandedOver(tx, v.ID); err != nil {
			return err
		}
		if err := refuseClaimed(tx, v.ID, verb); err != nil {
			return err
		}
		msg := fmt.Sprintf("volume %q deregistered", v.ID)
		if v.State == store.VolumeCreating {
			// Its create was interrupted: the plugin may hold a volume a CreateVolume whose answer
			// was lost made, found by the CSI name alone, which this forgets with the record.
			forgot = fmt.Sprintf("its create was interrupted, and plugin %q may hold a volume named %q (made by a CreateVolume whose answer was lost), "+
				"which volctl forgets with it: if so, delete it with the storage provider's tools", v.PluginID, v.CSIName)
			msg += "; " + forgot
		} else if v.State == store.VolumeDeleting && v.ExternalID != "" {
			// Its delete, or its create's cleanup of an unusable answer, was not finished: the
			// storage may be left, which this forgets.
			cleanup, err := tx.Volumes().CreateCleanup(v.ID)
			if err != nil {
				return err
			}
			forgot = unfinishedDelete(cleanup) + ", and " + deleteMayBeLeft(v, cleanup)
			msg += "; " + forgot
		}
		st, owed, err := owedUnpublish(tx, v.ID)
		if err != nil {
			return err
		}
		if owed {
			if !force {
				way, err := owedUnpublishWay(tx, v.PluginID, st.NodeID == "")
				if err != nil {
					return err
				}
				return refuseOwedUnpublish(v, st, way)
			}
			att := forgottenAttachment(v.PluginID, st, unsent)
			msg += " with --force; " + att
			forgot = strings.Join(slices.DeleteFunc([]string{forgot, att}, func(s string) bool { return s == "" }), "; ")
		}
		// A NodeExpandVolume owed (the plugin grew the volume; its file system grows at its next
		// publish here) is forgotten with the record: registered again, no claim sends it, and
		// the allocs get the file system at the old size. Before, nothing said so
		// (TestDeregisterOfAVolumeOwedANodeExpansionSaysItIsForgotten). Refused as an owed
		// unpublish is, with --force forgotten and said.
		if v.NodeExpandMin > 0 {
			if !force {
				pay, err := payOwedWords(tx, v)
				if err != nil {
					return err
				}
				return refuseOwedNodeExpansion(v, pay)
			}
			owed := fmt.Sprintf("a NodeExpandVolume to %s was owed (plugin %q grew the volume, and its file system on the node grows at its next publish here), which volctl forgets with it: "+
				"the file system stays at its old size until it is grown by hand", spec.FormatSize(v.NodeExpandMin), v.PluginID)
			msg += "; " + owed
			forgot = strings.Join(slices.DeleteFunc([]string{forgot, owed}, func(s string) bool { return s == "" }), "; ")
		}
		// An expansion pending (ControllerExpandVolume sent, its answer not recorded: the
		// storage may have grown, and its file system be owed a NodeExpandVolume) is forgotten
		// with the record as the owed node step is: registered again, the volume is recorded at
		// the spec's size, and no claim grows its file system. Before, nothing said so
		// (TestDeregisterOfAVolumeWithAPendingExpansionIsRefusedAndFinishesAsAdvised).
		if v.ExpandMin > 0 {
			if !force {
				return refusePendingExpansion(v)
			}
			pending := fmt.Sprintf("an expansion to %s was pending (ControllerExpandVolume sent to plugin %q, its answer never read: the storage may have grown), which volctl forgets with it: "+
				"registered again, the volume is recorded at its spec's size, and a file system the storage outgrew stays at its old size until it is grown by hand", spec.FormatSize(v.ExpandMin), v.PluginID)
			msg += "; " + pending
			forgot = strings.Join(slices.DeleteFunc([]string{forgot, pending}, func(s string) bool { return s == "" }), "; ")
		}
		// With no claims, any other staging row is what a release cut short in a way the
		// state machine did not foresee left: forgetting the volume forgets it, as it leaves
		// the storage alone (reconcile reports a mount left there as one nothing accounts for).
		if err := tx.Stagings().Delete(v.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.Volumes().Delete(v.ID); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-deregister", VolumeID: v.ID, PluginID: v.PluginID, Message: msg})
	}))
	if err != nil {
		return fail(err)
	}
	e.removeStagingDir(ctx, pluginID, id)
	if forgot != "" {
		warnings = append(warnings, fmt.Sprintf("volume %q: %s", id, forgot))
	}
	return warnings, nil
}

// sendOwedUnpublish sends the ControllerUnpublishVolume owed for volume id, if one is (and
// the volume is not handed over to Nomad, whose attachment it would pull), through the
// plugin as reconcile does. The caller holds the volume lock. unsent is why it could not be
// sent; err is a failure to read the records.
func (e *Engine) sendOwedUnpublish(ctx context.Context, id string) (unsent, err error) {
	var (
		v    store.Volume
		owed bool
	)
	err = e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if v, err = tx.Volumes().Get(id); err != nil {
			return err
		}
		if err := refuseHandedOver(tx, id); err != nil {
			return err
		}
		_, owed, err = owedUnpublish(tx, id)
		return err
	})
	if err != nil || !owed {
		return nil, err
	}
	c, err := e.connect(ctx, v.PluginID)
	if err != nil {
		return err, nil
	}
	defer e.done(c)
	unsent = e.undoLeftStaging(ctx, c, v)
	if errors.Is(unsent, errLockLost) {
		// Not a reason to forget the attachment: another volctl may be working on the volume.
		return nil, unsent
	}
	return unsent, nil
}

// refreshForOwed reaches the plugin of volume id when the volume owes a NodeExpandVolume,
// so that its recorded fingerprint, which a refusal's advice reads (payOwedWords), is its
// instance's now: recorded before a restart without EXPAND_VOLUME, it advised a claim that sent
// nothing (TestDeregisterAdviceForANodeExpansionOwedToANodeWithoutExpandVolumePaysNothing). A
// plugin that cannot be reached leaves the record as it is.
//
// So too when the volume owes a ControllerUnpublishVolume: its refusal reads the recorded
// fingerprint (owedUnpublishWay), which told a plugin restarted with PUBLISH_UNPUBLISH_VOLUME back
// to be started with it (TestOwedUnpublishRefusalReadsThePluginAsItIsNow).
func (e *Engine) refreshForOwed(ctx context.Context, id string) {
	type owing struct {
		plugin string
		owes   bool
	}
	o, err := viewOne(ctx, e.store, func(tx *store.Tx) (owing, error) {
		v, err := tx.Volumes().Get(id)
		if err != nil {
			return owing{}, err
		}
		_, unpublish, err := owedUnpublish(tx, id)
		return owing{plugin: v.PluginID, owes: v.NodeExpandMin > 0 || unpublish}, err
	})
	if err != nil || !o.owes {
		return
	}
	e.refreshPlugin(ctx, o.plugin)
}

// refreshPlugin reaches plugin id, so that its recorded fingerprint is its instance's now; one
// that cannot be reached leaves the record as it is.
func (e *Engine) refreshPlugin(ctx context.Context, id string) {
	if c, err := e.connect(ctx, id); err == nil {
		e.done(c)
	}
}

// refuseOwedNodeExpansion is the conflict of deregistering volume v while a NodeExpandVolume is
// owed (v.NodeExpandMin), pay what sends it (payOwedWords).
func refuseOwedNodeExpansion(v store.Volume, pay string) error {
	return conflictf("volume %q is still owed a NodeExpandVolume to %s (plugin %q grew it, and its file system on the node grows at the volume's next publish here), which deregistering the volume would forget: "+
		"registered again, its allocs would get the file system at the old size; %s; then deregister it; "+
		"or `%s` forgets it, the file system left at its old size",
		v.ID, spec.FormatSize(v.NodeExpandMin), v.PluginID, pay,
		shellquote.CommandFlags("volctl volume deregister", []string{v.ID}, "--force", "--yes"))
}

// refusePendingExpansion is the conflict of deregistering volume v while an expansion is
// pending (v.ExpandMin): reconcile finishes it (sends ControllerExpandVolume again, records its
// answer).
func refusePendingExpansion(v store.Volume) error {
	return conflictf("volume %q has an expansion to %s pending (ControllerExpandVolume was sent to plugin %q and its answer not recorded: the storage may have grown, and its file system be owed a NodeExpandVolume), "+
		"which deregistering the volume would forget: registered again, it would be recorded at its spec's size and its file system never grown; "+
		"run `volctl reconcile` to finish it (the plugin needs an EXPAND_VOLUME capability), then deregister it; or `%s` forgets it",
		v.ID, spec.FormatSize(v.ExpandMin), v.PluginID, shellquote.CommandFlags("volctl volume deregister", []string{v.ID}, "--force", "--yes"))
}

// refuseOwedUnpublish is the conflict of deregistering volume v while a ControllerUnpublishVolume
// is owed for the attachment st records; way is owedUnpublishWay's.
func refuseOwedUnpublish(v store.Volume, st store.Staging, way string) error {
	return conflictf("volume %q is recorded attached to node %q through plugin %q with no claim: a ControllerUnpublishVolume is owed (a forced detach could not send it, or the plugin lost PUBLISH_UNPUBLISH_VOLUME), and deregistering the volume would forget it. "+
		"%s, then deregister again; or `%s`, which sends it too and, if the plugin still cannot take it, forgets the attachment",
		v.ID, attachedNode(st), v.PluginID, way, shellquote.CommandFlags("volctl volume deregister", []string{v.ID}, "--force", "--yes"))
}

// owedUnpublishWay says what sends an owed ControllerUnpublishVolume through plugin id, as its
// last fingerprint has it: reconcile once the plugin answers, or, for a plugin that answers
// without PUBLISH_UNPUBLISH_VOLUME, its start with that capability first: "once it answers"
// promised a reconcile that sends nothing to a plugin answering already
// (TestOwedUnpublishRefusalOfAPluginThatLostTheCapabilityDoesNotPromiseReconcile).
// OwedUnpublishWay is owedUnpublishWay read on its own: what sends an owed
// ControllerUnpublishVolume through plugin id, as the refusals say it (a `nomad register
// --dry-run` plan says it so too: TestNomadRegisterDryRunOwedUnpublishAdviceWorksAsTheRegistrationsDoes).
func (e *Engine) OwedUnpublishWay(ctx context.Context, id string) (string, error) {
	e.refreshPlugin(ctx, id)
	return viewOne(ctx, e.store, func(tx *store.Tx) (string, error) { return owedUnpublishWay(tx, id, false) })
}

// owedUnpublishWay is owedUnpublishWayOf of plugin id's record as the state has it; rowNoNode:
// the attachment it is said of is recorded with no node (an older volctl's row).
func owedUnpublishWay(tx *store.Tx, id string, rowNoNode bool) (string, error) {
	p, err := tx.Plugins().Get(id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	return owedUnpublishWayOf(id, p, err == nil, rowNoNode), nil
}

// owedUnpublishWayOf is owedUnpublishWay of plugin id's record p (known false: not registered).
func owedUnpublishWayOf(id string, p store.Plugin, known, rowNoNode bool) string {
	if !known {
		return fmt.Sprintf("Plugin %q is not registered (deregistered with --force): register it again, then run `volctl reconcile` (it sends it)", id)
	}
	// As the release that kept it and reconcile say it (unpublishBlocked): a plugin that lost its
	// whole controller service, or is registered by its node half alone, was promised the send
	// of a reconcile that sends nothing
	// (TestOwedUnpublishRefusalOfAPluginThatLostItsControllerServiceDoesNotPromiseReconcile,
	// TestOwedUnpublishRefusalThroughANodeHalfRegistrationNamesTheControllerHalf).
	if why, fix, blocked := recordedUnpublishBlock(p, rowNoNode); blocked {
		return fmt.Sprintf("Nothing can send it now, as last fingerprinted: %s; %s, then run `volctl reconcile` (it sends it)", why, fix)
	}
	return fmt.Sprintf("Run `volctl reconcile` once plugin %q answers (it sends it)", id)
}

// recordedUnpublishBlock is unpublishBlocked of registered plugin p as its recorded fingerprint
// has it: blocked when that fingerprint says it cannot be sent ControllerUnpublishVolume, or,
// for an attachment recorded with no node (rowNoNode), when it gives no node ID either, where
// unpublishChecked refuses to send it for every node (noNodeToUnpublish): its words promised a
// reconcile that refused each pass
// (TestUnpublishWaitsOfALegacyRowThroughAControllerOnlyRegistrationDoesNotPromiseReconcile).
func recordedUnpublishBlock(p store.Plugin, rowNoNode bool) (why, fix string, blocked bool) {
	fp := recordedFingerprint(p)
	switch {
	case fp != nil && (!fp.Controller || !fp.Capabilities.Controller.PublishUnpublishVolume):
		why, fix = unpublishBlocked(fp, p.ID, controllerSocketless(p))
		return why, fix, true
	case rowNoNode && fp != nil && fp.NodeID == "":
		return fmt.Sprintf("the attachment is recorded with no node (by an older volctl), and plugin %q gives no node ID (registered by its controller half alone), where an empty one asks the plugin to detach the volume from every node", p.ID),
			fmt.Sprintf("register plugin %q's node half too (a plugin block with the same ID, type \"node\"), or the plugin as type \"monolith\" where one process serves both", p.ID), true
	}
	return "", "", false
}

// blockedAfterTakeBack is what keptForNomad adds when the plugin, as it stands, cannot be sent
// the unpublish once the volume is taken back either (why, fix: unpublishBlocked's): the
// take-back alone, followed, had reconcile send nothing
// (TestUnpublishWaitsOfAHandedOverVolumeWhosePluginCannotUnpublishDoesNotPromiseReconcile).
func blockedAfterTakeBack(why, fix string) string {
	return fmt.Sprintf("; and as the plugin stands it cannot be sent then either: %s; %s too", why, fix)
}

// recordedBlockAfterTakeBack is blockedAfterTakeBack of plugin id as its record has it ("" when
// it can be sent, or the record cannot be read: the take-back is said alone then).
func (e *Engine) recordedBlockAfterTakeBack(ctx context.Context, id string) string {
	p, err := viewOne(context.WithoutCancel(ctx), e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(id) })
	switch {
	case errors.Is(err, store.ErrNotFound):
		return blockedAfterTakeBack(fmt.Sprintf("plugin %q is not registered (deregistered with --force)", id), "register it again")
	case err != nil:
		return ""
	}
	if why, fix, blocked := recordedUnpublishBlock(p, false); blocked {
		return blockedAfterTakeBack(why, fix)
	}
	return ""
}

// forgottenAttachment says that the attachment st records is forgotten because
// ControllerUnpublishVolume through plugin did not undo it (unsent says why, when known: the
// cause alone of one that advises what ends an attachment kept, owedError).
func forgottenAttachment(plugin string, st store.Staging, unsent error) string {
	why := ""
	if oe := (interface{ owedWhy() string })(nil); errors.As(unsent, &oe) {
		why = fmt.Sprintf(" (%s)", oe.owedWhy())
	} else if unsent != nil {
		why = fmt.Sprintf(" (%v)", unsent)
	}
	return fmt.Sprintf("its attachment to node %q is forgotten, as --force asks: ControllerUnpublishVolume through plugin %q did not undo it%s; if the volume is still attached there, detach it with the storage provider's tools",
		attachedNode(st), plugin, why)
}

// sameStorage returns the volumes other than exceptID that record externalID on pluginID's
// storage: through pluginID itself, or through another plugin ID registered on one of its
// sockets (one process, so one storage).
func sameStorage(tx *store.Tx, pluginID, externalID, exceptID string) ([]store.Volume, error) {
	if externalID == "" {
		return nil, nil
	}
	all, err := tx.Volumes().List(store.VolumeFilter{ExternalID: externalID})
	if err != nil || len(all) == 0 {
		return nil, err
	}
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return nil, err
	}
	var out []store.Volume
	for _, o := range all {
		if o.ID != exceptID && mates[o.PluginID] {
			out = append(out, o)
		}
	}
	return out, nil
}

// nearStorage returns a volume of pluginID's socket mates other than exceptID whose external ID
// is not externalID but is the same once case, Unicode normalisation and surrounding white
// space are set aside (spec.SameStorageID; its ID and external ID, "" for none): the storage a plugin on a
// case-insensitive backend, or one that trims and normalises the IDs it is sent, takes
// externalID for. A plugin's answer naming such an ID (CreateVolume's) may be that volume's
// storage, which neither deleting the answer nor recording it as another volume may reach.
// Distinct storage so spelled, two IDs a plugin made that differ only so, is not what a
// plugin's IDs look like: volctl's CSI names are lower-case and distinct by a hash.
func nearStorage(tx *store.Tx, pluginID, externalID, exceptID string) (id, stored string, err error) {
	if externalID == "" {
		return "", "", nil
	}
	all, err := tx.Volumes().NearExternalIDs(externalID)
	if err != nil {
		return "", "", err
	}
	var mates map[string]bool // read once a candidate is found: most looks find none
	for _, o := range all {
		if o.ID == exceptID || o.ExternalID == externalID || !spec.SameStorageID(o.ExternalID, externalID) {
			continue
		}
		if mates == nil {
			if mates, err = socketMates(tx, pluginID); err != nil {
				return "", "", err
			}
		}
		if mates[o.PluginID] {
			return o.ID, o.ExternalID, nil
		}
	}
	return "", "", nil
}

// socketMates returns pluginID and the other plugin IDs registered on one of its sockets,
// however spelled (oneSocket): one process, so one storage, one controller and one set of
// mounts. A plugin not registered is only itself.
func socketMates(tx *store.Tx, pluginID string) (map[string]bool, error) {
	return matesBy(tx, pluginID, oneSocket)
}

// pathMates is socketMates of the plugin IDs registered on one of pluginID's socket entries: a
// path that is the same once cleaned and its directory's symlinks resolved, or the same name in
// the same directory reached through a bind mount of it (sameEntry, which the connection takes
// for one process too: before, only the first counted, and two plugin IDs on one socket through
// a bind-mounted directory had one storage's two records each admit a writer,
// TestOneStorageThroughABindMountedSocketDirectoryIsNotWrittenTwice). It leaves out those whose
// path is only the same file now (a link or bind mount of the socket file itself): a plugin so
// reached is another plugin's process, refused at every connection and at registration
// (`socket ... is plugin ...'s socket under another name`), not its mate on purpose, so
// whatever its records, they say nothing of this plugin's storage
// (`TestPluginSocketThatIsAnotherPluginsSocketIsRefused`).
func pathMates(tx *store.Tx, pluginID string) (map[string]bool, error) {
	return matesBy(tx, pluginID, sameEntry)
}

// matesBy is socketMates with one the test of two socket paths. A plugin deregistered with
// --force while volumes still name it is reached, for this, where it was (store.LeftPlugin):
// its volumes' storage is that socket's, so a plugin ID registered there since is its mate, and
// the same storage is not recorded again through it nor claimed beside them
// (TestStorageOfAForcedDeregisteredPluginsVolumeIsNotRecordedAgainThroughItsSocket); unless the
// driver answering there now gives another name than it last gave, which is another driver's
// storage however alike its IDs.
func matesBy(tx *store.Tx, pluginID string, one func(a, b string) bool) (map[string]bool, error) {
	mates := map[string]bool{pluginID: true}
	left, err := tx.Plugins().ListLeft()
	if err != nil {
		return nil, err
	}
	var mine reach
	p, err := tx.Plugins().Get(pluginID)
	switch {
	case err == nil:
		mine = reach{sockets: pluginSockets(p), provider: p.Fingerprint.Provider}
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	default:
		i := slices.IndexFunc(left, func(l store.LeftPlugin) bool { return l.ID == pluginID })
		if i < 0 {
			return mates, nil
		}
		mine = leftReach(left[i])
	}
	return matesOf(tx, mates, mine, left, one)
}

// matesOf adds to mates the plugin IDs, registered or deregistered with --force (left), whose
// sockets one finds among mine's: matesBy's loop, for a reach of a plugin's or of sockets a
// process serves (socketsMates).
func matesOf(tx *store.Tx, mates map[string]bool, mine reach, left []store.LeftPlugin, one func(a, b string) bool) (map[string]bool, error) {
	all, err := tx.Plugins().List()
	if err != nil {
		return nil, err
	}
	others := make(map[string]reach, len(all)+len(left))
	for _, o := range all {
		others[o.ID] = reach{sockets: pluginSockets(o), provider: o.Fingerprint.Provider}
	}
	for _, l := range left {
		r := leftReach(l)
		r.left = true
		others[l.ID] = r
	}
	for id, o := range others {
		if mates[id] || (o.left || mine.left) && o.provider != "" && mine.provider != "" && o.provider != mine.provider {
			continue
		}
		for _, s := range o.sockets {
			if slices.ContainsFunc(mine.sockets, func(m string) bool { return one(m, s) }) {
				mates[id] = true
				break
			}
		}
	}
	return mates, nil
}

// socketsMates are the plugin IDs registered on one of served's sockets (oneSocket): those a
// process started to serve them serves, whatever the plugin it was started for records now.
// provider is the driver's name that process gives (its plugin's recorded one): a plugin
// deregistered with --force that another driver answered for is not its mate, as matesBy has
// it (TestServedSocketsMountsLeaveOutAnotherDriversForcedDeregisteredPlugin).
func socketsMates(tx *store.Tx, served store.Plugin, provider string) (map[string]bool, error) {
	left, err := tx.Plugins().ListLeft()
	if err != nil {
		return nil, err
	}
	return matesOf(tx, map[string]bool{}, reach{sockets: pluginSockets(served), provider: provider}, left, oneSocket)
}

// throughMate words, for a refusal of a second record of one storage, the plugin ID volume o,
// the first, is recorded through when it is not pluginID's own: a mate on one of its sockets,
// or one deregistered with --force that was reached there (matesBy). "" for pluginID itself.
func throughMate(tx *store.Tx, o store.Volume, pluginID string) (string, error) {
	if o.PluginID == pluginID {
		return "", nil
	}
	_, err := tx.Plugins().Get(o.PluginID)
	switch {
	case err == nil:
		return fmt.Sprintf(" through plugin %q, on the same socket (one process, one storage)", o.PluginID), nil
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	}
	return fmt.Sprintf(" through plugin %q, deregistered with --force while the volume still names it, which was reached on the same socket (one process, one storage); "+
		"once nothing uses the storage through it, `%s` forgets that record (the storage stays)", o.PluginID, shellquote.Command("volctl volume deregister", o.ID)), nil
}

// reach is where a plugin is reached and the driver name it gave there, for matesBy; left says
// it was deregistered with --force (store.LeftPlugin).
type reach struct {
	sockets  []string
	provider string
	left     bool
}

// leftReach is the reach of a plugin deregistered with --force.
func leftReach(l store.LeftPlugin) reach {
	p := store.Plugin{Type: l.Type, Socket: l.Socket, ControllerSocket: l.ControllerSocket, NodeSocket: l.NodeSocket}
	return reach{sockets: pluginSockets(p), provider: l.Provider, left: true}
}

// OneSocket reports whether socket paths a and b name one socket however they are spelled
// (oneSocket): the agent runs one process for the plugin IDs declared on one socket.
func OneSocket(a, b string) bool { return oneSocket(a, b) }

// oneSocket reports whether socket paths a and b name one socket however they are spelled: alike
// once cleaned and their directories' symlinks resolved (/var/run and /run), or, while it is
// there, one file (a bind mount).
func oneSocket(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if samePath(a, b) {
		return true
	}
	ids := identify(a, b)
	return len(ids) == 2 && ids[0].inode != 0 && ids[0].dev == ids[1].dev && ids[0].inode == ids[1].inode
}

// samePath reports whether socket paths a and b are one path once cleaned and their
// directories' symlinks resolved (/var/run and /run): oneSocket without the file's identity.
func samePath(a, b string) bool {
	return a != "" && b != "" && (a == b || resolvedSocket(a) == resolvedSocket(b))
}

// socketName is a socket path with every symlink resolved, the socket's own included, when it
// is there; else resolvedSocket.
func socketName(s string) string {
	if r, err := filepath.EvalSymlinks(s); err == nil {
		return r
	}
	return resolvedSocket(s)
}

// resolvedSocket is a socket path cleaned, with its directory's symlinks resolved when it exists.
func resolvedSocket(s string) string {
	s = filepath.Clean(s)
	if dir, err := filepath.EvalSymlinks(filepath.Dir(s)); err == nil {
		return filepath.Join(dir, filepath.Base(s))
	}
	return s
}
