package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// GroupInfo is a group and what each of its allocs holds.
type GroupInfo struct {
	Name   string      `json:"name"`
	State  string      `json:"state"` // running | stopped | failed (GroupFailed)
	Count  int         `json:"count"`
	Allocs []AllocInfo `json:"allocs"`
	// Released are the claims the command released: a group run's of the allocs past its
	// count (a scale-down), a group stop's of every alloc. Before, neither said which claims it
	// let go of: a run scaled from 3 to 1 printed its one alloc and nothing of the other two
	// (TestGroupRunAndStopNameTheClaimsTheyRelease). Only those two commands set it.
	Released []ReleasedClaim `json:"released,omitempty"`
	// ReleasedMeanwhile are the claims the command found to release and another volctl released
	// while it waited for their volumes (a second stop beside it, a release, reconcile): a stop
	// that lost every claim so said "it held no claims" of a group that held them a moment
	// before (TestGroupStopBesideAnotherSaysTheOtherReleasedItsClaims).
	ReleasedMeanwhile []ReleasedClaim `json:"released_meanwhile,omitempty"`
	// Purged says a group stop --purge forgot the group (PurgeGroup).
	Purged bool   `json:"purged,omitempty"`
	key    string // Name as read (Key)
}

// Key is the group's name as the state has it, to look it up by; Name is what is shown,
// scrubbed of secrets where the read was (PluginInfo.Key says why).
func (g GroupInfo) Key() string { return cmp.Or(g.key, g.Name) }

// ReleasedClaim is a claim a group run's scale-down or a group stop released.
type ReleasedClaim struct {
	VolumeID string `json:"volume_id"`
	Alloc    string `json:"alloc"`
}

// AllocInfo is one alloc of a group: its claims, and the error that kept it from them.
type AllocInfo struct {
	Name   string      `json:"name"`
	Index  int         `json:"index"`
	Claims []ClaimInfo `json:"claims"`
	// Missing are the volumes of the group's spec an alloc that holds some of them lacks
	// (group status): a run cut short between the claims of one alloc (Ctrl-C, a kill) left it
	// so, and `group run` again finishes it.
	Missing []string `json:"missing,omitempty"`
	Error   string   `json:"error,omitempty"`
	// RunError is the part of Error the last run left (GroupRecord.RunErrors): why a volume is
	// Missing. What status found since (a bind gone, a target covered: markUnbound) is another
	// volume's, joined into Error beside it: on the missing volume's row it named another
	// volume's destination, and its advice bound that again, never claiming the missing one
	// (TestGroupStatusDoesNotGiveAMissingVolumeAnotherVolumesBindProblem). Not in JSON: Error
	// says it there.
	RunError string `json:"-"`
}

// Lacks reports whether the group no longer has alloc a: it is stopped, or a is past its count.
// Such an alloc holding claims was left by a stop or scale-down killed before it released them
// (or one releasing them now), which reconcile finishes: not ready, whatever it holds.
func (g GroupInfo) Lacks(a AllocInfo) bool {
	return g.State == string(store.GroupStopped) || a.Index < 0 || a.Index >= g.Count
}

// Ready reports whether alloc a of g holds all its volumes at rest: claims, none missing, the
// group still has it (Lacks), no error (held otherwise than the spec asks, a volume_mount not
// mounted, a cover), each claim at rest, its target not covered, its binds mounted. `group
// status` counts these, and the dashboard draws a group with one not ready wanting a look: it
// drew one whose alloc lacked a volume (a run killed between its claims) as all well
// (TestDashboardGroupRowOfAnAllocCutShortIsNotDrawnAsAllWell).
func (g GroupInfo) Ready(a AllocInfo) bool {
	ready := len(a.Claims) > 0 && len(a.Missing) == 0 && !g.Lacks(a) && a.Error == ""
	for _, c := range a.Claims {
		ready = ready && c.AtRest() && c.Covered == "" && !slices.ContainsFunc(c.Binds, func(b Bind) bool { return b.Unbound })
	}
	return ready
}

// RunGroup records a group and gives each of its allocs all its volumes or none: when one claim
// of an alloc fails, the claims this run already got for that alloc are released again (not
// those it held before the run). Running a group again
// is idempotent; a smaller count releases the allocs past it. A run its caller interrupts
// (Ctrl-C) undoes nothing, as an interrupted claim is not rolled back (releasing sends RPCs to
// a plugin that may be why the user gave up): it runs no further alloc and no scale-down, the
// interrupted alloc shows the claims it holds, and the error says what finishes the group
// (`group run` again, or reconcile for the claims) and what undoes it (`group stop`).
func (e *Engine) RunGroup(ctx context.Context, g spec.Group) (GroupInfo, error) {
	if err := e.checkMountView(ctx, ""); err != nil {
		return GroupInfo{}, fmt.Errorf("run group %q: %w", g.Name, err)
	}
	return bySpecID(g.Name, func(name string) (GroupInfo, error) { g.Name = name; return e.runGroup(ctx, g) })
}

