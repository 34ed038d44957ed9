package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// release drives a claim along the release path (docs/architecture.md, Claim state machine): unpublishing ->
// NodeUnpublishVolume -> node-detached -> NodeUnstageVolume when no other claim uses the staging
// -> ControllerUnpublishVolume when no other live claim holds the volume -> controller-detached
// -> freed into the history with outcome. NOT_FOUND on a teardown RPC counts as done. Each
// state is committed before the next RPC. The caller holds the volume lock.
func (e *Engine) release(ctx context.Context, c *conn, v store.Volume, cl *store.Claim, outcome store.Outcome, ld *loaded, cause error) error {
	p, err := e.newCheckpoint(ctx, cl, ld)
	if err != nil {
		return err
	}
	if !cl.Releasing {
		cl.Releasing = true
		p.clDirty = true
	}
	for cl.State != store.ClaimControllerDetached {
		var err error
		switch cl.State {
		case store.ClaimTaken, store.ClaimControllerPublished:
			// NodePublishVolume was never sent for this claim: nothing to unpublish. A staging or
			// controller publication it may have started is undone below, if nothing else uses it.
			p.advance(store.ClaimNodeDetached)
		case store.ClaimNodeStaged, store.ClaimPublished:
			p.setState(store.ClaimUnpublishing)
		case store.ClaimUnpublishing:
			err = e.nodeUnpublish(ctx, c, v, p)
		case store.ClaimNodeDetached:
			err = e.undoUnused(ctx, c, v, p)
			if err == nil {
				p.setState(store.ClaimControllerDetached)
			}
		}
		if errors.Is(err, errLockLost) {
			return fmt.Errorf("release: %w", err) // nothing more is sent or written
		}
		if err != nil {
			// A release cannot be rolled back: whatever the class, it is left for reconcile.
			err = withFlushError(err, p.flush(ctx, "release"))
			e.markForReconcile(ctx, cl, lastRPC(err), err)
			if ctx.Err() != nil {
				// The caller gave up (Ctrl-C, SIGTERM), not the plugin: the release is resumable,
				// and dropping it by force would forget what the plugin may still hold.
				return fmt.Errorf("release: %w (interrupted: the claim is left %s, releasing; `volctl reconcile` will finish releasing it, as will `%s` run again)",
					err, cl.State, releaseCommand(*cl))
			}
			return fmt.Errorf("release: %w (the claim is left %s for `volctl reconcile`; %s)", err, cl.State, e.dropAdvice(ctx, *cl))
		}
	}
	// The last checkpoint frees the claim in the same transaction that records the volume's
	// last staging change: nothing is sent after it.
	p.free = outcome
	ev := &store.Event{Kind: "release", VolumeID: cl.VolumeID, Alloc: cl.Alloc, PluginID: v.PluginID,
		Message: fmt.Sprintf("%s claim freed (%s)", cl.Mode, outcome)}
	if cause != nil {
		// A rollback says why, in the commit that frees the claim: a command whose claim another
		// volctl rolled back meanwhile reports it from here (claimGone).
		ev.RPC, ev.Message = lastRPC(cause), fmt.Sprintf("%s claim freed (%s: %v)", cl.Mode, outcome, cause)
		if ev.RPC != "" {
			ev.Code = csi.EventCode(cause)
		}
	}
	p.event(ev)
	if err := p.flush(ctx, "release"); err != nil {
		// Every RPC is done, but the claim is not freed: it still holds the volume, recorded
		// where the last commit left it, and reconcile frees it (its RPCs answered NOT_FOUND or
		// OK again).
		return fmt.Errorf("release: %w (the claim is left %s for `volctl reconcile`)", err, cl.State)
	}
	return nil
}

func (e *Engine) nodeUnpublish(ctx context.Context, c *conn, v store.Volume, p *checkpoint) error {
	cl := p.cl
	if err := p.flush(ctx, "release"); err != nil {
		return err
	}
	if err := e.unbind(ctx, cl); err != nil {
		return err
	}
	answer, err := e.unpublishTarget(ctx, c, v, p)
	if err != nil {
		return err
	}
	// Then the claim's own publish directory, which volctl made for it (publish/<alloc>/
	// <volume>, no other claim's) and the plugin has no business mounting over: one that
	// mounted there and made the target inside leaves that mount, and the target's first
	// mount hidden under it, while the target, gone, passes
	// (`TestNodeUnpublishLeavingAMountOverTheClaimsPublishDirectory`). Removed with the
	// target, as it is, the directory costs no read of the mount table.
	if err := e.checkUnmounted(v, csi.RPCNodeUnpublishVolume, "publish directory", filepath.Dir(cl.TargetPath), c, answer); err != nil {
		return err
	}
	// And the alloc's publish directory (publish/<alloc>), shared with its claims on other
	// volumes, for a mount at it, not below it (their targets are):
	// `TestNodeUnpublishLeavingAMountOverTheAllocsPublishDirectory`.
	if err := e.checkSharedDir(v, csi.RPCNodeUnpublishVolume, "the alloc's publish directory", filepath.Dir(filepath.Dir(cl.TargetPath)), c); err != nil {
		return err
	}
	p.setState(store.ClaimNodeDetached)
	return nil
}

