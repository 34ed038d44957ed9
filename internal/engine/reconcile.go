package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// ReconcileAction is one thing reconcile did, or found still wrong.
type ReconcileAction struct {
	Kind     string `json:"kind"` // created, deleted, published, released, restored, cleaned, failed, orphan
	VolumeID string `json:"volume_id,omitempty"`
	Alloc    string `json:"alloc,omitempty"`
	Message  string `json:"message"`
	// Subject names what a problem that names no volume nor alloc is about (a snapshot's
	// delete: its plugin and ID), for the agent's log, which logs a problem once per subject:
	// its message's words with IDs masked merged two snapshots' stuck deletes into one
	// (TestSecondStuckSnapshotDeleteIsLoggedWhileTheFirstStillFails). Empty: the message is.
	Subject string `json:"-"`
}

// ReconcileReport is what a reconcile pass did and what is still wrong after it.
type ReconcileReport struct {
	Actions  []ReconcileAction `json:"actions"`
	Problems []ReconcileAction `json:"problems"`
	// stopped says the pass was interrupted (its context ended): what that cut short is no
	// problem of its own, and the pass's error says it was interrupted instead.
	stopped func() bool
	// Complete: the pass looked at everything (Whole): false when it was interrupted, or
	// failed before it looked, its problems only those found before that.
	Complete bool `json:"complete"`
}

// OK reports whether nothing is left wrong.
func (r ReconcileReport) OK() bool { return len(r.Problems) == 0 }

// Whole reports whether the pass looked at everything, so that a problem an earlier pass had and
// this one has not is gone: not one that failed before it looked (the state or the mount table
// unreadable) or was interrupted, whose problems are those it found before that, if any. The
// agent logged every open problem "resolved" after a pass that looked at nothing
// (TestAPassThatLookedAtNothingResolvesNoProblem).
func (r ReconcileReport) Whole() bool { return r.Complete }

func (r *ReconcileReport) did(kind, vol, alloc, format string, args ...any) {
	r.Actions = append(r.Actions, ReconcileAction{Kind: kind, VolumeID: vol, Alloc: alloc, Message: fmt.Sprintf(format, args...)})
}

func (r *ReconcileReport) problem(vol, alloc string, err error) {
	if r.stopped != nil && r.stopped() && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return
	}
	r.Problems = append(r.Problems, ReconcileAction{Kind: "failed", VolumeID: vol, Alloc: alloc, Message: err.Error()})
}

// madeReadOnly reports claim cl's read_only volume_mount at dest made read-only again (it was
// remounted writable): a repair of a mount under a running alloc, said
// (TestReconcileSaysItMadeAReadOnlyVolumeMountReadOnlyAgain).
func (r *ReconcileReport) madeReadOnly(cl store.Claim, dest string) {
	r.did("restored", cl.VolumeID, cl.Alloc, "made volume_mount %s of claim %q for alloc %q read-only again (it was remounted writable)", dest, cl.VolumeID, cl.Alloc)
}

// problemAbout is problem for what names no volume nor alloc, its subject said (Subject).
func (r *ReconcileReport) problemAbout(subject string, err error) {
	n := len(r.Problems)
	r.problem("", "", err)
	if len(r.Problems) > n {
		r.Problems[n].Subject = subject
	}
}

// Reconcile brings the host back in line with the store (docs/architecture.md, Reconcile / restore):
// it finishes interrupted creates and deletes, re-drives every claim that is not at rest
// (releasing ones to freed: claim GC, the rest to published), restores published claims whose
// mount is gone by staging and publishing again without a new claim and without
// ControllerPublishVolume, and undoes stagings no claim uses. The mount table is read once.
func (e *Engine) Reconcile(ctx context.Context) (ReconcileReport, error) {
	rep := ReconcileReport{stopped: func() bool { return ctx.Err() != nil }}
	ctx = e.passContext(ctx)
	if err := e.store.CheckWritable(); err != nil {
		return rep, err
	}
	if err := e.store.CheckFile(); err != nil {
		return rep, fmt.Errorf("reconcile: %w", err)
	}
	if err := e.checkMountView(ctx, ""); err != nil {
		return rep, fmt.Errorf("reconcile: %w", err)
	}
	var (
		vols     []store.Volume
		claims   []store.Claim
		stagings []store.Staging
		groups   []store.Group
		left     []store.LeftPlugin
	)
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if vols, err = tx.Volumes().List(store.VolumeFilter{}); err != nil {
			return err
		}
		if claims, err = tx.Claims().ListAll(); err != nil {
			return err
		}
		if groups, err = tx.Groups().List(); err != nil {
			return err
		}
		if left, err = tx.Plugins().ListLeft(); err != nil {
			return err
		}
		stagings, err = tx.Stagings().List()
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("reconcile: %w", err)
	}
	mounted, err := e.cfg.Mounts.MountsUnder(e.cfg.StateDir)
	if err != nil {
		return rep, fmt.Errorf("reconcile: %w", err)
	}
	// Compare paths as the mount table has them (these copies are only compared: every write
	// re-reads its row).
	for i := range claims {
		claims[i].TargetPath = e.realPath(claims[i].TargetPath)
	}
	for i := range stagings {
		stagings[i].StagingPath = e.realPath(stagings[i].StagingPath)
	}

	for _, v := range vols {
		switch v.State {
		case store.VolumeCreating:
			e.reconcileVolume(ctx, &rep, v, "created", func(c *conn, v store.Volume) error { return e.finishCreate(ctx, c, v, true, listedSnapshot{}) })
		case store.VolumeDeleting:
			e.reconcileVolume(ctx, &rep, v, "deleted", func(c *conn, v store.Volume) error { return e.finishDelete(ctx, c, v) })
		}
	}

	e.reconcileSnapshots(ctx, &rep)
	e.reconcileSnapshotDeletes(ctx, &rep)

	// Claims of stopped groups, and of allocs past their running group's count (a scale-down
	// cut short), are past claims: release them.
	groupOf := map[string]store.Group{}
	for _, g := range groups {
		groupOf[g.Name] = g
	}

	pass := &reconcilePass{mounted: mounted, stagingOf: map[string]store.Staging{}, restaged: map[string]bool{}}
	for _, st := range stagings {
		pass.stagingOf[st.VolumeID] = st
	}
	var published []store.Claim
	for i, cl := range claims {
		if g, ok := groupOf[cl.Group]; ok && pastOfGroup(g, cl.Alloc) && !cl.Releasing {
			claims[i].Releasing = true
		}
	}
	// Released innermost volume_mount first, as a group stop releases them: an outer bind with
	// another mounted below it cannot be unmounted (EBUSY), and a stop killed before it released
	// them (or after it marked the inner one's release) left the pass a problem per stop.
	releaseInnerFirst(claims)
	// bindLater are claims on their way to published with volume_mounts, driven in restore's
	// phases once the published claims of their nesting depth and above are restored
	// (restorePhases): a group run binds an alloc's volumes outermost first, so one cut short on
	// its way is an inner one, whose bind after a reboot would otherwise be made on the outer
	// destination's empty directory, before the outer claim's restore, which then refuses to
	// hide it, pass after pass
	// (TestReconcileAfterARebootFinishesAGroupRunCutShortBetweenNestedVolumeMounts); and an
	// outer one left unfinished by a failed restore is driven before the inner claims below it
	// are restored (TestAFailedOuterRestoreLeavesTheInnerForTheNextPass).
	var bindLater []store.Claim
	for _, cl := range claims {
		if cl.State == store.ClaimPublished && !cl.Releasing {
			// Published claims are checked against the mount table together, below; one
			// marked for reconcile (a failed restore) is restored there too.
			published = append(published, cl)
			continue
		}
		if !cl.Releasing && len(cl.Binds) > 0 {
			bindLater = append(bindLater, cl)
			continue
		}
		if ctx.Err() != nil {
			break
		}
		e.reconcileClaim(ctx, &rep, cl, pass)
	}
	if ctx.Err() == nil {
		inUse := e.restore(ctx, &rep, published, bindLater, pass)
		e.reconcilePendingExpansions(ctx, &rep, vols)
		e.reconcileExpansions(ctx, &rep, vols, claims, stagings)
		e.cleanStagings(ctx, &rep, stagings, inUse)
		e.findOrphans(ctx, &rep, mounted, claims, stagings)
		e.tidyDirs(ctx, vols, claims)
		e.tidyLocks(ctx, vols, claims, stagings)
		e.tidyLeftPlugins(ctx, vols, left)
	}
	if err := ctx.Err(); err != nil {
		// What the interruption cut short is left as it was, for the next pass: one error
		// saying so, not a problem per item it did not get to.
		return rep, fmt.Errorf("reconcile: interrupted (%w); what it did is listed, %d problem(s) found before that; run `volctl reconcile` again to finish", err, len(rep.Problems))
	}
	rep.Complete = true
	if !rep.OK() {
		return rep, fmt.Errorf("reconcile: %d problem(s) remain", len(rep.Problems))
	}
	return rep, nil
}