// runGroup is RunGroup of the name as stored (bySpecID): the allocs' names derive from it, as
// they did when the stored group's claims were made.
func (e *Engine) runGroup(ctx context.Context, g spec.Group) (GroupInfo, error) {
	// Many claims and releases, as a pass drives: a plugin that does not answer one of them in
	// time is sent nothing more (hungPlugins), the rest left for reconcile.
	ctx = withHungPlugins(ctx, "this group run", "`volctl reconcile`")
	// One read of the mount table for every alloc's volume_mounts (bindplace.go).
	ctx = e.withCommandPlaces(ctx)
	fail := func(err error) (GroupInfo, error) { return GroupInfo{}, fmt.Errorf("run group %q: %w", g.Name, err) }
	if g.Count < 1 {
		g.Count = 1
	}
	if err := allocsOverlap(g); err != nil {
		return fail(err)
	}
	// The group's lock, while this run records the group and runs its allocs: another run's
	// undoing of an alloc's claims would otherwise release a claim this one reports held.
	// The scale-down after it needs none: each release is checked again under its volume's
	// lock (releaseGroupPast).
	unlock, err := e.locks.group(ctx, g.Name)
	if err != nil {
		return fail(err)
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if err := e.store.Update(ctx, func(tx *store.Tx) error {
		if err := notStoredOtherwise(tx, store.GroupNames, g.Name); err != nil {
			return err
		}
		// The errors of the allocs the last run failed stay theirs until this run reaches
		// them (recordRunErrors): a run cut short before an alloc wiped its error, and a failed
		// group read "running", its allocs holding nothing with no reason
		// (TestFailedGroupInterruptedBeforeItsAllocsStaysFailed).
		var kept map[string]string
		if old, err := tx.Groups().Get(g.Name); err == nil {
			for name, why := range old.RunErrors {
				if i := allocIndex(g.Name, name); i >= 0 && i < g.Count {
					if kept == nil {
						kept = map[string]string{}
					}
					kept[name] = why
				}
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.Groups().Put(&store.Group{Name: g.Name, Spec: g, Count: g.Count, State: store.GroupRunning, RunErrors: kept})
	}); err != nil {
		return fail(err)
	}
	e.failpoint("group:recorded") // the count recorded; no alloc run, nothing past it released
	info := GroupInfo{Name: g.Name, State: string(store.GroupRunning), Count: g.Count}
	var errs []error
	// interrupted ends a run Ctrl-C cut short before alloc next: what its allocs failed of is
	// recorded all the same, for group status, as at a run's end. Before, an alloc the run
	// failed before the interrupt read as holding nothing with no error, and an interrupted run
	// again of a failed group lost the errors that made it read failed
	// (TestInterruptedRunKeepsTheErrorOfAnAllocItFailed).
	interrupted := func(next int) (GroupInfo, error) {
		if err := e.recordRunErrors(context.WithoutCancel(ctx), g.Name, info.Allocs); err != nil {
			errs = append(errs, err)
		}
		return info, fmt.Errorf("run group %q: %w", g.Name, errors.Join(append(errs, interruptedRun(ctx, g, next))...))
	}
	if ctx.Err() != nil {
		// Cut short once the group was recorded: said as any interrupted run, not as a
		// transaction that wrote nothing.
		return interrupted(0)
	}
	var mounts map[string]*spec.MountOptions // the mount options of each volume the group's claims hold
	held, err := viewOne(ctx, e.store, func(tx *store.Tx) (map[string][]store.Claim, error) {
		held, err := groupClaimsByAlloc(tx, g.Name)
		if err != nil {
			return nil, err
		}
		mounts, err = heldVolumesMountOptions(tx, held)
		return held, err
	})
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(0)
		}
		return fail(err)
	}
	for i := 0; i < g.Count; i++ {
		if ctx.Err() != nil {
			return interrupted(i)
		}
		alloc := spec.AllocName(g.Name, i)
		if a, err := unnamedByTheSpec(g, i, held[alloc]); err != nil {
			errs = append(errs, fmt.Errorf("alloc %q: %w", alloc, err))
			info.Allocs = append(info.Allocs, a)
			continue
		}
		if err := e.refusedBeforeClaiming(g, i, held[alloc], mounts); err != nil {
			errs = append(errs, fmt.Errorf("alloc %q: %w", alloc, err))
			info.Allocs = append(info.Allocs, heldAlloc(g, i, held[alloc], err))
			continue
		}
		a, err := e.runAlloc(ctx, g, i)
		if err != nil {
			// The claim's own error, wrapped: a refusal stays a conflict (exit 4), as volume
			// claim's is, and an invalid claim ErrInvalid.
			errs = append(errs, fmt.Errorf("alloc %q: %w", a.Name, err))
		}
		info.Allocs = append(info.Allocs, a)
	}
	if ctx.Err() != nil {
		return interrupted(g.Count)
	}
	if stopped, err := e.stoppedWhileRunning(ctx, g, &info); err != nil || stopped {
		// Stopped meanwhile: nothing more is run, and the state stays the stop's. With no alloc
		// served, each alloc's error says it was refused as stopped: the run went on to record
		// the group "failed", its refusals as run errors, and a scale-down releasing what
		// the stop releases (TestGroupRunStoppedBeforeAnyAllocSaysStopped).
		if err == nil && len(errs) == 0 {
			err = conflictf("group %q was stopped by another volctl while this run ran", g.Name)
		}
		return info, fmt.Errorf("run group %q: %w", g.Name, errors.Join(append(errs, err)...))
	}
	if err := e.recordRunErrors(ctx, g.Name, info.Allocs); err != nil {
		errs = append(errs, err)
	}
	info.State = groupState(store.GroupRunning, g.Count, info.Allocs)
	unlock()
	locked = false
	// Released as claim GC releases, each checked again under its volume's lock: another
	// volctl may have run the group again since with a count that covers it.
	released, meanwhile, overtaken, err := e.releaseGroupPast(ctx, g.Name, func(c store.Claim) bool { return allocIndex(g.Name, c.Alloc) >= g.Count }, true)
	info.Released, info.ReleasedMeanwhile = released, meanwhile
	if err = errors.Join(err, overtaken); err != nil {
		errs = append(errs, fmt.Errorf("scaling down: %w", err))
		if ctx.Err() != nil {
			// Cut short: each release's own error says what it left of its claim, and none what
			// finishes the scale-down (TestInterruptedScaleDownSaysWhatFinishesIt).
			errs = append(errs, fmt.Errorf("interrupted (%w): the scale-down past its count was cut short, its claims left held or releasing: "+
				"`volctl reconcile` releases them, as does `volctl group run` of the same spec again", context.Cause(ctx)))
		}
	}
	if len(errs) > 0 {
		return info, fmt.Errorf("run group %q: %w", g.Name, errors.Join(errs...))
	}
	return info, nil
}

// stoppedWhileRunning reads, at the end of a run's allocs (under the group's lock), whether a
// `group stop` from another volctl recorded the group stopped meanwhile: a stop takes no group
// lock, releases every claim of the group (those this run made for its first allocs too), and
// admission refuses the run's claims after it (groupStillRunning). The allocs are then read
// again from the state, each that got its volumes marked as the stop's, the state stopped, and
// the error says so: before, the run printed its first allocs with the volumes the stop was
// releasing ("1 of 2 allocs have their volumes"), the group stopped and holding nothing
// (TestGroupStoppedWhileRunningLeavesNoClaim). Nothing more is run then: no scale-down.
func (e *Engine) stoppedWhileRunning(ctx context.Context, g spec.Group, info *GroupInfo) (stopped bool, err error) {
	stored, err := viewOne(ctx, e.store, func(tx *store.Tx) (store.Group, error) { return tx.Groups().Get(g.Name) })
	if err != nil || stored.State == store.GroupRunning {
		return false, err
	}
	var served []string
	for i := range info.Allocs {
		a := &info.Allocs[i]
		a.Claims = e.allocClaims(ctx, g, a.Name, a.Index)
		a.Missing = lacking(g, a.Index, a.Claims)
		if a.Error == "" {
			served = append(served, a.Name)
			a.Error = fmt.Sprintf("group %q was stopped by another volctl while this run ran: its `volctl group stop` releases the claims this run made for the alloc", g.Name)
		}
	}
	info.State = string(store.GroupStopped)
	if len(served) == 0 {
		return true, nil // each alloc's own error says it already
	}
	return true, conflictf("group %q was stopped by another volctl while this run ran: its `volctl group stop` releases the claims this run made for %s (`volctl group run FILE` of its spec runs it again)",
		g.Name, listSome(served, 10, func(s string) string { return strconv.Quote(s) }))
}

// GroupFailed is GroupInfo.State of a running group none of whose allocs holds a claim (one
// being released holds nothing), each with the error its last run failed with: the run gave no alloc its volumes, and nothing will
// until the group is run again. Before, it read "running", 0/1 allocs ready, with no reason,
// until a `group stop` (TestGroupEveryAllocOfWhichFailedReadsFailed).
const GroupFailed = "failed"

// groupState is what GroupInfo.State says of a group recorded in state with count allocs,
// whose allocs (within the count first) are as given: GroupFailed for a running group every
// alloc of which failed its last run and holds nothing.
func groupState(state store.GroupState, count int, allocs []AllocInfo) string {
	if state != store.GroupRunning || count < 1 || len(allocs) < count {
		return string(state)
	}
	for _, a := range allocs[:count] {
		if len(heldClaims(a.Claims)) > 0 || a.Error == "" {
			return string(state)
		}
	}
	return GroupFailed
}

// heldClaims is claims without those being released, which give their alloc nothing.
func heldClaims(claims []ClaimInfo) []ClaimInfo {
	return slices.DeleteFunc(slices.Clone(claims), func(c ClaimInfo) bool { return c.Releasing })
}

// recordRunErrors records, at the end of a group run (under the group's lock), the errors of
// the allocs it could not give their volumes, for group status and the dashboard
// (store.Group.RunErrors); a run that gave every alloc its volumes clears them.
func (e *Engine) recordRunErrors(ctx context.Context, name string, allocs []AllocInfo) error {
	err := e.store.Update(ctx, func(tx *store.Tx) error {
		g, err := tx.Groups().Get(name)
		if err != nil {
			return err
		}
		// The errors of allocs this run did not reach (cut short) are kept, as its record made
		// at its start kept them; those it reached are what it found now.
		failed := maps.Clone(g.RunErrors)
		for _, a := range allocs {
			delete(failed, a.Name)
			if a.Error != "" {
				if failed == nil {
					failed = map[string]string{}
				}
				failed[a.Name] = a.Error
			}
		}
		if maps.Equal(failed, g.RunErrors) {
			return nil
		}
		if len(failed) == 0 {
			failed = nil
		}
		g.RunErrors = failed
		return tx.Groups().Put(&g)
	})
	if err != nil {
		return fmt.Errorf("recording which allocs failed, for group status: %w", err)
	}
	return nil
}

// runAlloc claims every volume of one alloc, or releases what this run got of them. The error
// is the failed claim's (with any failure to release again in its text); a.Error says the same.
func (e *Engine) runAlloc(ctx context.Context, g spec.Group, index int) (AllocInfo, error) {
	alloc := spec.AllocName(g.Name, index)
	a := AllocInfo{Name: alloc, Index: index, Claims: []ClaimInfo{}} // [] in JSON, never null
	// taken: the volumes this run claimed for the alloc, not held before it.
	var taken []string
	// Outermost volume_mount first: a volume bound below another's destination is bound on
	// the outer volume's directory, not hidden under it (nestingOrder).
	vols := nestingOrder(g.Volumes, func(r spec.VolumeRequest) []string {
		return bindDests(groupBinds(g, r.Name, alloc, index))
	}, true)
	for _, r := range vols {
		req := allocRequest(g, r, index)
		// The claim the alloc held before, by ID: one being released (another volctl's
		// release of it in flight) is waited for by the claim, which then makes a new one,
		// this run's to undo. Read as "held", the new claim was left beside a failed alloc
		// (TestGroupRunRollsBackAClaimItMadeAfterAnotherReleaseOfTheAllocs).
		had := e.heldClaimID(ctx, req.VolumeID, alloc)
		ci, err := e.Claim(onVolume(ctx, req.VolumeID), req)
		if err != nil && ctx.Err() != nil {
			// Interrupted: nothing is undone (RunGroup). What the alloc holds now is read
			// without the cancellation, from the state alone.
			a.Claims = e.allocClaims(context.WithoutCancel(ctx), g, alloc, index)
			a.Missing = lacking(g, index, a.Claims)
			a.Error = err.Error()
			return a, err
		}
		if err != nil {
			// Only what this run took is undone: a claim the alloc held before the run (a
			// group run again) may be in use, and only a release or a stop frees it.
			undo := append(make([]string, 0, len(taken)+1), taken...)
			// A claim that failed with a retryable error is left for reconcile, not rolled back:
			// release it too, or reconcile would publish it for an alloc that got nothing. Only
			// a claim of this group's, which no other run makes meanwhile (the group's lock):
			// another volctl's plain claim for the alloc, admitted between had's read and this
			// run's admission (which it made a conflict), is that command's. Before, the run
			// released it as its own, unpublished from under the command that reported it held
			// (TestGroupRunDoesNotReleaseAPlainClaimMadeBesideIt).
			if e.newOfGroup(ctx, req.VolumeID, alloc, g.Name, had) {
				undo = append(undo, req.VolumeID)
			}
			// Last taken first: taken outermost first, they are released innermost first (an
			// outer bind with another mounted below it cannot be unmounted, EBUSY).
			slices.Reverse(undo)
			for _, vol := range undo {
				rctx := onVolume(ctx, vol)
				if vol == req.VolumeID {
					rctx = leavingRefusedBind(rctx, err) // a mount its bind refused is not its to unbind
				}
				if _, rerr := e.Release(rctx, vol, alloc); rerr != nil {
					err = fmt.Errorf("%w; releasing %q again also failed: %v", err, vol, rerr)
				} else if vol == req.VolumeID {
					// The claim's error said it was left for reconcile; it is not any more.
					err = releasedAgain(err, "the run released the claim again")
				}
			}
			a.Error = err.Error()
			// What the alloc holds now, read from the state: the claims it held before this run,
			// which stand, the one refused among them (an earlier run's, bound at another
			// destination) and those of volumes after it, which this run did not get to. Only
			// the claims this run got before the failure were listed, and an alloc whose claims
			// all stood was reported holding none (TestGroupRunRefusedForAnAllocSaysWhatItStillHolds).
			a.Claims = e.allocClaims(ctx, g, alloc, index)
			a.Missing = lacking(g, index, a.Claims)
			return a, err
		}
		a.Claims = append(a.Claims, ci)
		if ci.ID != had {
			taken = append(taken, ci.VolumeID)
		}
	}
	return a, nil
}

// groupClaimsByAlloc are the live claims group name's runs made, by alloc.
func groupClaimsByAlloc(tx *store.Tx, name string) (map[string][]store.Claim, error) {
	all, err := tx.Claims().ListAll()
	if err != nil {
		return nil, err
	}
	out := map[string][]store.Claim{}
	for _, c := range all {
		if c.Group == name {
			out[c.Alloc] = append(out[c.Alloc], c)
		}
	}
	return out, nil
}

// unnamedByTheSpec refuses to run alloc index of g when it holds a claim, made by an earlier
// run of the group, on a volume g's spec no longer names for it (a volume block removed, its
// source or per_alloc changed): a run does not take a volume from an alloc under it, as it
// does not change a held claim's mode, mount options or volume_mounts (claimAgain), and
// `group stop`, then run, applies the new spec. The alloc's answer lists what it holds. A claim
// being released (left for reconcile) is on its way out and stands in nothing's way. Before, a
// run with a volume block removed said every alloc had its volumes, listing those the spec
// names, while each still held the removed one, a writer's claim kept from every other alloc,
// which nothing ever released but a stop (TestGroupRunWithAVolumeRemovedDoesNotLeaveItsClaimSilently).
func unnamedByTheSpec(g spec.Group, index int, held []store.Claim) (AllocInfo, error) {
	alloc := spec.AllocName(g.Name, index)
	var extra []string
	for _, c := range held {
		if c.Releasing || slices.ContainsFunc(g.Volumes, func(r spec.VolumeRequest) bool { return sameInNFC(c.VolumeID, requestVolume(r, index)) }) {
			continue
		}
		extra = append(extra, c.VolumeID)
	}
	if len(extra) == 0 {
		return AllocInfo{}, nil
	}
	err := conflictf("alloc %q holds a claim on %s, which the group's spec no longer names for it: a run does not take a volume from an alloc under it; "+
		"`%s` releases the alloc's claims, then run the group again", alloc,
		listSome(extra, 10, func(v string) string { return strconv.Quote(v) }), shellquote.Command("volctl group stop", g.Name))
	return heldAlloc(g, index, held, err), err
}

// heldAlloc is the answer for alloc index of g refused with err before anything was claimed
// for it: the claims it holds (held), what it lacks, and err.
func heldAlloc(g spec.Group, index int, held []store.Claim, err error) AllocInfo {
	a := AllocInfo{Name: spec.AllocName(g.Name, index), Index: index, Claims: []ClaimInfo{}, Error: err.Error()}
	for _, c := range held {
		a.Claims = append(a.Claims, claimInfo(c))
	}
	a.Missing = lacking(g, index, a.Claims)
	return a
}

// refusedBeforeClaiming refuses alloc index of g, holding held (its claims of the group's
// earlier runs), for what each of its claims' admission would refuse that can be told before
// any is made: a claim it holds on a volume the spec names held otherwise than the spec asks
// now (another mode, mount options or volume_mount: heldConflict), a volume_mount destination
// a bind may not cover (bindsBindable: a directory holding files, a file for a file-system
// volume). Found claim by claim, the volumes before the refused one were staged, published and
// bound for the alloc, then released again, where the help and docs/architecture.md promise the alloc
// fails before anything is claimed (TestAllocWhoseSecondDestinationHoldsFilesClaimsNothing,
// TestAllocWithAChangedVolumeMountClaimsNothing). Each claim's admission checks again.
//
// A claim held is compared with the whole of the mount options it would be published with, the
// volume's (mounts, by volume ID) merged with the spec's, as admission compares them
// (exactMount): before, only admission did, and the alloc's other volumes were claimed first
// (TestAllocWithItsMountOptionsRemovedClaimsNothing).
//
// A claim held whose published target is covered since (targetCovered) is refused so too: the
// alloc's other volumes were claimed, then released, its admission refusing the cover at last
// (TestAllocWithACoveredHeldTargetClaimsNothing).
func (e *Engine) refusedBeforeClaiming(g spec.Group, index int, held []store.Claim, mounts map[string]*spec.MountOptions) error {
	for _, r := range g.Volumes {
		req := allocRequest(g, r, index)
		i := slices.IndexFunc(held, func(c store.Claim) bool { return !c.Releasing && sameInNFC(c.VolumeID, req.VolumeID) })
		if i >= 0 {
			req = heldRequest(req, held[i], mounts)
			if err := heldConflict(held[i], req, claimMode(req)); err != nil {
				return fmt.Errorf("claim %q for alloc %q: %w", req.VolumeID, req.Alloc, err)
			}
			if cl := held[i]; cl.State == store.ClaimPublished && cl.AtRest() && !cl.Degraded {
				if err := e.targetCovered(cl); errors.As(err, new(*coveredTarget)) {
					return err // names the claim, its target and the umount
				}
			}
			continue
		}
		if err := bindsBindable(req.Binds, req.AttachmentMode); err != nil {
			return fmt.Errorf("claim %q for alloc %q: %w", req.VolumeID, req.Alloc, err)
		}
	}
	return nil
}

// heldRequest is req, a group's claim request of the volume claim c holds, made to compare with
// c as admission compares it: a file-system claim with the whole of the mount options it would
// be published with, the volume's (mounts, by volume ID) merged with the spec's (exactMount).
// A run (refusedBeforeClaiming) and group status (unlikeSpec) both compare so: status built the
// request without them, and an alloc a run refused for mount options removed from its spec was
// called ready (TestGroupStatusOfAnAllocRefusedForItsMountOptionsRemovedIsNotReady).
func heldRequest(req ClaimRequest, c store.Claim, mounts map[string]*spec.MountOptions) ClaimRequest {
	if mo, ok := mounts[c.VolumeID]; ok && c.AttachmentMode == spec.FileSystem {
		req.exactMount = mo.Merge(req.MountOptions)
	}
	return req
}

// groupMounts is heldVolumesMountOptions of the groups' claims among claims.
func groupMounts(tx *store.Tx, claims []store.Claim) (map[string]*spec.MountOptions, error) {
	var ofGroups []store.Claim
	for _, c := range claims {
		if c.Group != "" {
			ofGroups = append(ofGroups, c)
		}
	}
	return heldVolumesMountOptions(tx, map[string][]store.Claim{"": ofGroups})
}

// heldVolumesMountOptions reads the mount options of each volume the claims in held are of.
func heldVolumesMountOptions(tx *store.Tx, held map[string][]store.Claim) (map[string]*spec.MountOptions, error) {
	out := map[string]*spec.MountOptions{}
	for _, claims := range held {
		for _, c := range claims {
			if _, ok := out[c.VolumeID]; ok {
				continue
			}
			v, err := tx.Volumes().Get(c.VolumeID)
			if errors.Is(err, store.ErrNotFound) {
				continue // admission says so
			}
			if err != nil {
				return nil, err
			}
			out[c.VolumeID] = v.MountOptions
		}
	}
	return out, nil
}

// allocsOverlap refuses, as invalid, a group whose volume_mount destinations, as bound for
// each of its count allocs, are one path or nest across two allocs (spec.AllocsOverlap, which
// the spec's reader refuses too): every run bound one alloc and refused the other, a conflict
// whose advice, the group's stop, changed nothing
// (TestGroupWhoseAllocsDestinationsOverlapIsRefusedOnceNotEveryRun). Refused before anything
// is recorded or claimed: a spec recorded before the reader refused it reaches here.
func allocsOverlap(g spec.Group) error {
	if first, second, how, ok := spec.AllocsOverlap(g); ok {
		return invalidf("%s", first.Overlap(second, how))
	}
	return nil
}

// allocRequest is the claim volume block r of g asks for alloc index.
func allocRequest(g spec.Group, r spec.VolumeRequest, index int) ClaimRequest {
	alloc := spec.AllocName(g.Name, index)
	return ClaimRequest{
		VolumeID: requestVolume(r, index), Alloc: alloc, Group: g.Name, ReadOnly: r.ReadOnly,
		AccessMode: r.AccessMode, AttachmentMode: r.AttachmentMode, MountOptions: r.MountOptions,
		Binds: groupBinds(g, r.Name, alloc, index),
	}
}

// requestVolume is the volume a group's volume block names for alloc index: its source, or
// SOURCE[index] for a per_alloc one.
func requestVolume(r spec.VolumeRequest, index int) string {
	if r.PerAlloc {
		return spec.AllocName(r.Source, index)
	}
	return r.Source
}

// allocClaims are the claims alloc (index of g) holds on g's volumes, as recorded.
func (e *Engine) allocClaims(ctx context.Context, g spec.Group, alloc string, index int) []ClaimInfo {
	out := []ClaimInfo{}
	for _, r := range g.Volumes {
		if ci, err := e.ClaimInfo(ctx, requestVolume(r, index), alloc); err == nil {
			out = append(out, ci)
		}
	}
	return out
}

// interruptedRun is the error of a group run interrupted before alloc index next: what it did
// not do, and what finishes or undoes what it did.
func interruptedRun(ctx context.Context, g spec.Group, next int) error {
	left := "the scale-down past its count was not done"
	switch {
	case next == g.Count-1:
		left = fmt.Sprintf("alloc %s was not run, nor the scale-down past its count", spec.AllocName(g.Name, next))
	case next < g.Count:
		left = fmt.Sprintf("allocs %s to %s were not run, nor the scale-down past its count", spec.AllocName(g.Name, next), spec.AllocName(g.Name, g.Count-1))
	}
	return fmt.Errorf("interrupted (%w): %s, and nothing it claimed was released: `volctl group run` of the same spec again finishes the group "+
		"(and `volctl reconcile` the claims it left), `%s` releases what it holds", context.Cause(ctx), left, shellquote.Command("volctl group stop", g.Name))
}

// holds reports whether alloc has a live claim on the volume.
func (e *Engine) holds(ctx context.Context, volumeID, alloc string) bool {
	_, err := e.ClaimInfo(ctx, volumeID, alloc)
	return err == nil
}

// heldClaimID is the ID of alloc's live claim on volumeID, 0 when it holds none.
func (e *Engine) heldClaimID(ctx context.Context, volumeID, alloc string) int64 {
	c, err := e.ClaimInfo(ctx, volumeID, alloc)
	if err != nil {
		return 0
	}
	return c.ID
}

// newOfGroup says whether alloc holds a live claim on volumeID that group made, other than
// claim had (0: none held before).
func (e *Engine) newOfGroup(ctx context.Context, volumeID, alloc, group string, had int64) bool {
	c, err := e.ClaimInfo(ctx, volumeID, alloc)
	return err == nil && c.ID != had && sameInNFC(c.Group, group)
}

// bindDests are the destinations of volume_mounts.
func bindDests(binds []spec.VolumeMount) []string {
	out := make([]string, 0, len(binds))
	for _, b := range binds {
		out = append(out, b.Destination)
	}
	return out
}

// groupBinds are the volume_mounts of one volume request for one alloc, placeholders replaced.
func groupBinds(g spec.Group, volume, alloc string, index int) []spec.VolumeMount {
	var out []spec.VolumeMount
	for _, m := range g.Mounts {
		if m.Volume != volume {
			continue
		}
		m.Destination = strings.NewReplacer(spec.PlaceholderIndex, strconv.Itoa(index), spec.PlaceholderAlloc, alloc).Replace(m.Destination)
		if m.PropagationMode == "" {
			m.PropagationMode = spec.PropagationPrivate
		}
		out = append(out, m)
	}
	return out
}

// allocIndex is the index of a group's alloc name ("web[2]" -> 2), -1 if it is not one.
func allocIndex(group, alloc string) int {
	rest, ok := strings.CutPrefix(alloc, group+"[")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
	if err != nil || !strings.HasSuffix(rest, "]") {
		return -1
	}
	return n
}

// StopGroup marks a group stopped and releases every claim its allocs hold.
func (e *Engine) StopGroup(ctx context.Context, name string) (GroupInfo, error) {
	if err := e.checkMountView(ctx, ""); err != nil {
		return GroupInfo{}, fmt.Errorf("stop group %q: %w", name, err)
	}
	return byStoredID(ctx, e, store.GroupNames, name, func(id string) (GroupInfo, error) { return e.stopGroupStored(ctx, id) })
}

// stopGroupStored is StopGroup of the ID as stored (byStoredID).
func (e *Engine) stopGroupStored(ctx context.Context, name string) (GroupInfo, error) {
	ctx = withHungPlugins(ctx, "this group stop", "`volctl reconcile`") // as runGroup's
	ctx = e.withCommandPlaces(ctx)                                      // as runGroup's
	err := e.store.Update(ctx, func(tx *store.Tx) error {
		g, err := tx.Groups().Get(name)
		if err != nil {
			return err
		}
		g.State = store.GroupStopped
		return tx.Groups().Put(&g)
	})
	if errors.Is(err, store.ErrNotFound) {
		return GroupInfo{}, notFoundf("group %q not found", name)
	}
	if err != nil {
		return GroupInfo{}, fmt.Errorf("stop group %q: %w", name, err)
	}
	e.failpoint("group:stopped") // the group recorded stopped; none of its claims released yet
	released, meanwhile, overtaken, err := e.releaseGroupPast(ctx, name, func(store.Claim) bool { return true }, false)
	if err != nil && len(released) > 0 {
		// What the stop did release, which the error would otherwise leave unsaid.
		err = fmt.Errorf("%w; it released %s", err, listSome(released, 10, func(r ReleasedClaim) string { return fmt.Sprintf("%q for alloc %q", r.VolumeID, r.Alloc) }))
	}
	switch {
	case overtaken != nil && err != nil:
		return GroupInfo{}, fmt.Errorf("stop group %q: %w; and %w (`volctl reconcile` finishes those releases)", name, overtaken, err)
	case overtaken != nil:
		return GroupInfo{}, fmt.Errorf("stop group %q: %w", name, overtaken)
	case err != nil:
		return GroupInfo{}, fmt.Errorf("stop group %q: %w (the group is stopped; `volctl reconcile` finishes the release)", name, err)
	}
	infos, err := e.Groups(ctx, name)
	if errors.Is(err, ErrNotFound) {
		// Purged by another volctl once this stop recorded it stopped (its releases found the
		// claims gone, or made them): stopped and forgotten, not "not found"
		// (TestGroupStopBesideAPurgeSucceeds). PurgeGroup's forgetGroup takes it so too.
		return GroupInfo{Name: name, State: string(store.GroupStopped), Released: released, ReleasedMeanwhile: meanwhile}, nil
	}
	if err != nil {
		return GroupInfo{}, err
	}
	infos[0].Released, infos[0].ReleasedMeanwhile = released, meanwhile
	return infos[0], nil
}

// PurgeGroup is StopGroup, then, once the group holds no claim, forgets it, as `nomad job stop
// -purge` does: its record and its run errors go, `group status` lists it no more, its lock file
// goes, and a `group run` of its name makes a new group. Before, a stopped group was kept for
// good, and a state dir running a group per CI job listed every one of them in `group status`
// without end. A group whose claims the stop did not all release is kept, stopped: claim GC
// finds a stopped group's claims to release by its record (pastClaim), and a claim of a group
// forgotten would be held for good. The error says so; the same command again purges it once
// they are released. A group run again while the stop released its claims is kept too
// (a conflict): that run has handed its claims out.
func (e *Engine) PurgeGroup(ctx context.Context, name string) (GroupInfo, error) {
	if err := e.checkMountView(ctx, ""); err != nil {
		return GroupInfo{}, fmt.Errorf("purge group %q: %w", name, err)
	}
	return byStoredID(ctx, e, store.GroupNames, name, func(id string) (GroupInfo, error) {
		info, err := e.stopGroupStored(ctx, id)
		if err != nil {
			switch {
			case errors.Is(err, ErrNotFound):
				return info, err
			case errors.Is(err, ErrConflict):
				// Overtaken by a run of the group: it runs again, its claims handed out.
				return info, fmt.Errorf("%w; it is not purged", err)
			}
			return info, fmt.Errorf("%w; it is not purged: it stays recorded, stopped, for the reconcile that releases its claims, and `%s` forgets it once they are released",
				err, shellquote.Command("volctl group stop --purge", id))
		}
		e.failpoint("group:purging") // stopped, its claims released; the group still recorded
		return info, e.forgetGroup(ctx, &info)
	})
}

// forgetGroup removes stopped group info.Name's record under the group's lock (runGroup's), when
// it is still stopped and holds no claim, and then its lock file (removeHeld).
func (e *Engine) forgetGroup(ctx context.Context, info *GroupInfo) error {
	unlock, err := e.locks.group(ctx, info.Name)
	if err != nil {
		return fmt.Errorf("purge group %q: %w (it is stopped, its claims released, and kept)", info.Name, err)
	}
	defer unlock()
	err = e.store.Update(ctx, func(tx *store.Tx) error {
		g, err := tx.Groups().Get(info.Name)
		if err != nil {
			return err
		}
		if g.State != store.GroupStopped {
			return conflictf("group %q was run again while this stop released its claims: it is not purged (`%s` shows it)", info.Name, shellquote.Command("volctl group status", info.Name))
		}
		all, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		var held []string
		for _, c := range all {
			if c.Group == info.Name {
				held = append(held, fmt.Sprintf("%q for alloc %q", c.VolumeID, c.Alloc))
			}
		}
		if len(held) > 0 {
			return conflictf("group %q holds %s again: it is not purged (it is stopped; claim GC releases them)", info.Name, listSome(held, 10, func(s string) string { return s }))
		}
		return tx.Groups().Delete(info.Name)
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Purged meanwhile by another volctl: forgotten all the same.
	case err != nil:
		return fmt.Errorf("purge group %q: %w", info.Name, err)
	default:
		e.locks.removeHeld(groupLockName(info.Name))
	}
	info.Purged = true
	return nil
}

// releaseGroupPast releases the group's claims that match as claim GC does (releasePast, with
// beyondCount for a scale-down): each one checked again by its ID under its volume's lock, and
// released only while it is still a past claim. A claim freed meanwhile is left alone (its
// alloc may hold a new one since), and so are the claims of a group another volctl ran again
// since this stop or scale-down recorded the group: that run has handed them out. This one is
// then overtaken: a conflict naming them. released are the claims it released, meanwhile those
// another volctl released while this one waited for them, each by alloc index and volume (the
// order a user reads them in, not the nesting order they were released in).
func (e *Engine) releaseGroupPast(ctx context.Context, group string, match func(store.Claim) bool, beyondCount bool) (released, meanwhile []ReleasedClaim, overtaken, err error) {
	var claims []store.Claim
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		all, err := tx.Claims().ListAll()
		for _, c := range all {
			if c.Group == group && match(c) {
				claims = append(claims, c)
			}
		}
		return err
	}); err != nil {
		return nil, nil, nil, err
	}
	var (
		errs []error
		kept []store.Claim
	)
	// Innermost volume_mount first: an outer bind with another mounted below it cannot be
	// unmounted (EBUSY).
	claims = nestingOrder(claims, func(c store.Claim) []string { return bindDests(c.Binds) }, false)
	for _, c := range claims {
		switch err := e.releasePast(ctx, c.ID, c.VolumeID, beyondCount); {
		case errors.Is(err, errNotPast):
			kept = append(kept, c)
		case err != nil:
			errs = append(errs, fmt.Errorf("release %q for alloc %q: %w", c.VolumeID, c.Alloc, err))
		default:
			released = append(released, ReleasedClaim{VolumeID: c.VolumeID, Alloc: c.Alloc})
		}
	}
	byAlloc := func(a, b ReleasedClaim) int {
		return cmp.Or(cmp.Compare(allocIndex(group, a.Alloc), allocIndex(group, b.Alloc)), cmp.Compare(a.Alloc, b.Alloc), cmp.Compare(a.VolumeID, b.VolumeID))
	}
	slices.SortFunc(released, byAlloc)
	if len(kept) == 0 {
		return released, nil, nil, errors.Join(errs...)
	}
	// Not past: freed meanwhile, or its group run again. Only the second overtakes this one.
	var held []store.Claim
	if err := e.store.View(ctx, func(tx *store.Tx) error {
		for _, c := range kept {
			if _, err := tx.Claims().Get(c.ID); err == nil {
				held = append(held, c)
			} else if errors.Is(err, store.ErrNotFound) {
				meanwhile = append(meanwhile, ReleasedClaim{VolumeID: c.VolumeID, Alloc: c.Alloc})
			} else {
				return err
			}
		}
		return nil
	}); err != nil {
		return released, nil, nil, errors.Join(append(errs, err)...)
	}
	slices.SortFunc(meanwhile, byAlloc)
	if len(held) > 0 {
		// Said beside the failed releases too: a stop one of whose releases failed, overtaken
		// by a run, said only that the group was stopped (TestGroupStopWithAFailedReleaseOvertakenByARunSaysSo).
		overtaken = conflictf("group %q was run again by another volctl meanwhile: the run holds its claims %s, which are kept",
			group, listSome(held, 5, func(c store.Claim) string { return fmt.Sprintf("%q for alloc %q", c.VolumeID, c.Alloc) }))
	}
	return released, meanwhile, overtaken, errors.Join(errs...)
}

