package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// csiName is the volume's name as a CSI name, from namespace and ID: a new create's is
// createName, and a snapshot's starts with it. It is short, lower-case and made of letters,
// digits and dashes, which every plugin accepts, and a hash keeps distinct IDs distinct.
func csiName(namespace, id string) string { return saltedName(namespace, id, "") }

// createName is the name sent to CreateVolume, its idempotency key: csiName's, its hash taken
// over a nonce too, so each create of an ID sends another name. It is recorded with the
// create's intent, before the first CreateVolume, and every replay after a crash sends the
// recorded one. A name derived from the ID alone was the name of every earlier volume of
// the ID: a delete whose storage the plugin kept (it answered DeleteVolume of a volume it did
// not know, restarted with another root; or it deletes lazily, the name still held) gave the
// next create of the ID that storage, the deleted volume's data with it
// (TestCreateAfterADeleteThePluginDidNotDoGetsNewStorage).
func createName(namespace, id string) string {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	return saltedName(namespace, id, hex.EncodeToString(nonce))
}

// saltedName is csiName's name with salt in its hash.
func saltedName(namespace, id, salt string) string {
	key := namespace + "/" + id
	if salt != "" {
		key += "/" + salt
	}
	sum := sha256.Sum256([]byte(key))
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 32 {
			break
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug != "" {
		slug += "-"
	}
	return "volctl-" + slug + hex.EncodeToString(sum[:6])
}

// CreateVolume provisions a volume through its plugin and records it. The intent (a row in
// state creating, with the CSI name) is committed before CreateVolume is sent, so a crash in
// between is healed by sending CreateVolume again with the same name — by the next create of
// the same spec or by reconcile — never by creating a second volume.
func (e *Engine) CreateVolume(ctx context.Context, sv spec.Volume) (VolumeInfo, error) {
	info, _, err := e.CreateVolumeOutcome(ctx, sv)
	return info, err
}

// SubmitOutcome is what a create or a registration did, which only it can tell, under the
// volume's lock: a read before it (the command line's, which said "created" or "unchanged" by
// it) races another process's create of the same spec, and said "created" of a volume this
// create found made (TestTwoCreatesOfOneSpecAtOnceOneSaysUnchanged).
type SubmitOutcome int

const (
	// Created: this create sent CreateVolume, or finished the create an earlier one left
	// recorded (then grown to the spec's capacity_min when it asks more); this registration
	// recorded a volume not registered before.
	Created SubmitOutcome = iota
	// Unchanged: the volume was made (registered), with this spec; nothing was sent to the
	// plugin but a registration's ValidateVolumeCapabilities, and nothing recorded. Of a
	// snapshot create (CreateSnapshotOutcome): the plugin answered with the snapshot recorded
	// under the name before, taken then.
	Unchanged
	// Expanded: the volume was made (registered), and grown to this spec's larger
	// capacity_min.
	Expanded
	// Sized: the volume was made (registered) with its size not known (a registration whose
	// plugin reported none, and cannot list it), and ControllerExpandVolume was sent for this
	// spec's capacity_min: it has at least that now, which it may have had before. Said
	// "expanded" before, of a volume the plugin may have grown by nothing
	// (TestCapacityMinOfAVolumeOfUnknownSizeIsNotSaidToExpandIt).
	Sized
	// Measured: as Sized, but the plugin lists the volume at this spec's capacity_min or more:
	// not grown, nothing sent; the size listed is recorded.
	Measured
	// AtLeastSource: as Measured, but the plugin cannot list the volume: a restore, it is at
	// least its snapshot's recorded size, which is at least this spec's capacity_min (or the
	// expand's size); not grown, nothing sent, its size still not known (atLeastItsSource).
	AtLeastSource
	// Updated: the volume was registered, and this registration changed what the spec may
	// change (Registration.Changed names it).
	Updated
	// Adopted: a snapshot create the plugin answered with a snapshot volctl had no record of
	// that the plugin dates before the request: one it held under the name, recorded now.
	Adopted
)

// CreateVolumeOutcome is CreateVolume, and what it did.
func (e *Engine) CreateVolumeOutcome(ctx context.Context, sv spec.Volume) (VolumeInfo, SubmitOutcome, error) {
	var outcome SubmitOutcome
	info, err := bySpecID(sv.ID, func(id string) (VolumeInfo, error) { sv.ID = id; return e.createVolume(ctx, sv, &outcome) })
	return info, outcome, err
}

// createVolume is CreateVolume of the ID as stored (bySpecID), saying what it did in outcome.
func (e *Engine) createVolume(ctx context.Context, sv spec.Volume, outcome *SubmitOutcome) (VolumeInfo, error) {
	*outcome = Created
	fail := failVolume("create", sv.ID)
	c, unlock, err := e.lockSpecVolume(ctx, &sv)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	if err := checkCreateCapabilities(c, sv); err != nil {
		return fail(err)
	}
	listed, err := e.restoreReady(ctx, c, sv)
	if err != nil {
		return fail(err)
	}
	if err := e.cloneSourceHeld(ctx, c, sv); err != nil {
		return fail(err)
	}
	if sv.SnapshotID != "" {
		e.failpoint("restore:ready") // the plugin's controller lock let go; nothing recorded yet
	}

	var v store.Volume
	done, replay := false, false
	err = e.store.Update(ctx, e.locks.holding(sv.ID, func(tx *store.Tx) error {
		if err := pluginStillRegistered(tx, c); err != nil {
			return err
		}
		old, err := tx.Volumes().Get(sv.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if err := notStoredOtherwise(tx, store.VolumeIDs, sv.ID); err != nil {
				return err
			}
			if err := takesTopology(c, sv); err != nil {
				return err
			}
			v = store.VolumeFromSpec(sv)
			if node := c.fp.AccessibleTopology; node != nil {
				// Recorded as the node spells its keys, as a registration's and the answer's
				// are: a create answered with no topology is accessible from its required one,
				// which went to Nomad as the spec spelled it, placed on no node
				// (TestExportNomadOfACreatedVolumeAnsweredWithoutATopologyIsPlaceableByNomad).
				v.TopologyRequest = spelledTopologyRequest(v.TopologyRequest, node.Segments)
			}
			v.ExternalID = ""
			v.State = store.VolumeCreating
			v.CSIName = createName(sv.Namespace, sv.ID)
			if v.CloneID, err = e.cloneSource(tx, sv); err != nil {
				return err
			}
			v.CloneSpec = sv.CloneID
			if err := notFromSnapshotBeingDeleted(tx, sv); err != nil {
				return err
			}
			if listed.recorded {
				// A delete run whole between the check and here, the controller lock let go:
				// told as one the check waited for is. Before, CreateVolume's NOT_FOUND said to
				// check snapshot_id (TestRestoreBesideADeleteRunAfterItsCheckSaysSo).
				if still, err := recordedSnapshot(tx, sv); err != nil || !still {
					return errors.Join(err, e.endedWhileRestoreChecked(tx, sv))
				}
			}
			return tx.Volumes().Insert(&v)
		case err != nil:
			return err
		}
		if old.State == store.VolumeDeleting {
			return conflictf("volume %q is being deleted; run `volctl reconcile` to finish that first", old.ID)
		}
		if sameCloneSource(tx, old, sv) {
			sv.CloneID = old.CloneID // the spec's volctl ID of the source, recorded as its storage
		} else if err := olderCloneSourceGone(tx, old, sv); err != nil {
			return err
		}
		if err := checkImmutable(old, sv, false); err != nil {
			return err
		}
		if old.State == store.VolumeReady {
			if err := notChangedByCreate(old, sv); err != nil {
				return err
			}
			if grows := sv.CapacityMin > old.CapacityBytes && sv.CapacityMin > old.RequestedMin; !grows {
				// A growth records the spec's capacity_max as the limit it is sent with
				// (specLimit); without one, it was neither applied nor refused.
				if err := capacityMaxNotChangedByCreate(old, sv); err != nil {
					return err
				}
			}
			done = true // creating an existing volume with the same spec changes nothing
			v = old
			return nil
		}
		changed := createChanges(old, sv)
		if sv.CapacityMin <= old.RequestedMin && sv.CapacityMax != 0 && sv.CapacityMax != old.RequestedMax {
			// Nor its capacity_max, where no growth after the replay records it as its limit:
			// the replay said "created" and kept the recorded one, which a later expand grew
			// the volume past (TestCreateReplayWithAnotherCapacityMaxIsNotSaidCreatedWithIt).
			changed = append(changed, "capacity_max")
		}
		if len(changed) > 0 {
			// The replay sends the request first recorded, under the same CSI name: the
			// plugin may have made that volume already, and another request under the name
			// is one it refuses (ALREADY_EXISTS) or answers with the first volume.
			return conflictf("volume %q's create was interrupted, and creating it again finishes it as first asked, not with the %s this spec changes: "+
				"finish it (`volctl reconcile`, or this create with the first spec), then register it again with this spec",
				old.ID, strings.Join(changed, ", "))
		}
		// Refused before the replay sends anything, as after it (below): the spec's
		// capacity_min above the capacity_max the record keeps. Before, the replay was sent,
		// the volume made, and the command failed saying "nothing was sent"
		// (TestCreateReplayAboveTheRecordedCapacityMaxIsRefusedBeforeItSendsAnything).
		if err := aboveRecordedMax(old, sv.CapacityMin, sv.CapacityMax, "create"); err != nil {
			return err
		}
		v = old // an earlier create was interrupted: replay it with the stored name
		replay = true
		return nil
	}))
	if err != nil {
		return fail(err)
	}
	if !done {
		e.failpoint("create:intent")
		if err := e.finishCreate(ctx, c, v, replay, listed); err != nil {
			return fail(err)
		}
		if !replay {
			return e.Volume(ctx, sv.ID)
		}
		// A replay sent the interrupted create's request (CSI's idempotency by name: another
		// range would be another volume, ALREADY_EXISTS), not this spec's: a capacity_min
		// raised meanwhile is owed as it is to a created volume, below.
		if v, err = viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(sv.ID) }); err != nil {
			return fail(err)
		}
	}
	grow := sv.CapacityMin > v.CapacityBytes && sv.CapacityMin > v.RequestedMin
	if done {
		*outcome = Unchanged
	}
	if replay && !grow && sv.CapacityMax != 0 && sv.CapacityMax != v.RequestedMax {
		// A replay with a larger capacity_min (refused before it was sent otherwise) that grows
		// nothing, the plugin having made as much: its capacity_max is recorded, as the growth
		// would have. It said "created" and kept the interrupted create's, which a later expand
		// grew the volume past (TestCreateReplayWithALargerCapacityMinAndAnotherCapacityMaxIsNotSaidCreatedWithIt).
		if size := currentSize(v); size > sv.CapacityMax {
			return fail(conflictf("volume %q is created, at %s (the interrupted create's request, up to its capacity_max %s), above this spec's capacity_max %s: "+
				"a volume does not shrink; its capacity_max stays %s: give one of at least %s in the spec, and register it again to record it (%s)",
				v.ID, spec.FormatSize(size), spec.FormatSize(v.RequestedMax), spec.FormatSize(sv.CapacityMax), spec.FormatSize(v.RequestedMax),
				spec.FormatSize(size), registerInstead(v)))
		}
		if err := e.setRequestedMax(ctx, v.ID, sv.CapacityMax); err != nil {
			return fail(err)
		}
	}
	if grow {
		if err := aboveRecordedMax(v, sv.CapacityMin, sv.CapacityMax, "create"); err != nil {
			return fail(err)
		}
		// As an expand of it is (TestCreateAgainGrowingACloneSourceIsRefusedWhileTheCloneIsInFlight).
		if err := e.growsNoCloneSource(ctx, v, sv.CapacityMin); err != nil {
			return fail(err)
		}
		grew := outcome
		if !done {
			grew = new(SubmitOutcome) // a created volume is "created", grown to the spec or not
		}
		return e.expandLockedSaying(ctx, c, v, sv.CapacityMin, specLimit(v, sv), grew)
	}
	// At the size asked already, its node step maybe still owed (a create killed there, run
	// again): paid, as registerRound's expandRegistered pays it.
	if paid, err := e.payOwedNodeStep(ctx, c, v, sv.CapacityMin); err != nil {
		return fail(err)
	} else if paid && done {
		*outcome = Expanded
	}
	return e.Volume(ctx, sv.ID)
}

