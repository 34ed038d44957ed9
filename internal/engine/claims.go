package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
	"golang.org/x/sys/unix"
)

// ClaimRequest is one alloc's request for a volume.
type ClaimRequest struct {
	VolumeID string
	Alloc    string
	Group    string // the group the alloc belongs to, "" for a plain claim
	ReadOnly bool
	// AccessMode and AttachmentMode pick one of the volume's capabilities; when empty, the
	// volume's current mode is used if it is in use, else its first capability that fits.
	AccessMode     spec.AccessMode
	AttachmentMode spec.AttachmentMode
	// MountOptions merge over the volume's: fs_type wins when set, mount flags replace.
	MountOptions *spec.MountOptions
	// Binds are the group's volume_mounts of this volume, destinations already substituted.
	Binds []spec.VolumeMount
	// exactMount, set by admission for a group's claim of a file-system volume, is the mount
	// options the claim would be published with (the volume's merged with the request's),
	// which a claim the alloc holds must have been published with, all of them: a spec run
	// again without its mount_options block was taken for no change, its claims still
	// published with the flags removed (TestGroupRunAgainWithMountOptionsRemovedIsNotDone).
	exactMount *spec.MountOptions
}

// Claim admits an alloc's claim on a volume and publishes it, returning the claim with its
// target path. Admission follows Nomad's access-mode rules in one immediate transaction; a
// claim refused because another alloc holds the volume is an ErrConflict naming the holder.
// Claiming again for an alloc that already holds an equal claim returns the same claim.
func (e *Engine) Claim(ctx context.Context, req ClaimRequest) (ClaimInfo, error) {
	pre, err := e.previewClaim(ctx, req)
	if err == nil {
		err = e.checkMountViewOf(ctx, func() ([]store.Plugin, error) { return pre.plugins, nil })
	}
	if err != nil {
		return ClaimInfo{}, fmt.Errorf("claim %q for alloc %q: %w", req.VolumeID, req.Alloc, err)
	}
	return byStoredID(ctx, e, store.VolumeIDs, req.VolumeID, func(id string) (ClaimInfo, error) {
		probeFirst := pre.probe
		if id != req.VolumeID {
			probeFirst = nil // another normal form of the ID: not the volume the preview read
		}
		req.VolumeID = id
		return e.claimStored(ctx, req, probeFirst)
	})
}

// claimPreview is what a claim reads before it takes its volume's lock, in one short read
// (ViewShort): the plugins checkMountView asks (mountViewPlugins), and the plugin to Probe
// before admission (probeFirst), nil when admission, as far as the read can tell, would not
// insert a claim.
type claimPreview struct {
	plugins []store.Plugin
	probe   *store.Plugin
}

// previewClaim reads the claim's preview: the volume as given, its plugin and its live claims.
// With them, the claim sends its Probe first and runs admission once, where admission answering
// unprobed and running again cost a transaction per claim. The checks are admission's own, on
// what the read found; admission runs them again in its transaction, and when it would insert
// a claim after all without a probe of that plugin (the alloc's claim was released meanwhile,
// the volume got another plugin), it answers unprobed as before (admitProbed).
func (e *Engine) previewClaim(ctx context.Context, req ClaimRequest) (claimPreview, error) {
	var pre claimPreview
	err := e.store.ViewShort(ctx, func(tx *store.Tx) error {
		pre = claimPreview{}
		v, err := tx.Volumes().Get(req.VolumeID)
		if errors.Is(err, store.ErrNotFound) {
			pre.plugins, err = mountViewPlugins(tx, "")
			return err
		}
		if err != nil {
			return err
		}
		p, err := tx.Plugins().Get(v.PluginID)
		if errors.Is(err, store.ErrNotFound) {
			return nil // the claim says its plugin is not registered
		}
		if err != nil {
			return err
		}
		pre.plugins = []store.Plugin{p}
		live, err := tx.Claims().ByVolume(v.ID)
		if err != nil {
			return err
		}
		if wouldInsert(v, &p, live, req) {
			pre.probe = &p
		}
		return nil
	})
	return pre, err
}

// wouldInsert says whether admission, finding volume v with plugin p and the live claims,
// would insert req's claim as far as its checks that read nothing more can tell: the volume
// ready, the alloc holding no claim on it (a claim again is handed back without a word to the
// plugin), the plugin able to publish it, and a capability the access mode admits. A claim
// refused here is refused by admission at once, with no Probe.
func wouldInsert(v store.Volume, p *store.Plugin, live []store.Claim, req ClaimRequest) bool {
	if v.State != store.VolumeReady || checkPublishable(v, p) != nil {
		return false
	}
	for _, c := range live {
		if sameAlloc(c.Alloc, req.Alloc) {
			return false
		}
	}
	capab, err := chooseCapability(v, req)
	return err == nil && checkAdmission(v, live, claimMode(req), capab) == nil
}

// readOnlyBlockBinds refuses, as invalid, a write claim of a block device with a read-only
// volume_mount: a read-only bind of a device file stops no write to the device, and the alloc
// handed it wrote the volume (TestReadOnlyVolumeMountOfABlockVolumeIsNotWritable). A read claim
// is the way: the plugin publishes it read-only, its device's read-only flag set, or the claim
// is refused (blockTargetWritable). The group spec's reader refuses it too.
func readOnlyBlockBinds(req ClaimRequest) error {
	if req.ReadOnly || req.AttachmentMode != spec.BlockDevice {
		return nil
	}
	for _, b := range req.Binds {
		if b.ReadOnly {
			return invalidf("volume_mount %s is read_only, but the claim is of a block device for writing: a read-only mount of a device file does not stop writes to the device; "+
				"claim it to read (read_only = true in the group's volume block), which the plugin must publish as a read-only device (a read claim whose device is left writable is refused)", b.Destination)
		}
	}
	return nil
}

// claimMode is the mode of req's claim.
func claimMode(req ClaimRequest) store.ClaimMode {
	if req.ReadOnly {
		return store.ClaimRead
	}
	return store.ClaimWrite
}

// claimStored is Claim of the ID as stored (byStoredID). probeFirst is the plugin to Probe
// before admission (claimPreview), nil for none.
func (e *Engine) claimStored(ctx context.Context, req ClaimRequest, probeFirst *store.Plugin) (ClaimInfo, error) {
	fail := func(err error) (ClaimInfo, error) {
		return ClaimInfo{}, fmt.Errorf("claim %q for alloc %q: %w", req.VolumeID, req.Alloc, err)
	}
	if err := spec.ValidateNewID("alloc", req.Alloc); err != nil {
		return fail(invalidf("%v", err))
	}
	if err := spec.ValidateID("volume ID", req.VolumeID); err != nil {
		return fail(invalidf("%v", err))
	}
	if why := req.MountOptions.Problem(); why != "" {
		return fail(invalidf("the claim's mount options cannot be sent: %s", why))
	}
	if err := readOnlyBlockBinds(req); err != nil {
		return fail(err)
	}
	if err := e.bindsOutsideStateDir(req.Binds); err != nil {
		return fail(err)
	}
	if len(req.Binds) > 0 {
		// One view of the mount table for the claim's checks and binds, as a group command's
		// for each of its claims: bindsReachingStateDir's read is the binds' too.
		ctx = e.withCommandPlaces(ctx)
	}
	if err := e.bindsReachingStateDir(ctx, req.Binds); err != nil {
		return fail(err)
	}
	if err := bindsBindable(req.Binds, req.AttachmentMode); err != nil {
		return fail(err)
	}
	// Fast path: when no other operation holds the volume, take its lock first, and admission's
	// transaction also reads what the publish path needs. When one does, admit without the lock,
	// so that a claim the access mode refuses is refused at once, not after the holder's RPCs.
	unlock, locked, err := e.locks.tryVolume(req.VolumeID)
	if err != nil {
		return fail(err)
	}
	if locked {
		defer unlock()
	}
	cl, v, ld, fresh, err := e.admitProbed(ctx, req, locked, probeFirst)
	if errors.Is(err, errHolderInFlight) {
		var waited store.VolumeState // the volume's state admission found, when that was in the way
		if h := (*volumeInFlight)(nil); errors.As(err, &h) {
			waited = h.state
		}
		// What is in the way is the work of the operation holding the lock: wait for it to
		// end, as for any operation on the volume, then admit again under the lock (probing
		// the plugin again if admission would insert the claim: the wait may have been long).
		if unlock, err = e.locks.volume(ctx, req.VolumeID); err != nil {
			return fail(err)
		}
		defer unlock()
		locked = true
		cl, v, ld, fresh, err = e.admitProbed(ctx, req, locked, nil)
		if errors.Is(err, ErrNotFound) && errors.Is(e.checkVolumeExists(ctx, req.VolumeID), ErrNotFound) {
			// Admission found the volume a moment ago (being created or deleted, by the
			// operation it waited for): that operation deleted it, or its create failed.
			err = goneWhileWaiting(req.VolumeID, waited, "create the volume again, then claim it")
		}
	}
	if err != nil {
		return fail(err)
	}
	if !fresh && cl.State == store.ClaimPublished && !cl.Releasing {
		// Held and published already; after a reboot its target may be mounted no more.
		if cl, err = e.restoreIfUnmounted(ctx, cl, locked); err != nil {
			return fail(err)
		}
	}
	if !fresh && cl.AtRest() {
		// A claim asking a read-only mount (a read claim, a write claim asking "ro") an older
		// volctl published read-write is not handed back as if it were read-only: the alloc
		// would take the path for one it cannot write. The mount is left (the alloc may be
		// running on it); the error names the way out.
		if err := e.claimWritable(cl); err != nil {
			return fail(err)
		}
		// Nor one whose target another mount covers since: the alloc would be handed that.
		if err := e.targetCovered(cl); err != nil {
			return fail(err)
		}
		// Its target mounted, a volume_mount destination may not be (unmounted by hand): bind it
		// again, as reconcile does, rather than hand back a destination with nothing there.
		if err := e.bindHeld(ctx, cl, locked); err != nil {
			return fail(err)
		}
		return claimInfo(cl), nil
	}
	e.failpoint("claim:taken")
	if locked && fresh {
		if err := e.restageIfLost(ctx, v.ID, ld); err != nil {
			e.markForReconcile(ctx, &cl, lastRPC(err), err)
			return fail(leftFor(err, "the claim is left %s for `volctl reconcile`", cl.State))
		}
		cl, err = e.driveClaim(ctx, cl, v, ld, store.OutcomeRolledBack)
	} else {
		if !locked {
			if unlock, err = e.locks.volume(ctx, cl.VolumeID); err != nil {
				e.noteUnlocked(ctx, cl, err)
				note := leftNote(cl)
				if ctx.Err() != nil {
					note = interruptedNote(cl)
				}
				return fail(fmt.Errorf("%w (%s)", err, note))
			}
			defer unlock()
		}
		if err := e.restageIfLost(ctx, cl.VolumeID, nil); err != nil {
			e.noteUnlocked(ctx, cl, err)
			return fail(leftFor(err, "the claim is left for `volctl reconcile`"))
		}
		// Someone may have moved the claim meanwhile: start from the store.
		admitted := cl
		cl, err = e.drive(context.WithValue(ctx, admittedUnlockedKey{}, cl.ID), cl.ID, store.OutcomeRolledBack)
		if errors.Is(err, ErrNotFound) {
			// Another volctl got the lock first and freed the claim: say how.
			err = e.claimGone(ctx, admitted)
		}
	}
	if err != nil {
		return fail(err)
	}
	return claimInfo(cl), nil
}