// releaseInnerFirst reorders the releasing claims of claims among their own places so that one
// whose volume_mount destination is below another's comes before it (nestingOrder); the other
// claims keep their places. Claims without volume_mounts are not looked at.
func releaseInnerFirst(claims []store.Claim) {
	var at []int
	for i, cl := range claims {
		if cl.Releasing && len(cl.Binds) > 0 {
			at = append(at, i)
		}
	}
	if len(at) < 2 {
		return
	}
	order := nestingOrder(slices.Clone(at), func(i int) []string { return bindDests(claims[i].Binds) }, false)
	moved := make([]store.Claim, len(order))
	for k, i := range order {
		moved[k] = claims[i]
	}
	for k, i := range at {
		claims[i] = moved[k]
	}
}

// passContext is ctx for a background pass (Reconcile, ReleasePast): its lock waits bounded
// (Config.PassLockWait), and a plugin that does not answer one of its RPCs sent nothing more
// (withHungPlugins).
func (e *Engine) passContext(ctx context.Context) context.Context {
	return withHungPlugins(withLockWait(ctx, e.cfg.PassLockWait), "this pass", "the next pass")
}

// reconcilePass is what a reconcile pass read at its start, and the volumes it has staged again
// since.
type reconcilePass struct {
	mounted   map[string]bool          // the mount table, read once for the pass
	stagingOf map[string]store.Staging // the staging rows by volume, as listed
	mu        sync.Mutex               // restaged, written by restore's workers
	restaged  map[string]bool          // volumes staged again in this pass
}

// stagingLost reports whether a volume's staging, as listed, says staged while its path is not
// mounted (a reboot), and this pass has not staged it again.
func (p *reconcilePass) stagingLost(volumeID string) bool {
	st := p.stagingOf[volumeID]
	p.mu.Lock()
	restaged := p.restaged[volumeID]
	p.mu.Unlock()
	return !restaged && st.Staged && st.StagingPath != "" && !p.mounted[st.StagingPath]
}

// noteRestaged records a volume whose lost staging a claim was driven or restored onto as
// staged again, if it is now: its other claims must not stage it again (with their own
// capability, which a plugin may refuse).
func (e *Engine) noteRestaged(ctx context.Context, p *reconcilePass, volumeID string) {
	if st, ok, err := e.getStaging(ctx, volumeID); err == nil && ok && st.Staged {
		p.markRestaged(volumeID)
	}
}

// markRestaged records a volume as staged again in this pass.
func (p *reconcilePass) markRestaged(volumeID string) {
	p.mu.Lock()
	p.restaged[volumeID] = true
	p.mu.Unlock()
}

// unstageLost marks a volume's staging unstaged when its row says staged but its path is not in
// mounted, so the publish path stages it again rather than publish onto an empty directory. It
// checks the row as it is now, under the caller's volume lock. listedAt, when set, is the row's
// updated_at when the caller's table was read (a reconcile pass's, read before any lock): a row
// written since (another volctl staged the volume again meanwhile, and the table does not show
// it) is errWrittenSinceListed, and nothing is written; the caller reads the table again.
func unstageLost(tx *store.Tx, volumeID string, mounted map[string]bool, listedAt time.Time) error {
	st, err := tx.Stagings().Get(volumeID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || !st.Staged || st.StagingPath == "" || mounted[st.StagingPath] {
		return err
	}
	if !listedAt.IsZero() && !st.UpdatedAt.Equal(listedAt) {
		return errWrittenSinceListed
	}
	st.Staged = false
	return tx.Stagings().Put(&st)
}

// restageIfLost applies reconcile's lost-staging rule to a claim driven by a command (before
// any reconcile after a reboot): when the volume's staging row says staged but its path is not
// in the mount table, the row is marked unstaged, so the publish path stages the volume again
// rather than publish onto an empty directory. ld, when given, is the staging as the caller's
// transaction read it, and is updated too. The caller holds the volume lock. The mount table is
// read only for a volume whose row says staged.
func (e *Engine) restageIfLost(ctx context.Context, volumeID string, ld *loaded) error {
	st, ok := store.Staging{}, false
	if ld != nil {
		st, ok = ld.staging, ld.hasStaging
	} else {
		var err error
		if st, ok, err = e.getStaging(ctx, volumeID); err != nil {
			return err
		}
	}
	if !ok || !st.Staged || st.StagingPath == "" {
		return nil
	}
	mounted, err := e.cfg.Mounts.MountsUnder(e.cfg.StateDir)
	if err != nil {
		return fmt.Errorf("volume %q: checking its staging %s: %w", volumeID, st.StagingPath, err)
	}
	if mounted[e.realPath(st.StagingPath)] {
		return nil
	}
	// The lock is checked inside the transaction (holding): lost while this waited for the
	// database, another volctl may have staged the volume since the mount table was read, and
	// its staging must not be marked unstaged (its NodeUnstageVolume skipped at release).
	if err := e.store.Update(ctx, e.locks.holding(volumeID, func(tx *store.Tx) error {
		return unstageLost(tx, volumeID, mounted, time.Time{})
	})); err != nil {
		return err
	}
	if ld != nil {
		ld.staging.Staged = false
	}
	return nil
}

// restoreIfUnmounted applies restore's rule to a published claim its alloc claims again (a task
// restarted after a reboot, before any reconcile): when the mount table lacks its target, the
// claim is restored (and its volume staged again when the staging is gone too) before it is
// handed back, rather than handing back a path that is now an empty directory. locked says the
// caller holds the volume lock; otherwise it is taken here. It returns the claim as it is now,
// which the caller drives on if it is not at rest.
func (e *Engine) restoreIfUnmounted(ctx context.Context, cl store.Claim, locked bool) (store.Claim, error) {
	mounted, err := e.cfg.Mounts.MountsUnder(e.cfg.StateDir)
	if err != nil {
		return cl, fmt.Errorf("checking the target %s: %w", cl.TargetPath, err)
	}
	if mounted[e.realPath(cl.TargetPath)] {
		return cl, nil
	}
	var rerr error // the restore's
	if !locked {
		unlock, err := e.locks.volume(ctx, cl.VolumeID)
		if err != nil {
			return cl, err
		}
		defer unlock()
		// The table was read before the lock, which another operation held: it may have
		// staged the volume again, or restored this very claim, meanwhile. Restoring from
		// that table would mark its staging unstaged and stage over it, or publish again onto
		// a target it mounted (ALREADY_EXISTS from a plugin that looks: the claim, in use,
		// left degraded). It is read again under the lock.
		if mounted, err = e.cfg.Mounts.MountsUnder(e.cfg.StateDir); err != nil {
			return cl, fmt.Errorf("checking the target %s again once another volctl's operation on volume %q had ended: %w", cl.TargetPath, cl.VolumeID, err)
		}
	}
	if !mounted[e.realPath(cl.TargetPath)] {
		st, ok, err := e.getStaging(ctx, cl.VolumeID)
		if err != nil {
			return cl, err
		}
		lost := ok && st.Staged && st.StagingPath != "" && !mounted[e.realPath(st.StagingPath)]
		_, rerr = e.restoreLocked(ctx, cl.ID, listedRows{}, lost, mounted)
		if errors.Is(rerr, ErrNotFound) {
			// Released or changed by another volctl meanwhile: what it is now is the answer.
			rerr = nil
		}
	}
	cl, err = viewOne(ctx, e.store, func(tx *store.Tx) (store.Claim, error) { return tx.Claims().Get(cl.ID) })
	if errors.Is(err, store.ErrNotFound) {
		return cl, conflictf("the claim was released by another volctl meanwhile")
	}
	if errors.As(rerr, new(*unrecordedBeside)) {
		return cl, fmt.Errorf("restoring its mount at %s: %w", cl.TargetPath, rerr)
	}
	if rerr != nil {
		return cl, fmt.Errorf("restoring its mount at %s: %w (the claim is held, degraded, %s; `%s` frees it)", cl.TargetPath, rerr, heldUntil(rerr), freeCommand(cl))
	}
	if err == nil && cl.Releasing {
		err = conflictf("the claim is being released by another volctl")
	}
	return cl, err
}

// reconcileVolume finishes an interrupted create or delete of volume v, as listed at the start
// of the pass, with finish. The volume is read again under its lock, and left alone unless it
// is still in the listed state: another volctl may have finished the operation meanwhile, or
// put the volume back to ready (a delete the plugin refused), and finishing from the list
// would send CreateVolume or DeleteVolume for a volume nobody is creating or deleting.
func (e *Engine) reconcileVolume(ctx context.Context, rep *ReconcileReport, v store.Volume, kind string, finish func(*conn, store.Volume) error) {
	ctx = onVolume(ctx, v.ID)
	moved := false
	err := func() error {
		unlock, err := e.locks.volume(ctx, v.ID)
		if err != nil {
			return err
		}
		defer unlock()
		cur, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(v.ID) })
		if errors.Is(err, store.ErrNotFound) || (err == nil && cur.State != v.State) {
			moved = true
			return nil
		}
		if err != nil {
			return err
		}
		v = cur
		c, err := e.connect(ctx, v.PluginID)
		if err != nil {
			return err
		}
		defer e.done(c)
		return finish(c, v)
	}()
	switch {
	case err != nil:
		rep.problem(v.ID, "", fmt.Errorf("volume %q (%s): %w", v.ID, v.State, err))
	case !moved:
		rep.did(kind, v.ID, "", "volume %q %s (interrupted earlier)", v.ID, kind)
	}
}