// unpublishTarget sends the plugin NodeUnpublishVolume of the claim's target, the one way every
// path that undoes a publication takes (a release, a rollback, unstageUnattached, a restore
// finding the plugin's link or mount at the target, restoreUnpublish): a link standing in place of the
// target, not the plugin's, is removed unfollowed first (unlinkBeforeTeardown, targetRecorded);
// one the plugin leaves after answering OK is no mount (checkUnmounted passes it), but it would
// refuse every later publish at the target: removed, not followed, and said; files written at a
// target not mounted are set aside first (setAsideWritten); the target's empty
// directories are removed (a publish makes them again), and the target must hold nothing
// (checkUnmounted). Once it holds nothing, no NodePublishVolume of the claim
// is left to undo: a record of one maybe sent (store.TargetNotAccepted) is reset to
// store.TargetUnsent, so that a link found there later is a hand's; an accepted target keeps
// its record until the claim is freed (its history says it was published). It returns the
// plugin's answer (nil, or an ignorable error) beside the error that stopped it.
func (e *Engine) unpublishTarget(ctx context.Context, c *conn, v store.Volume, p *checkpoint) (answer, err error) {
	cl := p.cl
	// Not over a target covered since it was published, as a covered staging is not unstaged
	// (unstageUncovered): the plugin unmounted what was topmost, the cover and what the alloc
	// wrote into it, and the release said "released"
	// (TestReleaseOfAClaimWhoseTargetIsCoveredLeavesTheCover). Left for reconcile, named. Not
	// for a claim being restored, whose record is of the mount before the reboot and whose
	// target the undo of a refused restore takes away (TestARefusedRestoreTakesTheRefusedMountAway).
	if !cl.Degraded {
		if err := e.targetCovered(*cl); err != nil {
			if ct := (*coveredTarget)(nil); errors.As(err, &ct) {
				ct.releasing = true
			}
			return nil, fmt.Errorf("%s of volume %q not sent: %w", csi.RPCNodeUnpublishVolume, v.ID, err)
		}
	}
	if err := e.unlinkBeforeTeardown(ctx, c, v, p, csi.RPCNodeUnpublishVolume, "target", cl.TargetPath, p.targetRecorded(v)); err != nil {
		return nil, err
	}
	if err := e.setAsideWritten(ctx, v, p, csi.RPCNodeUnpublishVolume); err != nil {
		return nil, err
	}
	top := e.topLevels(publishDir)
	answer = e.retry(ctx, c, csi.RPCNodeUnpublishVolume, func(ctx context.Context) error {
		return c.client.NodeUnpublishVolume(ctx, csi.NodeUnpublishVolumeRequest{VolumeID: v.ExternalID, TargetPath: cl.TargetPath})
	})
	if why := unpublishRefusedForNothing(c, *cl, answer); why != "" {
		// The mount table decides, as for a staging never confirmed (unstage, checkUnstageable).
		if err := e.checkUnpublishable(v, *cl, c, p, why); err != nil {
			return nil, err
		}
		answer = nil
	}
	if answer != nil && !csi.IsIgnorable(answer) {
		return nil, answer
	}
	e.failpoint("rpc:NodeUnpublishVolume")
	if err := e.mountedOverTopAfter(v, c, csi.RPCNodeUnpublishVolume, top); err != nil {
		return answer, err
	}
	if dest, removed, err := e.locks.removeTargetLink(ctx, e.realPath(cl.TargetPath)); err != nil {
		return answer, fmt.Errorf("after %s of volume %q: %w", csi.RPCNodeUnpublishVolume, v.ID, err)
	} else if removed {
		msg := fmt.Sprintf("plugin %q answered %s OK and left a symlink to %q at the target %s: volctl removed the link (not what it points to)",
			c.plugin.ID, csi.RPCNodeUnpublishVolume, dest, cl.TargetPath)
		e.log.Warn(msg)
		p.event(&store.Event{Kind: "target-link-removed", VolumeID: v.ID, Alloc: cl.Alloc, PluginID: v.PluginID, Message: msg})
	}
	e.locks.removeEmptyDirs(ctx, e.realPath(cl.TargetPath), filepath.Join(e.cfg.StateDir, publishDir))
	if err := e.checkUnmounted(v, csi.RPCNodeUnpublishVolume, "target", cl.TargetPath, c, answer); err != nil {
		return answer, err
	}
	if cl.Target == store.TargetNotAccepted {
		cl.Target = store.TargetUnsent // the target unpublished: nothing of the plugin's is there
		p.clDirty = true
	}
	return answer, nil
}

// unpublishRefusedForNothing says why NodeUnpublishVolume's answer is not the plugin refusing to
// undo a publication ("" when it may be): UNIMPLEMENTED from a node plugin, which CSI has
// implement it (one that failed NodePublishVolume the same way, this release its rollback), or
// FAILED_PRECONDITION of a target NodePublishVolume never answered OK for (not
// store.TargetAccepted: the rollback of its final failure), which CSI's NodeUnpublishVolume
// answers OK for ("not published") and knows no FAILED_PRECONDITION. Either would be answered
// at every retry and reconcile pass, the claim, which never got the volume, held unpublishing
// and the volume with it until a forced detach
// (TestTargetNeverPublishedWhoseUnpublishIsRefusedIsNotHeldForGood).
func unpublishRefusedForNothing(c *conn, cl store.Claim, answer error) string {
	switch {
	case csi.IsUnimplemented(answer):
		return fmt.Sprintf("plugin %q, a node plugin, answered %v, which CSI has every node plugin implement", c.plugin.ID, answer)
	case csi.IsFailedPrecondition(answer) && cl.Target != store.TargetAccepted:
		return fmt.Sprintf("plugin %q answered %v for a target NodePublishVolume never confirmed", c.plugin.ID, answer)
	}
	return ""
}

// checkUnpublishable is checkUnstageable for a claim's target (why: the answer
// unpublishRefusedForNothing took for no refusal): nothing mounted there, the publication is
// taken as undone, logged, and said in an event where it was recorded published; something
// mounted, the release stops there, naming it.
func (e *Engine) checkUnpublishable(v store.Volume, cl store.Claim, c *conn, p *checkpoint, why string) error {
	left, err := e.mountsAt(cl.TargetPath)
	if err != nil {
		return checkedAfter(csi.RPCNodeUnpublishVolume, fmt.Errorf("checking the mount table for volume %q's target at %s: %w", v.ID, cl.TargetPath, err))
	}
	if len(left) > 0 {
		return checkedAfter(csi.RPCNodeUnpublishVolume, fmt.Errorf("volume %q's target at %s is still mounted, but %s: fix the plugin, or unmount %s by hand, then run `volctl reconcile`",
			v.ID, cl.TargetPath, why, e.mountNames(left)))
	}
	msg := fmt.Sprintf("volume %q's target at %s for alloc %q: %s; nothing is mounted there, so the publication is taken as undone", v.ID, cl.TargetPath, cl.Alloc, why)
	e.log.Warn(msg)
	if cl.Target == store.TargetAccepted {
		p.event(&store.Event{Kind: "capability-lost", VolumeID: v.ID, Alloc: cl.Alloc, PluginID: v.PluginID, Message: msg})
	}
	return nil
}

// unlinkBeforeTeardown readies path, volctl's own (a claim's target, what "target"; a volume's
// staging path, "staging"), for rpc, the teardown that names it (NodeUnpublishVolume,
// NodeUnstageVolume). A plugin resolves the path as given, following symlinks, and unmounts
// what it leads to: a link put in the path's place (its mount undone and the directory replaced,
// by hand or by a program) had volctl's own plugin unmount the disk of the host the link led
// to and answer OK, the release saying "Released". Nothing of the volume is mounted at a link:
// it is removed, never followed, and said (a warning, a target-link-removed event), and the
// teardown goes on. A directory on the way to path replaced by a link refuses the RPC, naming
// the link and saying to remove it; the claim is left for reconcile
// (TestReleaseRemovesASymlinkPutInPlaceOfTheTargetBeforeNodeUnpublish,
// TestReleaseRefusesATargetReachedThroughASymlink). A link at a path not recorded as holding
// the volume (recorded false: a target checkTarget never accepted, targetRecorded) is the
// plugin's own, left to the teardown that asks it to remove what it made; a link above it is
// refused all the same.
func (e *Engine) unlinkBeforeTeardown(ctx context.Context, c *conn, v store.Volume, p *checkpoint, rpc, what, path string, recorded bool) error {
	real := e.realPath(path)
	if err := e.locks.linkAbove(real); err != nil {
		var se *symlinkError
		if errors.As(err, &se) {
			se.Context = fmt.Sprintf("volume %q's %s %s", v.ID, what, path)
			se.Advice = fmt.Sprintf("it is a directory of volctl's own, replaced by hand or by a program, and %s is not sent through it: plugin %q would unmount whatever is mounted where it leads; "+
				"remove the link with `rm %s`, which leaves what it points to, then run `volctl reconcile`", rpc, c.plugin.ID, se.Component)
		}
		return err
	}
	if !recorded {
		return nil
	}
	dest, removed, err := e.locks.removeTargetLink(ctx, real)
	if err != nil {
		return fmt.Errorf("before %s of volume %q: %w", rpc, v.ID, err)
	}
	if removed {
		msg := fmt.Sprintf("a symlink to %q stood in place of volume %q's %s %s (its mount undone and the directory replaced, by hand or by a program): "+
			"volctl removed the link, not what it points to, before %s, which plugin %q would have followed, unmounting whatever is mounted where it leads",
			dest, v.ID, what, path, rpc, c.plugin.ID)
		e.log.Warn(msg)
		p.event(&store.Event{Kind: "target-link-removed", VolumeID: v.ID, Alloc: p.cl.Alloc, PluginID: v.PluginID, Message: msg})
	}
	return nil
}