// Groups returns one group (or all, when name is empty) with each alloc's live claims.
func (e *Engine) Groups(ctx context.Context, name string) ([]GroupInfo, error) {
	return byStoredID(ctx, e, store.GroupNames, name, func(id string) ([]GroupInfo, error) { return e.groupsStored(ctx, id) })
}

// groupsStored is Groups of the ID as stored (byStoredID).
func (e *Engine) groupsStored(ctx context.Context, name string) ([]GroupInfo, error) {
	var out []GroupInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		groups, err := oneOrAll(name, tx.Groups().Get, tx.Groups().List)
		if err != nil {
			return err
		}
		claims, err := tx.Claims().ListAll()
		if err != nil {
			return err
		}
		mounts, err := groupMounts(tx, claims)
		if err != nil {
			return err
		}
		for _, g := range groups {
			out = append(out, groupInfo(g, claims, mounts))
		}
		return nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, notFoundf("group %q not found", name)
	}
	e.markUnbound(out)
	return out, err
}

// markUnbound marks each volume_mount of a claim at rest in group info whose destination does
// not show the claim's volume now (Bind.Unbound), and adds to its alloc's error what is there
// instead and what binds it again. Before, an alloc whose bind a run again refused (a file
// written in the bare destination, something else mounted there), its claims kept, read ready
// with its bind listed, the run's error hidden
// (TestGroupStatusDoesNotCallReadyAnAllocWhoseBindIsGone). What is said is what is there now,
// not the last run's error, which reconcile may have made stale
// (TestGroupStatusSaysWhatIsAtTheDestinationNow). group status and the dashboard both mark.
func (e *Engine) markUnbound(infos []GroupInfo) {
	// Every look of the view (each claim at rest's target, and each of its binds) is made at once
	// and bounded together, one bound for the whole view: a look per claim, each
	// waiting its own bound, held group status and every dashboard refresh n times the bound
	// (TestGroupStatusOfManyCoveredClaimsIsBoundedAsAWhole), and a destination a file system that
	// does not answer is mounted over held them for as long as it did not
	// (TestGroupStatusIsNotHeldByAVolumeMountDestinationThatDoesNotAnswer).
	until := time.Now().Add(viewLookBound)
	type at struct{ g, a, c int }
	var claims []at
	var look []ClaimInfo
	for g := range infos {
		for a := range infos[g].Allocs {
			for c, cl := range infos[g].Allocs[a].Claims {
				if cl.AtRest() {
					claims, look = append(claims, at{g, a, c}), append(look, cl)
				}
			}
		}
	}
	// Each bind of each claim at rest is looked at while the covers are, its answer kept only
	// for a claim not covered: started once the covers were answered, under a bound one hung
	// cover had used up, the binds of every other alloc were said not to answer, never waited for
	// (TestGroupStatusDoesNotSayAHealthyVolumeMountDidNotAnswerForAnotherAllocsHungCover).
	type bindAt struct {
		at
		k int
	}
	var binds []bindAt
	var bindLooks []func() string
	var bindKeys []string
	for _, w := range claims {
		c := infos[w.g].Allocs[w.a].Claims[w.c]
		for k, b := range c.Binds {
			group, target := infos[w.g].Name, c.TargetPath
			binds = append(binds, bindAt{w, k})
			bindLooks = append(bindLooks, func() string { return e.bindShows(group, target, b) })
			bindKeys = append(bindKeys, fmt.Sprintf("bind\x00%s\x00%s\x00%+v", group, target, b))
		}
	}
	bound := make(chan []string, 1)
	crash.Go(func() {
		bound <- boundedLooks(&e.looks, bindKeys, bindLooks, until, func(i int) string {
			d := infos[binds[i].g].Allocs[binds[i].a].Claims[binds[i].c].Binds[binds[i].k].Destination
			return fmt.Sprintf("did not answer a look within %s (a file system whose server is gone, mounted over it?): what the alloc sees there cannot be told; `%s` lists what is mounted there",
				viewLookBound, shellquote.Command("findmnt", d))
		})
	})
	covers := e.coversForViewUntil(look, until)
	shown := <-bound
	// What is said, alloc by alloc, in the order of its claims: a cover, else its binds.
	whyOf := map[[2]int][]string{}
	for n, w := range claims {
		c := &infos[w.g].Allocs[w.a].Claims[w.c]
		// Its target covered since its publish (or its mount lost): said as reconcile says it,
		// and its binds not compared with the cover. A bind made before the cover, still
		// showing the volume, was called something else, its unmount advised, and an alloc whose
		// claim again a run refused for the cover was said ready
		// (TestGroupStatusNamesTheCoveredTargetNotTheVolumeMountThatShowsTheVolume,
		// TestGroupStatusAfterARunRefusedACoveredTargetDoesNotCallTheAllocReady).
		switch l := covers[n]; {
		case l.covered != "":
			l.mark(c) // not ready (TestGroupStatusDoesNotCountReadyAnAllocWhoseTargetIsCovered)
			whyOf[[2]int{w.g, w.a}] = append(whyOf[[2]int{w.g, w.a}], l.covered)
			continue
		case l.err != nil:
			whyOf[[2]int{w.g, w.a}] = append(whyOf[[2]int{w.g, w.a}], l.err.Error())
			continue
		}
		for i, b := range binds {
			if b.at != w || shown[i] == "" {
				continue
			}
			bd := &c.Binds[b.k]
			bd.Unbound = true
			whyOf[[2]int{w.g, w.a}] = append(whyOf[[2]int{w.g, w.a}], fmt.Sprintf("volume_mount %s %s", bd.Destination, shown[i]))
		}
	}
	for key, why := range whyOf {
		a := &infos[key[0]].Allocs[key[1]]
		if a.Error != "" {
			why = append([]string{a.Error}, why...)
		}
		a.Error = strings.Join(why, "; ")
	}
}