// notChangedByCreate refuses a create of an existing volume whose spec changes what a create
// does not apply to it: its capabilities, mount options or secrets. Found ready, the volume was
// left as stored and the command said "unchanged: it exists with this spec", while claims kept
// getting the stored capabilities, mount flags and secrets (a rotated credential among them).
// A registration again applies them (mergeRegistered); the error says how. Secrets and mount
// flags are named, never shown.
func notChangedByCreate(old store.Volume, sv spec.Volume) error {
	changed := createChanges(old, sv)
	if len(changed) == 0 {
		return nil
	}
	return conflictf("volume %q exists, and creating it again does not change its %s, which the spec changes; %s",
		old.ID, strings.Join(changed, ", "), registerInstead(old))
}

// registerInstead is the advice for a change a create of existing volume old does not make: the
// registration again that does.
func registerInstead(old store.Volume) string {
	return "registering it again does: " + registerSpecOf(old)
}

// registerSpecOf is the registration again of existing volume old that records what its create
// does not: the spec with its external ID.
func registerSpecOf(old store.Volume) string {
	return "`volctl volume register` of the spec with external_id = " + spec.HCLQuoted(old.ExternalID) +
		" added, and snapshot_id, clone_id and a preferred topology left out"
}

// capacityMaxNotChangedByCreate refuses a create of ready volume old, asking no growth, whose
// spec gives a capacity_max other than the one recorded. The command said "unchanged: it exists
// with this spec" of a 1 GiB volume whose spec allowed 100 MiB at most, and the capacity_max was
// not recorded, so later expansions kept the old limit
// (TestCreateAgainWithACapacityMaxBelowTheVolumeIsRefused). Below the volume's size, it is
// refused as a registration's is (pendingLimit): a volume does not shrink; any other, as what a
// create does not change (notChangedByCreate), pointing to the registration that does.
func capacityMaxNotChangedByCreate(old store.Volume, sv spec.Volume) error {
	if sv.CapacityMax == 0 || sv.CapacityMax == old.RequestedMax {
		return nil
	}
	if size := currentSize(old); size > sv.CapacityMax {
		// One way out a create takes as printed (leaving it out); another capacity_max is a
		// registration's to record, which a create again at it would advise in turn.
		return conflictf("volume %q is %s, and this spec's capacity_max %s is below it: a volume does not shrink; nothing was sent; "+
			"leave capacity_max out and create it again, or, to record one of at least %s, register it again: %s",
			old.ID, spec.FormatSize(size), spec.FormatSize(sv.CapacityMax), spec.FormatSize(size), registerSpecOf(old))
	}
	was := "none"
	if old.RequestedMax != 0 {
		was = spec.FormatSize(old.RequestedMax)
	}
	return conflictf("volume %q exists, and creating it again does not change its capacity_max (recorded: %s; the spec says %s); %s",
		old.ID, was, spec.FormatSize(sv.CapacityMax), registerInstead(old))
}

// createChanges names what sv changes of old's capabilities, mount options and secrets, which
// a create of an existing volume, or the replay of an interrupted one, does not change.
func createChanges(old store.Volume, sv spec.Volume) []string {
	var changed []string
	if !slices.Equal(old.Capabilities, sv.Capabilities) {
		changed = append(changed, "capabilities")
	}
	mo := func(m *spec.MountOptions) spec.MountOptions {
		if m == nil {
			return spec.MountOptions{}
		}
		return *m
	}
	if was, now := mo(old.MountOptions), mo(sv.MountOptions); was.FSType != now.FSType || !slices.Equal(was.MountFlags, now.MountFlags) {
		changed = append(changed, "mount_options")
	}
	if !maps.Equal(old.Secrets, sv.Secrets) {
		changed = append(changed, "secrets")
	}
	return changed
}