// bindsOutsideStateDir refuses a volume_mount destination in the state dir: its staging and
// publish paths are volctl's and its plugins' ("State on disk"). Bound on a staging path not
// mounted yet, the volume's next NodeStageVolume would mount over the bind, and the group's
// alloc would see that other volume. The destination is walked without following symlinks
// (nofollow.go), so its text under the state dir's real path is where it leads.
func (e *Engine) bindsOutsideStateDir(binds []spec.VolumeMount) error {
	for _, b := range binds {
		if d := filepath.Clean(b.Destination); d == e.cfg.StateDir || strings.HasPrefix(d, e.cfg.StateDir+string(filepath.Separator)) {
			return invalidf("volume_mount %s is in the state dir %s, whose staging and publish paths are volctl's and its plugins': give it a destination outside it", b.Destination, e.cfg.StateDir)
		}
	}
	return nil
}

// bindsReachingStateDir refuses a volume_mount destination that is in the state dir by another
// path than its own: below an admin's bind of the state dir (or of a directory in it) made
// elsewhere, where bindsOutsideStateDir, which reads the path,
// passed it. A bind made there is made in the state dir: on a staging path, a volume's next
// NodeStageVolume mounts over it. The destination's nearest existing directory is placed as
// bind places destinations (bindplace.go): in the state dir when it is a directory of the
// state dir's file system at or below the state dir's own. Only a destination with a mount root on its way (other than "/") can be such an
// alias, and only that one has the mount table read (the command's one view, which the
// claim's binds place their destinations with too; claimStored gives a lone claim one).
func (e *Engine) bindsReachingStateDir(ctx context.Context, binds []spec.VolumeMount) error {
	var (
		v     *placeView
		state place
	)
	for _, b := range binds {
		dest := filepath.Clean(b.Destination)
		near := dest
		for near != "/" {
			if _, err := os.Lstat(near); err == nil {
				break
			}
			near = filepath.Dir(near)
		}
		aliased := false
		for q := near; q != "/" && !aliased; q = filepath.Dir(q) {
			root, known := isMountRoot(unix.AT_FDCWD, q)
			aliased = root || !known
		}
		if !aliased {
			continue // on "/" at its own path, which bindsOutsideStateDir read
		}
		if v == nil {
			v = e.placesOf(ctx)
			v.mu.Lock()
			defer v.mu.Unlock()
			s, err := openNoFollow("/", e.realPath(e.cfg.StateDir), createNothing)
			if err != nil {
				return nil // no state dir to be reached (the engine made it at open)
			}
			state, err = v.placeOf(e.realPath(e.cfg.StateDir), s)
			s.close()
			if err != nil {
				return fmt.Errorf("volume_mount %s: placing the state dir %s: %w", b.Destination, e.cfg.StateDir, err)
			}
		}
		p, err := openNoFollow("/", near, createNothing)
		if err != nil {
			continue // bind refuses what cannot be walked, naming it
		}
		pl, err := v.placeOf(near, p)
		p.close()
		if err != nil {
			return fmt.Errorf("volume_mount %s: %w", b.Destination, err)
		}
		if pl.holder == nil || state.holder == nil {
			continue
		}
		// A destination on a volume's mount (a nested volume_mount, on the outer one's bind) is
		// not in the state dir's file system: bind's own checks have it. So even when the
		// plugin keeps its volumes below the state dir (hostpath --root <state dir>/...), where
		// the volume's directory is below the state dir's own.
		if v.volumes[devRoot{pl.holder.Major, pl.holder.Minor, pl.holder.Root}] {
			continue
		}
		if pl.major == state.major && pl.minor == state.minor && underOrAt(pl.root, state.root) {
			return invalidf("volume_mount %s is in the state dir %s by another path (%s is a bind of it or of a directory in it): "+
				"its staging and publish paths are volctl's and its plugins'; give the volume_mount a destination outside the state dir and its binds", b.Destination, e.cfg.StateDir, pl.holder.Mountpoint)
		}
	}
	return nil
}

// bindHeld binds again, under the volume lock, the volume_mounts of a held, published claim
// that are not mounted (settleLocked). A claim without volume_mounts costs nothing.
func (e *Engine) bindHeld(ctx context.Context, cl store.Claim, locked bool) error {
	if len(cl.Binds) == 0 {
		return nil
	}
	if !locked {
		unlock, err := e.locks.volume(ctx, cl.VolumeID)
		if err != nil {
			return err
		}
		defer unlock()
	}
	_, err := e.settleLocked(ctx, cl.ID)
	if errors.Is(err, ErrNotFound) {
		return conflictf("the claim was released by another volctl meanwhile")
	}
	return err
}

// notReady refuses an operation on volume v, read under its lock in a state other than ready:
// the create or delete that put it there is nobody's work any more (interrupted, or failed
// beyond its retries), and reconcile finishes it.
func notReady(v store.Volume) error {
	return conflictf("volume %q is %s, not ready: its %s was interrupted (run `volctl reconcile` to finish it)",
		v.ID, v.State, map[store.VolumeState]string{store.VolumeCreating: "create", store.VolumeDeleting: "delete"}[v.State])
}

// goneMeanwhile is a volume an operation found and another volctl deleted while it waited
// for the volume's lock (a `volume delete` in flight), or a plugin a deregistration read and
// another deregistered before its write: not found, but not one to look for in another state
// dir, which a plain "not found" sends the user to (the command line's advice is left out:
// IsGoneMeanwhile).
type goneMeanwhile struct{ msg string }

func (g *goneMeanwhile) Error() string        { return g.msg }
func (g *goneMeanwhile) Is(target error) bool { return target == ErrNotFound }

// goneWhileWaiting is the volume found missing after a command waited for the operation
// holding it, said from the state the volume was found in (waited; "" when it was not the
// volume's state in the way): a volume being created is gone because its create failed for
// good and was forgotten, which no `volctl volume delete` did; then says what to do then. One
// being deleted was deleted; one found in another state was deleted or deregistered (a
// deregister forgets a volume in the state it found it, and a delete marks it deleting only
// once it holds the lock): before, that read "deleted ... its `volctl volume delete`", of a
// volume another volctl had deregistered (TestCommandThatWaitedForADeregisterDoesNotSayDeleted).
func goneWhileWaiting(volumeID string, waited store.VolumeState, then string) error {
	switch waited {
	case store.VolumeCreating:
		return &goneMeanwhile{msg: fmt.Sprintf("volume %q is gone: it was being created by another volctl while this command waited, "+
			"and that create failed and was forgotten (its `volctl volume create` said why); %s", volumeID, then)}
	case store.VolumeDeleting:
		return &goneMeanwhile{msg: fmt.Sprintf("volume %q was deleted by another volctl meanwhile (its `volctl volume delete` held the volume while this command waited)", volumeID)}
	}
	return &goneMeanwhile{msg: fmt.Sprintf("volume %q was deleted or deregistered by another volctl meanwhile (that command held the volume while this one waited)", volumeID)}
}

// lockVolumeNoting takes volume id's lock, waiting for the operation holding it; seen is the
// volume's state read without the lock when it had to wait ("" when it did not wait, or found
// no volume then). A volume seen so and not found under the lock was deleted, or its create
// forgotten, while the command waited (goneWhileWaiting): not a volume to look for in another
// state dir or under a near ID, as a plain "not found" says
// (TestCommandsThatWaitedForADeleteSaySo).
func (e *Engine) lockVolumeNoting(ctx context.Context, id string) (unlock func(), seen store.VolumeState, err error) {
	unlock, err = e.lockVolumeLooking(ctx, id, func(tx *store.Tx) {
		if v, verr := tx.Volumes().Get(id); verr == nil {
			seen = v.State
		}
	})
	return unlock, seen, err
}