// targetRecorded says whether a link at the claim's target is not the plugin's, to be removed
// unfollowed before NodeUnpublishVolume (unlinkBeforeTeardown): the target was recorded
// published (checkTarget passed it as a real mount; store.TargetAccepted, set in the commit
// that records it published and kept until the claim is freed), or no NodePublishVolume of it
// was sent since the claim was taken (store.TargetUnsent), or the link leads to what another
// claim holds (linkedToOthers). Otherwise a NodePublishVolume may have reached the plugin and
// its answer was never accepted (store.TargetNotAccepted, recorded in the commit before it is
// sent, whatever it answered and whatever failure was recorded since; a restore's publish
// too): the claim is rolled back after checkTarget refused what the plugin made there (a
// symlink to its own mount, or to a block device), or after the plugin linked the target and
// answered an error, or it is released before its publish finished. Then a link at the target
// is the plugin's, and NodeUnpublishVolume is the plugin's chance to remove it and what it
// leads to, as the rollback promises (docs/architecture.md, Claim state machine): volctl
// removing it first had the plugin answer OK for a target gone and leak its mount, and blamed
// "a hand or a program" (TestRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish). A rollback
// resumed from unpublishing (cut short by a kill, or by a NodeUnpublishVolume that failed)
// does the same (TestResumedRollbackLeavesThePluginsOwnLinkToItsNodeUnpublish). A claim
// recorded by a volctl that did not record it (store.TargetUnrecorded) is decided from where
// the drive began: published, or unpublishing (which cannot tell, and takes the side of the
// host's disks). A link the plugin leaves after answering OK is removed then, as before
// (nodeUnpublish).
func (p *checkpoint) targetRecorded(v store.Volume) bool {
	switch p.cl.Target {
	case store.TargetAccepted, store.TargetUnsent:
		return true
	case store.TargetNotAccepted:
		return p.e.linkedToOthers(v, p.e.realPath(p.cl.TargetPath))
	}
	return p.from == store.ClaimPublished || p.from == store.ClaimUnpublishing || p.cl.Degraded
}

// stagingRecorded is targetRecorded for the volume's staging path: whether a link there may
// stand in place of a staging volctl accepted (st.Staged: NodeStageVolume answered OK and
// checkStaging passed it), to be removed unfollowed before NodeUnstageVolume. A staging
// recorded (st.StagingPath, set before any NodeStageVolume is sent) but never accepted may
// have had a NodeStageVolume reach the plugin, by any claim and any run, its answer lost or
// not checked: a link there is taken for the plugin's own, whatever this release resumes
// from, and its NodeUnstageVolume is the plugin's chance to remove it and what it leads to
// (linkedStaging).
func (p *checkpoint) stagingRecorded(st store.Staging) bool {
	return st.Staged
}

// undoUnused unstages a volume when no live claim uses its staging, and controller-unpublishes
// it when no live claim holds it. Claims on their way out (node-detached and later) count for
// neither: the one being released is one of them. The staging row changes go into p.
//
// It holds the plugin's publish lock shared, as a publish does (publish.go): once its unstage
// is committed the store shows no mount, and the agent, which counts the plugin's mounts under
// that lock to stop or restart it (HoldPluginMountsOf), took the plugin for idle and stopped it
// under the ControllerUnpublishVolume that follows, which found the socket gone and left the
// claim for reconcile (TestReleaseHoldsThePublishLockAgainstTheAgentsStop). The steps before
// it (NodeUnpublishVolume) are under a claim or a staging the count sees.
func (e *Engine) undoUnused(ctx context.Context, c *conn, v store.Volume, p *checkpoint) error {
	if !p.hasSt && !p.stDirty {
		return nil
	}
	unlock, err := e.locks.publishing(ctx, c.plugin)
	if err != nil {
		return err
	}
	defer unlock()
	u, err := p.usage(ctx)
	if err != nil {
		return err
	}
	stagingUsers, holders := u.staging, u.holders
	st := p.st
	if (st.StagingPath != "" && stagingUsers == 0) || (holders == 0 && st.ControllerPublished) {
		if err := e.checkUnrecordedTargets(ctx, v); err != nil {
			return err
		}
	}
	if st.StagingPath != "" && stagingUsers == 0 {
		if err := e.unstage(ctx, c, v, st, p); err != nil {
			return err
		}
		p.staging(func(st *store.Staging) { st.StagingPath, st.Staged = "", false })
	}
	if holders == 0 && st.ControllerPublished {
		if h := u.handover; h != nil {
			// The last local claim of a volume handed over anyway (forced) is gone, but the
			// attachment may be Nomad's allocs' now: it stays recorded, owed. Whatever the
			// plugin can do: through one without PUBLISH_UNPUBLISH_VOLUME, the words were a
			// volume's volctl has, advising a reconcile that leaves a handed-over volume's
			// attachment and a forced detach refused while it is Nomad's
			// (TestReleaseOfAHandedOverVolumeThroughAPluginWithoutUnpublishAdvisesAWayThatWorks).
			blocked := ""
			if !c.controllerPublishes() {
				blocked = blockedAfterTakeBack(keptAttachmentWhy(v, c))
			}
			msg := keptForNomad(v, attachedNode(st), *h, blocked)
			e.log.Warn(msg)
			p.event(&store.Event{Kind: "nomad-attachment-kept", VolumeID: v.ID, PluginID: v.PluginID, Message: msg})
			return nil
		}
		if c.controllerPublishes() {
			if err := p.flush(ctx, "release"); err != nil {
				return err
			}
			nodeID := st.NodeID
			if nodeID == "" {
				nodeID = c.fp.NodeID
			}
			if err := e.controllerUnpublish(ctx, c, v, nodeID); err != nil {
				return err
			}
		} else {
			// Only a plugin that attached the volume (PUBLISH_UNPUBLISH_VOLUME, when it was
			// recorded) leaves this record: it has lost the capability since, and cannot be asked
			// to detach now. The attachment is not forgotten: a plugin restarted without the
			// capability may get it back (restarted again as it was), and the volume is still
			// attached then. It stays recorded with no claim, an unpublish owed (owedUnpublish),
			// which reconcile reports every pass and sends once the plugin can take it; a forced
			// detach forgets it, on the user's word.
			// A plugin that still advertises CONTROLLER_SERVICE but is registered by its node
			// half alone keeps the capability: its controller half is what is missing, and
			// registered again it takes the unpublish (before, this said the capability was
			// lost, which the plugin still advertised).
			p.keptAttach = keptAttachment(v, st, c)
			p.keptWhy, _ = keptAttachmentWhy(v, c)
			if p.cl.ID != 0 { // a release, not a pass over what is left (undoLeftStaging)
				e.log.Warn(p.keptAttach)
				ev := &store.Event{Kind: "capability-lost", VolumeID: v.ID, PluginID: v.PluginID, Message: p.keptAttach}
				if controllerHalfAway(c) {
					ev = &store.Event{Kind: "attachment-kept", VolumeID: v.ID, PluginID: v.PluginID, Message: p.keptAttach}
				}
				p.event(ev)
			}
			return nil
		}
		p.staging(func(st *store.Staging) { st.ControllerPublished, st.PublishContext = false, nil })
	}
	return nil
}