// cloneSource resolves clone_id: a volctl volume ID of the same plugin means that volume's
// external ID; anything else is taken as the provider's volume ID. It refuses a source whose
// create or delete is recorded and not finished, which a clone recorded now could outlive:
//   - a volume of the plugin being deleted, named by its volctl ID or by its storage ID (the
//     external ID the clone would be sent): reconcile finishes that delete, and a clone whose
//     create was cut short could then never be finished (its CreateVolume answered NOT_FOUND
//     for the source);
//   - a volume of the plugin still being created (its create interrupted, or in flight in
//     another process): it has no storage ID yet, and its volctl ID, recorded as if it were
//     one, named nothing the plugin knows, and refuseCloneInFlight, matching storage IDs,
//     never kept the source for the clone.
func (e *Engine) cloneSource(tx *store.Tx, sv spec.Volume) (string, error) {
	if sv.CloneID == "" {
		return "", nil
	}
	src, err := tx.Volumes().Get(sv.CloneID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	// A volume of a plugin ID on one of the plugin's sockets (socketMates: one storage) is
	// named by its volctl ID as the plugin's own are: the ambiguity refusal below advises its
	// volctl ID, which, taken as a storage ID, the plugin answered NOT_FOUND
	// (TestAmbiguousCloneIDAdviceWorksForASocketMatesVolume).
	mates, merr := socketMates(tx, sv.PluginID)
	if merr != nil {
		return "", merr
	}
	if err == nil && mates[src.PluginID] {
		switch src.State {
		case store.VolumeDeleting:
			return "", cloneOfDeleting(src, sv, "")
		case store.VolumeCreating:
			return "", conflictf("volume %q, the clone_id of volume %q, is still being created (its create is in flight, or was interrupted): it has no storage to clone yet, "+
				"and nothing was created: finish it first (`volctl reconcile`, or the same create of %q), then create volume %q again", src.ID, sv.ID, src.ID, sv.ID)
		}
		if err := notCloningPendingExpansion(tx, src, sv, ""); err != nil {
			return "", err
		}
		if src.ExternalID != "" {
			// The word may also be another volume's storage ID, which is what clone_id means in
			// Nomad's spec format (and what volctl's export writes): taken silently as this
			// volume's, a spec written for Nomad got a clone of another volume's data
			// (TestCloneIDNamingOneVolumeAndAnothersStorageIsNotSilentlyResolved).
			others, err := sameStorage(tx, sv.PluginID, sv.CloneID, src.ID)
			if err != nil {
				return "", err
			}
			if len(others) == 0 {
				// Or its storage ID in another spelling, which a plugin that reads IDs so takes
				// for it (spec.SameStorageID; TestCloneIDNamingOneVolumeAndAnothersStorageInAnotherCaseIsNotSilentlyResolved).
				id, _, err := nearStorage(tx, sv.PluginID, sv.CloneID, src.ID)
				if err != nil {
					return "", err
				}
				if id != "" {
					o, err := tx.Volumes().Get(id)
					if err != nil {
						return "", err
					}
					others = append(others, o)
				}
			}
			if len(others) > 0 && !spec.SameStorageID(others[0].ExternalID, src.ExternalID) && others[0].State != store.VolumeReady {
				// The other one cannot be cloned now: not offered, where "clone_id = its ID"
				// was refused when followed (TestAmbiguousCloneIDRefusalDoesNotAdviseCloningAVolumeBeingDeleted).
				o := others[0]
				return "", conflictf("clone_id %q of volume %q is volume %q's volctl ID (storage %q), and the storage ID of volume %q, which is %s (its create or delete unfinished: it cannot be cloned now): "+
					"nothing was created; to clone volume %q, write clone_id = %s and create volume %q again",
					sv.CloneID, sv.ID, src.ID, src.ExternalID, o.ID, o.State, src.ID, spec.HCLQuoted(src.ExternalID), sv.ID)
			}
			if len(others) > 0 && !spec.SameStorageID(others[0].ExternalID, src.ExternalID) {
				o := others[0]
				return "", conflictf("clone_id %q of volume %q names two volumes: volume %q (its volctl ID; storage %q) and volume %q (its storage ID, as Nomad's clone_id means): "+
					"nothing was created; write clone_id = %s to clone volume %q, or clone_id = %s to clone volume %q, and create volume %q again",
					sv.CloneID, sv.ID, src.ID, src.ExternalID, o.ID, spec.HCLQuoted(o.ID), o.ID, spec.HCLQuoted(src.ExternalID), src.ID, sv.ID)
			}
			return src.ExternalID, nil
		}
	}
	// A volctl volume of another plugin (not on the plugin's sockets: another storage), which
	// no volume of this plugin records as its storage: the word was meant as that volume, whose
	// storage this plugin cannot clone. Before, it was sent to the plugin as a storage ID, its
	// NOT_FOUND advising to check clone_id, which `volctl volume status` showed right; a storage
	// of that ID the plugin did hold would have been cloned instead
	// (TestCloneOfAnotherPluginsVolumeNamesItsPlugin). A storage of that ID meant is registered
	// as a volume of the plugin first, and named by its volctl ID.
	if err == nil && !mates[src.PluginID] {
		same, err := sameStorage(tx, sv.PluginID, sv.CloneID, sv.ID)
		if err != nil {
			return "", err
		}
		if len(same) == 0 {
			return "", invalidf("clone_id %q of volume %q is volume %q of plugin %q, another plugin than volume %q's %q, which cannot clone another plugin's storage: nothing was created; "+
				"to clone volume %q, create volume %q with plugin_id = %s; if plugin %q holds a storage of ID %q meant instead, register it as a volume of plugin %q (`volctl volume register` of a spec with external_id = %s) and give its volctl ID as clone_id",
				sv.CloneID, sv.ID, src.ID, src.PluginID, sv.ID, sv.PluginID, src.ID, sv.ID, spec.HCLQuoted(src.PluginID), sv.PluginID, sv.CloneID, sv.PluginID, spec.HCLQuoted(sv.CloneID))
		}
	}
	// The provider's volume ID: refused as above when a volume being deleted records it through
	// the plugin or a plugin ID on one of its sockets (socketMates: one storage; before, only
	// the plugin's own: TestCloneThroughASocketMateOfASourceBeingDeletedIsRefused).
	// So is one it names in another spelling (spec.SameStorageID), which a plugin that reads
	// IDs so clones (TestCloneFromANearSpellingOfASourceBeingDeletedIsRefused).
	deleting, err := tx.Volumes().List(store.VolumeFilter{State: store.VolumeDeleting})
	if err != nil {
		return "", err
	}
	for _, o := range deleting {
		if mates[o.PluginID] && spec.SameStorageID(o.ExternalID, sv.CloneID) {
			return "", cloneOfDeleting(o, sv, sv.CloneID)
		}
	}
	// So is one whose expansion is pending, named by its storage ID (what Nomad's clone_id
	// means): before, only its volctl ID was looked at
	// (TestCloneByStorageIDOfASourceWithAnExpansionPendingIsRefused).
	recorded, err := sameStorage(tx, sv.PluginID, sv.CloneID, sv.ID)
	if err != nil {
		return "", err
	}
	if id, _, err := nearStorage(tx, sv.PluginID, sv.CloneID, sv.ID); err != nil {
		return "", err
	} else if id != "" {
		o, err := tx.Volumes().Get(id)
		if err != nil {
			return "", err
		}
		recorded = append(recorded, o)
	}
	for _, o := range recorded {
		if err := notCloningPendingExpansion(tx, o, sv, sv.CloneID); err != nil {
			return "", err
		}
	}
	return sv.CloneID, nil
}

// notCloningPendingExpansion refuses to clone source src (named by its storage ID byStorage, ""
// for its volctl ID) while its expansion is pending: a reconcile would grow it under the clone,
// whose CreateVolume sent again is answered at the size the source had, taken for a clone too
// small, deleted and forgotten (TestReconcileDoesNotGrowACloneSourceWhileTheCloneIsInFlight).
// The way out is reconcile's, unless the source's plugin, as last fingerprinted, has no
// EXPAND_VOLUME to finish it with: then the way pendingWithoutController gives
// (TestCloneOfASourceWhosePendingExpansionReconcileCannotFinish).
func notCloningPendingExpansion(tx *store.Tx, src store.Volume, sv spec.Volume, byStorage string) error {
	if src.ExpandMin <= 0 {
		return nil
	}
	named := fmt.Sprintf("volume %q", src.ID)
	if byStorage != "" {
		named = fmt.Sprintf("volume %q (storage ID %q)", src.ID, byStorage)
	}
	way := fmt.Sprintf("run `volctl reconcile` to finish it, then create volume %q again", sv.ID)
	if h, err := tx.Handovers().Get(src.ID); err == nil {
		// Handed over, reconcile leaves its expansion for the take-back, and said nothing: the
		// advice failed for as long as Nomad had the volume
		// (TestCloneOfAHandedOverSourceWithAnExpansionPendingAdvisesAWayThatWorks).
		return conflictf("%s, the clone_id of volume %q, has an expansion to %s pending (ControllerExpandVolume sent, its answer not recorded), and is handed over to %s, "+
			"where reconcile leaves the expansion until it is taken back: nothing was created; take it back (%s), then run `volctl reconcile`, and create volume %q again",
			named, sv.ID, spec.FormatSize(src.ExpandMin), handoverInfo(h).Where(), handoverInfo(h).TakeBackCommands(), sv.ID)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if p, err := tx.Plugins().Get(src.PluginID); err == nil {
		if fp := recordedFingerprint(p); fp != nil && !expands(fp) {
			way = fmt.Sprintf("plugin %q, as last fingerprinted, has no EXPAND_VOLUME capability to finish it with: start it with one again, then run `volctl reconcile` and create volume %q again; %s",
				src.PluginID, sv.ID, pendingExpansionForget(src))
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return conflictf("%s, the clone_id of volume %q, has an expansion to %s pending (ControllerExpandVolume sent, its answer not recorded): nothing was created; %s",
		named, sv.ID, spec.FormatSize(src.ExpandMin), way)
}

// cloneOfDeleting is cloneSource's refusal of source src, being deleted, as the clone_id of
// spec sv; byStorage is the storage ID it was named by, "" for its volctl ID.
func cloneOfDeleting(src store.Volume, sv spec.Volume, byStorage string) error {
	named := fmt.Sprintf("volume %q", src.ID)
	if byStorage != "" {
		named = fmt.Sprintf("volume %q (storage ID %q)", src.ID, byStorage)
	}
	return conflictf("%s, the clone_id of volume %q, is being deleted (its delete is in flight, or was interrupted, and `volctl reconcile` finishes it): "+
		"nothing was created; give volume %q another source", named, sv.ID, sv.ID)
}

// notFromSnapshotBeingDeleted refuses a restore from a snapshot whose delete is recorded
// (deleteSnapshotStored records it with its check that no volume is being restored from it):
// recorded now, a restore cut short before its CreateVolume could never be finished once the
// delete went on, answered NOT_FOUND for the snapshot at every reconcile pass. It is
// cloneSource's refusal of a source being deleted, for a snapshot. A delete recorded through
// another plugin ID on one of the volume's plugin's sockets (socketMates: one process, one
// storage) counts as one through it: before, the restore went on beside it.
func notFromSnapshotBeingDeleted(tx *store.Tx, sv spec.Volume) error {
	if sv.SnapshotID == "" {
		return nil
	}
	d, err := snapshotDeletingThrough(tx, sv.PluginID, sv.SnapshotID)
	if err != nil || d.PluginID == "" {
		return err
	}
	spelt := ","
	if d.SnapshotID != sv.SnapshotID {
		spelt = fmt.Sprintf(", which plugin %q may read as snapshot %q,", d.PluginID, d.SnapshotID)
	}
	return conflictf("snapshot %q of plugin %q, the snapshot_id of volume %q%s is being deleted (its delete is in flight, or was interrupted, and `%s` or `volctl reconcile` finishes it; "+
		"`%s` forgets the delete and leaves the snapshot): "+
		"nothing was created; give volume %q another snapshot", sv.SnapshotID, d.PluginID, sv.ID, spelt,
		shellquote.Command("volctl volume snapshot delete", d.PluginID, d.SnapshotID),
		shellquote.Command("volctl volume snapshot deregister", d.PluginID, d.SnapshotID), sv.ID)
}

// sameCloneSource reports whether spec sv's clone_id names the source volume old records: the
// storage ID recorded (cloneSource resolved it), or the volctl volume of old's plugin whose
// storage that is. The same spec created again, to finish an interrupted clone or to find it
// unchanged, names its source as it did the first time, by its volctl ID: compared with the
// storage ID recorded, it was refused as a change of clone_id, the way out every error of an
// interrupted create gives ("the same create will finish it") refused with it
// (TestCrashInARestoreOrAClone). The clone_id the create's spec wrote is recorded too (its
// CloneSpec) and compared first: resolved again, a source deleted since (which a finished clone
// allows) resolved to nothing, and the same create of the clone was refused as a change of
// clone_id (TestSameCloneCreateAfterItsSourceIsDeleted). A volume an older volctl created has
// none recorded, and the spec's is resolved again.
func sameCloneSource(tx *store.Tx, old store.Volume, sv spec.Volume) bool {
	if sv.CloneID == old.CloneID || (old.CloneSpec != "" && sv.CloneID == old.CloneSpec) {
		return true
	}
	if sv.CloneID == "" || old.CloneID == "" {
		return false
	}
	src, err := tx.Volumes().Get(sv.CloneID)
	return err == nil && src.PluginID == old.PluginID && src.ExternalID == old.CloneID
}

// olderCloneSourceGone refuses the same create of a clone an older volctl recorded (no
// clone_spec: only the storage ID its clone_id resolved to) once the spec's clone_id names no
// volume (its source deleted since, which a finished clone allows): nothing says whether it
// named that storage. Refused as a change of clone_id, the error told the user to delete the
// clone and create it again, destroying its data for a change nobody made
// (TestSameCloneCreateOfAnOlderVolctlsClone). The way on names the storage ID recorded, which
// the same spec may give as its clone_id.
func olderCloneSourceGone(tx *store.Tx, old store.Volume, sv spec.Volume) error {
	if old.CloneSpec != "" || old.CloneID == "" || sv.CloneID == "" {
		return nil
	}
	if _, err := tx.Volumes().Get(sv.CloneID); !errors.Is(err, store.ErrNotFound) {
		return err // a volume of that ID is there: checkImmutable compares its storage
	}
	return conflictf("volume %q was cloned by an older volctl, which recorded only its source's storage ID %q, not the clone_id its spec wrote; "+
		"the spec's clone_id %q names no volume now (deleted since?), so volctl cannot tell it is the same source: nothing was changed. "+
		"If it is, write clone_id = %q (the storage ID recorded) in the spec, and the same create finds volume %q as it is",
		old.ID, old.CloneID, sv.CloneID, old.CloneID, old.ID)
}

func checkCreateCapabilities(c *conn, sv spec.Volume) error {
	ctrl := c.fp.Capabilities.Controller
	switch {
	case needsControllerHalf(c):
		// "Register an existing volume instead" would be refused in its turn: the half is missing.
		return controllerHalfMissing(c.plugin.ID, fmt.Sprintf("create volume %q", sv.ID))
	case !c.fp.Controller || !ctrl.CreateDeleteVolume:
		return invalidf("plugin %q cannot create volumes (no CREATE_DELETE_VOLUME controller capability); register an existing volume instead", c.plugin.ID)
	case sv.CloneID != "" && !ctrl.CloneVolume:
		return invalidf("plugin %q cannot clone volumes (no CLONE_VOLUME controller capability)", c.plugin.ID)
	case sv.SnapshotID != "" && !ctrl.CreateDeleteSnapshot:
		return invalidf("plugin %q cannot restore snapshots (no CREATE_DELETE_SNAPSHOT controller capability)", c.plugin.ID)
	}
	return nil
}

// takesTopology refuses a new create of sv whose topology_request plugin c cannot take. The CSI
// spec: accessibility_requirements "SHALL NOT be specified unless the SP has the
// VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability". Before, it was sent all the same, and the
// volume recorded accessible from the requested topology alone, which a node of such a plugin
// never states: made, and no claim of it ever admitted, the advice to restart the plugin with
// that topology one nobody could follow
// (TestCreateWithATopologyThroughAPluginWithoutAccessibilityConstraints). Only a create not
// recorded yet is refused so: a volume made already is unchanged by its spec again, whatever the
// plugin lost since (TestCreateAgainOfAVolumeMadeWithATopologyAfterThePluginLostAccessibilityConstraints),
// and an interrupted one's replay is finishCreate's.
func takesTopology(c *conn, sv spec.Volume) error {
	if !hasTopologyRequest(sv.TopologyRequest) || c.fp.Capabilities.Plugin.VolumeAccessibilityConstraints {
		return nil
	}
	return invalidf("plugin %q has no VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability: it takes no topology, so volume %q's topology_request is not sent to it "+
		"(the CSI spec forbids it), and a volume made so would be accessible from no topology its node states, never claimable: leave topology_request out of the spec",
		c.plugin.ID, sv.ID)
}

// registersTopology is takesTopology for a registration: a volume registered with a
// topology_request through a plugin that takes none is accessible only from topologies its
// node never states, never claimable, and volume status advised restarting the plugin "with a
// topology", which it cannot have (TestRegisterWithATopologyThroughAPluginWithoutAccessibilityConstraints).
// A volume recorded with that topology already (an older volctl's registration) is registered
// again as it is, its topology unchanged (checkImmutable keeps it).
func registersTopology(tx *store.Tx, c *conn, sv spec.Volume) error {
	if !hasTopologyRequest(sv.TopologyRequest) || c.fp.Capabilities.Plugin.VolumeAccessibilityConstraints {
		return nil
	}
	if _, err := tx.Volumes().Get(sv.ID); err == nil || !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return invalidf("plugin %q has no VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability: its node states no topology, so volume %q, registered with a topology_request, "+
		"would be accessible only from topologies no node of the plugin states, never claimable: nothing was recorded; leave topology_request out of the spec",
		c.plugin.ID, sv.ID)
}

// hasTopologyRequest reports whether tr asks for any topology.
func hasTopologyRequest(tr *spec.TopologyRequest) bool {
	return tr != nil && len(tr.Required)+len(tr.Preferred) > 0
}

// listedSnapshot is what the plugin lists of a restore's snapshot (restoreReady): the volume it
// was taken of and its size_bytes, each "" or 0 when not said or not asked.
type listedSnapshot struct {
	source   string
	size     int64
	recorded bool // volctl recorded the snapshot when the check began (recordedSnapshot)
	// unlisted: the plugin said it has no snapshot of the ID, which volctl does not record
	// (csi.CreateVolumeRequest's SnapshotUnlisted).
	unlisted bool
	// forDelete: the create is sent again by a delete finishing it (finishCreateForDelete),
	// which deletes what it answers: an unlisted restore's answer is returned to it, not kept.
	forDelete bool
}

// restoreReady refuses the restore of a snapshot the plugin says is not ready (ready_to_use
// false: cut, and still being processed), which the CSI spec has ready "to create new volumes"
// only once that flips: a plugin that restores from it anyway hands over a volume missing what
// the processing had not done, and says nothing of it. Only a create not yet recorded is
// asked about (the volume's lock is held): one recorded is done already, or an interrupted
// one whose CreateVolume may have made the volume, and its replay is sent as first asked. The
// plugin is asked as a snapshot delete's check asks it (findsSnapshot), under its controller
// lock and within that check's bound; one that cannot be asked, a snapshot it does not find
// (its CreateVolume says NOT_FOUND), or a check that fails (logged) leave it to the plugin.
// A GetSnapshot answered OK about another snapshot ID is refused as not ready is: the plugin
// said nothing of the one asked (`TestRestoreCheckedByGetSnapshotAnsweringAnotherSnapshot`).
// The refusal is a conflict, before anything is recorded or sent.
func (e *Engine) restoreReady(ctx context.Context, c *conn, sv spec.Volume) (listedSnapshot, error) {
	if sv.SnapshotID == "" {
		return listedSnapshot{}, nil
	}
	switch _, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(sv.ID) }); {
	case err == nil:
		return listedSnapshot{}, nil // recorded: created already, or a replay, sent as it was first asked
	case !errors.Is(err, store.ErrNotFound):
		return listedSnapshot{}, err
	}
	named, err := snapshotNamed(ctx, e, sv)
	if err != nil {
		return listedSnapshot{}, err
	}
	// A delete of the snapshot recorded already is refused now, before the check waits for the
	// delete's controller lock; one that finishes while the check waits is told from a
	// snapshot the plugin never had by the record it removed (recordedSnapshot). Before, the
	// check found the snapshot gone and sent CreateVolume anyway, whose NOT_FOUND said to check
	// snapshot_id, right when the command began (TestRestoreThatWaitedForTheSnapshotsDeleteSaysSo).
	var rec store.Snapshot // the record of it, when recorded
	sourceKept := false    // its source volume is still recorded, on the same storage
	recorded, err := viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) {
		if err := notFromSnapshotBeingDeleted(tx, sv); err != nil {
			return false, err
		}
		var recorded bool
		var err error
		if rec, recorded, err = snapshotRecord(tx, sv); err != nil || !recorded {
			return recorded, err
		}
		switch src, err := tx.Volumes().Get(rec.SourceVolumeID); {
		case err == nil:
			sourceKept = rec.SourceVolumeID != "" && src.ExternalID == rec.SourceExternalID
		case !errors.Is(err, store.ErrNotFound):
			return false, err
		}
		return true, nil
	})
	if err != nil {
		return listedSnapshot{}, err
	}
	if snapshotCheck(c) == "" {
		if named != nil {
			return listedSnapshot{}, nameNotID(sv, named) // the one meaning volctl knows
		}
		// The plugin cannot be asked: its last word of the snapshot, recorded, stands
		// (TestRestoreFromASnapshotRecordedNotReadyThroughAPluginThatCannotBeAskedIsRefused).
		if recorded && !rec.ReadyToUse {
			return listedSnapshot{}, recordedNotReady(c, sv, rec, sourceKept, "it cannot be asked again (no LIST_SNAPSHOTS nor GET_SNAPSHOT)")
		}
		return listedSnapshot{}, nil
	}
	e.failpoint("restore:checked") // no delete of the snapshot recorded; nothing recorded yet
	var (
		snap  csi.Snapshot
		found bool
		near  csi.Snapshot // a near spelling's entry, not ready
	)
	// Not ready, or listed as another source's than recorded: either entry is the answer,
	// whatever a later page says or fails with (findsSnapshotNear)
	// (TestRestoreFromAnotherVolumesSnapshotIsRefusedWhenTheListingThenLoops).
	decisive := func(s csi.Snapshot) bool { return !s.ReadyToUse || recorded && ofAnotherSource(s, rec) }
	err = e.controllerCheck(ctx, c, func(ctx context.Context) error {
		var err error
		snap, found, near, err = e.findsSnapshotNear(ctx, c, sv.SnapshotID, sv.Secrets, decisive)
		return err
	})
	var ce *csi.Error
	if errors.As(err, &ce) && csi.IsRefusedCredentials(err) {
		// The RPC's own hint names --secret, which the snapshot commands take and a create
		// does not: the check sends the volume spec's secrets
		// (TestRestoreCheckRefusedCredentialsNamesTheSpecsSecrets).
		ce.Hint = fmt.Sprintf("the plugin rejected the secrets sent with %s, volume %q's spec's (none when it has no secrets block): "+
			"give the ones it needs in the spec's secrets block", ce.RPC, sv.ID)
	}
	switch {
	case named != nil && !found && err == nil:
		// The plugin has no snapshot of that ID: the NAME was meant.
		return listedSnapshot{}, nameNotID(sv, named)
	case named != nil && !found:
		// It could not say: the check's failure, its hint kept (a credentials refusal's names
		// the spec's secrets block), with both meanings; taken for the NAME, a snapshot of that
		// ID the plugin holds would be refused for good, the advice restoring the other.
		return listedSnapshot{}, fmt.Errorf("%w; whether plugin %q holds a snapshot of ID %q could not be checked, and %q is also the name of snapshot %q, which volctl records: "+
			"write snapshot_id = %q if that one is meant, else fix what failed and create volume %q again",
			err, c.plugin.ID, sv.SnapshotID, sv.SnapshotID, named.SnapshotID, named.SnapshotID, sv.ID)
	}
	switch {
	case found && snap.ID != sv.SnapshotID:
		// GetSnapshot answering OK about another snapshot (ListSnapshots' entries of other IDs
		// are skipped): whether that one is ready says nothing of the one asked, and a restore
		// taking it for an answer would proceed from a snapshot maybe not ready.
		about := fmt.Sprintf("about another snapshot, %q", spec.Cut(snap.ID, 256))
		if snap.ID == "" {
			about = "without a snapshot ID"
		}
		return listedSnapshot{}, conflictf("plugin %q answered %s for snapshot %q %s: whether the snapshot asked for is ready to restore from is not known, "+
			"so nothing was created: check the snapshot ID given for volume %q, and report the plugin's answer to its authors",
			c.plugin.ID, snapshotCheck(c), sv.SnapshotID, about, sv.ID)
	case found && !snap.ReadyToUse, !found && near.ID != "":
		which := fmt.Sprintf("%q", sv.SnapshotID)
		if !found {
			which = fmt.Sprintf("%q (listed as %q, which a plugin that reads IDs so takes for it)", sv.SnapshotID, spec.Cut(near.ID, 256))
		}
		return listedSnapshot{}, conflictf("plugin %q says snapshot %s is not ready to use (ready_to_use false, %s): it is still processing it, and a volume restored from it now "+
			"may miss what that has not done; nothing was created: wait until the plugin says it is ready (`%s` shows what the plugin lists), then create volume %q again",
			c.plugin.ID, which, snapshotCheck(c), "volctl volume snapshot list "+shellquote.Flag("--plugin", c.plugin.ID), sv.ID)
	case found && recorded && ofAnotherSource(snap, rec):
		// Listed as another source's snapshot than the one recorded: a plugin that derives IDs
		// from names gave the gone one's ID to another's, and the restore would hand over that
		// volume's data where the user asked for the recorded one's, as a delete by the record
		// would have destroyed it (TestRestoreFromARecordedIDListedAsAnotherVolumesSnapshotIsRefused).
		return listedSnapshot{}, conflictf("plugin %q lists snapshot %q as a snapshot of %q, not of %s, which volctl recorded it of: the ID names another snapshot now, "+
			"and volume %q restored from it would hold that one's data; nothing was created: give volume %q the snapshot meant (`%s` shows what the plugin lists), "+
			"and `%s` forgets volctl's stale record",
			c.plugin.ID, sv.SnapshotID, spec.Cut(snap.SourceVolumeID, 256), recordedSource(rec), sv.ID, sv.ID,
			"volctl volume snapshot list "+shellquote.Flag("--plugin", c.plugin.ID),
			shellquote.CommandFlags("volctl volume snapshot deregister", []string{rec.PluginID, rec.SnapshotID}, "--id"))
	case err != nil:
		// Scrubbed of the spec's secrets, which the check sent and the state does not hold
		// yet: volctl's own words about the listing quote what the plugin gave (a next_token it
		// repeated), which the scrub of its messages does not reach, and the log's redactor
		// knows only the state's (TestRestoreCheckWarningShowsNoSpecSecretEchoedIntoANextToken).
		scrub := csi.Scrubber(slices.Collect(maps.Values(sv.Secrets.Plain())))
		if recorded && !rec.ReadyToUse {
			return listedSnapshot{}, recordedNotReady(c, sv, rec, sourceKept, "asking it again failed: "+scrub(err.Error()))
		}
		e.log.Warn(fmt.Sprintf("plugin %q: whether snapshot %q is ready to restore volume %q from could not be checked", c.plugin.ID, sv.SnapshotID, sv.ID), "err", scrub(err.Error()))
		if found {
			// Listed ready before the listing failed: its size and source are the plugin's word
			// all the same, which the answer is held to. Dropped, a 1 MiB answer to a restore of
			// an 8 MiB snapshot was recorded "created"
			// (TestRestoreOfAnUnrecordedSnapshotListedBeforeTheListingLoopedIsHeldToItsSize).
			return listedSnapshot{source: snap.SourceVolumeID, size: snap.SizeBytes, recorded: recorded}, nil
		}
	case found:
		return listedSnapshot{source: snap.SourceVolumeID, size: snap.SizeBytes, recorded: recorded}, nil
	case recorded:
		if still, err := viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) { return recordedSnapshot(tx, sv) }); err == nil && !still {
			return listedSnapshot{}, deletedWhileRestoreWaited(sv, "waited for the plugin's controller lock (the plugin does not find it, and volctl no longer records it)")
		}
	}
	if err == nil && !found && !recorded {
		// The plugin has no such snapshot, and volctl records one of that ID through another
		// plugin (not on its sockets: another storage): that one was meant, which this plugin
		// cannot restore. Sent, the plugin's NOT_FOUND advised to check snapshot_id, which
		// `snapshot list` showed right, and a snapshot of that ID it did hold would have been
		// restored instead (TestRestoreOfAnotherPluginsSnapshotNamesItsPlugin), as a clone of
		// another plugin's volume is refused (cloneSource).
		other, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Snapshot, error) { return snapshotOfAnotherPlugin(tx, sv) })
		if err != nil {
			return listedSnapshot{}, err
		}
		if other.PluginID != "" {
			return listedSnapshot{}, invalidf("snapshot_id %q of volume %q is a snapshot volctl records through plugin %q (of volume %q), another plugin than volume %q's %q, which says it has no such snapshot "+
				"and cannot restore another plugin's: nothing was created; a volume is restored through its snapshot's plugin: create volume %q with plugin_id = %s",
				sv.SnapshotID, sv.ID, other.PluginID, other.SourceVolumeID, sv.ID, sv.PluginID, sv.ID, spec.HCLQuoted(other.PluginID))
		}
	}
	return listedSnapshot{recorded: recorded, unlisted: err == nil && !found && !recorded}, nil
}