// reconcileClaim re-drives one claim that is not at rest. A lost staging of its volume (see
// stagingLost) is staged again first.
func (e *Engine) reconcileClaim(ctx context.Context, rep *ReconcileReport, cl store.Claim, pass *reconcilePass) {
	ctx, repaired := withRepairs(onVolume(ctx, cl.VolumeID))
	defer func() {
		// What its publish's binds mended, as a restore done at once reports it.
		for _, b := range *repaired {
			rep.madeReadOnly(cl, b.dest)
		}
	}()
	err := func() error {
		unlock, err := e.locks.volume(ctx, cl.VolumeID)
		if err != nil {
			return err
		}
		defer unlock()
		if !cl.Releasing && pass.stagingLost(cl.VolumeID) {
			listedAt := pass.stagingOf[cl.VolumeID].UpdatedAt
			err := e.store.Update(ctx, func(tx *store.Tx) error { return unstageLost(tx, cl.VolumeID, pass.mounted, listedAt) })
			if errors.Is(err, errWrittenSinceListed) {
				var mounted map[string]bool
				if mounted, err = e.mountsAgain(); err == nil {
					err = e.store.Update(ctx, func(tx *store.Tx) error { return unstageLost(tx, cl.VolumeID, mounted, time.Time{}) })
				}
			}
			if err != nil {
				return err
			}
			defer e.noteRestaged(ctx, pass, cl.VolumeID)
		}
		if cl.Releasing {
			// Persist the wish first (a stopped group's claim) so a failure is retried as a release.
			// The group was read at the start of the pass: it may have been run again since.
			if err := e.store.Update(ctx, func(tx *store.Tx) error {
				cur, past, err := pastClaim(tx, cl.ID, true)
				if errors.Is(err, store.ErrNotFound) {
					// Freed by the release that marked it, which held the lock the pass waited for.
					return notFoundf("claim %d freed meanwhile", cl.ID)
				}
				if err != nil || past {
					return err
				}
				cl.Releasing = false
				if cur.AtRest() {
					return errGroupRunAgain
				}
				return nil
			}); err != nil {
				return err
			}
		} else {
			// Listed on its way, read again under the lock the pass may have waited for: the
			// operation that held it (the claim's own command, slower than the pass) may have
			// published it meanwhile. Then there is nothing to do, and nothing to report as done.
			cur, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Claim, error) { return tx.Claims().Get(cl.ID) })
			if errors.Is(err, store.ErrNotFound) {
				return notFoundf("claim %d freed meanwhile", cl.ID)
			}
			if err != nil {
				return err
			}
			if cur.AtRest() && !cur.Degraded {
				return errFinishedMeanwhile
			}
			// Reported as read under the lock: a release another volctl marked meanwhile, and
			// left for reconcile, is what drive finishes, and it was reported "published" (or a
			// degraded claim's "restored", with a restore event) of a claim it freed
			// (TestReconcileReportsAClaimItReleasedAsReleased).
			cl.Releasing, cl.Degraded, cl.State = cur.Releasing, cur.Degraded, cur.State
		}
		_, err = e.drive(ctx, cl.ID, store.OutcomeRolledBack)
		return err
	}()
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, errGroupRunAgain), errors.Is(err, errFinishedMeanwhile):
		// Released by another volctl meanwhile, or its group run again, or published by the
		// command the pass waited for: nothing left to do.
	case err != nil:
		rep.problem(cl.VolumeID, cl.Alloc, fmt.Errorf("claim %q for alloc %q: %w", cl.VolumeID, cl.Alloc, err))
	case cl.Releasing:
		rep.did("released", cl.VolumeID, cl.Alloc, "released claim %q for alloc %q (was %s)", cl.VolumeID, cl.Alloc, cl.State)
	case cl.Degraded:
		rep.did("restored", cl.VolumeID, cl.Alloc, "restored degraded claim %q for alloc %q at %s (was %s)", cl.VolumeID, cl.Alloc, cl.TargetPath, cl.State)
		// The restore a failed one left to this pass: the same event as one done at once.
		e.event(ctx, &store.Event{Kind: "restore", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: e.pluginOf(ctx, cl.VolumeID),
			Message: fmt.Sprintf("restored the mount at %s", cl.TargetPath)})
	default:
		rep.did("published", cl.VolumeID, cl.Alloc, "published claim %q for alloc %q (was %s)", cl.VolumeID, cl.Alloc, cl.State)
	}
}

// errFinishedMeanwhile is a claim a reconcile pass listed on its way, found at rest once it had
// the volume's lock: the operation that held the lock finished it.
var errFinishedMeanwhile = errors.New("finished meanwhile")

// pastClaim reads claim id as it is now and reports whether it is still a past claim: being
// released, or held for a group that is stopped, or, with beyondCount (a group run's
// scale-down, reconcile, claim GC), for an alloc past the group's count; it marks such a claim
// releasing (the wish persisted, so a failure is retried as a release). A claim freed meanwhile
// is store.ErrNotFound; one whose group was run again since is not past, and cur says where it is.
func pastClaim(tx *store.Tx, id int64, beyondCount bool) (cur store.Claim, past bool, err error) {
	if cur, err = tx.Claims().Get(id); err != nil || cur.Releasing {
		return cur, err == nil, err
	}
	g, err := tx.Groups().Get(cur.Group)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return cur, false, nil
	case err != nil:
		return cur, false, err
	case g.State != store.GroupStopped && !(beyondCount && pastOfGroup(g, cur.Alloc)):
		return cur, false, nil
	}
	cur.Releasing = true
	return cur, true, tx.Claims().Update(&cur)
}