// checkUnrecordedTargets refuses to take volume v's staging or attachment away while a path
// volctl names a target of v by (publish/<alloc>/<volume>/...) is mounted that no claim of v
// records. The store says no claim uses them, but the mount table says an alloc's target is
// still there: the database lost the claim (a backup older than the mounts restored, its last
// commits lost). CSI leaves it to the CO to unpublish every target before NodeUnstageVolume,
// and a plugin that does not check unmounts the staging and detaches the storage from under
// that live mount. Only a volume with a publish directory of its own under some alloc's reads
// the mount table, then the store: a release leaves none behind. The directories are found
// from the volume's list in the target index (indexedTargetDirs: a lookup per alloc that
// made one, whatever the number of other claims on the host), or, when it cannot be used,
// by a lookup in every alloc's publish directory (volumeTargetDirs).
func (e *Engine) checkUnrecordedTargets(ctx context.Context, v store.Volume) error {
	pub := filepath.Join(e.cfg.StateDir, publishDir)
	dirs, ok := e.indexedTargetDirs(ctx, v.ID)
	if !ok {
		dirs = volumeTargetDirs(e.realPath(pub), v.ID)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Join(pub, d)
	}
	var mounted []string
	for _, d := range dirs {
		left, err := e.mountsAt(d)
		if err != nil {
			return fmt.Errorf("checking the mount table for targets of volume %q before taking its staging or attachment away: %w", v.ID, err)
		}
		mounted = append(mounted, left...)
	}
	if len(mounted) == 0 {
		return nil
	}
	var claims []store.Claim
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		var err error
		claims, err = tx.Claims().ByVolume(v.ID)
		return err
	}); err != nil {
		return err
	}
	unrecorded := e.unrecordedMounts(mounted, claims)
	if len(unrecorded) == 0 {
		return nil
	}
	return fmt.Errorf("volume %q is left staged and attached: %s mounted, named as a target of volume %q, but no claim records it, so the state database "+
		"is older than the mounts (a backup restored, its last commits lost) and cannot tell whether an alloc still uses the volume there; "+
		"unstaging or detaching it would take the storage from under that mount: once nothing uses it, unmount %s, then run `volctl reconcile`",
		v.ID, isAre(unrecorded), v.ID, strings.Join(unrecorded, " and "))
}

// unrecordedMounts is mounted (paths as the mount table spells them) without those at or below
// a target one of claims records: what no claim accounts for. It reuses mounted's array.
func (e *Engine) unrecordedMounts(mounted []string, claims []store.Claim) []string {
	return slices.DeleteFunc(mounted, func(m string) bool {
		return slices.ContainsFunc(claims, func(c store.Claim) bool {
			t := e.realPath(c.TargetPath)
			return c.TargetPath != "" && (m == t || strings.HasPrefix(m, t+"/"))
		})
	})
}

// volumeTargetDirs returns the <alloc>/<volume> directories under publish directory pub, the
// ones a target of volume holds, looking in every alloc's: what the look does where the target
// index cannot be used (a state dir volctl cannot write). It is one open of pub and one
// lookup relative to it per alloc (2–2.5 ms with 1,000 allocs). No publish directory, or one
// that cannot be read, holds no target volctl could see.
func volumeTargetDirs(pub, volume string) []string {
	f, err := os.Open(pub)
	if err != nil {
		return nil
	}
	defer f.Close()
	allocs, _ := f.Readdirnames(-1)
	var dirs []string
	var st unix.Stat_t
	for _, a := range allocs {
		rel := a + "/" + volume
		if unix.Fstatat(int(f.Fd()), rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			dirs = append(dirs, rel)
		}
	}
	return dirs
}

// isAre is "PATH is" for one path, "PATH and PATH are" for more.
func isAre(paths []string) string {
	if len(paths) == 1 {
		return paths[0] + " is"
	}
	return strings.Join(paths, " and ") + " are"
}

// keptAttachment says that volume v's attachment, which staging row st records, stays recorded
// because its plugin, connected as c, lost PUBLISH_UNPUBLISH_VOLUME or is registered by its node
// half alone (controllerHalfGone), and what ends it.
func keptAttachment(v store.Volume, st store.Staging, c *conn) string {
	why, fix := keptAttachmentWhy(v, c)
	forget := fmt.Sprintf("run `%s` to forget it", forceDetachCommand(v.ID))
	if controllerHalfAway(c) {
		// A forced detach keeps it owed too, for the controller half registered again: the
		// way to forget it is the volume's forced deregistration (before, the forced detach
		// was named, and followed, forgot nothing:
		// TestAdvisedForcedDetachForgetsAnAttachmentKeptForTheControllerHalf).
		forget = fmt.Sprintf("run `%s` to forget it with the volume (register the volume again to go on using it)",
			shellquote.CommandFlags("volctl volume deregister", []string{v.ID}, "--force", "--yes"))
	}
	return fmt.Sprintf("volume %q is recorded as attached to node %q, but %s, so ControllerUnpublishVolume cannot be sent: "+
		"the attachment stays recorded, owed; %s and `volctl reconcile` sends it, "+
		"or detach the volume from that node with the storage provider's tools and %s",
		v.ID, attachedNode(st), why, fix, forget)
}

// keptAttachmentWhy is keptAttachment's why the unpublish cannot be sent and what ends that.
func keptAttachmentWhy(v store.Volume, c *conn) (why, fix string) {
	var fp *csi.Fingerprint
	socketless := false
	if c != nil {
		fp, socketless = c.fp, controllerSocketless(c.plugin)
	}
	return unpublishBlocked(fp, v.PluginID, socketless)
}

// controllerSocketless reports a plugin registration with no controller socket (its node half
// alone): of a volume recorded attached through it, which a controller published, the
// controller half is what is missing, whatever its node process advertises (a node-only
// process rightly advertises no CONTROLLER_SERVICE). Before, a forced detach through such a
// registration dropped the attachment as a capability lost, and the controller half
// registered afterwards had nothing to detach
// (TestForcedDetachThroughANodeOnlyProcessKeepsTheAttachmentForTheControllerHalf).
func controllerSocketless(p store.Plugin) bool {
	sp := p.Spec()
	return csi.ConfigFromSpec(&sp).ControllerSocket == ""
}

// controllerHalfAway reports, of an attachment recorded through plugin c, that c's controller
// half is not registered: needsControllerHalf, or a registration with no controller socket.
func controllerHalfAway(c *conn) bool {
	return needsControllerHalf(c) || !c.fp.Controller && controllerSocketless(c.plugin)
}

// unpublishBlocked is why plugin pluginID, fingerprinted as fp (nil: not known), cannot be sent
// ControllerUnpublishVolume, and what ends that: its controller half not registered
// (controllerHalfGone), its controller service lost, or the capability alone. A refusal that
// reads the recorded fingerprint says it as the release and reconcile that found it do
// (owedUnpublishWay).
func unpublishBlocked(fp *csi.Fingerprint, pluginID string, socketless bool) (why, fix string) {
	why, fix = lostUnpublish(fp, pluginID), "start the plugin with that capability again"
	switch {
	case fp != nil && !fp.Controller && fp.Capabilities.Plugin.ControllerService:
		why, fix = controllerHalfGone(pluginID)
	case fp != nil && !fp.Controller && socketless:
		// Registered by a node-only process, which rightly advertises no CONTROLLER_SERVICE:
		// said as it is, not as a plugin advertising the service
		// (TestOwedUnpublishThroughANodeOnlyRegistrationDoesNotSayThePluginAdvertisesControllerService).
		why = fmt.Sprintf("plugin %q is registered by its node half alone (no controller socket), whose process serves no controller service", pluginID)
		fix = "register the plugin's controller half (a plugin block with the same ID, type \"controller\"), if it has one,"
	case fp != nil && !fp.Capabilities.Plugin.ControllerService:
		fix = "start the plugin with its controller service and that capability again"
	}
	return why, fix
}