// snapshotOfAnotherPlugin is the record of restore sv's snapshot_id through a plugin ID other
// than sv's plugin and those on its sockets (socketMates), a zero Snapshot when there is none.
func snapshotOfAnotherPlugin(tx *store.Tx, sv spec.Volume) (store.Snapshot, error) {
	mates, err := socketMates(tx, sv.PluginID)
	if err != nil {
		return store.Snapshot{}, err
	}
	near, err := tx.Snapshots().Near(sv.SnapshotID)
	if err != nil {
		return store.Snapshot{}, err
	}
	for _, sn := range near {
		if sn.SnapshotID == sv.SnapshotID && sn.PluginID != sv.PluginID && !mates[sn.PluginID] {
			return sn, nil
		}
	}
	return store.Snapshot{}, nil
}

// recordedNotReady is the conflict of a restore of spec sv from snapshot rec, recorded not ready
// to use (the plugin's last answer of it), whose plugin could not say otherwise now (why): a
// volume restored from it may miss what the plugin had not done. The same `snapshot create` of
// its name asks again (CreateSnapshot is idempotent by name), and records the answer; with its
// source volume no longer recorded (sourceKept false) that cannot be run, and the way is to
// forget volctl's record once the storage's own tools say the snapshot is ready, the restore then
// left to the plugin (TestRestoreRecordedNotReadyAdviceWorksOnceTheSourceVolumeIsGone).
func recordedNotReady(c *conn, sv spec.Volume, rec store.Snapshot, sourceKept bool, why string) error {
	prefix := fmt.Sprintf("snapshot %q of plugin %q is recorded not ready to use (ready_to_use false, the plugin's last answer of it), and %s: a volume restored from it now "+
		"may miss what the plugin had not done; nothing was created: ", sv.SnapshotID, c.plugin.ID, why)
	if !sourceKept || rec.Name == "" {
		return conflictf("%sits source volume %q is no longer recorded here, so the snapshot cannot be asked again through it: once the storage's own tools say it is ready, "+
			"`%s` forgets volctl's record of it (not the snapshot), and creating volume %q again leaves its readiness to the plugin",
			prefix, rec.SourceVolumeID, shellquote.CommandFlags("volctl volume snapshot deregister", []string{rec.PluginID, rec.SnapshotID}, "--id", "--yes"), sv.ID)
	}
	return conflictf("%srun `%s` again, which asks the plugin and records its answer, then create volume %q again once it says ready",
		prefix, shellquote.Command("volctl volume snapshot create", rec.SourceVolumeID, rec.Name), sv.ID)
}