// bindShows says, of a volume_mount destination of group's claim published at target, what is
// there instead of the volume and what to do, "" when the volume is (what bindMount finds
// bound: something mounted there that is the claim's target's file). The destination is opened
// as a bind opens it, following no symlink. A target that cannot be opened, or has lost its own
// mount, is the claim's to say, not the bind's: what is at the destination is then not compared
// with it (the volume's own bind there would read as something else, and unmounting it, as that
// advised, took the volume from under the alloc: TestGroupStatusDoesNotCallTheVolumesOwnBindSomethingElse).
// Each way out is what reconcile and a run do: reconcile binds a destination with nothing
// mounted again, and says first where a bind it made moved with a directory above it
// (TestGroupStatusAdviceForADestinationGoneIsFollowed); a run does not move a held claim's
// volume_mount, a stop first does (TestGroupStatusAdviceForASymlinkedDestinationIsFollowed).
func (e *Engine) bindShows(group, target string, b Bind) string {
	dest := b.Destination
	src, err := openNoFollow(e.cfg.StateDir, e.realPath(target), createNothing)
	if err != nil {
		return ""
	}
	defer src.close()
	targetMounted, err := src.mounted()
	if err != nil {
		return ""
	}
	const again = "`volctl reconcile` binds the volume there again (and says first where the bind it made is, if it moved elsewhere with a directory above it: unmount it there)"
	d, err := openNoFollow("/", dest, createNothing)
	var se *symlinkError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("is reached through a symlink at %s (a directory above it moved?), which volctl does not follow: what is there cannot be told, and a run of the group refuses it; "+
			"put the directory back where it was, or release the alloc's claims (`%s`, which says what of the moved bind to unmount) and run the group's spec with the volume_mount's path now", se.Component, shellquote.Command("volctl group stop", group))
	case errors.Is(err, fs.ErrNotExist):
		return "is gone (removed, or moved with a directory above it, since it was bound): " + again
	case err != nil:
		return fmt.Sprintf("cannot be looked at: %v", err)
	}
	defer d.close()
	mounted, err := d.mounted()
	if err != nil {
		return fmt.Sprintf("cannot be looked at: %v", err)
	}
	if !mounted {
		return "has nothing mounted (unmounted, or moved, since it was bound): " + again + "; on an empty directory: move away what was written there since"
	}
	if !targetMounted {
		return "" // the claim's target lost its mount: its restore (reconcile) is the claim's, and what is here may be its bind
	}
	if same, err := d.sameFile(src); err != nil || !same {
		return "has something else mounted, not the volume (mounted over it, or in its place): unmount that, then `volctl reconcile` binds the volume there again"
	}
	// The volume, but not as the volume_mount asks: a read_only bind remounted writable lets the
	// alloc write what its spec gives it to read, which a run again finds and mends
	// (bindModeDiffers); before, status said nothing of it
	// (TestGroupStatusDoesNotCallAReadOnlyVolumeMountRemountedWritableBound).
	if differs := bindModeDiffers(src, d, spec.VolumeMount{Destination: dest, ReadOnly: b.ReadOnly}); differs != "" {
		return "is bound " + differs + " (remounted since it was bound): `volctl reconcile` binds it as the volume_mount asks again"
	}
	return ""
}