// lostUnpublish says that plugin pluginID, fingerprinted as fp, no longer has the controller
// capability PUBLISH_UNPUBLISH_VOLUME: it lost its whole controller service (CONTROLLER_SERVICE
// gone, node-only now), or the capability alone. Before, a lost service was worded as the
// capability alone, and a plugin started again with it, still without the service, never
// took the unpublish (TestAttachmentKeptByAPluginWithoutItsControllerServiceNamesTheService).
func lostUnpublish(fp *csi.Fingerprint, pluginID string) string {
	if fp != nil && !fp.Capabilities.Plugin.ControllerService {
		return fmt.Sprintf("plugin %q no longer serves its controller service (no CONTROLLER_SERVICE), nor so the controller capability PUBLISH_UNPUBLISH_VOLUME", pluginID)
	}
	return fmt.Sprintf("plugin %q no longer has the controller capability PUBLISH_UNPUBLISH_VOLUME", pluginID)
}

// controllerHalfGone says why no controller RPC can be sent through plugin pluginID, which
// advertises CONTROLLER_SERVICE while only its node half is registered (needsControllerHalf), and
// what to do: controllerHalfMissing's words for what an undoing cannot send.
func controllerHalfGone(pluginID string) (why, fix string) {
	return fmt.Sprintf("plugin %q advertises CONTROLLER_SERVICE and only its node half is registered", pluginID),
		"register the plugin's controller half (a plugin block with the same ID, type \"controller\")"
}

// unstage undoes a staging no claim uses, before undoUnused forgets it: NodeUnstageVolume, its
// word checked against the mount table (checkUnmounted). A plugin that cannot be asked, having
// lost STAGE_UNSTAGE_VOLUME, or that answers UNIMPLEMENTED though it advertises it (often one
// that failed NodeStageVolume the same way, this release being its rollback: no retry would
// do better), or that answers FAILED_PRECONDITION for a staging it never confirmed, gets the
// mount table's verdict alone (checkUnstageable). The staging directory is
// kept while the volume is registered (removeStagingDir removes it when the volume goes): the
// next staging reuses it; a plugin without the capability has it removed, as before.
func (e *Engine) unstage(ctx context.Context, c *conn, v store.Volume, st store.Staging, p *checkpoint) error {
	if !c.stages() {
		if err := e.checkUnstageable(v, st, c, p, fmt.Sprintf("plugin %q no longer has the node capability STAGE_UNSTAGE_VOLUME, so NodeUnstageVolume cannot be sent", c.plugin.ID),
			"start the plugin with that capability again"); err != nil {
			return err
		}
		e.locks.removeEmptyDirs(ctx, e.realPath(st.StagingPath), filepath.Join(e.cfg.StateDir, stagingDir))
		return nil
	}
	if st.Staged {
		if err := e.unstageUncovered(v, c, st); err != nil {
			return err
		}
	}
	if err := p.flush(ctx, "release"); err != nil {
		return err
	}
	if err := e.unlinkBeforeTeardown(ctx, c, v, p, csi.RPCNodeUnstageVolume, "staging", st.StagingPath, p.stagingRecorded(st)); err != nil {
		return err
	}
	top := e.topLevels(stagingDir)
	err := e.retry(ctx, c, csi.RPCNodeUnstageVolume, func(ctx context.Context) error {
		return c.client.NodeUnstageVolume(ctx, csi.NodeUnstageVolumeRequest{VolumeID: v.ExternalID, StagingPath: st.StagingPath})
	})
	if terr := e.mountedOverTopAfter(v, c, csi.RPCNodeUnstageVolume, top); terr != nil && (err == nil || csi.IsIgnorable(err)) {
		// The plugin has said the volume is unstaged, as checkUnmounted's failure below.
		p.staging(func(st *store.Staging) { st.Staged = false })
		return terr
	}
	if csi.IsUnimplemented(err) {
		e.failpoint("rpc:NodeUnstageVolume")
		return e.checkUnstageable(v, st, c, p, fmt.Sprintf("plugin %q, which advertises the node capability STAGE_UNSTAGE_VOLUME, answered %v", c.plugin.ID, err),
			"fix or replace the plugin")
	}
	if csi.IsFailedPrecondition(err) && !st.Staged {
		// A staging only intended: NodeStageVolume never answered OK (a rollback of its final
		// failure, or a kill before it was sent). CSI's NodeUnstageVolume answers a volume not
		// staged with OK and knows no FAILED_PRECONDITION, which a plugin answers here for what
		// it never staged ("not staged"): every retry and reconcile pass would get it again,
		// the claim held releasing until a forced detach. The mount table decides, as for a
		// plugin that cannot be asked.
		e.failpoint("rpc:NodeUnstageVolume")
		return e.checkUnstageable(v, st, c, p, fmt.Sprintf("plugin %q answered %v for a staging NodeStageVolume never confirmed", c.plugin.ID, err),
			"fix the plugin")
	}
	if err != nil && !csi.IsIgnorable(err) {
		return err
	}
	e.failpoint("rpc:NodeUnstageVolume")
	if err := e.checkUnmounted(v, csi.RPCNodeUnstageVolume, "staging", st.StagingPath, c, err); err != nil {
		// The plugin has said the volume is unstaged: what is still mounted at the path is no
		// staging of its to publish from. Recorded unstaged (the path kept, owed, until the
		// check passes), so that a claim admitted while this release is left for reconcile
		// stages the volume anew and finds what was left mounted (unstageUnrecorded), instead
		// of sending NodePublishVolume from a mount the plugin disowned; before, the row still
		// said staged, and the next claim was published from it
		// (TestClaimAfterNodeUnstageAnsweredOKIsNotPublishedFromTheMountLeft).
		p.staging(func(st *store.Staging) { st.Staged = false })
		return err
	}
	return e.checkSharedDir(v, csi.RPCNodeUnstageVolume, "the plugin's staging directory", filepath.Dir(st.StagingPath), c)
}