// lockVolumeLooking takes volume id's lock, and, only when it must wait for the operation
// holding it, first has look read the state without the lock: what the command found before
// the wait, which tells what the holder did meanwhile (lockVolumeNoting's volume state, a
// release's claim, a detach's claims). The lock taken at once costs no read.
func (e *Engine) lockVolumeLooking(ctx context.Context, id string, look func(tx *store.Tx)) (unlock func(), err error) {
	unlock, ok, err := e.locks.tryVolume(id)
	if err != nil || ok {
		return unlock, err
	}
	_ = e.store.View(ctx, func(tx *store.Tx) error { look(tx); return nil })
	return e.locks.volume(ctx, id)
}

// IsGoneMeanwhile reports whether err is a volume deleted by another volctl while the command
// waited for it: not found, and no advice about where else to look.
func IsGoneMeanwhile(err error) bool { return errors.As(err, new(*goneMeanwhile)) }

// errHolderInFlight is admission without the volume's lock finding the volume being created or
// deleted, or the alloc's own claim, or only claims, being released in its way: the work of the
// operation holding the lock, in flight. The claim waits for the lock and is admitted again.
var errHolderInFlight = errors.New("the operation holding the volume is in flight")

// volumeInFlight is errHolderInFlight for a volume found being created or deleted: the state
// waited on, which says what the volume's absence after the wait means (goneWhileWaiting).
type volumeInFlight struct{ state store.VolumeState }

func (h *volumeInFlight) Error() string        { return errHolderInFlight.Error() }
func (h *volumeInFlight) Is(target error) bool { return target == errHolderInFlight }

// admitProbed is admit with the volume's plugin probed when admission would insert the claim:
// probeFirst (the plugin claimPreview found) probed before admission, or, when admission
// answers unprobed (no probe first, or of another plugin), the plugin it names probed and the
// claim admitted again with what the probe found, which refuses a plugin not healthy.
func (e *Engine) admitProbed(ctx context.Context, req ClaimRequest, locked bool, probeFirst *store.Plugin) (cl store.Claim, v store.Volume, ld *loaded, fresh bool, err error) {
	var pr *claimProbe
	if probeFirst != nil {
		if pr, err = e.probeForClaim(ctx, *probeFirst); err != nil {
			return cl, v, nil, false, err
		}
	}
	cl, v, ld, fresh, err = e.admit(ctx, req, locked, pr)
	if up := (*unprobed)(nil); errors.As(err, &up) {
		pr, perr := e.probeForClaim(ctx, up.plugin)
		if perr != nil {
			return cl, v, nil, false, perr
		}
		cl, v, ld, fresh, err = e.admit(ctx, req, locked, pr)
	}
	return cl, v, ld, fresh, err
}

// admit runs admission in one write transaction and returns the claim: a new one in state
// taken (fresh), or the alloc's existing equal claim.
// With locked (the caller holds the volume lock), it also loads what the publish path reads.
// probed is what a Probe of the volume's plugin found (probeForClaim); nil when it was not
// probed yet (or another plugin was), and a claim admission would insert is then not inserted:
// the error is unprobed.
func (e *Engine) admit(ctx context.Context, req ClaimRequest, locked bool, probed *claimProbe) (cl store.Claim, v store.Volume, ld *loaded, fresh bool, err error) {
	mode := claimMode(req)
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		if err := groupStillRunning(tx, req.Group); err != nil {
			return err
		}
		var err error
		v, err = tx.Volumes().Get(req.VolumeID)
		if errors.Is(err, store.ErrNotFound) {
			return notFoundf("volume %q not found", req.VolumeID)
		}
		if err != nil {
			return err
		}
		if v.State != store.VolumeReady && !locked {
			// Being created or deleted by the operation holding the volume, most likely:
			// wait for it, and admit again under the lock (a volume deleted is not found then).
			return &volumeInFlight{state: v.State}
		}
		if v.State != store.VolumeReady {
			return notReady(v)
		}
		if err := refuseHandedOver(tx, v.ID); err != nil {
			return err
		}
		live, err := tx.Claims().ByVolume(v.ID)
		if err != nil {
			return err
		}
		for _, c := range live {
			if !sameAlloc(c.Alloc, req.Alloc) {
				continue
			}
			if c.Releasing && !locked {
				// Another operation holds the volume: most likely this release, in flight.
				return errHolderInFlight
			}
			if c.Releasing {
				// Under the lock: nobody is working on the release, which was interrupted.
				return conflictf("alloc %q's claim is being released (finish it with `volctl reconcile`)", req.Alloc)
			}
			if c.AttachmentMode == spec.BlockDevice {
				// As a fresh claim is: before, a conflict "published with other mount options"
				// advised releasing the claim held, whose device the release took from its
				// alloc, and the claim again was refused all the same
				// (TestClaimAgainOfABlockClaimWithMountOptionsIsNotAdvisedARelease).
				if err := noBlockMountOptions(v, req); err != nil {
					return err
				}
			}
			held := req
			if req.Group != "" && c.AttachmentMode == spec.FileSystem {
				held.exactMount = v.MountOptions.Merge(req.MountOptions)
			}
			if err := heldConflict(c, held, mode); err != nil {
				return err
			}
			cl = c
			return nil
		}
		// The plugin and staging rows, read once: admission's checks and the publish path use them.
		if ld, err = load(tx, v); err != nil {
			return err
		}
		if err := checkPublishable(v, ld.plugin); err != nil {
			return err
		}
		capab, err := chooseCapability(v, req)
		if err != nil {
			return err
		}
		if err := checkAdmission(v, live, mode, capab); err != nil {
			if !locked && checkAdmission(v, notReleasing(live), mode, capab) == nil {
				// Only claims being released are in the way, by the operation holding the
				// volume most likely: wait for it, and admit again under the lock.
				return errHolderInFlight
			}
			return err
		}
		ld.onNode = len(live) > 0 || ld.hasStaging
		if err := checkNode(tx, v, ld.onNode, ld.plugin); err != nil {
			return err
		}
		if err := refuseSharedDestinations(tx, req); err != nil {
			return err
		}
		if err := refuseStorageInUseElsewhere(tx, v); err != nil {
			return err
		}
		if probed == nil || probed.plugin != ld.plugin.ID {
			return &unprobed{plugin: *ld.plugin} // checkPublishable refused a plugin not registered
		}
		if err := probed.refusal(v); err != nil {
			return err
		}
		mo := v.MountOptions.Merge(req.MountOptions)
		if capab.AttachmentMode == spec.BlockDevice {
			// Dropped without a word, the claim made again as asked was refused as one with
			// other mount options (TestBlockClaimWithMountOptionsIsRefused).
			if err := noBlockMountOptions(v, req); err != nil {
				return err
			}
			mo = &spec.MountOptions{}
		}
		if err := sameMountAsLive(v, live, mo, ld.plugin); err != nil {
			if !locked && sameMountAsLive(v, notReleasing(live), mo, ld.plugin) == nil {
				// Only claims being released are in the way (a job update: the old alloc's
				// claim released as the new one claims), by the operation holding the volume
				// most likely: wait for it, and admit again under the lock, as checkAdmission.
				return errHolderInFlight
			}
			return err
		}
		cl = store.Claim{
			VolumeID: v.ID, Alloc: req.Alloc, Group: req.Group, Mode: mode,
			AccessMode: capab.AccessMode, AttachmentMode: capab.AttachmentMode,
			FSType: mo.FSType, MountFlags: mo.MountFlags, State: store.ClaimTaken, Target: store.TargetUnsent,
			TargetPath: publishPath(e.cfg.StateDir, req.Alloc, v.ID, req.ReadOnly, capab.AttachmentMode, capab.AccessMode),
			Binds:      req.Binds,
		}
		if err := tx.Claims().Insert(&cl); err != nil {
			return err
		}
		fresh = true
		if locked {
			// No handover mark (usage.handover): this transaction refused a marked volume.
			ld.others = countUsage(live, cl.ID)
			if err := recordIntents(tx, ld, v, e.cfg.StateDir); err != nil {
				return err
			}
		}
		return tx.Events().Append(&store.Event{Kind: "claim", VolumeID: v.ID, Alloc: req.Alloc, PluginID: v.PluginID,
			Message: fmt.Sprintf("%s claim admitted (%s, %s)", mode, capab.AccessMode, capab.AttachmentMode)})
	})
	if !locked {
		ld = nil // read without the volume lock: the publish path reads it again under the lock
	}
	return cl, v, ld, fresh, err
}

// notReleasing is claims without those being released (a copy).
func notReleasing(claims []store.Claim) []store.Claim {
	return slices.DeleteFunc(slices.Clone(claims), func(c store.Claim) bool { return c.Releasing })
}