// deletedWhileRestoreWaited is the conflict of a restore of spec sv whose snapshot, recorded
// when its check began, another volctl deleted while it did what: nothing was created.
func deletedWhileRestoreWaited(sv spec.Volume, what string) error {
	return conflictf("snapshot %q of plugin %q, the snapshot_id of volume %q, was deleted by another volctl while this restore %s: nothing was created; give volume %q another snapshot",
		sv.SnapshotID, sv.PluginID, sv.ID, what, sv.ID)
}

// endedWhileRestoreChecked is the conflict of a restore of spec sv whose snapshot volctl
// recorded when its check began and no longer does: deleted by another volctl, or deregistered,
// its record forgotten and the snapshot left on the plugin, which the same create run again
// restores from. The event log tells which; before, a deregister was said to have deleted it,
// and the advice gave up a snapshot the plugin still held
// (TestRestoreBesideASnapshotDeregisterDoesNotSayItWasDeleted).
func (e *Engine) endedWhileRestoreChecked(tx *store.Tx, sv spec.Volume) error {
	mates, err := socketMates(tx, sv.PluginID)
	if err != nil {
		return err
	}
	filters, match := snapshotEndings(sv.SnapshotID, slices.Sorted(maps.Keys(mates))...)
	last, err := lastEndingIn(tx, filters, 500, match)
	if err != nil || last.Kind == "snapshot-delete" {
		return deletedWhileRestoreWaited(sv, "checked it")
	}
	how := "deleted or deregistered"
	if last.Kind == "snapshot-deregister" {
		how = "deregistered (volctl's record of it forgotten, the snapshot left on the plugin)"
	}
	words := ""
	if w := e.endingWords(last); w != "" {
		words = " (" + w + ")"
	}
	return conflictf("snapshot %q of plugin %q, the snapshot_id of volume %q, was %s by another volctl while this restore checked it%s: nothing was created; "+
		"create volume %q again to restore from it if the plugin still holds it (`%s` shows what it lists), else give volume %q another snapshot",
		sv.SnapshotID, sv.PluginID, sv.ID, how, words, sv.ID, "volctl volume snapshot list "+shellquote.Flag("--plugin", sv.PluginID), sv.ID)
}

// recordedSnapshot reports whether volctl records snapshot sv.SnapshotID through sv's plugin or
// another plugin ID on its sockets (socketMates: one process, one storage).
func recordedSnapshot(tx *store.Tx, sv spec.Volume) (bool, error) {
	_, recorded, err := snapshotRecord(tx, sv)
	return recorded, err
}

// snapshotRecord is recordedSnapshot with the record found.
func snapshotRecord(tx *store.Tx, sv spec.Volume) (store.Snapshot, bool, error) {
	mates, err := socketMates(tx, sv.PluginID)
	if err != nil {
		return store.Snapshot{}, false, err
	}
	for _, pluginID := range slices.Sorted(maps.Keys(mates)) {
		switch rec, err := tx.Snapshots().Get(pluginID, sv.SnapshotID); {
		case err == nil:
			return rec, true, nil
		case !errors.Is(err, store.ErrNotFound):
			return store.Snapshot{}, false, err
		}
	}
	return store.Snapshot{}, false, nil
}

// snapshotNamed is the snapshot volctl records for the plugin whose NAME is a restore's
// snapshot_id, which is no ID it records for it (the word `snapshot create` was given, which
// `snapshot delete` and `deregister` take too), or nil. restoreReady refuses the restore naming
// that snapshot's ID (nameNotID) unless the plugin holds a snapshot of that ID: then the ID is
// what snapshot_id names, as the CSI spec has it. Before, the plugin's NOT_FOUND came back with
// a generic "check snapshot_id" (TestRestoreGivenASnapshotsNameNamesItsID); then the NAME was
// taken for the only meaning, and a snapshot the plugin holds under that ID could never be
// restored, the advice restoring another (TestRestoreFromAPluginSnapshotIDThatIsAlsoARecordedNameIsNotRefused).
func snapshotNamed(ctx context.Context, e *Engine, sv spec.Volume) (*store.Snapshot, error) {
	return viewOne(ctx, e.store, func(tx *store.Tx) (*store.Snapshot, error) {
		switch _, err := tx.Snapshots().Get(sv.PluginID, sv.SnapshotID); {
		case err == nil:
			return nil, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		sn, ok, err := recordByName(tx, sv.PluginID, sv.SnapshotID)
		if err != nil || !ok {
			return nil, err
		}
		return &sn, nil
	})
}

// nameNotID is the refusal of a restore whose snapshot_id is the NAME of snapshot named.
func nameNotID(sv spec.Volume, named *store.Snapshot) error {
	return invalidf("volume %q's snapshot_id %q is the name of snapshot %q of plugin %q, not its ID: snapshot_id takes the ID the plugin gave it "+
		"(`%s` shows both): write snapshot_id = %q", sv.ID, sv.SnapshotID, named.SnapshotID, sv.PluginID,
		"volctl volume snapshot list "+shellquote.Flag("--plugin", sv.PluginID), named.SnapshotID)
}

// finishCreate sends CreateVolume for a volume in state creating and records the result. replay
// says an earlier call sent it already, its answer lost. listed is what the plugin lists of a
// restore's snapshot (restoreReady), zero when not asked: with the source volctl's own record
// of the snapshot keeps (snapshotSources), an answer naming its source is refused as the
// source, not a new volume (csi.CreateVolumeRequest's SnapshotSources); its size counts with
// the recorded one as what the answer may not be smaller than (SourceSize). Before, a snapshot
// volctl does not record (deregistered, taken by another tool) had its listed size dropped,
// and an answer an eighth of it recorded ready
// (TestRestoreOfAnUnrecordedSnapshotAnsweredSmallerThanItsListedSizeIsRefused).
//
// The plugin's controller lock is held from CreateVolume until its answer is recorded or the
// volume it made is deleted: a concurrent create (another process) answered with the same
// storage either recorded it before this one looks (refuseSharedStorage then leaves it alone),
// or sees this one's record; a cleanup never deletes storage another create has just recorded.
func (e *Engine) finishCreate(ctx context.Context, c *conn, v store.Volume, replay bool, listed listedSnapshot) error {
	if !c.fp.Controller || !c.fp.Capabilities.Controller.CreateDeleteVolume {
		// Recorded while the plugin had the capability (createVolume checks it), lost since (a
		// restart): CreateVolume is not sent to a plugin that does not advertise it, and the
		// way out names what works without it.
		return fmt.Errorf("plugin %q no longer has the controller capability CREATE_DELETE_VOLUME, so CreateVolume is not sent to finish volume %q's interrupted create: "+
			"start the plugin with that capability again, which lets `volctl reconcile` finish it; or `%s` forgets it "+
			"(the plugin may hold a volume named %q, made by a CreateVolume whose answer was lost: delete it with the storage provider's tools)",
			c.plugin.ID, v.ID, shellquote.Command("volctl volume deregister", v.ID), v.CSIName)
	}
	if hasTopologyRequest(v.TopologyRequest) && !c.fp.Capabilities.Plugin.VolumeAccessibilityConstraints {
		// Recorded while the plugin took topology (takesTopology), lost since: the CSI spec
		// forbids sending it, as above for the capability to create.
		return fmt.Errorf("plugin %q no longer has the plugin capability VOLUME_ACCESSIBILITY_CONSTRAINTS, so CreateVolume with volume %q's topology_request is not sent to finish its interrupted create: "+
			"start the plugin with that capability again, which lets `volctl reconcile` finish it; or `%s` forgets it "+
			"(the plugin may hold a volume named %q, made by a CreateVolume whose answer was lost: delete it with the storage provider's tools)",
			c.plugin.ID, v.ID, shellquote.Command("volctl volume deregister", v.ID), v.CSIName)
	}
	req := csi.CreateVolumeRequest{
		Name: v.CSIName, CapacityMin: v.RequestedMin, CapacityMax: v.RequestedMax,
		Capabilities: volumeCapabilities(v.Spec()), Parameters: v.Parameters, Secrets: v.Secrets,
		SnapshotID: v.SnapshotID, CloneID: v.CloneID, TopologyRequest: v.TopologyRequest,
	}
	if v.SnapshotID != "" {
		recorded, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]string, error) { return snapshotSources(tx, v.PluginID, v.SnapshotID) })
		if err != nil {
			return err
		}
		req.SnapshotSources = append(recorded, listed.source)
		req.SnapshotUnlisted = listed.unlisted
	}
	if v.SnapshotID != "" || v.CloneID != "" {
		size, err := viewOne(ctx, e.store, func(tx *store.Tx) (int64, error) { return sourceSize(tx, v) })
		if err != nil {
			return err
		}
		req.SourceSize = smallerSize(size, listed.size)
	}
	return e.withController(ctx, c, func(ctx context.Context) error {
		// The volume's lock, held since the intent was read, is checked before CreateVolume is
		// sent and again once it answers, before anything is recorded or cleaned up: a lock file
		// removed meanwhile lets another volctl drive the same create (or delete it) beside this
		// one, and this one stops, leaving the intent as recorded (stillHeld).
		if err := e.locks.stillHeld(v.ID); err != nil {
			return err
		}
		if replay && v.SnapshotID != "" && !slices.ContainsFunc(req.SnapshotSources, func(s string) bool { return s != "" }) && snapshotCheck(c) != "" {
			// A restore sent again (reconcile, the same create, a delete finishing it) from a
			// snapshot volctl does not record: the readiness check that learned its source ran
			// before the first CreateVolume only, so the source is asked again, for the answer's
			// check alone (it was refused only at the first send). A check that fails leaves
			// the answer unchecked against it, as a plugin that cannot be asked does.
			if err := e.boundCheck(ctx, func(ctx context.Context) error {
				snap, found, err := e.findsSnapshot(ctx, c, v.SnapshotID, v.Secrets)
				if found && snap.ID == v.SnapshotID {
					req.SnapshotSources = append(req.SnapshotSources, snap.SourceVolumeID)
					req.SourceSize = smallerSize(req.SourceSize, snap.SizeBytes)
				}
				// The plugin has no such snapshot now: an answer naming no source is refused, as
				// at the first send, but its volume left alone, not deleted: the first send may
				// have restored the snapshot's data into it before the snapshot went. Before,
				// the replay recorded an empty volume as the restore
				// (TestRestoreFromAnUnlistedSnapshotKilledThenReconciledIsNotRecordedRestored).
				req.SnapshotUnlisted, req.UnlistedKept = err == nil && !found, err == nil && !found && !listed.forDelete
				return err
			}); err != nil {
				e.log.Warn(fmt.Sprintf("plugin %q: which volume snapshot %q was taken of could not be asked before volume %q's restore was sent again", c.plugin.ID, v.SnapshotID, v.ID), "err", err)
			}
		}
		asked := req.SnapshotSources
		held, err := e.sourcesStillHeld(ctx, c, v, asked)
		if err != nil {
			return err
		}
		req.SnapshotSources = held
		created, earlier, err := sendAnswered(ctx, e, c, csi.RPCCreateVolume, func(ctx context.Context) (csi.Volume, error) {
			return c.client.CreateVolume(ctx, req)
		})
		e.failpoint("rpc:CreateVolume")
		testHookCreateAnswered(v.ID)
		if lost := e.locks.stillHeld(v.ID); lost != nil {
			return lost
		}
		if err != nil {
			return e.createFailed(ctx, c, v, replay || earlier, created, err)
		}
		// A volume a create makes is published nowhere: an answer the plugin reports published
		// to a node is a volume it already held (another state dir's, Nomad's), which recorded
		// here a delete would delete under its user. Left alone, not recorded, as the cleanup of
		// an unusable answer leaves it; before, a usable one was recorded as this volume
		// (TestCreateAnsweredWithAnotherStateDirsPublishedVolumeIsNotRecorded). A check that
		// fails records the answer, as before the check.
		// Storage this state dir records already is left to refuseSharedStorage, whose refusal
		// names the volume it is (TestCreateAnsweredWithThisStateDirsPublishedVolumeNamesIt).
		if publishedCheck(c) != "" && !e.recordsStorage(ctx, v, created.ID) {
			var nodes []string
			if err := e.boundCheck(withCheckBudget(ctx, e.newCheckBudget()), func(ctx context.Context) error {
				var err error
				nodes, err = e.publishedNodes(ctx, c, created.ID)
				return err
			}); err != nil {
				e.log.Warn(fmt.Sprintf("plugin %q: whether a node holds volume %q, its answer to volume %q's CreateVolume, could not be checked: recorded as volume %q",
					v.PluginID, spec.Cut(created.ID, 256), v.ID, v.ID), "err", err)
			} else if len(nodes) > 0 {
				return e.keepPublishedAnswer(ctx, c, v, replay || earlier, created.ID, nodes, nil)
			}
		}
		freed := "" // a source the plugin no longer had, whose ID the answer is
		for _, src := range asked {
			if src != "" && !slices.Contains(req.SnapshotSources, src) && spec.SameStorageID(created.ID, src) {
				freed = src
			}
		}
		if node := c.fp.AccessibleTopology; node != nil {
			created.AccessibleTopology = spelledAsNode(created.AccessibleTopology, node.Segments)
		}
		return e.recordCreated(ctx, v, created, replay || earlier, freed)
	})
}