// pastOfGroup reports whether group g no longer has alloc: g is stopped, or alloc is past the
// count g records. A `group run` that scales down records the smaller count before it releases
// the allocs past it; a kill in between leaves them holding their claims, which reconcile and
// claim GC then release as the scale-down would have
// (TestReconcileFinishesAScaleDownAKillCutShort).
func pastOfGroup(g store.Group, alloc string) bool {
	return g.State == store.GroupStopped || allocIndex(g.Name, alloc) >= g.Count
}

// errNotPast ends claim GC's release of a claim that is no longer a past claim.
var errNotPast = errors.New("no longer a past claim")

// ReleasePast is claim GC, the part of a reconcile pass that releases past claims (those whose
// release was asked for and did not finish, those of stopped groups, and those of allocs past
// their group's count: a scale-down cut short, pastOfGroup) without the rest of the pass; it contacts plugins only when there is something to release. The claims are listed
// once, and each is checked again by its ID under its volume lock before anything is sent: a
// claim that was freed meanwhile, even if its alloc has claimed the volume again since, or
// whose group was run again, is left alone. Each release is an action, each failure a problem.
func (e *Engine) ReleasePast(ctx context.Context) (ReconcileReport, error) {
	var (
		rep    ReconcileReport
		claims []store.Claim
	)
	ctx = e.passContext(ctx)
	if err := e.checkMountView(ctx, ""); err != nil {
		return rep, fmt.Errorf("release past claims: %w", err)
	}
	err := e.store.View(ctx, func(tx *store.Tx) error {
		all, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		groups, err := tx.Groups().List()
		if err != nil {
			return err
		}
		groupOf := map[string]store.Group{}
		for _, g := range groups {
			groupOf[g.Name] = g
		}
		for _, cl := range all {
			if g, ok := groupOf[cl.Group]; cl.Releasing || (ok && pastOfGroup(g, cl.Alloc)) {
				claims = append(claims, cl)
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("claim GC: %w", err)
	}
	// Innermost volume_mount first, as a group stop releases them.
	claims = nestingOrder(claims, func(c store.Claim) []string { return bindDests(c.Binds) }, false)
	for _, cl := range claims {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		err := e.releasePast(ctx, cl.ID, cl.VolumeID, true)
		switch {
		case errors.Is(err, errNotPast), errors.Is(err, ErrNotFound):
			// Freed by another volctl meanwhile (and maybe claimed again), or its group run again.
		case err != nil:
			rep.problem(cl.VolumeID, cl.Alloc, fmt.Errorf("claim %q for alloc %q: %w", cl.VolumeID, cl.Alloc, err))
		default:
			rep.did("released", cl.VolumeID, cl.Alloc, "released claim %q for alloc %q (was %s)", cl.VolumeID, cl.Alloc, cl.State)
		}
	}
	rep.Complete = true // every past claim tried (TestClaimGCPassThatLookedAtNothingResolvesNoProblem)
	if !rep.OK() {
		return rep, fmt.Errorf("claim GC: %d problem(s) remain", len(rep.Problems))
	}
	return rep, nil
}

// releasePast releases claim id, on volumeID, if it is still a past claim (pastClaim, with
// beyondCount) once its volume is locked, and returns errNotPast if it is not.
func (e *Engine) releasePast(ctx context.Context, id int64, volumeID string, beyondCount bool) error {
	ctx = onVolume(ctx, volumeID)
	unlock, err := e.locks.volume(ctx, volumeID)
	if err != nil {
		return err
	}
	defer unlock()
	if err := e.store.Update(ctx, func(tx *store.Tx) error {
		_, past, err := pastClaim(tx, id, beyondCount)
		if errors.Is(err, store.ErrNotFound) || (err == nil && !past) {
			return errNotPast
		}
		return err
	}); err != nil {
		return err
	}
	_, err = e.drive(ctx, id, store.OutcomeReleased)
	return err
}

// pluginOf is the plugin ID of a volume, "" when it cannot be read (for an event's field).
func (e *Engine) pluginOf(ctx context.Context, volumeID string) string {
	var id string
	_ = e.store.View(ctx, func(tx *store.Tx) error {
		v, err := tx.Volumes().Get(volumeID)
		id = v.PluginID
		return err
	})
	return id
}

// errGroupRunAgain ends the reconcile of a claim at rest whose group was stopped when the pass
// began and has been run again since.
var errGroupRunAgain = errors.New("its group was run again")

// restoreWorkers bounds how many volumes a reconcile pass restores at once.
const restoreWorkers = 8

// restore re-stages and re-publishes published claims whose target is no longer mounted,
// judged by the mount table read once for the whole pass. Volumes are independent (each has
// its own lock, staging and claims), so up to restoreWorkers of them are restored at once; a
// volume's claims are restored one after the other, in the listed order, by one worker, so the
// lost-staging rule (one re-stage per volume per pass) sees them as a sequential pass did.
// Claims whose volume_mounts nest (a group binding one below another's destination) are restored
// in phases, outermost first (restorePhases): in parallel, the inner one was bound on the empty
// destination directory, then hidden (or moved) by the outer bind. The
// report lists the results in the listed order whatever order they finished in. inUse are the
// volumes a claim was restored or found mounted on, which cleanStagings need not look at.
func (e *Engine) restore(ctx context.Context, rep *ReconcileReport, published, later []store.Claim, pass *reconcilePass) (inUse map[string]bool) {
	ctx = withPublishIndex(ctx) // the publish tree walked once for every target the pass checks
	ctx = e.withPlaces(ctx)     // the mount table read once for the volume_mounts the pass binds or finds bound
	type result struct {
		err            error
		restored, held bool      // held: restored, or found mounted and settled
		bound          []rebound // volume_mounts of a claim found mounted, bound or made read-only again
	}
	results := make([]result, len(published))
	var volumes []string
	byVolume := map[string][]int{}
	for i, cl := range published {
		if _, ok := byVolume[cl.VolumeID]; !ok {
			volumes = append(volumes, cl.VolumeID)
		}
		byVolume[cl.VolumeID] = append(byVolume[cl.VolumeID], i)
	}
	restoreVolume := func(idx []int) {
		for _, i := range idx {
			cl := published[i]
			ctx := onVolume(ctx, cl.VolumeID)
			if pass.mounted[cl.TargetPath] {
				bound, err := e.settleMounted(ctx, cl)
				results[i].bound = bound
				if err != nil && !errors.Is(err, ErrNotFound) {
					results[i].err = err
				}
				results[i].held = err == nil || heldAsFound(err)
				continue
			}
			lost := pass.stagingLost(cl.VolumeID)
			ctx, repaired := withRepairs(ctx)
			staged, settled, err := e.restoreClaim(ctx, cl, lost, pass)
			results[i].bound = *repaired // read-only again, by the restore's binds
			if settled {
				if err != nil && !errors.Is(err, ErrNotFound) {
					results[i].err = err
				}
				results[i].held = err == nil || heldAsFound(err)
				continue
			}
			switch {
			case lost && staged:
				pass.markRestaged(cl.VolumeID)
			case lost && err != nil:
				e.noteRestaged(ctx, pass, cl.VolumeID)
			}
			switch {
			case errors.Is(err, ErrNotFound):
			case errors.As(err, new(*unrecordedBeside)):
				results[i].err = fmt.Errorf("restore claim %q for alloc %q: %w", cl.VolumeID, cl.Alloc, err)
			case errors.As(err, new(*otherNodesAttachment)), errors.As(err, new(*topologyRefusal)):
				results[i].err = fmt.Errorf("restore claim %q for alloc %q: %w (the claim stays held, degraded, %s)", cl.VolumeID, cl.Alloc, err, heldUntil(err))
			case err != nil:
				// Tried again, not promised: a refusal the plugin keeps answering (its root
				// moved: FAILED_PRECONDITION, what to do in its words) is met again by every pass
				// (TestRestoreRefusedForGoodPromisesNoRestore).
				results[i].err = fmt.Errorf("restore claim %q for alloc %q: %w (the claim stays held; each reconcile pass tries it again)", cl.VolumeID, cl.Alloc, err)
			default:
				results[i].restored, results[i].held = true, true
			}
		}
	}
	phases, laterAt := restorePhases(published, volumes, byVolume, later)
	for d, phase := range phases {
		next := make(chan []int)
		var wg sync.WaitGroup
		for range min(restoreWorkers, len(phase)) {
			crash.GoGroup(&wg, func() {
				for idx := range next {
					restoreVolume(idx)
				}
			})
		}
		for _, unit := range phase {
			next <- unit
		}
		close(next)
		wg.Wait()
		// The claims of this depth on their way to published, driven (and bound) once the
		// claims they lie below are restored, one after the other, as the pass drives others.
		for _, k := range laterAt[d] {
			if ctx.Err() != nil {
				break
			}
			e.reconcileClaim(ctx, rep, later[k], pass)
		}
	}
	inUse = map[string]bool{}
	for i, r := range results {
		cl := published[i]
		if r.held {
			inUse[cl.VolumeID] = true
		}
		switch {
		case r.err != nil:
			rep.problem(cl.VolumeID, cl.Alloc, r.err)
		case r.restored:
			rep.did("restored", cl.VolumeID, cl.Alloc, "restored claim %q for alloc %q at %s", cl.VolumeID, cl.Alloc, cl.TargetPath)
		}
		for _, b := range r.bound {
			if b.how == readOnlyAgain {
				rep.madeReadOnly(cl, b.dest)
				continue
			}
			rep.did("restored", cl.VolumeID, cl.Alloc, "bound volume_mount %s of claim %q for alloc %q again", b.dest, cl.VolumeID, cl.Alloc)
		}
	}
	return inUse
}

// restorePhases are the claims of published (by index) in the phases restore takes them in, each
// phase's units one restore worker takes at once: a phase is the claims of one nesting depth
// (nestingDepths: 0, none of its volume_mounts below another claim's; 1, below a claim of depth
// 0, ...), so an inner bind is made on the outer volume once that is restored, not on the empty
// destination directory, where the outer bind would hide it; a unit is one volume's claims of that
// depth, in the listed order. volumes are the volumes in the listed order, byVolume their claims.
// A volume shared by a whole group (tools below each alloc's home) is one unit of its phase, and
// the group's other volumes are spread over the workers as any others are. laterAt are the
// claims of later (on their way to published, bindLater) by phase, driven after its units.
func restorePhases(published []store.Claim, volumes []string, byVolume map[string][]int, later []store.Claim) (phases [][][]int, laterAt [][]int) {
	depth := nestingDepths(len(published)+len(later), func(i int) []string {
		if i < len(published) {
			return bindDests(published[i].Binds)
		}
		return bindDests(later[i-len(published)].Binds)
	})
	grow := func(d int) {
		for len(phases) <= d {
			phases, laterAt = append(phases, nil), append(laterAt, nil)
		}
	}
	for _, v := range volumes {
		first := map[int]int{} // by depth: where this volume's unit is in its phase
		for _, i := range byVolume[v] {
			d := depth[i]
			grow(d)
			k, ok := first[d]
			if !ok {
				k = len(phases[d])
				first[d] = k
				phases[d] = append(phases[d], nil)
			}
			phases[d][k] = append(phases[d][k], i)
		}
	}
	for k := range later {
		d := depth[len(published)+k]
		grow(d)
		laterAt[d] = append(laterAt[d], k)
	}
	return phases, laterAt
}

// settleMounted makes sure a published claim whose target is mounted has its volume_mounts
// bound, and clears its flag for reconcile; bound are the volume_mounts it had to bind, or make
// read-only, again.
// It works from the store under the volume lock, not from the pass's list: a release may have
// begun since the list was read, and writing the listed copy back would undo it.
func (e *Engine) settleMounted(ctx context.Context, listed store.Claim) (bound []rebound, err error) {
	unlock, err := e.locks.volume(ctx, listed.VolumeID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return e.settleLocked(ctx, listed.ID)
}

// settleLocked is settleMounted for a caller that holds the volume lock.
func (e *Engine) settleLocked(ctx context.Context, claimID int64) (bound []rebound, err error) {
	cl, _, err := e.stillPublished(ctx, claimID)
	if err != nil {
		return nil, err
	}
	// A target covered since it was published: its binds would bind the cover.
	if err := e.targetCovered(cl); err != nil {
		return nil, err
	}
	bound, err = e.bind(ctx, &cl)
	if len(bound) > 0 {
		// Something unmounted them (by hand, or a mount namespace's teardown), or remounted a
		// read-only one writable: the event log says they were found so and made as they were,
		// as it says of a target restored. Before,
		// a claim again or a group run again bound them and nothing said so
		// (TestVolumeMountBoundAgainIsRecorded).
		e.event(ctx, &store.Event{Kind: "restore", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: e.pluginOf(ctx, cl.VolumeID),
			Message: reboundWords(bound)})
	}
	if err != nil {
		return bound, err
	}
	if cl.NeedsReconcile {
		cl.NeedsReconcile = false
		if err := e.save(ctx, &cl, nil); err != nil {
			return bound, err
		}
	}
	return bound, e.claimWritable(cl)
}

// writableClaim is a published claim whose file-system target is mounted read-write though it
// asked for a read-only mount (claimWritable): reconcile reports it every pass, the claim held
// and its mount left, and its alloc claiming it again gets it as a conflict (exit 4), not the
// path.
type writableClaim struct{ cl store.Claim }

func (w *writableClaim) Is(target error) bool { return target == ErrConflict }

func (w *writableClaim) Error() string {
	what, rule := "read claim", "which holds the volume for reading"
	if w.cl.Mode == store.ClaimWrite {
		what, rule = "write claim", "whose mount flags ask for \"ro\""
	}
	return fmt.Sprintf("%s %q for alloc %q is mounted read-write at %s: the alloc, %s, can write it "+
		"(a volctl from before such targets were checked read-only published it so, or it was remounted since). "+
		"It is left mounted, since unmounting it would pull the volume from under the alloc: once the alloc stops, "+
		"`%s` and claim it again, which publishes it read-only and checks it",
		what, w.cl.VolumeID, w.cl.Alloc, w.cl.TargetPath, rule, releaseCommand(w.cl))
}

// asksReadOnly says claim cl's file-system target is to be a read-only mount: a read claim's,
// or a write claim's whose mount flags end at "ro" (spec.ReadOnlyFlag), as checkTarget holds
// them at publish.
func asksReadOnly(cl store.Claim) bool {
	return cl.AttachmentMode == spec.FileSystem && (cl.Mode == store.ClaimRead || spec.ReadOnlyFlag(cl.MountFlags.Plain()) >= 0)
}

// claimWritable applies the rule that a file-system target asked read-only (asksReadOnly) is
// a read-only mount (checkTarget's, at publish) to a claim published and still mounted, which
// a volctl from before that rule may have published read-write: the mount table's word for
// the target (mountedByTable), never statfs of a file system that may hang. Such a claim is
// not re-published nor remounted: either would pull or change the mount under an alloc that
// may be running. It is a *writableClaim, which reconcile reports as a problem each pass until
// the claim is released. A write claim asking "ro" was held to it from round 73
// (TestWriteClaimAskingReadOnlyFoundWritableIsReported).
func (e *Engine) claimWritable(cl store.Claim) error {
	if !asksReadOnly(cl) {
		return nil
	}
	mp, err := e.mountedByTable(cl.TargetPath)
	switch {
	case err != nil:
		return fmt.Errorf("checking that claim %q for alloc %q is mounted read-only at %s: %w", cl.VolumeID, cl.Alloc, cl.TargetPath, err)
	case mp.Mounted && !mp.ReadOnly:
		return &writableClaim{cl: cl}
	}
	return nil
}

// mountedByTable is MountTable.Mounted of a target, from the mount table alone when the table
// can answer so (tableMounts: the kernel's): a mount made long ago may be on a file system
// whose server is gone, where statfs would block the caller, which holds the volume's lock.
func (e *Engine) mountedByTable(target string) (MountPoint, error) {
	if t, ok := e.cfg.Mounts.(tableMounts); ok {
		return t.MountedInTable(e.realPath(target))
	}
	return e.cfg.Mounts.Mounted(e.cfg.StateDir, e.realPath(target))
}

// stillPublished reads a claim the pass listed as published again, with its volume, under the
// volume lock the caller holds. A claim released or changed since is ErrNotFound.
func (e *Engine) stillPublished(ctx context.Context, id int64) (cl store.Claim, v store.Volume, err error) {
	err = e.store.View(ctx, func(tx *store.Tx) error {
		cl, v, err = publishedNow(tx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		err = notFoundf("claim released meanwhile")
	}
	return cl, v, err
}

// publishedNow is stillPublished's reads, in the caller's transaction.
func publishedNow(tx *store.Tx, id int64) (cl store.Claim, v store.Volume, err error) {
	if cl, err = tx.Claims().Get(id); err != nil {
		return cl, v, err
	}
	if cl.State != store.ClaimPublished || cl.Releasing {
		return cl, v, notFoundf("claim changed meanwhile")
	}
	v, err = tx.Volumes().Get(cl.VolumeID)
	return cl, v, err
}

// restoreClaim publishes a published claim again, staging first when the staging is gone too.
// The claim keeps its ID and state, and ControllerPublishVolume is not sent: the controller
// publication outlives the node's mounts.
//
// The pass's mount table (mounted) was read before the volume lock was taken: another volctl
// (the agent and a `volctl reconcile` at once) may have restored the claim since, and publishing
// it again would ask the plugin for a publication it holds (a plugin that answers that with
// ALREADY_EXISTS or an error would leave a claim that is mounted degraded, for every pass to
// fail again). So restoreLocked refuses, writing nothing, a claim whose row was written since
// the pass listed it, or a lost staging whose row was (another volctl staged it again: marking
// it unstaged would record a staging the plugin holds as gone), by their updated_at (no extra
// read); only then is the table read again: a target mounted now is settled as one the pass
// found mounted (settled), else the claim is restored by the new table. Nothing more is read
// for rows no one touched since the list.
func (e *Engine) restoreClaim(ctx context.Context, cl store.Claim, stagingLost bool, pass *reconcilePass) (staged, settled bool, err error) {
	unlock, err := e.locks.volume(ctx, cl.VolumeID)
	if err != nil {
		return false, false, err
	}
	defer unlock()
	listed := listedRows{claim: cl.UpdatedAt, staging: pass.stagingOf[cl.VolumeID].UpdatedAt}
	staged, err = e.restoreLocked(ctx, cl.ID, listed, stagingLost, pass.mounted)
	if !errors.Is(err, errWrittenSinceListed) {
		return staged, false, err
	}
	mounted, err := e.mountsAgain()
	if err != nil {
		return false, false, err
	}
	if mounted[cl.TargetPath] {
		_, err := e.settleLocked(ctx, cl.ID)
		return false, true, err
	}
	st, ok, err := e.getStaging(ctx, cl.VolumeID)
	if err != nil {
		return false, false, err
	}
	stagingLost = ok && st.Staged && st.StagingPath != "" && !mounted[e.realPath(st.StagingPath)]
	staged, err = e.restoreLocked(ctx, cl.ID, listedRows{}, stagingLost, mounted)
	return staged, false, err
}

// errWrittenSinceListed refuses a row written since the caller's mount table was read
// (listedRows): the table may not show what was done meanwhile.
var errWrittenSinceListed = errors.New("written since the pass listed it")

// listedRows are the updated_at of a claim and of its volume's staging as a reconcile pass
// listed them, with its mount table; zero for a caller whose table was read under the lock.
type listedRows struct{ claim, staging time.Time }

// mountsAgain reads the mount table again, for a row written since a pass read it.
func (e *Engine) mountsAgain() (map[string]bool, error) {
	mounted, err := e.cfg.Mounts.MountsUnder(e.cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("reading the mount table again (another volctl changed the volume meanwhile): %w", err)
	}
	return mounted, nil
}

// restoreLocked is restoreClaim for a caller that holds the volume lock. staged says the
// volume's staging is staged now (the claim was restored through a plugin that stages).
// listed, when set, are the claim's and staging's updated_at as the caller's mount table saw
// them: either written since is errWrittenSinceListed, and nothing is written.
func (e *Engine) restoreLocked(ctx context.Context, claimID int64, listed listedRows, stagingLost bool, mounted map[string]bool) (staged bool, err error) {
	// Step the claim back to node-staged and publish it again from there, staging first when the
	// staging is gone too (its row says not staged). Never further back: the plugin may still
	// hold the publication from before, and a restore cut short must leave a claim whose release
	// sends NodeUnpublishVolume, which the release of a controller-published claim skips. The
	// controller publication outlives the node's mounts, so ControllerPublishVolume is not sent.
	// The same commit marks the claim degraded: from here until it is published again, no error
	// of any class frees it (drive never rolls a degraded claim back), even after a crash. It
	// comes before connecting: a plugin not back yet after a reboot (or another driver on its
	// socket) fails the restore as surely as an RPC does, and the claim must show it.
	//
	// It is a progress commit, as are the ones publish makes after it: all of it is node-local,
	// about mounts a power loss takes away. A power loss that undoes it (with or without the
	// commits after it: they reach the disk in order) leaves the claim published with its
	// target unmounted, or node-staged and degraded, and its staging as listed or marked
	// unstaged: states a crash of volctl leaves too, which the next pass restores or re-drives.
	// Its transaction also reads, under the volume lock, everything the restore works from: the
	// claim as it is now (a claim released or changed since the pass listed it is ErrNotFound,
	// as stillPublished says, and nothing is written), its volume, the staging row for publish
	// and the plugin's row for connecting, so a restore reads in no transaction of its own.
	var (
		cl        store.Claim
		v         store.Volume
		plugin    store.Plugin
		pluginErr error
	)
	ld := &loaded{}
	err = e.store.UpdateProgress(ctx, func(tx *store.Tx) error {
		var err error
		if cl, v, err = publishedNow(tx, claimID); err != nil {
			return err
		}
		if !listed.claim.IsZero() && !cl.UpdatedAt.Equal(listed.claim) {
			return errWrittenSinceListed
		}
		if err := e.checkRestoreBeside(tx, cl, mounted, !listed.claim.IsZero()); err != nil {
			return err
		}
		cl.State, cl.Degraded = store.ClaimNodeStaged, true
		if stagingLost {
			if err := unstageLost(tx, v.ID, mounted, listed.staging); err != nil {
				return err
			}
		}
		if err := tx.Claims().Update(&cl); err != nil {
			return err
		}
		ld.staging = store.Staging{VolumeID: v.ID}
		st, err := tx.Stagings().Get(v.ID)
		switch {
		case err == nil:
			ld.staging, ld.hasStaging = st, true
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		plugin, pluginErr = tx.Plugins().Get(v.PluginID)
		if pluginErr != nil && !errors.Is(pluginErr, store.ErrNotFound) {
			return pluginErr
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		err = notFoundf("claim released meanwhile")
	}
	if err != nil {
		return false, err
	}
	c, err := e.connectRead(ctx, v.PluginID, plugin, pluginErr)
	if err != nil {
		e.markForReconcile(ctx, &cl, lastRPC(err), err)
		if errors.Is(err, ErrNotFound) {
			// The plugin is not registered: a problem to report, not a claim gone meanwhile.
			err = conflictf("%v", err)
		}
		return false, err
	}
	defer e.done(c)
	// The restore's event rides in the commit that records the claim published.
	restored := &store.Event{Kind: "restore", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: v.PluginID,
		Message: fmt.Sprintf("restored the mount at %s", cl.TargetPath)}
	if err := e.publish(ctx, c, v, &cl, ld, restored); err != nil {
		e.markForReconcile(ctx, &cl, lastRPC(err), err)
		return false, err
	}
	// Published through a plugin that stages: publish staged the volume first (or found it
	// staged), and recorded it so.
	return c.stages(), nil
}

// unrecordedBeside refuses to restore a claim of a volume beside a mounted target of it that
// no claim records (checkRestoreBeside): reconcile reports it every pass, the claim held as
// the database has it and nothing sent, and its alloc claiming it again gets a conflict.
type unrecordedBeside struct {
	cl      store.Claim
	mounted []string // the unrecorded targets, as the mount table spells them
	allocs  []string // the allocs their paths name, in the same order
}

func (u *unrecordedBeside) Is(target error) bool { return target == ErrConflict }

func (u *unrecordedBeside) Error() string {
	var named []string
	for i, m := range u.mounted {
		named = append(named, fmt.Sprintf("%s (named as alloc %q's)", m, u.allocs[i]))
	}
	return fmt.Sprintf("not restored: %s mounted, a target of volume %q that no claim records, so the state database is older than the mounts "+
		"(a backup restored, its last commits lost) and alloc %q's claim may be one released since; publishing the volume to it again "+
		"beside that mount could give the volume a second writer. The claim stays held as the database has it, nothing sent: "+
		"if alloc %q is gone, `%s` releases it, but does not unstage the volume from under %s: the release finishes once that is unmounted (its alloc stopped), by `volctl reconcile`; "+
		"else, once nothing uses %s, unmount it and run `volctl reconcile`, which restores the claim",
		isAre(named), u.cl.VolumeID, u.cl.Alloc, u.cl.Alloc, releaseCommand(u.cl), strings.Join(u.mounted, " and "), strings.Join(u.mounted, " and "))
}

// checkRestoreBeside refuses, as an *unrecordedBeside, to restore claim cl (published, its
// target not mounted) while a path volctl names a target of its volume by
// (publish/<alloc>/<volume>/...) is mounted that no claim of the volume records: the rule
// the release applies before unstaging (checkUnrecordedTargets), here before publishing. An
// old backup restored holds claims released since; the one whose target is unmounted is one
// of them, and the mount the database lost is the alloc that took the volume after it. Before,
// reconcile sent NodePublishVolume for the gone alloc beside that live mount: a single-writer
// volume published to two allocs, unless the plugin checks. mounted is the caller's read of
// the mount table; stale says it was read before the volume lock (a reconcile pass's), when a
// claim released since may still show its mount: the table is read again before refusing.
func (e *Engine) checkRestoreBeside(tx *store.Tx, cl store.Claim, mounted map[string]bool, stale bool) error {
	pub := e.realPath(filepath.Join(e.cfg.StateDir, publishDir)) + "/"
	// The volume's mounted targets, by one prefix test a mount and no read of the store: a pass
	// restoring many claims beside many mounts runs this once a claim, and the claims are read
	// only when one is there.
	targets := func(mounted map[string]bool) (found []string) {
		for m := range mounted {
			rest, ok := strings.CutPrefix(m, pub)
			if !ok {
				continue
			}
			_, rest, ok = strings.Cut(rest, "/")
			if vol, _, ok2 := strings.Cut(rest, "/"); ok && ok2 && vol == cl.VolumeID {
				found = append(found, m)
			}
		}
		return found
	}
	found := targets(mounted)
	if len(found) == 0 {
		return nil
	}
	claims, err := tx.Claims().ByVolume(cl.VolumeID)
	if err != nil {
		return err
	}
	if found = e.unrecordedMounts(found, claims); len(found) > 0 && stale {
		again, err := e.mountsAgain()
		if err != nil {
			return err
		}
		found = e.unrecordedMounts(targets(again), claims)
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	u := &unrecordedBeside{cl: cl, mounted: found}
	for _, m := range found {
		alloc, _, _ := strings.Cut(strings.TrimPrefix(m, pub), "/")
		u.allocs = append(u.allocs, alloc)
	}
	return u
}

// degradedBeside is checkRestoreBeside for degraded claim cl about to be published again (its
// restore driven on), on a read of the mount table of its own, under the volume's lock.
func (e *Engine) degradedBeside(ctx context.Context, cl store.Claim) error {
	mounted, err := e.cfg.Mounts.MountsUnder(e.cfg.StateDir)
	if err != nil {
		return fmt.Errorf("reading the mount table before restoring claim %q for alloc %q: %w", cl.VolumeID, cl.Alloc, err)
	}
	return e.store.View(ctx, func(tx *store.Tx) error { return e.checkRestoreBeside(tx, cl, mounted, false) })
}

// cleanStagings undoes stagings and controller publications that no live claim uses any more.
// The release path already does this; a staging left over here means a release was cut short in
// a way the state machine did not foresee, and it is cleaned rather than leaked. A volume in
// inUse had a claim published by this pass, or found mounted, under its lock: its staging is
// that claim's, and is not looked at again (1,000 restored claims would be 1,000 more locks and
// reads). Should another volctl release that claim meanwhile, its release undoes the staging;
// one cut short is the next pass's to clean.
func (e *Engine) cleanStagings(ctx context.Context, rep *ReconcileReport, stagings []store.Staging, inUse map[string]bool) {
	for _, st := range stagings {
		if inUse[st.VolumeID] {
			continue
		}
		ctx := onVolume(ctx, st.VolumeID)
		// A row with no staging path records only an attachment, owed: say so rather than
		// call it a staging.
		what := fmt.Sprintf("unused staging of volume %q", st.VolumeID)
		if st.StagingPath == "" && st.ControllerPublished {
			what = fmt.Sprintf("attachment of volume %q to node %q with no claim", st.VolumeID, attachedNode(st))
		}
		unused, done, err := e.cleanStaging(ctx, st.VolumeID)
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && !unused):
		case err != nil && done != "":
			// Part of it was undone (the staging), part not (the attachment, owed): the
			// problem says both, not "unused staging" of one no longer there.
			rep.problem(st.VolumeID, "", fmt.Errorf("%s; %w", done, err))
		case err != nil:
			rep.problem(st.VolumeID, "", fmt.Errorf("%s: %w", what, err))
		case done != "":
			rep.did("cleaned", st.VolumeID, "", "%s", done)
		default:
			rep.did("cleaned", st.VolumeID, "", "undid the %s", what)
		}
	}
}

// cleanStaging undoes one volume's staging if no live claim uses the volume; unused says
// whether it had to, done what it did (undoLeft).
func (e *Engine) cleanStaging(ctx context.Context, volumeID string) (unused bool, done string, err error) {
	unlock, err := e.locks.volume(ctx, volumeID)
	if err != nil {
		return false, "", err
	}
	defer unlock()
	var (
		n      int
		v      store.Volume
		st     store.Staging
		handed bool
	)
	err = e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if st, err = tx.Stagings().Get(volumeID); err != nil {
			return err
		}
		if n, err = tx.Claims().CountByVolume(volumeID); err != nil {
			return err
		}
		if v, err = tx.Volumes().Get(volumeID); err != nil {
			return err
		}
		_, err = tx.Handovers().Get(volumeID)
		handed = err == nil
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil || n > 0 {
		return false, "", err
	}
	if handed && st.StagingPath == "" {
		// All that is left is an attachment, which waits for the volume to be taken back from
		// Nomad (keptForNomad); the node side, volctl's own, is undone below when there is one.
		return false, "", nil
	}
	c, err := e.connect(ctx, v.PluginID)
	if err != nil {
		return true, "", err
	}
	defer e.done(c)
	done, err = e.undoLeft(ctx, c, v)
	return true, done, err
}

// undoLeftStaging unstages and controller-unpublishes a volume that has no claims but still has
// a staging row: what a forced detach could not undo, or a release cut short in a way the state
// machine did not foresee. The caller holds the volume lock and has checked there are no claims.
func (e *Engine) undoLeftStaging(ctx context.Context, c *conn, v store.Volume) error {
	_, err := e.undoLeft(ctx, c, v)
	return err
}

// undoLeft is undoLeftStaging, saying what it did (recorded, whatever failed after it) when it
// unstaged: at which path, and the node it detached the volume from too; "" when it did not
// unstage (an attachment alone is said by the caller, as what the row recorded).
func (e *Engine) undoLeft(ctx context.Context, c *conn, v store.Volume) (done string, err error) {
	p, err := e.newCheckpoint(ctx, &store.Claim{VolumeID: v.ID}, nil)
	if err != nil {
		return "", err
	}
	before := p.st
	err = e.undoUnused(ctx, c, v, p)
	if ferr := p.flush(ctx, "clean"); ferr != nil {
		return "", withFlushError(err, ferr) // nothing recorded: say nothing done
	}
	unstaged := before.StagingPath != "" && p.st.StagingPath == ""
	detached := before.ControllerPublished && !p.st.ControllerPublished
	switch {
	case unstaged && detached:
		done = fmt.Sprintf("unstaged volume %q at %s and detached it from node %q: no claim used them", v.ID, before.StagingPath, attachedNode(before))
	case unstaged && (err != nil || p.keptAttach != ""):
		done = fmt.Sprintf("unstaged volume %q at %s (no claim used it)", v.ID, before.StagingPath)
	case unstaged:
		done = fmt.Sprintf("unstaged volume %q at %s: no claim used it", v.ID, before.StagingPath)
	}
	if err == nil && p.keptAttach != "" {
		err = &keptAttachmentError{owedError{why: p.keptWhy, msg: p.keptAttach}}
	}
	return done, err
}

// keptAttachmentError is undoLeftStaging's failure to undo an attachment because the plugin lost
// PUBLISH_UNPUBLISH_VOLUME (keptAttachment): no retry sends it until the plugin has the
// capability again.
type keptAttachmentError struct{ owedError }

// owedError is a failure to undo a volume's attachment whose message advises what ends the
// attachment kept recorded, owed (reconcile sends it); why is its cause alone, which a
// deregister --force, forgetting the record, says without that advice (forgottenAttachment):
// it quoted the advice whole, "stays recorded, owed", "run `volctl volume detach ...`", of a
// volume and record it had just forgotten
// (TestForcedDeregisterOfACapabilityLostAttachmentGivesAdviceThatWorks).
type owedError struct{ why, msg string }

func (e *owedError) Error() string   { return e.msg }
func (e *owedError) owedWhy() string { return e.why }

// findOrphans reports mounts under volctl's staging and publish dirs that no claim or staging
// accounts for. It only reports: such a mount was not made by this state machine. A mount below
// a recorded staging path or target is that volume's: a plugin may mount below the path it was
// given (the release path checks below it too, mountsAt), and it goes with the staging.
//
// The pass listed the rows before it read the table (mounted), so a claim another volctl made
// in between has mounts in the table that the lists lack: a live claim's, which reporting would
// advise unmounting by hand. So a mount the lists do not account for is looked at again: the
// rows read after the table, then the table read after those rows; it is reported only when
// it is still mounted and those rows do not account for it either (a mount made for a row holds
// from before the mount until after the unmount, so one mounted at both reads and accounted for
// by no row between is nobody's; `TestReconcileDoesNotReportAClaimMadeWhileItReadTheTableAsOrphans`).
// Nothing more is read when the lists account for every mount.
func (e *Engine) findOrphans(ctx context.Context, rep *ReconcileReport, mounted map[string]bool, claims []store.Claim, stagings []store.Staging) {
	orphans := orphanMounts(e.cfg.StateDir, mounted, claims, stagings)
	if len(orphans) == 0 {
		return
	}
	err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if claims, err = tx.Claims().ListAll(); err != nil {
			return err
		}
		stagings, err = tx.Stagings().List()
		return err
	})
	var again map[string]bool
	if err == nil {
		again, err = e.mountsAgain()
	}
	if err != nil {
		rep.problem("", "", fmt.Errorf("checking again the mounts no claim or staging accounted for (%s): %w", strings.Join(orphans, ", "), err))
		return
	}
	for i := range claims {
		claims[i].TargetPath = e.realPath(claims[i].TargetPath)
	}
	for i := range stagings {
		stagings[i].StagingPath = e.realPath(stagings[i].StagingPath)
	}
	still := map[string]bool{}
	for _, o := range orphans {
		still[o] = again[o]
	}
	for _, o := range orphanMounts(e.cfg.StateDir, still, claims, stagings) {
		rep.Problems = append(rep.Problems, e.orphanProblem(o))
	}
}

// orphanProblem says what a mount no claim or staging accounts for is. One at a path volctl
// names a claim's target by (publish/<alloc>/<volume>/...) is that alloc's, which the state
// database does not know: an alloc may still be using it, and volctl cannot tell; the problem
// names the volume and alloc, another mount its path (Subject). Named by neither, two allocs'
// mounts of one volume were one problem to the agent's log, their IDs masked alike, and
// `reconcile --json` had nothing to select them by
// (TestReconcileOrphansOfTwoAllocsAreTwoProblemsTheAgentCanTellApart).
func (e *Engine) orphanProblem(path string) ReconcileAction {
	rel, err := filepath.Rel(e.realPath(filepath.Join(e.cfg.StateDir, publishDir)), path)
	parts := strings.Split(rel, string(filepath.Separator))
	if err != nil || len(parts) < 3 || parts[0] == ".." {
		return ReconcileAction{Kind: "orphan", Subject: path,
			Message: fmt.Sprintf("%s is mounted but no claim or staging accounts for it (unmount it by hand once you know what it is)", path)}
	}
	return ReconcileAction{Kind: "orphan", VolumeID: parts[1], Alloc: parts[0],
		Message: fmt.Sprintf("%s is mounted, named as alloc %q's target of volume %q, but no claim records it: the state database is older than the mount "+
			"(a backup restored, its last commits lost), and volctl cannot tell whether the alloc still uses it; "+
			"the volume's staging and attachment are kept while it is mounted: once nothing uses it, unmount it by hand", path, parts[0], parts[1])}
}

// orphanMounts are the paths mounted says are mounted under the staging and publish dirs that
// no claim's target or staging path (or a path above it) accounts for, sorted.
func orphanMounts(stateDir string, mounted map[string]bool, claims []store.Claim, stagings []store.Staging) []string {
	known := map[string]bool{}
	for _, c := range claims {
		known[c.TargetPath] = true
	}
	for _, st := range stagings {
		known[st.StagingPath] = true
	}
	delete(known, "")
	accounted := func(m string) bool {
		for p := m; len(p) > len(stateDir); p = filepath.Dir(p) {
			if known[p] {
				return true
			}
		}
		return false
	}
	var orphans []string
	for _, dir := range []string{stagingDir, publishDir} {
		prefix := filepath.Join(stateDir, dir) + string(filepath.Separator)
		for m, on := range mounted {
			if on && strings.HasPrefix(m, prefix) && !accounted(m) {
				orphans = append(orphans, m)
			}
		}
	}
	sort.Strings(orphans)
	return orphans
}