func groupInfo(g store.Group, claims []store.Claim, mounts map[string]*spec.MountOptions) GroupInfo {
	info := GroupInfo{Name: g.Name, State: string(g.State), Count: g.Count, key: g.Name}
	byAlloc := map[string][]ClaimInfo{}
	stored := map[string][]store.Claim{}
	for _, c := range claims {
		if c.Group == g.Name {
			byAlloc[c.Alloc] = append(byAlloc[c.Alloc], claimInfo(c))
			stored[c.Alloc] = append(stored[c.Alloc], c)
		}
	}
	n := g.Count
	if g.State == store.GroupStopped {
		n = 0
	}
	for i := 0; i < n; i++ {
		name := spec.AllocName(g.Name, i)
		// A claim being released gives the alloc nothing: a run that failed, its claim's
		// rollback and release cut short at an RPC, left the alloc that claim alone, read as
		// holding its volume, the run's error hidden
		// (TestGroupStatusSaysWhyARunLeftAnAllocOnlyAClaimBeingReleased). Its volume is not
		// listed missing beside it, though: its row says reconcile finishes the release, where
		// "missing: a run cut short, run it again" advised a run that its release refuses
		// (TestGroupStatusOfAnAllocWhoseClaimIsBeingReleasedAdvisesWhatWorks).
		held := heldClaims(byAlloc[name])
		a := AllocInfo{Name: name, Index: i, Claims: nonNilClaims(byAlloc[name]), Missing: lacking(g.Spec, i, byAlloc[name])}
		switch {
		case len(held) == 0 || len(a.Missing) > 0:
			a.Error = g.RunErrors[name] // why the last run left it without (some of) its volumes
			a.RunError = a.Error
		case g.State != store.GroupStopped:
			// Held otherwise than the group's spec asks (a run of an edited spec refused it,
			// keeping its claims): read now, as the run reads it, not the run's error, which
			// reconcile may have made stale. Before, counted ready, the refusal nowhere
			// (TestGroupStatusDoesNotCallReadyAnAllocARunAgainRefusedForItsEditedSpec).
			a.Error = unlikeSpec(g.Spec, i, stored[name], mounts)
		}
		info.Allocs = append(info.Allocs, a)
		delete(byAlloc, name)
	}
	info.State = groupState(g.State, n, info.Allocs)
	// Allocs past the count (still releasing, or left by a failed scale-down).
	var rest []string
	for a := range byAlloc {
		rest = append(rest, a)
	}
	sort.Strings(rest)
	for _, a := range rest {
		info.Allocs = append(info.Allocs, AllocInfo{Name: a, Index: allocIndex(g.Name, a), Claims: byAlloc[a]})
	}
	return info
}