// sameMountAsLive refuses a claim of volume v whose merged fs_type (mo's) is not the one a
// live claim of the volume (another alloc's) holds, when plugin p stages (STAGE_UNSTAGE_VOLUME
// as registered): the plugin stages a volume once per node, at its one staging path (CSI),
// where NodeStageVolume mounts its file system as the claim that staged it asked, and every
// later claim is published from that staging, NodeStageVolume not sent again; the fs_type of a
// later claim's NodePublishVolume is not acted on by a plugin that bind-mounts the staging, so
// the claim would get the first one's file system without a word. Mount flags are not
// refused: NodePublishVolume carries each claim's, which a plugin applies to its target's
// mount (volctl's hostpath remounts with them) or refuses (CSI: it MUST error when the volume
// cannot be used as described). A plugin that does not stage mounts at each target with the
// claim's own capability, and says so itself. The refusal is a conflict naming the claim in
// the way and both fs types ("" is the plugin's default: it may not be the type asked).
func sameMountAsLive(v store.Volume, live []store.Claim, mo *spec.MountOptions, p *store.Plugin) error {
	if p == nil || !slices.Contains(p.Fingerprint.NodeCaps, "STAGE_UNSTAGE_VOLUME") {
		return nil
	}
	fsType := func(t string) string {
		if t == "" {
			return "the plugin's default fs_type"
		}
		return "fs_type " + t
	}
	for _, c := range live {
		if c.AttachmentMode != spec.FileSystem || c.FSType == mo.FSType {
			continue
		}
		how := "claim it with " + fsType(c.FSType)
		if c.FSType == "" && v.MountOptions != nil && v.MountOptions.FSType != "" {
			// No claim asks for the plugin's default over the fs_type the volume is registered
			// with (a claim giving none takes the volume's): advised so, the same refusal came
			// back for as long as the claim in the way was held
			// (TestFSTypeConflictAdviceToClaimWithThePluginsDefaultCanBeFollowed).
			how = fmt.Sprintf("register it again with no fs_type in its spec's mount_options (it is registered with %s, which a claim giving none asks for), then claim it", fsType(v.MountOptions.FSType))
		}
		return conflictf("volume %q is in use by %s, which asked for %s, and this claim asks for %s: plugin %q stages the volume once on this node "+
			"(one staging path per volume), its file system mounted as the claim that staged it asked, and publishes every claim from that staging, "+
			"so this claim would not get the file system it asks for; %s, or once that claim is released%s",
			v.ID, holder(c), fsType(c.FSType), fsType(mo.FSType), v.PluginID, how, wayOut(c))
	}
	return nil
}

// heldWayOut is the way out of a claim again refused for the claim c its alloc holds: what
// frees c (freeCommand: its group's stop for a group's claim, its release otherwise), then the
// group run again for a group's request (a read_only flipped on its volume block, other binds).
// Before, a mode changed said only "release it first", naming no command
// (TestClaimAgainInAnotherModeNamesTheReleaseThatFreesIt); and chosen by the request's group,
// not the held claim's, a group run over a plain claim advised a `group stop` that freed
// nothing (TestHeldWayOutNamesTheHeldClaimsRelease).
func heldWayOut(c store.Claim, req ClaimRequest) string {
	if req.Group != "" {
		return fmt.Sprintf("`%s` releases it, then run the group again", freeCommand(c))
	}
	return fmt.Sprintf("`%s` releases it first", freeCommand(c))
}

// noBlockMountOptions refuses, as invalid, claim request req of volume v, claimed as a block
// device, when it gives mount options, which do not apply to one.
func noBlockMountOptions(v store.Volume, req ClaimRequest) error {
	if len(req.MountOptions.Describe()) == 0 {
		return nil
	}
	return invalidf("volume %q is claimed as a block device (the attachment mode its capabilities give this claim), and mount options (%s) do not apply to one: "+
		"claim it without --fs-type and --mount-flag", v.ID, strings.Join(req.MountOptions.Describe(), ", "))
}

// heldConflict refuses claim request req (of mode) of an alloc that holds live claim c on the
// volume already, held otherwise than req asks: another mode or capability, made outside req's
// group, other mount options or binds (heldOtherwise). nil: c is req's claim, held already.
func heldConflict(c store.Claim, req ClaimRequest, mode store.ClaimMode) error {
	if c.Mode != mode || (req.AccessMode != "" && req.AccessMode != c.AccessMode) ||
		(req.AttachmentMode != "" && req.AttachmentMode != c.AttachmentMode) {
		return conflictf("alloc %q already holds a %s claim (%s, %s); %s", req.Alloc, c.Mode, c.AccessMode, c.AttachmentMode, heldWayOut(c, req))
	}
	if req.Group != "" && !sameInNFC(c.Group, req.Group) {
		// Not the group's claim: the run would report it as the alloc's volume while
		// `group status` shows none and `group stop` leaves it.
		made := "a volume claim"
		if c.Group != "" {
			made = fmt.Sprintf("group %q", c.Group)
		}
		return conflictf("alloc %q already holds a %s claim made outside group %q (by %s); `%s` releases it",
			req.Alloc, c.Mode, req.Group, made, releaseCommand(c))
	}
	if other := heldOtherwise(c, req); other != "" {
		return conflictf("alloc %q already holds a %s claim %s; %s", req.Alloc, c.Mode, other, heldWayOut(c, req))
	}
	return nil
}

// heldOtherwise says how the claim an alloc holds differs from what its claim again asks for,
// beyond the modes admit compares: mount options the request sets (fs type, mount flags) that
// the claim was not published with, or, for a group's claim, other volume_mount binds. "" is
// the same claim, which a claim again is handed. Handing back a claim published otherwise would
// have the alloc take a mount without the options it asked for, or its volume at a destination
// where nothing is mounted. The mount flags are not named (they may carry credentials).
func heldOtherwise(c store.Claim, req ClaimRequest) string {
	exact := req.exactMount
	if mo := req.MountOptions; exact != nil && (exact.FSType != c.FSType || !slices.Equal(exact.MountFlags, c.MountFlags)) ||
		mo != nil && ((mo.FSType != "" && mo.FSType != c.FSType) || (len(mo.MountFlags) > 0 && !slices.Equal(mo.MountFlags, c.MountFlags))) {
		held := (&spec.MountOptions{FSType: c.FSType, MountFlags: c.MountFlags}).Describe()
		if len(held) == 0 {
			held = []string{"none"}
		}
		return fmt.Sprintf("published with other mount options (it has: %s)", strings.Join(held, ", "))
	}
	if req.Group != "" && !sameBinds(req.Binds, c.Binds) {
		var at []string
		for _, b := range c.Binds {
			d := b.Destination
			if b.ReadOnly {
				d += " read-only"
			}
			if p := b.PropagationMode; p != "" && p != spec.PropagationPrivate {
				d += " " + p
			}
			at = append(at, d)
		}
		if len(at) == 0 {
			return "bind-mounted otherwise (nowhere)"
		}
		return fmt.Sprintf("bind-mounted otherwise (at %s)", strings.Join(at, ", "))
	}
	return ""
}

// sameBinds: a and b are the same binds (the volume block's label aside), in any order, each
// destination cleaned as bind opens it, an unset propagation mode being the default. Compared
// in order and as written, the same group run again with its volume_mount blocks in another
// order, or a destination written "/srv/a/", was refused as bound otherwise, with advice to
// stop the group (TestGroupRunAgainWithTheSameVolumeMountsWrittenOtherwiseIsNoChange).
func sameBinds(a, b []spec.VolumeMount) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(m spec.VolumeMount) string {
		prop := m.PropagationMode
		if prop == "" {
			prop = spec.PropagationPrivate
		}
		return fmt.Sprintf("%q %t %s", filepath.Clean(m.Destination), m.ReadOnly, prop)
	}
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		ka[i], kb[i] = key(a[i]), key(b[i])
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// refuseSharedDestinations refuses, in admission's transaction, a claim with a volume_mount
// whose destination (cleaned, as bind opens it) is another live claim's, of any alloc and
// volume, or the claim's own twice. A destination is a path on this host, and one path is one
// mount: bind found the other claim's bind there, of the same volume, and took it for its own
// ("bound already"), so a read-only volume_mount was handed a writer's read-write bind, and the
// first claim's release unbound the destination from under the second, still held, whose
// alloc then wrote to the host's disk there. Two groups naming one destination do it, and so
// does one group whose destination tells its allocs apart only in a component the cleaning
// drops ("/srv/{index}/.."). A claim with no volume_mounts (a plain one) reads nothing.
func refuseSharedDestinations(tx *store.Tx, req ClaimRequest) error {
	if len(req.Binds) == 0 {
		return nil
	}
	mine := map[string]string{} // cleaned destination -> as the request wrote it
	for _, b := range req.Binds {
		d := filepath.Clean(b.Destination)
		if first, dup := mine[d]; dup {
			return invalidf("volume_mounts %s and %s of alloc %q are one path, %s: give each its own destination", first, b.Destination, req.Alloc, d)
		}
		mine[d] = b.Destination
	}
	others, err := tx.Claims().WithBinds()
	if err != nil {
		return err
	}
	for _, c := range others {
		for _, b := range c.Binds {
			d := filepath.Clean(b.Destination)
			if err := refuseInside(req, c, b.Destination); err != nil {
				return err
			}
			if _, shared := mine[d]; !shared {
				continue
			}
			at, way := mine[d], boundWayOut(c)
			if at != d {
				at += " (the path " + d + ")"
			}
			return conflictf("volume_mount %s is where alloc %q's volume %q is bound (its %s claim, %s): one path is one mount, which that claim's release would unbind from under this one; "+
				"give this volume_mount a destination of its own (%s or %s in it tell a group's allocs apart), or release that claim first%s",
				at, c.Alloc, c.VolumeID, c.Mode, bindWhat(c), spec.PlaceholderIndex, spec.PlaceholderAlloc, way)
		}
	}
	return nil
}