// unstageUncovered refuses NodeUnstageVolume of volume v's staging st while what its path shows
// is not what it was staged with (stagingCover): mounts stacked over it, or another in its
// place. The plugin unmounts what is at the path: that, someone else's (another volume's stage
// at the wrong path), not the volume's, which stayed mounted below, recorded unstaged. Before, it
// was sent, the release of a claim left node-staged by that very check among them
// (TestReleaseOverACoveredStagingLeavesTheCover). The release is left for reconcile.
func (e *Engine) unstageUncovered(v store.Volume, c *conn, st store.Staging) error {
	over, replaced, err := e.stagingCover(st)
	if err == nil && over == 0 && !replaced {
		return nil // as staged: the common case, a statx and a statmount
	}
	if mp, merr := e.cfg.Mounts.Mounted(e.cfg.StateDir, e.realPath(filepath.Dir(st.StagingPath))); merr == nil && mp.Mounted {
		// Something mounted over the plugin's staging directory, which volctl mounts nothing
		// at, the staging path within it (a plugin staging inside a mount of its own there):
		// the unstage's check after the RPC names that mount (checkSharedDir,
		// TestNodeUnstageLeavingAMountOverThePluginsStagingDirectory).
		return nil
	}
	switch {
	case err != nil:
		return fmt.Errorf("checking volume %q's staging %s before %s: %w", v.ID, st.StagingPath, csi.RPCNodeUnstageVolume, err)
	case over > 0:
		return fmt.Errorf("volume %q's staging %s has %d mount(s) stacked over the one it was staged with (plugin %q, or someone by hand, mounted there since): "+
			"%s would have the plugin unmount those, not the volume's, so it was not sent: unmount them (`%s`, %d time(s)), then run `volctl reconcile`",
			v.ID, st.StagingPath, over, c.plugin.ID, csi.RPCNodeUnstageVolume, shellquote.Command("umount", st.StagingPath), over)
	case replaced:
		return fmt.Errorf("volume %q's staging %s no longer shows what it was staged with (its mounts there were unmounted, and another mounted in their place, since): "+
			"%s would have the plugin unmount that, so it was not sent: unmount what is there (`%s`, until `findmnt %s` lists nothing), then run `volctl reconcile`",
			v.ID, st.StagingPath, csi.RPCNodeUnstageVolume, shellquote.Command("umount", st.StagingPath), shellquote.Arg(st.StagingPath))
	}
	return nil
}

// controllerUnpublish sends ControllerUnpublishVolume for volume v and node nodeID, with the
// engine's retries under the plugin's controller lock; NOT_FOUND counts as done, unless the
// plugin still reports the volume published to the node (unpublishChecked). The caller has
// committed what the RPC depends on.
func (e *Engine) controllerUnpublish(ctx context.Context, c *conn, v store.Volume, nodeID string) error {
	return e.unpublishChecked(ctx, c, v, nodeID, e.retry)
}

// unpublishChecked sends ControllerUnpublishVolume for volume v and node nodeID through send
// (retry, or attempt for a forced detach's one try) under the plugin's controller lock and,
// when the plugin answers OK or NOT_FOUND and can say which nodes a volume is published to
// (LIST_VOLUMES_PUBLISHED_NODES, with LIST_VOLUMES or GET_VOLUME: publishedCheck), asks it, under the same lock, whether it still reports the
// volume published to nodeID (listsPublished, bounded as a delete's check is). One that does
// is not detached: recorded detached, the volume would be handed to Nomad, or published to
// another node (a node ID changed), while the storage still has it attached here, and a
// single-writer volume written from two nodes loses data. That is an error naming both
// answers; the attachment stays recorded and `volctl reconcile` sends the RPC again. A
// listing that cannot be had (it fails, or runs past its bounds) leaves the plugin's word as
// it is, with a warning. Without the capability, the plugin's word is all there is.
func (e *Engine) unpublishChecked(ctx context.Context, c *conn, v store.Volume, nodeID string, send sender) error {
	if nodeID == "" {
		// Never sent for no node: CSI reads an empty node_id as every node's attachment.
		return &noNodeError{error: conflictf("%s", noNodeToUnpublish(c, v, true)),
			why: fmt.Sprintf("no node ID to send it for: the attachment is recorded with none, and plugin %q gives none (registered by its controller half alone)", c.plugin.ID)}
	}
	published, unchecked, err := e.teardownChecked(ctx, c, send, csi.RPCControllerUnpublishVolume, func(ctx context.Context) error {
		return c.client.ControllerUnpublishVolume(ctx, csi.ControllerUnpublishVolumeRequest{
			VolumeID: v.ExternalID, NodeID: nodeID, Secrets: v.Secrets})
	}, func(ctx context.Context) (bool, error) { return e.listsPublished(ctx, c, v.ExternalID, nodeID) })
	if (csi.IsFailedPrecondition(err) || csi.IsUnimplemented(err)) && e.listsUnpublished(ctx, c, v, nodeID) {
		// FAILED_PRECONDITION is none of CSI's answers to ControllerUnpublishVolume, and
		// UNIMPLEMENTED none from a plugin advertising PUBLISH_UNPUBLISH_VOLUME: a plugin answers
		// them for an attachment it never made ("not published to the node": a rollback of its
		// ControllerPublishVolume's final failure). Every retry and reconcile pass would get them
		// again, the claim held and the volume with it until a forced detach. The plugin's own
		// listing decides, as it does after an OK
		// (TestAttachmentNeverMadeWhoseUnpublishIsRefusedIsNotHeldForGood).
		e.log.Warn(fmt.Sprintf("plugin %q answered %s %v for volume %q and node %q, and lists it published to no such node (%s published_node_ids): the attachment is taken as undone",
			c.plugin.ID, csi.RPCControllerUnpublishVolume, err, v.ID, nodeID, possessive(publishedCheck(c))))
		err = nil
	}
	if err != nil && !csi.IsIgnorable(err) {
		return err
	}
	e.failpoint("rpc:ControllerUnpublishVolume")
	if published {
		why := fmt.Sprintf("plugin %q answered %s %s for volume %q (external ID %q) but still lists it published to node %q (%s published_node_ids)",
			c.plugin.ID, csi.RPCControllerUnpublishVolume, answerWord(err), v.ID, v.ExternalID, nodeID, possessive(publishedCheck(c)))
		return &owedError{why: why, msg: fmt.Sprintf("%s: the volume may still be attached there, so volctl keeps it recorded attached and `volctl reconcile` sends %s again; "+
			"if the plugin keeps listing it, detach it from that node with the storage provider's tools", why, csi.RPCControllerUnpublishVolume)}
	}
	if unchecked != nil {
		e.log.Warn(fmt.Sprintf("plugin %q answered %s %s for volume %q, but whether it still lists it published to node %q could not be checked",
			c.plugin.ID, csi.RPCControllerUnpublishVolume, answerWord(err), v.ID, nodeID), "err", unchecked)
	}
	return nil
}

// listsUnpublished reports whether the plugin's own listing (publishedCheck) says volume v is
// published to no node nodeID, asked under its controller lock within the check's bound; false
// when it cannot say (no such listing, or it failed or did not end).
func (e *Engine) listsUnpublished(ctx context.Context, c *conn, v store.Volume, nodeID string) bool {
	if publishedCheck(c) == "" {
		return false
	}
	published := true
	err := e.withController(ctx, c, func(ctx context.Context) error {
		return e.boundCheck(ctx, func(ctx context.Context) error {
			var err error
			published, err = e.listsPublished(ctx, c, v.ExternalID, nodeID)
			return err
		})
	})
	return err == nil && !published
}