// recordsStorage reports whether this state dir records id, or a near spelling of it, as the
// storage of another volume of v's plugin (sameStorage, nearStorage: refuseSharedStorage's
// reading); a read that fails says no.
func (e *Engine) recordsStorage(ctx context.Context, v store.Volume, id string) bool {
	recorded := false
	_ = e.store.View(ctx, func(tx *store.Tx) error {
		same, err := sameStorage(tx, v.PluginID, id, v.ID)
		if err != nil {
			return err
		}
		if len(same) > 0 {
			recorded = true
			return nil
		}
		o, _, err := nearStorage(tx, v.PluginID, id, v.ID)
		recorded = err == nil && o != ""
		return err
	})
	return recorded
}

// sourcesStillHeld returns those of sources, the volumes volume v's restore's snapshot was
// taken of (csi.CreateVolumeRequest's SnapshotSources), that plugin c still has, asked before
// CreateVolume under the controller lock it is sent under (volumeCheck, one checkBudget for
// all). The refusal of an answer naming a source is for a plugin that restores in place or
// hands the source over, which needs the source there; one the plugin no longer has (deleted,
// by volctl or by hand) is no volume the answer can be, and a plugin that gives a new volume
// a freed ID (a storage array's LUN numbers) answered the restore after the source's delete
// with the source's old ID: refused, the restored volume was left on the plugin recorded
// nowhere, and the user told to check a source that no longer exists
// (TestRestoreGivenItsDeletedSourcesFreedIDIsRecorded). A source listed under another spelling
// (spec.SameStorageID) is held, as the refusal matches it; a check that fails, or a plugin
// that cannot be asked, keeps every source (the refusal stands, the safe side); so does a source
// recorded here, which is not asked of the plugin.
//
// A source found gone is recorded on v (SetSourcesGone, migration 0025) before CreateVolume is
// sent, and stays gone for every CreateVolume sent again after an answer lost (reconcile, the
// create again): the plugin that made the restore under the freed ID lists it then, the
// restore's own volume, which asked again read as the source still there: the answer was
// refused as the source and the restored volume left on the plugin recorded nowhere
// (TestRestoreGivenAFreedIDWhoseAnswerWasLostIsRecordedByReconcile). What the plugin lists
// under an ID it no longer had is a volume made since, not the source. The error is the
// store's, before anything is sent.
func (e *Engine) sourcesStillHeld(ctx context.Context, c *conn, v store.Volume, sources []string) ([]string, error) {
	var ask []string
	for _, src := range sources {
		if src != "" && !slices.Contains(ask, src) {
			ask = append(ask, src)
		}
	}
	if len(ask) == 0 || volumeCheck(c) == "" {
		return ask, nil
	}
	bctx := withCheckBudget(ctx, e.newCheckBudget())
	held := ask[:0:0]
	var (
		goneBefore []string // found gone before an earlier CreateVolume of this restore
		goneRead   bool
		goneNow    bool // a source found gone by this call
	)
	for _, src := range ask {
		// A source volctl records (the restore of a snapshot of a live volume, the common
		// case) is there as far as volctl knows: held, the plugin not asked.
		recorded, rerr := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Volume, error) { return sameStorage(tx, v.PluginID, src, v.ID) })
		if rerr != nil || len(recorded) > 0 {
			held = append(held, src)
			continue
		}
		if !goneRead {
			var err error
			if goneBefore, err = viewOne(ctx, e.store, func(tx *store.Tx) ([]string, error) { return tx.Volumes().SourcesGone(v.ID) }); err != nil {
				return nil, err
			}
			goneRead = true
		}
		if slices.Contains(goneBefore, src) {
			continue
		}
		var listed bool
		err := e.boundCheck(bctx, func(ctx context.Context) error {
			var err error
			listed, err = e.holdsSource(ctx, c, src)
			return err
		})
		if err != nil {
			e.log.Warn(fmt.Sprintf("plugin %q: whether it still has volume %q, which the snapshot volume %q is restored from was taken of, could not be checked before CreateVolume: an answer naming it is refused as that source",
				c.plugin.ID, spec.Cut(src, 256), v.ID), "err", err)
		}
		if listed || err != nil {
			held = append(held, src)
		} else {
			goneBefore, goneNow = append(goneBefore, src), true
		}
	}
	if goneNow {
		if err := e.store.Update(ctx, func(tx *store.Tx) error { return tx.Volumes().SetSourcesGone(v.ID, goneBefore) }); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// cloneSourceHeld refuses, before anything is sent, a clone whose clone_id is a storage ID
// volctl records no volume by (nor a volctl ID) and that plugin c, asked, does not hold: a
// plugin that ignores the content source it cannot find made an empty volume, recorded ready
// and said "created", the data the user expected not there
// (TestCloneOfAVolumeThePluginDoesNotHaveIsNotSaidCreated). A plugin that cannot be asked (no
// LIST_VOLUMES nor GET_VOLUME), or whose check fails, is sent the create as before. Nothing for
// a volume recorded already (a replay, sent as first asked).
func (e *Engine) cloneSourceHeld(ctx context.Context, c *conn, sv spec.Volume) error {
	if sv.CloneID == "" || volumeCheck(c) == "" {
		return nil
	}
	unrecorded, err := viewOne(ctx, e.store, func(tx *store.Tx) (bool, error) {
		for _, id := range []string{sv.ID, sv.CloneID} {
			switch _, err := tx.Volumes().Get(id); {
			case err == nil:
				return false, nil
			case !errors.Is(err, store.ErrNotFound):
				return false, err
			}
		}
		if same, err := sameStorage(tx, sv.PluginID, sv.CloneID, sv.ID); err != nil || len(same) > 0 {
			return false, err
		}
		id, _, err := nearStorage(tx, sv.PluginID, sv.CloneID, sv.ID)
		return err == nil && id == "", err
	})
	if err != nil || !unrecorded {
		return err
	}
	var held bool
	if err := e.controllerCheck(ctx, c, func(ctx context.Context) error {
		var err error
		held, err = e.holdsSource(ctx, c, sv.CloneID)
		return err
	}); err != nil {
		e.log.Warn(fmt.Sprintf("plugin %q: whether it holds volume %q, the clone_id of volume %q, could not be checked before CreateVolume", c.plugin.ID, spec.Cut(sv.CloneID, 256), sv.ID), "err", err)
		return nil
	}
	if held {
		return nil
	}
	return invalidf("clone_id %q of volume %q names no volume plugin %q holds (%s) nor one volctl records: nothing was created, and a plugin that ignores a source it cannot find "+
		"would have made an empty volume; check clone_id (a volctl volume ID, or the storage ID the plugin gives, which `volctl volume status ID` shows as External ID), then create volume %q again",
		sv.CloneID, sv.ID, c.plugin.ID, volumeCheck(c), sv.ID)
}

// holdsSource says whether plugin c lists volume src, or src spelled otherwise
// (spec.SameStorageID), as the refusal of a restore's answer matches it (sourcesStillHeld);
// the caller holds the plugin's controller lock.
func (e *Engine) holdsSource(ctx context.Context, c *conn, src string) (bool, error) {
	if volumeCheck(c) != csi.RPCListVolumes {
		return e.listsVolume(ctx, c, src) // ControllerGetVolume: an answer about another ID says found
	}
	var listed bool
	err := e.listPages(ctx, c, csi.RPCListVolumes, maxCheckPages, func(ctx context.Context, token string) (string, bool, error) {
		page, err := c.client.ListVolumes(ctx, csi.ListVolumesRequest{StartingToken: token})
		listed = err == nil && slices.ContainsFunc(page.Entries, func(en csi.ListedVolume) bool { return spec.SameStorageID(en.Volume.ID, src) })
		return page.NextToken, listed, err
	})
	return listed, err
}

// snapshotSources returns the external IDs of the volumes volctl records snapshotID as taken of,
// through pluginID or a plugin ID on one of its sockets (socketMates: one storage): a restore
// from it answered with one of them is answered with its source (finishCreate).
func snapshotSources(tx *store.Tx, pluginID, snapshotID string) ([]string, error) {
	mates, err := socketMates(tx, pluginID)
	if err != nil {
		return nil, err
	}
	var sources []string
	for _, id := range slices.Sorted(maps.Keys(mates)) {
		sn, err := tx.Snapshots().Get(id, snapshotID)
		switch {
		case err == nil:
			sources = append(sources, sn.SourceExternalID)
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	return sources, nil
}

// smallerSize is the smaller of two sizes said, a size not said (0 or less) counting for none.
func smallerSize(a, b int64) int64 {
	switch {
	case b <= 0:
		return max(a, 0)
	case a <= 0:
		return b
	}
	return min(a, b)
}

// sourceSize is the size volctl records of what volume v is made from (csi.CreateVolumeRequest's
// SourceSize): its snapshot's size_bytes, as the plugin or a socket mate answered it, or the
// capacity of the volume of the plugin it clones; the smallest where records differ, 0 when none
// says. Before, a restore answered with a volume an eighth of its snapshot was recorded ready
// (TestRestoreAnsweredSmallerThanItsSnapshotIsRefused).
func sourceSize(tx *store.Tx, v store.Volume) (int64, error) {
	var size int64
	take := func(n int64) { size = smallerSize(size, n) }
	switch {
	case v.SnapshotID != "":
		mates, err := socketMates(tx, v.PluginID)
		if err != nil {
			return 0, err
		}
		for id := range mates {
			sn, err := tx.Snapshots().Get(id, v.SnapshotID)
			switch {
			case err == nil:
				take(sn.SizeBytes)
			case !errors.Is(err, store.ErrNotFound):
				return 0, err
			}
		}
	case v.CloneID != "":
		// The source recorded through a socket mate is the volume cloned too, as
		// refuseCloneInFlight takes it: looked up by the plugin's ID alone, a clone answered at
		// an eighth of it was recorded ready (TestCloneThroughASocketMateAnsweredSmallerThanItsSourceIsRefused).
		// By the exact ID only: on a plugin that holds IDs as they are spelled, a near spelling
		// of clone_id (spec.SameStorageID) is another volume, and sized by it, a valid clone of
		// an unrecorded one was refused and deleted (TestCloneOfAnUnrecordedVolumeIsNotSizedByANearSpelledOne).
		srcs, err := sameStorage(tx, v.PluginID, v.CloneID, v.ID)
		if err != nil {
			return 0, err
		}
		for _, src := range srcs {
			if src.NodeExpandMin > 0 && !src.NodeExpandControllerDone {
				// Recorded at the size of a node-only expansion owed, which its storage does
				// not have yet: a faithful clone at the size it has was refused as smaller
				// and deleted (TestCloneOfAVolumeOwedANodeOnlyExpansionIsNotRefusedAsSmaller).
				continue
			}
			take(src.CapacityBytes)
		}
	}
	return size, nil
}

// testHookCreateAnswered runs, in tests, after a CreateVolume answer is in and before it is
// recorded or cleaned up.
var testHookCreateAnswered = func(volumeID string) {}

// createFailed handles a CreateVolume that failed, or answered with a volume (created) volctl
// cannot use, for volume v's intent; the caller holds the plugin's controller lock. sentBefore
// says a CreateVolume whose answer was lost may have been sent before the last one.
func (e *Engine) createFailed(ctx context.Context, c *conn, v store.Volume, sentBefore bool, created csi.Volume, err error) error {
	if created.ID != "" {
		// The plugin answered with a volume we cannot use (smaller or larger than asked, outside
		// the requisite topology): remove it again, unless it is another volctl volume's storage,
		// which a plugin mapping two names onto one volume answers with: deleting it would
		// destroy that volume's data. The volume to delete is recorded, as this intent marked
		// deleting with its external ID, before DeleteVolume is sent (Checkpoints): a register
		// or create of that storage meanwhile (another process) sees it recorded and is refused,
		// and a cleanup cut short is finished by reconcile like any delete.
		var dup error
		// The ID as messages show it: a plugin's answer may hold one of megabytes (refused for
		// that, csi's MaxObjectID, and deleted here by it whole).
		shown := spec.Cut(created.ID, 256)
		doomed := v
		doomed.ExternalID, doomed.State = created.ID, store.VolumeDeleting
		if uerr := e.store.Update(ctx, func(tx *store.Tx) error {
			var err error
			if dup, err = refuseSharedStorage(tx, v, created.ID, sentBefore); err != nil || dup != nil {
				return err
			}
			if err := tx.Volumes().Update(&doomed); err != nil {
				return err
			}
			// Marked the create's cleanup: a refusal of its DeleteVolume, here or by reconcile
			// or `volume delete` finishing it, never puts the answer back to ready
			// (keepRefusedDelete).
			return tx.Volumes().SetCreateCleanup(v.ID, true)
		}); uerr != nil {
			return errors.Join(err, uerr)
		}
		if dup != nil {
			return fmt.Errorf("%w (the answer was unusable anyway: %v)", dup, err)
		}
		e.failpoint("create:unusable") // recorded deleting with the unusable answer's ID, DeleteVolume not sent
		// The listing before DeleteVolume and the one after it share one bound, as a delete's do.
		bctx := withCheckBudget(ctx, e.newCheckBudget())
		nodes, qerr := e.unusableAnswerHeld(bctx, c, v, created.ID)
		if len(nodes) > 0 {
			return e.keepPublishedAnswer(ctx, c, v, sentBefore, created.ID, nodes, err)
		}
		if qerr != nil {
			return fmt.Errorf("%w; %w", err, e.cleanupUnchecked(ctx, v, created.ID, qerr))
		}
		derr := e.attempt(ctx, c, csi.RPCDeleteVolume, func(ctx context.Context) error {
			return c.client.DeleteVolume(ctx, csi.DeleteVolumeRequest{VolumeID: created.ID, Secrets: v.Secrets})
		})
		e.failpoint("rpc:DeleteVolume")
		if derr == nil || csi.IsIgnorable(derr) {
			var listed bool
			unchecked := e.boundCheck(bctx, func(ctx context.Context) error {
				var err error
				listed, err = e.listsVolume(ctx, c, created.ID)
				return err
			})
			if listed {
				derr = stillListed(v.PluginID, csi.RPCDeleteVolume, derr, "volume", shown, volumeCheck(c))
			} else {
				e.uncheckedNote(unchecked, derr, v.PluginID, csi.RPCDeleteVolume, "volume", shown, v.Secrets)
			}
		}
		if derr != nil && !csi.IsIgnorable(derr) {
			// The plugin still has the volume: it stays recorded, deleting, rather than leak.
			own := fmt.Sprintf("create refused; deleting volume %q failed, left for reconcile: ", shown)
			e.failureEvent(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCDeleteVolume,
				Code: csi.EventCode(derr), Message: fmt.Sprintf("%s%v; %v", own, err, derr)}, own)
			return fmt.Errorf("%w; deleting the unusable volume %q failed: %v (volume %q stays marked deleting with it: `volctl reconcile` or `%s` deletes it)",
				err, shown, derr, v.ID, shellquote.Command("volctl volume delete", v.ID))
		}
		// Deleted: back to the bare intent, which what follows keeps or forgets.
		if uerr := e.store.Update(ctx, func(tx *store.Tx) error { return backToIntent(tx, &v) }); uerr != nil {
			return errors.Join(err, uerr)
		}
		// Said: the error named a volume the plugin made, and not what became of it, so that
		// the user went looking for storage left behind (TestCreateAnsweredAboveTheLimitIsRefused).
		err = &deletedAgain{fmt.Errorf("%w (volctl deleted that volume again: DeleteVolume answered OK)", err)}
		e.failpoint("create:unusable-deleted") // the bare intent again, not yet kept or forgotten
		// The plugin answered the name with that volume, which CSI's idempotency by name makes
		// the one any earlier CreateVolume under it made (recordCreated takes it so too), and
		// it is deleted: nothing is left under the name for the intent to find. Kept, it was
		// sent again by every reconcile pass, the agent's too, each making and deleting the
		// unusable volume anew and reporting the create for good, after a create killed here
		// (TestCrashInTheCleanupOfAnUnusableCreateAnswer).
		sentBefore = false
	}
	// An interrupt once the unusable answer was deleted again finds nothing left to keep the
	// intent for, as a kill there does (above): kept, every reconcile pass made and deleted the
	// unusable volume again (TestSnapshotDeleteRefusedWhileARestoreCleansUpAnUnusableAnswer).
	var gone *deletedAgain
	if csi.IsRetryable(err) || ctx.Err() != nil && !errors.As(err, &gone) {
		e.failureEvent(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
			Code: csi.EventCode(err), Message: "create left for reconcile: " + err.Error()}, "create left for reconcile: ")
		return &keptIntent{cause: err, kept: "the create is recorded and `volctl reconcile` or the same create will finish it"}
	}
	if csi.IsAnswerUnread(err) {
		// The plugin made the volume and answered; volctl cannot read the answer, and asking
		// again gets the same one. Its name is what finds the volume on the plugin's side.
		e.event(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
			Code: csi.EventCode(err), Message: fmt.Sprintf("create answered unreadably, kept: the plugin made volume name %q: %v", v.CSIName, err)})
		// The advice's order matters: while the create is recorded, reconcile (the agent's,
		// every minute) sends CreateVolume again, which makes a volume deleted by hand again.
		return &keptIntent{cause: err, kept: fmt.Sprintf("plugin %q created the volume named %q but its answer cannot be used: the create stays recorded; "+
			"`%s` forgets it (it has no ID to delete it by), then delete that volume with the storage provider's tools: "+
			"in this order, since reconcile sends CreateVolume again while the create is recorded, which would make it again", v.PluginID, v.CSIName,
			shellquote.Command("volctl volume delete", v.ID))}
	}
	if sentBefore && errors.Is(err, csi.ErrUnlistedKept) {
		// Reconcile and the same create send the same request and are refused the same way
		// for as long as the plugin lacks the snapshot: only the ways that end it are advised
		// (TestUnlistedRestoreReplayRefusalDoesNotAdviseWhatRefusesItAgain).
		e.failureEvent(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
			Message: "create refused, kept: " + err.Error()}, "create refused, kept: ")
		return &keptIntent{cause: err, kept: fmt.Sprintf("the create stays recorded, and reconcile reports it on every pass, refused the same way, until it is ended: "+
			"to drop the volume, `%s` (it sends the create again and deletes what the plugin answers); to keep it, `%s`, then register the plugin's volume, named %q, by its volume ID as external_id",
			shellquote.Command("volctl volume delete", v.ID), shellquote.Command("volctl volume deregister", v.ID), v.CSIName)}
	}
	if sentBefore {
		// A final error says this call created nothing, not that an earlier one whose
		// answer was lost did not: keep the intent, and the name that finds the volume.
		e.failureEvent(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCCreateVolume,
			Code: csi.EventCode(err), Message: "create failed, kept for reconcile: " + err.Error()}, "create failed, kept for reconcile: ")
		return &keptIntent{cause: err, kept: fmt.Sprintf("an earlier CreateVolume's answer was lost, so the plugin may have the volume: the create stays recorded for `volctl reconcile` or the same create; `%s` sends it again and deletes what it answers (a refusal for good forgets it; a refusal of the secrets sent does not, and `%s` forgets it then)", shellquote.Command("volctl volume delete", v.ID), shellquote.Command("volctl volume deregister", v.ID))}
	}
	// A final error to the only CreateVolume sent: nothing was created, so forget the intent,
	// whatever the command's context does now.
	if derr := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if err := tx.Volumes().Delete(v.ID); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID,
			RPC: csi.RPCCreateVolume, Code: csi.EventCode(err), Message: "create failed: " + err.Error()})
	}); derr != nil {
		e.log.Warn("forgetting a failed create", "volume", v.ID, "err", derr)
	}
	return err
}