// refuseInside refuses a volume_mount of req whose destination lies below dest, a
// volume_mount of c, another alloc's live claim: bound after that one, its bind would make its
// directory inside that volume (another's data, or the other alloc's own), and hold that
// claim's release up (its unmount busy) for as long as it is bound; and one whose destination
// holds dest, the other order, whatever is mounted now. An alloc's own volume_mounts may nest:
// a group binds them outermost first (nestingOrder).
func refuseInside(req ClaimRequest, c store.Claim, dest string) error {
	if sameAlloc(c.Alloc, req.Alloc) {
		return nil
	}
	d := filepath.Clean(dest)
	for _, b := range req.Binds {
		mine := filepath.Clean(b.Destination)
		switch {
		case under(mine, d):
			way := boundWayOut(c)
			return conflictf("volume_mount %s is inside %s, where alloc %q's volume %q is bound (its %s claim, %s): its bind would make its directory in that volume, "+
				"and that claim's release could not unbind it while this one is bound there; give this volume_mount a destination outside it, or release that claim first%s",
				b.Destination, dest, c.Alloc, c.VolumeID, c.Mode, bindWhat(c), way)
		case under(d, mine):
			// The other order: that claim's destination below this one. Its bind mounted now,
			// bind refuses this one (mountsBelow); not mounted (its publish still under way in
			// another process, unmounted by hand, not restored yet after a reboot), this bind
			// was taken, and that claim's next bind was made inside this volume, this claim's
			// release then busy (TestVolumeMountAboveAnotherAllocsUnboundDestinationIsRefused,
			// TestTwoGroupsRunTogetherDoNotBindOneInsideTheOther). Refused here, in admission's
			// transaction, whichever of two is admitted second.
			way := boundWayOut(c)
			return conflictf("volume_mount %s holds %s, where alloc %q's volume %q is bound (its %s claim, %s): its bind would hide that one, whose next bind would be made inside this volume, "+
				"and this claim's release could not unbind it while that one is bound there; give this volume_mount a destination that holds no other alloc's, or release that claim first%s",
				b.Destination, dest, c.Alloc, c.VolumeID, c.Mode, bindWhat(c), way)
		}
	}
	return nil
}

// boundWayOut says what frees a claim bound where another volume_mount would be: its release,
// or, one being released, the reconcile that finishes it.
func boundWayOut(c store.Claim) string {
	if c.Releasing {
		return " (being released: `volctl reconcile` finishes a release that was cut short)"
	}
	return wayOut(c)
}

// bindWhat says whose a claim with volume_mounts is: its group's, or a plain claim's.
func bindWhat(c store.Claim) string {
	if c.Group != "" {
		return fmt.Sprintf("group %q", c.Group)
	}
	return "no group"
}

// groupStillRunning refuses, in admission's transaction, a claim for a group's alloc once the
// group is stopped: a `group run` marks its group running before it claims, and a `group stop`
// from another process may have marked it stopped since, then listed the claims it releases.
// A claim admitted after that would be left for claim GC to pull from an alloc the run reported
// as holding it. "" is no group (a plain claim).
func groupStillRunning(tx *store.Tx, name string) error {
	if name == "" {
		return nil
	}
	g, err := tx.Groups().Get(name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return conflictf("group %q is no longer recorded (another volctl removed it meanwhile)", name)
	case err != nil:
		return err
	case g.State != store.GroupRunning:
		return conflictf("group %q was stopped by another volctl meanwhile (`volctl group run FILE` of its spec runs it again)", name)
	}
	return nil
}

// recordIntents writes, in admission's transaction (held under the volume lock), the intents
// the publish path would otherwise commit before its first RPCs: that the volume may get
// attached to this node and staged, as the plugin's recorded capabilities say it will be. If the
// plugin has changed since (a restart with other capabilities), the publish path still commits
// any intent missing here before its RPC, and an intent recorded needlessly only makes the
// release path check for something that is not there. No attach intent is recorded while
// other claims are past the attach step with no attachment recorded (a plugin instance that
// attached nothing took them there, and this one attaches): the publish path would take it
// for their attachment and share it, sending no ControllerPublishVolume, over a staging not
// made from an attachment (stagedUnattached); the publish path records it itself.
func recordIntents(tx *store.Tx, ld *loaded, v store.Volume, stateDir string) error {
	if ld.plugin == nil {
		return nil
	}
	fp, st, changed := ld.plugin.Fingerprint, &ld.staging, false
	if slices.Contains(fp.ControllerCaps, "PUBLISH_UNPUBLISH_VOLUME") && !st.ControllerPublished && (ld.others == nil || ld.others.attached == 0) {
		st.PluginID, st.NodeID, st.ControllerPublished = v.PluginID, fp.NodeID, true
		changed, ld.attachIntent = true, true
	}
	if path := stagingPath(stateDir, v.PluginID, v.ID); slices.Contains(fp.NodeCaps, "STAGE_UNSTAGE_VOLUME") && !st.Staged && st.StagingPath != path {
		ld.stageIntent = st.StagingPath == ""
		st.PluginID, st.StagingPath = v.PluginID, path
		changed = true
	}
	if !changed {
		return nil
	}
	ld.hasStaging = true
	return tx.Stagings().Put(st)
}