// unlikeSpec says how alloc index of group spec g holds its claims (those not being released)
// otherwise than g asks, as a run of g finds it (heldConflict against heldRequest: the mode,
// access and attachment modes, mount options with the volume's (mounts), volume_mount binds;
// or a volume g no longer names), each with what frees it; "" when as it asks.
func unlikeSpec(g spec.Group, index int, claims []store.Claim, mounts map[string]*spec.MountOptions) string {
	var why []string
	for _, c := range claims {
		if c.Releasing {
			continue
		}
		i := slices.IndexFunc(g.Volumes, func(r spec.VolumeRequest) bool { return sameInNFC(c.VolumeID, requestVolume(r, index)) })
		if i < 0 {
			why = append(why, fmt.Sprintf("holds a claim on %q, which the group's spec no longer names (`%s`, then `volctl group run FILE` of the spec, applies it)", c.VolumeID, freeCommand(c)))
			continue
		}
		req := heldRequest(allocRequest(g, g.Volumes[i], index), c, mounts)
		if err := heldConflict(c, req, claimMode(req)); err != nil {
			why = append(why, fmt.Sprintf("volume %q: %v", c.VolumeID, err))
		}
	}
	return strings.Join(why, "; ")
}

// lacking lists the volumes of group spec g that alloc index, holding claims, holds none of,
// as the run names them (a per_alloc volume's NAME[i]); nil when it holds none at all (a failed
// or not yet run alloc: it has none of its volumes, as a run leaves it) or every one. A run
// killed or interrupted between the claims of one alloc leaves it holding some: counted ready
// and shown by what it held, the group read as up
// (TestGroupStatusSaysWhatAnAllocCutShortLacks).
func lacking(g spec.Group, index int, claims []ClaimInfo) []string {
	if len(claims) == 0 {
		return nil
	}
	var out []string
	for _, r := range g.Volumes {
		vol := requestVolume(r, index)
		if !slices.ContainsFunc(claims, func(c ClaimInfo) bool { return sameInNFC(c.VolumeID, vol) }) && !slices.Contains(out, vol) {
			out = append(out, vol)
		}
	}
	return out
}

func nonNilClaims(c []ClaimInfo) []ClaimInfo {
	if c == nil {
		return []ClaimInfo{}
	}
	return c
}