// checkUnmounted checks, after the plugin answered rpc (NodeUnpublishVolume or
// NodeUnstageVolume) with success or NOT_FOUND (and, for a target, volctl removed the empty
// directories), that nothing is still mounted at path or below it: a plugin may say it is done
// and leave the mount (or one it made below the path). A path that is gone, or an empty
// directory that is not a mount point (the staging directory kept for the volume), costs no
// read of the mount table (mountsLeft). One still mounted is an error naming it, so the claim
// stays on the release path (and the staging recorded) for reconcile, which sends the RPC
// again and checks again. answer is the plugin's (nil, or the NOT_FOUND taken as done): a
// plugin that does not know a volume it mounted was most likely restarted with another state
// (another root or data directory), and the one that mounted it, restarted as it ran, would
// unmount it and drop its record of the target; unmounted by hand instead, that record stays.
func (e *Engine) checkUnmounted(v store.Volume, rpc, what, path string, c *conn, answer error) error {
	left, err := e.mountsLeft(path)
	if err != nil {
		return checkedAfter(rpc, fmt.Errorf("checking the mount table for volume %q's %s at %s after %s: %w", v.ID, what, path, rpc, err))
	}
	switch {
	case len(left) == 0:
		return nil
	case answer != nil:
		return checkedAfter(rpc, fmt.Errorf("volume %q's %s at %s is still mounted, but plugin %q answered %s NOT_FOUND (%v): it does not know volume %q (external ID %q) that it mounted: "+
			"it was most likely restarted with another state (another root or data directory) than the one it mounted with%s; "+
			"restart it as it ran then and run `volctl reconcile`, or, if that state is lost, unmount %s by hand, then run `volctl reconcile`",
			v.ID, what, path, c.plugin.ID, rpc, answer, v.ID, v.ExternalID, reregisteredWords(c.plugin), e.mountNames(left)))
	}
	return checkedAfter(rpc, fmt.Errorf("volume %q's %s at %s is still mounted after plugin %q answered %s: "+
		"the plugin did not unmount it; unmount %s by hand (or restart the plugin), then run `volctl reconcile`",
		v.ID, what, path, c.plugin.ID, rpc, e.mountNames(left)))
}

// reregisteredWords is the other way a plugin comes not to know a volume it mounted: its ID
// registered since on a socket another process serves, which does not have the volume. The
// release's NOT_FOUND said only "restarted with another state", and the user who had moved the
// registration was sent to restart a plugin that had not restarted
// (`TestNotFoundOverAMountSaysThePluginDoesNotKnowTheVolume`). Said as a possibility, with
// where to look: a registration again (the agent's at every start) changes nothing, and only the
// event log says which of them moved the socket.
func reregisteredWords(p store.Plugin) string {
	return fmt.Sprintf(", or plugin %q was registered since on a socket another process serves (`%s` shows its registrations: register it again on the socket of the process that mounted it)",
		p.ID, shellquote.CommandFlags("volctl events", nil, shellquote.Flag("--plugin", p.ID), "--kind plugin-register"))
}

// checkSharedDir checks, after the plugin answered rpc for volume v, that nothing is mounted
// at dir itself, a directory volctl shares between claims or volumes (publish/<alloc>, the
// alloc's claims on several volumes; staging/<plugin>, the plugin's volumes) and mounts
// nothing at: a plugin that mounted over it to make the path it was given inside, and undid
// that path alone, leaves a mount hiding every other claim's or volume's mount below dir, and
// what they use would be the plugin's file system instead. Recorded done, nothing would ever
// undo it: the error names it, so the claim stays on the release path for reconcile. What is
// mounted below dir is not looked at (the other claims' and volumes' own mounts are). A dir
// that statx says is no mount root costs no read of the mount table.
func (e *Engine) checkSharedDir(v store.Volume, rpc, what, dir string, c *conn) error {
	if root, known := isMountRoot(unix.AT_FDCWD, e.realPath(dir)); known && !root {
		return nil
	}
	under, err := e.mountsAt(dir)
	if err != nil {
		return checkedAfter(rpc, fmt.Errorf("checking the mount table for %s %s after %s of volume %q: %w", what, dir, rpc, v.ID, err))
	}
	real := e.realPath(dir)
	if !slices.ContainsFunc(under, func(m string) bool { return m == dir || m == real }) {
		return nil
	}
	return checkedAfter(rpc, fmt.Errorf("%s %s is still mounted after plugin %q answered %s for volume %q: volctl mounts nothing there, and the mount hides the mounts of the "+
		"other claims and volumes below it; the plugin (or someone) mounted over it: unmount %s by hand (`umount -l`, which takes what the plugin mounted inside it too), "+
		"then run `volctl reconcile`",
		what, dir, c.plugin.ID, rpc, v.ID, dir))
}

// mountsLeft returns what the mount table has at path or below it, sorted; nothing, without
// reading the table, when the path is gone or is an empty directory that is not a mount point
// (mountFree).
func (e *Engine) mountsLeft(path string) ([]string, error) {
	if mountFree(e.realPath(path)) {
		return nil, nil
	}
	return e.mountsAt(path)
}

// mountNames names the mount points left (mountsAt's), for an error that asks to unmount them
// by hand, joined with "and": a path holding several mounts stacked one over another (a plugin
// that mounts without looking first, asked twice) says how many, as one umount takes away the
// topmost only, and the error would come back naming the same path after each. The kernel's
// table is read for the count (a MountTable that can count, stackCounter); an unread count
// names the path alone.
func (e *Engine) mountNames(left []string) string {
	var counts map[string]int
	if sc, ok := e.cfg.Mounts.(stackCounter); ok {
		counts, _ = sc.StackedMounts(left)
	}
	names := make([]string, len(left))
	for i, m := range left {
		names[i] = m
		if n := counts[m]; n > 1 {
			names[i] = fmt.Sprintf("%s (%d mounts are stacked there: unmount it %d times)", m, n, n)
		}
	}
	return strings.Join(names, " and ")
}

// mountsAt returns what the mount table has at path or below it, sorted, the path compared as
// recorded and as the table has it (realPath).
func (e *Engine) mountsAt(path string) ([]string, error) {
	real := e.realPath(path)
	mounted, err := e.cfg.Mounts.MountsUnder(e.cfg.StateDir)
	if err != nil {
		return nil, err
	}
	var left []string
	for m := range mounted {
		if m == real || m == path || strings.HasPrefix(m, real+"/") || strings.HasPrefix(m, path+"/") {
			left = append(left, m)
		}
	}
	slices.Sort(left)
	return left, nil
}

// checkUnstageable decides what to do with a staging no claim uses when the plugin cannot be
// asked to undo it (why says which way: it no longer has STAGE_UNSTAGE_VOLUME, a restart with
// other capabilities, though the staging was recorded while it had; or it answers
// NodeUnstageVolume with UNIMPLEMENTED). The mount table says whether anything is there, at the
// staging path or below it (mountsAt: a plugin may mount below the path it was given, and a
// path recorded under a symlinked state dir is read as the table has it). A staging path still
// mounted is an error (remedy says what would let the plugin unstage it): the record stays, so
// the claim's release (or reconcile's clean-up) is left for reconcile, which reports it on
// every pass until the mount is gone. One not mounted is forgotten, with an event if it had
// been staged.
func (e *Engine) checkUnstageable(v store.Volume, st store.Staging, c *conn, p *checkpoint, why, remedy string) error {
	left, err := e.mountsAt(st.StagingPath)
	if err != nil {
		return checkedAfter(csi.RPCNodeUnstageVolume, fmt.Errorf("checking the mount table for volume %q's staging at %s: %w", v.ID, st.StagingPath, err))
	}
	if len(left) > 0 {
		// Named by the RPC the check stands in for (not sent, or answered without unstaging).
		return checkedAfter(csi.RPCNodeUnstageVolume, fmt.Errorf("volume %q's staging at %s is still mounted, but %s: %s, or unmount %s by hand, then run `volctl reconcile`",
			v.ID, st.StagingPath, why, remedy, e.mountNames(left)))
	}
	if st.Staged {
		msg := fmt.Sprintf("volume %q was recorded as staged at %s, but %s; nothing is mounted there, so the record is dropped",
			v.ID, st.StagingPath, why)
		e.log.Warn(msg)
		p.event(&store.Event{Kind: "capability-lost", VolumeID: v.ID, PluginID: v.PluginID, Message: msg})
	}
	return nil
}