// chooseCapability picks the (access, attachment) pair for a claim: the one asked for, which
// must be one of the volume's capabilities, or else the volume's current mode while it is in
// use, or else its first capability a claim of this kind can use.
func chooseCapability(v store.Volume, req ClaimRequest) (spec.Capability, error) {
	fits := func(c spec.Capability) bool {
		return (req.AccessMode == "" || c.AccessMode == req.AccessMode) &&
			(req.AttachmentMode == "" || c.AttachmentMode == req.AttachmentMode) &&
			(req.ReadOnly || !c.AccessMode.ReaderOnly())
	}
	pick := func(fits func(spec.Capability) bool) (spec.Capability, bool) {
		if v.AccessMode != "" {
			cur := spec.Capability{AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode}
			for _, c := range v.Capabilities {
				if c == cur && fits(c) {
					return c, true
				}
			}
		}
		for _, c := range v.Capabilities {
			if fits(c) {
				return c, true
			}
		}
		return spec.Capability{}, false
	}
	if req.AttachmentMode == "" && len(req.MountOptions.Describe()) > 0 {
		// Mount options ask for a file system: a file-system capability that fits is taken
		// before a block one listed first, which would refuse them (admit). Before, the first
		// fitting was taken, and `--fs-type xfs` of a volume listing block-device first was
		// refused, advising to leave the file system out
		// (TestClaimWithFSTypeTakesTheFileSystemCapabilityOfAMixedVolume).
		if c, ok := pick(func(c spec.Capability) bool { return fits(c) && c.AttachmentMode == spec.FileSystem }); ok {
			return c, nil
		}
	}
	if c, ok := pick(fits); ok {
		return c, nil
	}
	want := "a writable capability"
	if req.AccessMode != "" || req.AttachmentMode != "" {
		want = fmt.Sprintf("%s/%s", orAny(string(req.AccessMode)), orAny(string(req.AttachmentMode)))
		if !req.ReadOnly {
			want += " for writing"
		}
	}
	return spec.Capability{}, invalidf("volume %q has no capability matching %s; its capabilities: %s",
		v.ID, want, describeCapabilities(v.Capabilities))
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

func describeCapabilities(caps []spec.Capability) string {
	parts := make([]string, len(caps))
	for i, c := range caps {
		parts[i] = string(c.AccessMode) + "/" + string(c.AttachmentMode)
	}
	return strings.Join(parts, ", ")
}

// checkAdmission applies Nomad's access-mode rules to the volume's live claims (releasing ones
// included: a volume is not free until its release has finished).
func checkAdmission(v store.Volume, live []store.Claim, mode store.ClaimMode, c spec.Capability) error {
	if len(live) > 0 && v.AccessMode != "" {
		if c.AccessMode != v.AccessMode || c.AttachmentMode != v.AttachmentMode {
			return conflictf("volume %q is in use as %s/%s by %s; this claim asks for %s/%s%s",
				v.ID, v.AccessMode, v.AttachmentMode, holder(live[0]), c.AccessMode, c.AttachmentMode, wayOut(live[0]))
		}
	}
	var readers, writers []store.Claim
	for _, l := range live {
		if l.Mode == store.ClaimWrite {
			writers = append(writers, l)
		} else {
			readers = append(readers, l)
		}
	}
	switch c.AccessMode {
	case spec.SingleNodeReaderOnly:
		if len(readers) > 0 {
			return conflictf("volume %q is single-node-reader-only and %s holds it%s", v.ID, holder(readers[0]), wayOut(readers[0]))
		}
	case spec.SingleNodeWriter:
		if len(live) > 0 {
			return conflictf("volume %q is single-node-writer and %s holds it%s", v.ID, holder(live[0]), wayOut(live[0]))
		}
	case spec.MultiNodeSingleWriter:
		if mode == store.ClaimWrite && len(writers) > 0 {
			return conflictf("volume %q is multi-node-single-writer and %s holds the write claim%s", v.ID, holder(writers[0]), wayOut(writers[0]))
		}
	}
	return nil
}

// wayOut is what frees a volume from the claim c that refused another: the command that
// releases it (a group's claim by its group's stop, so that `group status` agrees), or nothing
// where holder already says what finishes it (a release under way, a restore not finished).
func wayOut(c store.Claim) string {
	switch {
	case c.Releasing || c.Degraded:
		return ""
	}
	return fmt.Sprintf(" (`%s` releases it)", freeCommand(c))
}

// freeCommand is the command that frees a volume of the live claim c: a group's claim is
// released by its group's stop, so that `group status` agrees (a release of the group's alloc
// leaves the group running without its volume), any other by its release.
func freeCommand(c store.Claim) string {
	if c.Group != "" {
		return shellquote.Command("volctl group stop", c.Group)
	}
	return releaseCommand(c)
}

func holder(c store.Claim) string {
	if c.Degraded {
		return fmt.Sprintf("alloc %q (%s claim, %s, degraded: its restore has not finished)", c.Alloc, c.Mode, c.State)
	}
	if c.Releasing {
		// Left mid-release (the plugin failed it, or volctl died): the volume is not free
		// until the release finishes.
		return fmt.Sprintf("alloc %q (%s claim, %s, being released: its release has not finished; `volctl reconcile` finishes it)", c.Alloc, c.Mode, c.State)
	}
	return fmt.Sprintf("alloc %q (%s claim, %s)", c.Alloc, c.Mode, c.State)
}

// drive moves a claim toward where it wants to be — published, or freed when it is releasing —
// one committed checkpoint at a time. A final error on the publish path rolls the claim back
// (freed with rollbackOutcome), unless the claim is degraded (published before, being
// restored): that one is never freed but by a release. A retryable error that outlives the
// retries leaves the claim where it is, marked for reconcile. The caller holds the volume lock.
func (e *Engine) drive(ctx context.Context, claimID int64, rollbackOutcome store.Outcome) (store.Claim, error) {
	var (
		cl store.Claim
		v  store.Volume
	)
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if cl, err = tx.Claims().Get(claimID); err != nil {
			return err
		}
		v, err = tx.Volumes().Get(cl.VolumeID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return cl, notFoundf("the claim was released by another volctl meanwhile")
	}
	if err != nil {
		return cl, err
	}
	return e.driveClaim(ctx, cl, v, nil, rollbackOutcome)
}

// driveClaim is drive for a claim and volume the caller has just read or written under the
// volume lock, with what that transaction loaded (ld, or nil to read it now).
func (e *Engine) driveClaim(ctx context.Context, cl store.Claim, v store.Volume, ld *loaded, rollbackOutcome store.Outcome) (store.Claim, error) {
	var (
		c   *conn
		err error
	)
	if ld != nil && ld.plugin != nil {
		c, err = e.connectPlugin(ctx, *ld.plugin, true)
		if errors.Is(err, errNoSocket) && e.registeredElsewhere(ctx, *ld.plugin) != "" {
			// Registered at other sockets by another volctl since the claim's transaction
			// read the row, and nothing sent through this connection yet: the plugin as it is
			// registered now, as reconcile would connect to it. Before, the claim was left
			// for reconcile saying "is the plugin running?" of the old socket.
			c, err = e.connect(ctx, v.PluginID)
		} else if err != nil {
			err = fmt.Errorf("plugin %q: %w", v.PluginID, err)
		}
	} else {
		c, err = e.connect(ctx, v.PluginID)
	}
	if errors.Is(err, ErrNotFound) {
		// The plugin is not registered (deregistered with --force): to drive's callers,
		// ErrNotFound means the claim itself is gone, and reconcile would stay silent.
		err = conflictf("%v", err)
	}
	if err != nil {
		// A connection that failed at a question of the fingerprint (GetPluginInfo, NodeGetInfo,
		// ...) names it and its code in the event, as any RPC's failure does.
		e.markForReconcile(ctx, &cl, lastRPC(err), err)
		// Nothing was sent, but the claim stays recorded, holding the volume: say so.
		switch {
		case cl.Releasing:
			err = fmt.Errorf("%w (the claim is left %s for `volctl reconcile`; %s)", err, cl.State, e.dropAdvice(ctx, cl))
		case ctx.Err() != nil:
			err = fmt.Errorf("%w (%s)", err, interruptedNote(cl))
		default:
			err = leftFor(err, "the claim is left %s, not published, for `volctl reconcile`; `%s` undoes it", cl.State, releaseCommand(cl))
		}
		return cl, err
	}
	defer e.done(c)
	if !c.fp.Node {
		// Admission refuses this from the registration; a plugin that changed since lands here.
		// A claim no RPC was sent for yet is rolled back rather than left taken.
		nerr := noNodeService(v)
		if cl.Releasing {
			// A release cannot send its node RPCs either, and is no refusal of a claim (exit 2,
			// "to claim it"): it is left as it is, for reconcile once the node service is
			// registered again, as after a plugin back without it
			// (TestReleaseThroughAControllerOnlyRegistrationIsLeftForReconcile).
			nerr = fmt.Errorf("plugin %q has no node service on this host (it is registered as a controller plugin, or serves no node service), so volume %q's mounts cannot be undone through it: nothing was sent; "+
				"register the plugin's node service (type \"node\" or \"monolith\"), then run `volctl reconcile` (the claim is left %s; %s)",
				v.PluginID, v.ID, cl.State, e.dropAdvice(ctx, cl))
			e.markForReconcile(ctx, &cl, "", nerr)
			return cl, nerr
		}
		if cl.Degraded || cl.State != store.ClaimTaken {
			return cl, nerr
		}
		return cl, e.rollBack(ctx, c, v, &cl, rollbackOutcome, nerr)
	}
	if cl.Releasing && admittedUnlocked(ctx, cl.ID) {
		// A claim that admitted its claim without the lock, then waited for it, finds it being
		// released: another volctl's release began meanwhile and was cut off. Driven on, the
		// release was finished, the claim freed, and the claim command answered "published" of
		// a target with nothing there (TestClaimWhoseAdmittedClaimAnotherVolctlLeftReleasingIsNotReportedPublished).
		// Refused as admission refuses it under the lock, nothing sent.
		return cl, conflictf("alloc %q's claim is being released: another volctl began releasing it while this claim waited for the volume's lock, and did not finish; "+
			"nothing was sent: finish that release (`volctl reconcile`, or `%s`), then claim the volume again", cl.Alloc, releaseCommand(cl))
	}
	if cl.Releasing {
		return cl, e.release(ctx, c, v, &cl, store.OutcomeReleased, ld, nil)
	}
	if cl.State == store.ClaimTaken && !cl.Degraded {
		// Admission refuses these too, from the plugin's registration and stored fingerprint;
		// a plugin re-registered, or restarted with other node limits, since lands here.
		// Nothing was sent.
		if nerr := e.recheckAdmission(ctx, c, v, cl, ld); nerr != nil {
			return cl, e.rollBack(ctx, c, v, &cl, rollbackOutcome, nerr)
		}
	}
	if cl.Degraded {
		// A restore a failed one left, driven on by reconcile or by its alloc claiming again:
		// the rule a published claim's restore keeps (checkRestoreBeside) holds for it too.
		// Before, an old backup's degraded claim was published beside the mount of the alloc
		// that took the volume since, which no claim recorded: two writers
		// (TestDegradedRestoreOfAnOldBackupBesideAnUnknownMountIsRefused,
		// TestDegradedClaimAgainOfAnOldBackupBesideAnUnknownMountIsRefused).
		if berr := e.degradedBeside(ctx, cl); berr != nil {
			e.markForReconcile(ctx, &cl, "", berr)
			return cl, berr
		}
	}
	perr := e.publish(ctx, c, v, &cl, ld)
	if perr == nil {
		return cl, nil
	}
	if errors.Is(perr, errLockLost) {
		return cl, perr // it says what is left; nothing more is sent or written
	}
	if cl.Degraded {
		// A claim that was published and is being restored is never rolled back, whatever the
		// class of the error: its alloc may be using the volume, and freeing the claim would let
		// another alloc take it. It stays held, degraded, for reconcile; only an explicit
		// release or detach frees it.
		e.markForReconcile(ctx, &cl, lastRPC(perr), perr)
		// Named with the command that frees it: a bare `volctl volume release` is a usage
		// error, and for a group's claim the group's stop
		// (TestGroupRunOverADegradedClaimAdvisesAReleaseThatRuns).
		return cl, fmt.Errorf("%w (the claim is held, degraded, at %s %s; `%s` frees it)", perr, cl.State, heldUntil(perr), freeCommand(cl))
	}
	if ctx.Err() != nil {
		// The caller gave up (Ctrl-C). The RPC cut off may still be running in the plugin, so
		// nothing more is sent now; say exactly what is left and what each way on does.
		e.markForReconcile(ctx, &cl, lastRPC(perr), perr)
		return cl, fmt.Errorf("%w (%s)", perr, interruptedNote(cl))
	}
	if csi.ClassOf(perr) != csi.Final || isLocalRetryable(perr) {
		e.markForReconcile(ctx, &cl, lastRPC(perr), perr)
		return cl, leftFor(perr, "the claim is left %s for `volctl reconcile`", cl.State)
	}
	// A final error: undo what was done so no phantom claim stays behind. release marks the
	// claim releasing and commits that before its first RPC, so a rollback cut short is
	// finished by reconcile rather than published again. The publish path changed the
	// staging: the rollback reads it afresh.
	return cl, e.rollBack(ctx, c, v, &cl, rollbackOutcome, perr)
}

// rollBack frees a claim through the release path after cause, a final error on its publish
// path, and returns cause saying so. The event of the commit that frees it says why.
func (e *Engine) rollBack(ctx context.Context, c *conn, v store.Volume, cl *store.Claim, outcome store.Outcome, cause error) error {
	ctx = leavingRefusedBind(ctx, cause)
	if rerr := e.release(ctx, c, v, cl, outcome, nil, cause); rerr != nil {
		return fmt.Errorf("%w; rolling the claim back also failed: %v (it is left for `volctl reconcile`)", cause, rerr)
	}
	return fmt.Errorf("%w (the claim was rolled back)", cause)
}

// claimGone is why claim cl, which this command admitted or found, is gone once it holds the
// volume's lock: another volctl freed it meanwhile. A release is a conflict: two volctl
// processes disagreed about one claim and the release went first. A rollback is another
// process publishing the claim (`volctl reconcile`, the agent) and failing for good: this
// claim's failure, a runtime error, with the plugin's answer as the freeing event recorded it.
func (e *Engine) claimGone(ctx context.Context, cl store.Claim) error {
	var why string
	err := e.store.View(ctx, func(tx *store.Tx) error {
		past, err := tx.History(cl.VolumeID, pastLookback)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(past, func(p store.PastClaim) bool { return p.ID == cl.ID })
		if i < 0 || past[i].Outcome != store.OutcomeRolledBack {
			return nil
		}
		why = "see `volctl events`"
		evs, err := tx.Events().Recent(1, store.EventFilter{Kind: "release", VolumeID: cl.VolumeID, Alloc: cl.Alloc})
		if err == nil && len(evs) == 1 {
			why = evs[0].Message
		}
		return err
	})
	if err != nil || why == "" {
		return conflictf("the claim was released by another volctl meanwhile")
	}
	return fmt.Errorf("another volctl publishing the claim meanwhile (`volctl reconcile`, or the agent's) failed and rolled it back: %s", why)
}

// pastLookback is how many of a volume's newest freed claims claimGone looks through for the
// claim it lost: it was freed a moment ago, while this command waited for the volume's lock.
const pastLookback = 32

// recheckAdmission applies again, to a claim admitted a moment ago and sent no RPC yet, what
// admission checked against the plugin's registration and stored fingerprint, now that the
// connection has the plugin's live one: a controller half to attach with (needsControllerHalf),
// and the node's limits (checkNode) when the plugin restarted since the stored fingerprint
// with another max_volumes_per_node or accessible topology. ld is admission's; nil when the
// claim was admitted by an earlier command (the limits are not checked again then: its
// attachment may have been made, its answer lost, and the claim stands as one on the node,
// TestCrashInTheNodeIDCorrection), or without the volume lock by this one (Claim, which marks
// ctx: admittedUnlocked), which then waited for the lock, maybe long: the live limits are
// checked then as a new claim's would be, from what the store has once the lock is held
// (before, not at all: a claim that waited while the plugin restarted with a lower
// max_volumes_per_node or another topology was published past them,
// TestClaimThatWaitedForTheLockIsHeldToLimitsStatedMeanwhile).
func (e *Engine) recheckAdmission(ctx context.Context, c *conn, v store.Volume, cl store.Claim, ld *loaded) error {
	if needsControllerHalf(c) {
		return noControllerHalf(v)
	}
	if ld == nil && !admittedUnlocked(ctx, cl.ID) {
		return nil
	}
	if ld != nil && (ld.plugin == nil || !nodeLimitsChanged(ld.plugin.Fingerprint, c.fp)) {
		return nil
	}
	return e.store.View(ctx, func(tx *store.Tx) error {
		now := ld
		if now == nil {
			var err error
			if now, err = load(tx, v); err != nil || now.plugin == nil {
				return err
			}
			live, err := tx.Claims().ByVolume(v.ID)
			if err != nil {
				return err
			}
			// As admission counts: the volume's other claims, or its staging row (which an
			// admission without the lock recorded nothing in).
			now.onNode = now.hasStaging || slices.ContainsFunc(live, func(o store.Claim) bool { return o.ID != cl.ID })
		}
		p := *now.plugin
		p.Fingerprint = fingerprintToStore(c.fp, e.cfg.Now())
		return checkNode(tx, v, now.onNode, &p)
	})
}

// admittedUnlockedKey marks the context of a Claim that admitted its claim (by ID) without the
// volume's lock, and then waited for it (recheckAdmission).
type admittedUnlockedKey struct{}

// admittedUnlocked reports whether ctx is the Claim's that admitted claim id without the lock.
func admittedUnlocked(ctx context.Context, id int64) bool {
	got, ok := ctx.Value(admittedUnlockedKey{}).(int64)
	return ok && got == id
}

// nodeLimitsChanged reports whether a live fingerprint states other node limits than the
// stored one: max_volumes_per_node, or the node's accessible topology.
func nodeLimitsChanged(stored store.Fingerprint, live *csi.Fingerprint) bool {
	var topology map[string]string
	if live.AccessibleTopology != nil {
		topology = live.AccessibleTopology.Segments
	}
	return stored.MaxVolumes != live.MaxVolumes || !maps.Equal(stored.Topology, topology)
}

// nodeLimitsTightened is nodeLimitsChanged less the changes that admit whatever the limits
// before did: max_volumes_per_node raised, or taken away (0). Another topology counts, since
// the volume may not be accessible from it.
func nodeLimitsTightened(stored store.Fingerprint, live *csi.Fingerprint) bool {
	if !nodeLimitsChanged(stored, live) {
		return false
	}
	var topology map[string]string
	if live.AccessibleTopology != nil {
		topology = live.AccessibleTopology.Segments
	}
	loosened := live.MaxVolumes == 0 || stored.MaxVolumes != 0 && live.MaxVolumes > stored.MaxVolumes
	return !maps.Equal(stored.Topology, topology) || !loosened
}

// forceDetachCommand is the command that forgets volume id's claims, staging and attachment
// whatever the plugin answers, its words quoted for a shell. It carries --yes, without which
// detach refuses off a terminal: advised bare, it did not run as written
// (TestAdvisedForceDetachRunsAsWritten).
func forceDetachCommand(id string) string {
	return shellquote.CommandFlags("volctl volume detach", []string{id}, "--force", "--yes")
}

// dropAdvice is the forced detach that drops claim cl, whose release is left for reconcile, if
// its plugin is gone, naming the volume's other live claims: the detach is the whole volume's,
// and frees them and takes their mounts away too. Advised bare, it told the user whose alloc's
// release failed to paste a command that pulled another alloc's mount from under it, unsaid
// (TestFailedReleaseAdviceDoesNotDropAnotherAllocsClaimUnsaid). Read on the error's path alone.
func (e *Engine) dropAdvice(ctx context.Context, cl store.Claim) string {
	cmd := forceDetachCommand(cl.VolumeID)
	var others []store.Claim
	err := e.store.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		claims, err := tx.Claims().ByVolume(cl.VolumeID)
		for _, o := range claims {
			if o.ID != cl.ID {
				others = append(others, o)
			}
		}
		return err
	})
	switch {
	case err != nil:
		return fmt.Sprintf("`%s` drops it if the plugin is gone, with every other claim of volume %q (reading them failed: %v)", cmd, cl.VolumeID, err)
	case len(others) > 0:
		return fmt.Sprintf("if the plugin is gone, `%s` drops it, and with it the %d other claim(s) of volume %q, of %s, taking their mounts away too: run it only once their allocs are done",
			cmd, len(others), cl.VolumeID, describeClaims(others))
	}
	return fmt.Sprintf("`%s` drops it if the plugin is gone", cmd)
}