// deletedAgain is a create's error once the volume the plugin answered with, unusable, was
// deleted again (DeleteVolume answered OK): nothing is left under the create's name. A delete
// finishing an interrupted create is done then (finishCreateForDelete).
type deletedAgain struct{ error }

func (d *deletedAgain) Unwrap() error { return d.error }

// recordCreated records volume v as created by the plugin's answer; the caller holds the
// plugin's controller lock. resent says an earlier CreateVolume under the name may have been
// answered and its answer lost: the answer recorded is the last one, which CSI's idempotency
// by name makes the same volume. volctl cannot check that (docs/architecture.md, what a create
// cannot know), and the event says so, naming the CSI name.
//
// freed, when not "", is the volume the restore's snapshot was taken of, which the plugin no
// longer had before CreateVolume (sourcesStillHeld) and whose ID the answer is: recorded
// (SetSourceGone), so that the volume's delete is not refused as the delete of its own source.
func (e *Engine) recordCreated(ctx context.Context, v store.Volume, created csi.Volume, resent bool, freed string) error {
	v.ExternalID = created.ID
	v.CapacityBytes = created.CapacityBytes
	if len(created.Context) > 0 {
		v.Context = created.Context
	}
	v.AccessibleTopology = created.AccessibleTopology // spelled as the node (finishCreate: spelledAsNode)
	v.State = store.VolumeReady
	var dup error
	err := e.store.Update(ctx, func(tx *store.Tx) error {
		// The check and the record are one write transaction, so of two creates the plugin
		// answers with one ID, only the first to commit records it.
		var err error
		if dup, err = refuseSharedStorage(tx, v, v.ExternalID, resent); err != nil || dup != nil {
			return err
		}
		if err := tx.Volumes().Update(&v); err != nil {
			return err
		}
		msg := fmt.Sprintf("volume %q created (external ID %q)", v.ID, v.ExternalID)
		if freed != "" {
			if err := tx.Volumes().SetSourceGone(v.ID); err != nil {
				return err
			}
			msg += fmt.Sprintf("; the ID of volume %q, which snapshot %q was taken of and which the plugin no longer had before CreateVolume: a new volume under that freed ID",
				spec.Cut(freed, 256), spec.Cut(v.SnapshotID, 256))
		}
		if resent {
			msg += fmt.Sprintf("; an earlier CreateVolume's answer was lost, and this is the plugin's answer to CreateVolume sent again under the name %q, "+
				"taken as the same volume (CSI makes it idempotent by name): volctl cannot see whether the plugin made another volume under that name", v.CSIName)
		}
		return tx.Events().Append(&store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID,
			RPC: csi.RPCCreateVolume, Message: msg})
	})
	if err != nil {
		return err
	}
	if dup != nil {
		return dup
	}
	e.failpoint("create:ready")
	return nil
}

// unusableAnswerHeld asks plugin c, whose answer to volume v's CreateVolume (external ID id)
// volctl cannot use, which nodes it reports that volume published to (publishedNodes, bounded
// by ctx's checkBudget), before the DeleteVolume that removes it again; the caller holds the
// plugin's controller lock. A volume CreateVolume made is published nowhere, so one published
// to a node is not this create's: a plugin that maps two names onto one volume answered with
// another's, recorded in another volctl state dir (refuseSharedStorage sees only this one's),
// or Nomad's, and whatever published it may be using its data, which a plugin that does not
// refuse DeleteVolume of a published volume deletes (TestCreateCleanupOfAnUnusableAnswerPublishedElsewhereKeepsIt).
// A listing that fails or runs past its bound is held against the cleanup (err), unlike a
// delete's: a `volume delete` removes a volume the user recorded and asked to delete, while the
// cleanup removes storage volctl never recorded, whose owner is what the question asks. Before,
// it was logged and the DeleteVolume sent: a plugin mapping two names onto one volume whose
// listing failed (UNAVAILABLE, hung, paging forever) had B's cleanup delete A's published
// volume (TestCreateCleanupWhoseQuestionFailsSendsNoDeleteVolume). The cleanup then stays
// recorded (cleanupUnchecked), for reconcile or `volume delete` to ask again (finishDelete).
func (e *Engine) unusableAnswerHeld(ctx context.Context, c *conn, v store.Volume, id string) ([]string, error) {
	var nodes []string
	if err := e.boundCheck(ctx, func(ctx context.Context) error {
		var err error
		nodes, err = e.publishedNodes(ctx, c, id)
		return err
	}); err != nil {
		e.log.Warn(fmt.Sprintf("plugin %q: whether a node holds volume %q, its unusable answer to volume %q's CreateVolume (published there), could not be checked: DeleteVolume not sent",
			v.PluginID, spec.Cut(id, 256), v.ID), "err", err)
		return nil, err
	}
	return nodes, nil
}