// ReleaseResult says what a release did.
type ReleaseResult struct {
	Released bool      `json:"released"` // false: the alloc held no claim (a no-op)
	Claim    ClaimInfo `json:"claim"`
	// ReleasedMeanwhile is true, with Released false, when the alloc held the claim as the
	// release began and another volctl freed it while the release waited for the volume: three
	// releases of one claim at once said "holds no claim" twice of a claim held a moment
	// before (TestReleaseThatWaitedForAnotherReleaseSaysSo).
	ReleasedMeanwhile bool `json:"released_meanwhile,omitempty"`
}

// Release frees an alloc's claim on a volume through the release path. Releasing a claim that
// does not exist is a no-op (Released is false).
func (e *Engine) Release(ctx context.Context, volumeID, alloc string) (ReleaseResult, error) {
	if err := e.checkMountView(ctx, volumeID); err != nil {
		return ReleaseResult{}, fmt.Errorf("release %q for alloc %q: %w", volumeID, alloc, err)
	}
	return byStoredID(ctx, e, store.VolumeIDs, volumeID, func(id string) (ReleaseResult, error) { return e.releaseStored(ctx, id, alloc) })
}

// releaseStored is Release of the ID as stored (byStoredID).
func (e *Engine) releaseStored(ctx context.Context, volumeID, alloc string) (ReleaseResult, error) {
	fail := func(err error) (ReleaseResult, error) {
		return ReleaseResult{}, fmt.Errorf("release %q for alloc %q: %w", volumeID, alloc, err)
	}
	if err := spec.ValidateID("volume ID", volumeID); err != nil {
		return fail(invalidf("%v", err))
	}
	unlock, seen, err := e.lockVolumeNotingClaim(ctx, volumeID, alloc)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	var (
		cl    store.Claim
		v     store.Volume
		ld    *loaded
		found bool
	)
	// Checked inside the transaction (holding): a release that waited for the database while its
	// lock file was removed and another volctl locked a new one marks nothing.
	err = e.store.Update(ctx, e.locks.holding(volumeID, func(tx *store.Tx) error {
		var err error
		if v, err = tx.Volumes().Get(volumeID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return notFoundf("volume %q not found", volumeID)
			}
			return err
		}
		// The volume's live claims, read once: the alloc's among them, and what the others use.
		claims, err := tx.Claims().ByVolume(v.ID)
		if err != nil {
			return err
		}
		// The alloc's claim as stored, else one stored in another normal form (sameAlloc).
		i := slices.IndexFunc(claims, func(c store.Claim) bool { return c.Alloc == alloc })
		if i < 0 {
			i = slices.IndexFunc(claims, func(c store.Claim) bool { return sameAlloc(c.Alloc, alloc) })
		}
		if i < 0 {
			return nil
		}
		cl, found = claims[i], true
		if ld, err = load(tx, v); err != nil {
			return err
		}
		ld.others = countUsage(claims, cl.ID)
		if err := ld.others.readHandover(tx, v.ID); err != nil {
			return err
		}
		// The release's first checkpoint: wanted freed, and off the publish path where the
		// next RPC is NodeUnpublishVolume.
		cl.Releasing = true
		if cl.State == store.ClaimNodeStaged || cl.State == store.ClaimPublished {
			cl.State = store.ClaimUnpublishing
		}
		return tx.Claims().Update(&cl)
	}))
	if err != nil {
		return fail(err)
	}
	if !found {
		return ReleaseResult{ReleasedMeanwhile: seen}, nil
	}
	e.failpoint("release:" + string(cl.State))
	final, err := e.driveClaim(ctx, cl, v, ld, store.OutcomeReleased)
	if err != nil {
		return fail(err)
	}
	// The claim as it ended: freed into the history.
	info := claimInfo(final)
	info.Outcome, info.FreedAt = string(store.OutcomeReleased), final.UpdatedAt
	return ReleaseResult{Released: true, Claim: info}, nil
}

// lockVolumeNotingClaim is lockVolumeNoting for a release: seen is whether alloc held a live
// claim on the volume, read without the lock when it had to wait for it (false when it did
// not wait). The lock taken at once, as most are, costs no read.
func (e *Engine) lockVolumeNotingClaim(ctx context.Context, id, alloc string) (unlock func(), seen bool, err error) {
	unlock, err = e.lockVolumeLooking(ctx, id, func(tx *store.Tx) {
		_, ferr := findAllocClaim(tx, id, alloc)
		seen = ferr == nil
	})
	return unlock, seen, err
}

// checkVolumeExists is nil when the state records volume id as stored, else its not-found.
func (e *Engine) checkVolumeExists(ctx context.Context, id string) error {
	return e.checkStored(ctx, func(tx *store.Tx) error { _, err := tx.Volumes().Get(id); return err }, fmt.Sprintf("volume %q not found", id))
}

// checkPluginExists is checkVolumeExists for a plugin, its not-found a command through it's.
func (e *Engine) checkPluginExists(ctx context.Context, id string) error {
	return e.checkStored(ctx, func(tx *store.Tx) error { _, err := tx.Plugins().Get(id); return err },
		fmt.Sprintf("plugin %q is not registered (volctl plugin register)", id))
}

// checkStored is get's error, its not-found worded as notFound.
func (e *Engine) checkStored(ctx context.Context, get func(tx *store.Tx) error, notFound string) error {
	return e.store.View(ctx, func(tx *store.Tx) error {
		err := get(tx)
		if errors.Is(err, store.ErrNotFound) {
			return notFoundf("%s", notFound)
		}
		return err
	})
}

// noNodeError is unpublishChecked's refusal to send ControllerUnpublishVolume for no node,
// whose cause alone (owedWhy) a forced deregister that forgets the attachment quotes: the
// refusal's "stays recorded, owed ... reconcile sends it" was said of a record it dropped
// (TestForcedDeregisterOfALegacyRowThroughAControllerOnlyRegistrationDoesNotSayTheAttachmentStaysOwed).
type noNodeError struct {
	error
	why string
}

func (e *noNodeError) Unwrap() error   { return e.error }
func (e *noNodeError) owedWhy() string { return e.why }

// noNodeToUnpublish says that ControllerUnpublishVolume of volume v is not sent through c: no
// node is recorded for it, and the plugin gives none (registered by its controller half alone),
// where an empty node_id asks the plugin to detach the volume from every node. attached: an
// attachment is recorded (an older volctl's row with no node), which stays owed.
func noNodeToUnpublish(c *conn, v store.Volume, attached bool) string {
	what := "no attachment is recorded, and"
	if attached {
		what = "its recorded attachment names no node, and"
	}
	msg := fmt.Sprintf("ControllerUnpublishVolume of volume %q was not sent: %s plugin %q gives no node ID (registered by its controller half alone), and an empty node ID asks the plugin to detach the volume from every node, another orchestrator's too",
		v.ID, what, c.plugin.ID)
	if attached {
		msg += fmt.Sprintf("; the attachment stays recorded, owed: register plugin %q's node half too (or the plugin as type \"monolith\" where one process serves both), then `volctl reconcile` sends it for this node", c.plugin.ID)
	}
	return msg
}