// releaseCommand is the command that releases the claim cl, its words quoted for a shell.
func releaseCommand(cl store.Claim) string {
	return shellquote.CommandFlags("volctl volume release", []string{cl.VolumeID}, shellquote.Flag("--alloc", cl.Alloc))
}

// interruptedNote says what became of a claim whose publish the caller interrupted: it stays
// where it got to, and reconcile, which re-drives every claim not at rest that is not being
// released, finishes publishing it; a release undoes it.
func interruptedNote(cl store.Claim) string {
	return "interrupted: " + leftNote(cl)
}

// claimLeft is a claim's error with its note of what the claim was left as for reconcile, kept
// apart so that a caller that then frees the claim (a group run undoing what it took for an
// alloc, releasedAgain) says that instead of a note that no longer holds.
type claimLeft struct {
	err  error
	note string
}

func (c *claimLeft) Error() string { return fmt.Sprintf("%v (%s)", c.err, c.note) }
func (c *claimLeft) Unwrap() error { return c.err }

func leftFor(err error, format string, args ...any) error {
	return &claimLeft{err: err, note: fmt.Sprintf(format, args...)}
}

// reworded is an error shown in other words, its chain (the kinds and types errors.Is and
// errors.As find) kept.
type reworded struct {
	msg string
	err error
}

func (r *reworded) Error() string { return r.msg }
func (r *reworded) Unwrap() error { return r.err }

// releasedAgain is err, a claim's error whose claim was left for reconcile (claimLeft), after
// its caller released the claim: the note says so in place of the note that it was left. An
// error without such a note is returned as it is.
func releasedAgain(err error, how string) error {
	var left *claimLeft
	if !errors.As(err, &left) {
		return err
	}
	msg := strings.Replace(err.Error(), left.Error(), fmt.Sprintf("%v (%s)", left.err, how), 1)
	return &reworded{msg: msg, err: err}
}

// leftNote says what becomes of an admitted claim whose command ends before publishing it.
func leftNote(cl store.Claim) string {
	return fmt.Sprintf("the claim is left %s, not published; `volctl reconcile` will finish publishing it, "+
		"or `%s` will undo it", cl.State, releaseCommand(cl))
}

// isLocalRetryable reports a failure of volctl's own work (making a directory, the store) that
// is not the plugin's verdict on the claim, so the claim should not be rolled back for it.
func isLocalRetryable(err error) bool {
	var ce *csi.Error
	return !errors.As(err, &ce) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrConflict) && !errors.Is(err, errBadAnswer)
}

// lastRPC is the RPC err is about: the one that failed (a *csi.Error's), else the one a check
// of volctl's failed after (checkFailure's), else "".
func lastRPC(err error) string {
	var ce *csi.Error
	if errors.As(err, &ce) {
		return ce.RPC
	}
	var cf *checkFailure
	if errors.As(err, &cf) {
		return cf.rpc
	}
	return ""
}

// checkFailure is a check volctl made of what a plugin did after answering rpc, or in place of
// sending it, that failed without any RPC failing: a mount left after NodeUnpublishVolume or
// NodeUnstageVolume answered OK (checkUnmounted, checkSharedDir), a staging still mounted that
// the plugin cannot be asked to unstage (checkUnstageable). The claim's failure record and its
// event name rpc, with no code (docs/json.md: `rpc` and `code`), so that `volctl events --rpc
// NodeUnpublishVolume` and a --json reader find it with the plugin's own failures of that RPC:
// before, its RPC column was empty (TestCheckFailuresNameTheRPCTheyCheckedAfter).
type checkFailure struct {
	rpc string
	err error
}

func (c *checkFailure) Error() string { return c.err.Error() }
func (c *checkFailure) Unwrap() error { return c.err }

// checkedAfter is err, a check's failure after rpc (nil stays nil).
func checkedAfter(rpc string, err error) error {
	if err == nil {
		return nil
	}
	return &checkFailure{rpc: rpc, err: err}
}