// cleanupUnchecked is the error of volume v's create's cleanup of the answer id, whose
// question of the nodes holding it failed (qerr: unusableAnswerHeld, finishDelete): no
// DeleteVolume is sent, and v stays marked deleting with id, the create's cleanup, for
// reconcile or `volume delete` to ask again. The failure is recorded as an event.
func (e *Engine) cleanupUnchecked(ctx context.Context, v store.Volume, id string, qerr error) error {
	shown := spec.Cut(id, 256)
	msg := fmt.Sprintf("create's cleanup not finished, kept deleting: whether a node holds volume %q, the plugin's answer volctl could not use, could not be checked (%v): DeleteVolume not sent", shown, qerr)
	e.failureEvent(ctx, &store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID, RPC: csi.RPCDeleteVolume, Message: msg}, msg)
	return fmt.Errorf("whether a node holds volume %q, which plugin %q answered volume %q's CreateVolume with and volctl could not use, could not be checked: %w; "+
		"a volume a create makes is published nowhere, and one published to a node is another's (a plugin mapping two names onto one volume), whose data DeleteVolume would delete, "+
		"so it is not sent: volume %q stays marked deleting with it; `volctl reconcile` or `%s` asks again and deletes it once the plugin answers, `%s` forgets it and leaves the storage",
		shown, v.PluginID, v.ID, qerr, v.ID, shellquote.Command("volctl volume delete", v.ID), shellquote.Command("volctl volume deregister", v.ID))
}

// keepPublishedAnswer leaves alone the volume id that plugin c answered volume v's CreateVolume
// with, unusable (cause; nil: usable), and reports published to nodes (unusableAnswerHeld): no DeleteVolume is
// sent, and the answer is not recorded. The intent goes back to what it was before the cleanup
// marked it deleting: kept when an earlier CreateVolume's answer was lost (sentBefore: the plugin
// may hold a volume that answer was about, as refuseSharedStorage keeps it), else forgotten.
func (e *Engine) keepPublishedAnswer(ctx context.Context, c *conn, v store.Volume, sentBefore bool, id string, nodes []string, cause error) error {
	shown := listSome(nodes, 5, func(n string) string {
		if n == c.fp.NodeID {
			return fmt.Sprintf("node %q (this host's, for plugin %q)", spec.Cut(n, 256), v.PluginID)
		}
		return fmt.Sprintf("node %q", spec.Cut(n, 256)) // quoted cut: the plugin's answer
	})
	unusable := "" // cause nil: a usable answer, published
	if cause != nil {
		unusable = fmt.Sprintf(", which volctl cannot use (%v), and", cause)
	}
	refusal := conflictf("plugin %q answered CreateVolume (name %q) with volume %q%s which it reports published to %s (%s published_node_ids): "+
		"a volume a create makes is published nowhere, so it is not this create's but a volume the plugin already held (another volctl state dir's, Nomad's, or attached by hand), "+
		"whose user may be using its data: it is not recorded, DeleteVolume not sent, the volume left alone (the plugin maps two names onto one volume: report it to the plugin's authors)",
		v.PluginID, v.CSIName, spec.Cut(id, 256), unusable, shown, possessive(publishedCheck(c)))
	uerr := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if sentBefore {
			if err := backToIntent(tx, &v); err != nil {
				return err
			}
		} else if err := tx.Volumes().Delete(v.ID); err != nil {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID,
			RPC: csi.RPCCreateVolume, Message: "create refused: " + refusal.Error()})
	})
	if uerr != nil {
		return errors.Join(refusal, fmt.Errorf("volume %q stays marked deleting with volume %q, and recording the refusal failed: %w; run `volctl reconcile`", v.ID, spec.Cut(id, 256), uerr))
	}
	if sentBefore {
		return &keptIntent{cause: refusal, kept: fmt.Sprintf("this create stays recorded, since an earlier CreateVolume's answer was lost and the plugin may hold a volume that answer was about, "+
			"found by the name %q with the storage provider's tools: `volctl reconcile` or the same create sends CreateVolume again, `%s` forgets it",
			v.CSIName, shellquote.Command("volctl volume delete", v.ID))}
	}
	return fmt.Errorf("%w, and this create is forgotten", refusal)
}

// backToIntent writes volume v, whose create's cleanup (createFailed) is over, back as its
// create's bare intent: no longer that cleanup.
func backToIntent(tx *store.Tx, v *store.Volume) error {
	if err := tx.Volumes().Update(v); err != nil {
		return err
	}
	return tx.Volumes().SetCreateCleanup(v.ID, false)
}

// refuseSharedStorage refuses the plugin's answer to volume v's CreateVolume, external ID id,
// when another volctl volume records that storage: one storage volume under two volctl IDs
// would let each one's claims ignore the other's access mode, and deleting one would pull the
// storage from under the other. So too when another volume's external ID is id but for case,
// Unicode normalisation, invisible characters or surrounding white space (nearStorage): a plugin that reads IDs so
// (a case-insensitive backend, one that trims what it is sent) takes the answer for that
// volume's storage, and before, an unusable answer so spelled was deleted again, and a usable
// one recorded, whose delete reached that volume's data
// (TestCreateAnsweredWithANearSpellingOfAnotherVolumesStorageDeletesNothing). The storage is
// left alone, and the conflict saying so is returned (nil when no other volume records id). This
// create made nothing volctl can use, so its intent is forgotten, in tx; unless resent: an
// earlier CreateVolume under the name whose answer was lost may have made a volume, which only
// the intent's CSI name still finds, so the intent is kept, as after a final error to a call
// sent again (createFailed), for reconcile or the same create to send it again.
func refuseSharedStorage(tx *store.Tx, v store.Volume, id string, resent bool) (dup, err error) {
	same, err := sameStorage(tx, v.PluginID, id, v.ID)
	if err != nil {
		return nil, err
	}
	var answered, whose, lie string
	if len(same) > 0 {
		o := same[0].ID
		answered = fmt.Sprintf("%q", spec.Cut(id, 256))
		whose = fmt.Sprintf("which is already volume %q; the storage belongs to %q and is left alone", o, o)
		lie = "the plugin maps two names onto one volume"
	} else {
		o, stored, err := nearStorage(tx, v.PluginID, id, v.ID)
		if err != nil || o == "" {
			return nil, err
		}
		answered = fmt.Sprintf("%+q", spec.Cut(id, 256))
		whose = fmt.Sprintf("which differs only in case, Unicode normalisation (compatibility forms too), invisible characters or surrounding white space from volume %q's external ID %+q; "+
			"a plugin that reads IDs so takes it for %q's storage, so it is left alone, neither recorded nor deleted "+
			"(if the plugin is case-sensitive and did make a distinct volume under that ID, `volctl volume register` of volume %q's spec "+
			"with external_id = %s added records it as %q; deleting it with the storage provider's tools instead deletes %q's data on a backend that folds IDs)",
			o, spec.Cut(stored, 256), o, v.ID, spec.HCLQuotedASCII(spec.Cut(id, 256)), v.ID, o)
		lie = "the plugin answered a new volume with another volume's ID spelled otherwise"
	}
	if resent {
		dup = &keptIntent{cause: conflictf("plugin %q answered CreateVolume (name %q), sent again after an earlier answer was lost, with external ID %s, %s",
			v.PluginID, v.CSIName, answered, whose),
			kept: fmt.Sprintf("this create stays recorded, since the plugin may hold a volume the lost answer was about, "+
				"found by the name %q with the storage provider's tools: `volctl reconcile` or the same create sends CreateVolume again, `%s` forgets it "+
				"(%s: report it to the plugin's authors)", v.CSIName, shellquote.Command("volctl volume delete", v.ID), lie)}
	} else {
		dup = conflictf("plugin %q answered CreateVolume (name %q) with external ID %s, %s, and this create is forgotten (%s: report it to the plugin's authors)",
			v.PluginID, v.CSIName, answered, whose, lie)
		if err := tx.Volumes().Delete(v.ID); err != nil {
			return nil, err
		}
	}
	return dup, tx.Events().Append(&store.Event{Kind: "volume-create", VolumeID: v.ID, PluginID: v.PluginID,
		RPC: csi.RPCCreateVolume, Message: "create refused: " + dup.Error()})
}

// withController runs fn holding the plugin's controller lock (one controller call per
// controller at a time, across processes and across the plugin IDs registered on its socket).
func (e *Engine) withController(ctx context.Context, c *conn, fn func(context.Context) error) error {
	sp := c.plugin.Spec()
	unlock, err := e.locks.controller(ctx, c.plugin.ID, csi.ConfigFromSpec(&sp).ControllerSocket)
	if err != nil {
		return err
	}
	defer unlock()
	return fn(ctx)
}

// controllerAnswer sends a controller RPC whose answer is wanted, with retries, holding the
// plugin's controller lock (withController): the last answer (kept even with an error: a plugin
// may answer and fail), and whether an earlier attempt reached the plugin (sendAnswered).
func controllerAnswer[T any](ctx context.Context, e *Engine, c *conn, rpc string,
	call func(context.Context) (T, error)) (answer T, earlier bool, err error) {
	err = e.withController(ctx, c, func(ctx context.Context) error {
		var err error
		answer, earlier, err = sendAnswered(ctx, e, c, rpc, call)
		return err
	})
	return answer, earlier, err
}

// sendAnswered sends rpc with retries (retry) and returns its last answer, its error, and
// whether an attempt reached the plugin before the one that answered err (or the answer): one
// whose answer was lost may have made what the RPC asks for, which a final err does not undo,
// as it speaks for its own attempt only. An err that is no attempt's answer (the next attempt
// was not sent: checkSockets found the plugin replaced behind its socket) speaks for none, so
// the one attempt sent before it counts: before, a create whose first CreateVolume's answer
// was lost and whose second was not sent was forgotten as if nothing had been sent, and the
// plugin's volume leaked (`TestCreateRefusedAfterALostAnswerKeepsTheIntent`). An attempt the
// plugin answered ABORTED (csi.DidNothing: an operation pending for the volume, this one not
// carried out) does not count: counted, a ControllerPublishVolume answered ABORTED while another
// orchestrator attached the volume, then ALREADY_EXISTS, took that attachment for its own and
// detached it (TestAbortedThenAlreadyExistsLeavesTheOtherAttachment).
func sendAnswered[T any](ctx context.Context, e *Engine, c *conn, rpc string,
	call func(context.Context) (T, error)) (answer T, earlier bool, err error) {
	sent := 0
	var last error
	err = e.retry(ctx, c, rpc, func(ctx context.Context) error {
		if sent > 0 && !csi.DidNothing(last) {
			earlier = true
		}
		sent++
		answer, last = call(ctx)
		return last
	})
	if sent > 0 && err != nil && !errors.Is(err, last) && !csi.DidNothing(last) {
		earlier = true // the last attempt sent is not the one err speaks for
	}
	return answer, earlier, err
}

// volumeCapabilities are the spec's capabilities as CSI requests them, each with the volume's
// mount options when it is a file-system capability.
func volumeCapabilities(sv spec.Volume) []csi.VolumeCapability {
	out := make([]csi.VolumeCapability, 0, len(sv.Capabilities))
	for _, c := range sv.Capabilities {
		vc := csi.VolumeCapability{Capability: c}
		if c.AttachmentMode == spec.FileSystem && sv.MountOptions != nil {
			vc.MountOptions = sv.MountOptions
		}
		out = append(out, vc)
	}
	return out
}