// save commits a claim's new state, with its error fields cleared after a success, plus any
// other writes of the same step. The volume's lock is checked inside the transaction (holding):
// the commit may wait for the database while the lock file is removed and another volctl locks
// a new one and moves the claim (marks it releasing), and this copy must not be written over
// that (TestLockFileDeletedWhileASettleWaitsForTheDatabaseWritesNothing).
func (e *Engine) save(ctx context.Context, cl *store.Claim, also func(tx *store.Tx) error) error {
	cl.LastRPC, cl.LastCode, cl.LastError = "", "", ""
	return e.store.Update(context.WithoutCancel(ctx), e.locks.holding(cl.VolumeID, func(tx *store.Tx) error {
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		return tx.Claims().Update(cl)
	}))
}

// markForReconcile records a failure on the claim and flags it for reconcile. The caller holds
// the volume lock, so cl is the claim as it is.
func (e *Engine) markForReconcile(ctx context.Context, cl *store.Claim, rpc string, cause error) {
	e.recordFailure(ctx, cl, rpc, cause, func(tx *store.Tx) error { return tx.Claims().Update(cl) })
}

// noteUnlocked records why a claim admitted without the volume lock was not driven, when the
// claim is still as admission left it. Without the lock it may have moved on meanwhile (a
// reconcile or a second claim of the alloc may have published it, a release begun): writing the
// admitted copy back would undo that, and a claim put back to taken while the plugin holds its
// publication is released without NodeUnpublishVolume. Reconcile drives a taken claim anyway.
func (e *Engine) noteUnlocked(ctx context.Context, admitted store.Claim, cause error) {
	e.recordFailure(ctx, &admitted, "", cause, func(tx *store.Tx) error {
		cur, err := tx.Claims().Get(admitted.ID)
		if err != nil {
			return err
		}
		if cur.State != admitted.State || cur.Releasing {
			return errMovedOn
		}
		cur.NeedsReconcile, cur.Attempts = true, cur.Attempts+1
		cur.LastRPC, cur.LastCode, cur.LastError = admitted.LastRPC, admitted.LastCode, admitted.LastError
		return tx.Claims().Update(&cur)
	})
}

// errMovedOn ends a failure record that would overwrite a claim someone else moved on.
var errMovedOn = errors.New("the claim moved on")

// recordFailure sets cl's failure fields and, in one transaction, writes the claim through
// update and appends the event saying it was left for reconcile, unless the claim was already
// left for reconcile with this very failure (the same RPC, and the same message but for the
// IDs and times in it: sameFailure): a claim that fails the same way pass after pass counts its
// attempts, but says so in the event log once.
func (e *Engine) recordFailure(ctx context.Context, cl *store.Claim, rpc string, cause error, update func(tx *store.Tx) error) {
	if errors.Is(cause, errLockLost) {
		// Another process may hold the volume's lock now and be moving the claim: this one
		// writes nothing over it.
		e.log.Warn("the volume's lock was lost: the claim's failure is not recorded", "volume", cl.VolumeID, "alloc", cl.Alloc, "err", cause)
		return
	}
	said := stopWords(ctx, cause.Error()) // "SIGINT received", not Go's "context canceled"
	repeat := cl.NeedsReconcile && cl.LastRPC == rpc && sameFailure(cl.LastError, said)
	cl.NeedsReconcile = true
	cl.Attempts++
	cl.LastRPC, cl.LastCode, cl.LastError = rpc, "", said
	var cf *checkFailure
	if rpc != "" && (!errors.As(cause, &cf) || errors.As(cause, new(*csi.Error))) {
		cl.LastCode = csi.EventCode(cause) // a check's failure has none: no RPC failed
	}
	// The lock is checked again inside the transaction (holding): the record may wait for the
	// database while the lock file is removed and another volctl locks a new one, and this copy
	// of the claim must not be written over the row that one drives. A claim admitted without
	// the lock (noteUnlocked) holds none, and passes.
	msg := fmt.Sprintf("claim left %s for reconcile: %s", cl.State, said)
	err := e.store.Update(context.WithoutCancel(ctx), e.locks.holding(cl.VolumeID, func(tx *store.Tx) error {
		if err := update(tx); err != nil {
			return err
		}
		if repeat {
			// A repeat is recorded once while the log still holds its event: the log keeps the
			// newest events only, and once a busy host had pushed it out, a claim failing every
			// pass showed no failure in `volctl events` at all, nor to `events --follow`
			// (TestStuckClaimsFailureIsRecordedAgainOnceTheLogDroppedIt).
			if logged, err := claimFailureLogged(tx, cl, rpc, msg); err != nil || logged {
				return err
			}
		}
		// The plugin it failed on, as the claim's admission and release events name it: a
		// failure event without it was missing from `volctl events --plugin`
		// (TestFailureEventsOfAClaimRecordEachChangeAndNameThePlugin). Read in this
		// transaction, for the failures that are events only.
		v, err := tx.Volumes().Get(cl.VolumeID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.Events().Append(&store.Event{Kind: "claim", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: v.PluginID,
			RPC: rpc, Code: cl.LastCode, Message: msg})
	}))
	if errors.Is(err, errLockLost) {
		e.log.Warn("the volume's lock was lost: the claim's failure is not recorded", "volume", cl.VolumeID, "alloc", cl.Alloc, "err", err)
		return
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, errMovedOn) {
		e.log.Warn("recording a claim failure", "volume", cl.VolumeID, "alloc", cl.Alloc, "err", err)
	}
}

// claimFailureLogged says whether one of the newest claim events of cl's alloc on its volume
// (failureLookback) is the failure msg of rpc that recordFailure is about to append.
func claimFailureLogged(tx *store.Tx, cl *store.Claim, rpc, msg string) (bool, error) {
	recent, err := tx.Events().Recent(failureLookback, store.EventFilter{Kind: "claim", VolumeID: cl.VolumeID, Alloc: cl.Alloc})
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(recent, func(r store.Event) bool {
		return r.RPC == rpc && r.Code == cl.LastCode && sameFailure(r.Message, msg)
	}), nil
}

// capability is the CSI capability a claim publishes with: its modes and, for a file system,
// its merged mount options.
func capability(cl *store.Claim) csi.VolumeCapability {
	vc := csi.VolumeCapability{Capability: spec.Capability{AccessMode: cl.AccessMode, AttachmentMode: cl.AttachmentMode}}
	if cl.AttachmentMode == spec.FileSystem && (cl.FSType != "" || len(cl.MountFlags) > 0) {
		vc.MountOptions = &spec.MountOptions{FSType: cl.FSType, MountFlags: cl.MountFlags}
	}
	return vc
}

// ClaimInfo returns an alloc's live claim on a volume.
func (e *Engine) ClaimInfo(ctx context.Context, volumeID, alloc string) (ClaimInfo, error) {
	return byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (ClaimInfo, error) { return e.claimInfoStored(ctx, id, alloc) })
}

// claimInfoStored is ClaimInfo of the ID as stored (byStoredID).
func (e *Engine) claimInfoStored(ctx context.Context, volumeID, alloc string) (ClaimInfo, error) {
	cl, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Claim, error) { return findAllocClaim(tx, volumeID, alloc) })
	if errors.Is(err, store.ErrNotFound) {
		return ClaimInfo{}, notFoundf("alloc %q has no claim on volume %q", alloc, volumeID)
	}
	return claimInfo(cl), err
}

// Claims lists every live claim.
func (e *Engine) Claims(ctx context.Context) ([]ClaimInfo, error) {
	var out []ClaimInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		all, err := tx.Claims().ListAll()
		for _, c := range all {
			out = append(out, claimInfo(c))
		}
		return err
	})
	return out, err
}

// ClaimsLooked is Claims with each published claim's target looked at, as a volume's detail and
// the dashboard say them (markCovered): Covered set where another mount covers it since its
// publish, or nothing is mounted there. The mount table is read once for them all.
func (e *Engine) ClaimsLooked(ctx context.Context) ([]ClaimInfo, error) {
	out, err := e.Claims(ctx)
	if err == nil {
		e.markCovered(out)
	}
	return out, err
}

// sameAlloc reports whether a claim's alloc, as stored, is the alloc name given: the same
// string in Unicode normal form C. The command line reads typed IDs in NFC (cli/ids.go), and
// an older volctl stored an alloc as typed, decomposed perhaps ("e" U+0301 for "é"): compared
// byte for byte, such a claim could never again be released by name, nor met by a claim of
// the same alloc, which would mount the volume a second time for it.
func sameAlloc(stored, given string) bool { return sameInNFC(stored, given) }

// findAllocClaim is alloc's claim on volume volumeID, matched as sameAlloc matches it: the
// store's byte-for-byte Find, else the volume's claim whose alloc is alloc in NFC (stored
// decomposed by an older volctl). A look that matched bytes alone found no claim of an alloc
// typed in NFC that claim and release take as held
// (TestReleaseInNFCThatWaitedForAnotherReleaseOfADecomposedClaimSaysSo).
func findAllocClaim(tx *store.Tx, volumeID, alloc string) (store.Claim, error) {
	cl, err := tx.Claims().Find(volumeID, alloc)
	if !errors.Is(err, store.ErrNotFound) {
		return cl, err
	}
	all, lerr := tx.Claims().ByVolume(volumeID)
	if lerr != nil {
		return cl, lerr
	}
	for _, c := range all {
		if sameAlloc(c.Alloc, alloc) {
			return c, nil
		}
	}
	return cl, err
}

// SameAlloc is sameAlloc, for a caller that must match a claim as Release finds it: the
// dashboard's guard of a release confirmed (tui's action.changed).
func SameAlloc(stored, given string) bool { return sameAlloc(stored, given) }
