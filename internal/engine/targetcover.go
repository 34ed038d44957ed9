package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/store"
)

// targetShows is what claim cl's target shows once its NodePublishVolume was accepted
// (stagingShows of the target): recorded with the claim, as a staging's mount is, so that a file
// system mounted over the target since is told from the volume (targetCovered). nil when it is
// not known: nothing mounted at the target itself (a block volume's file, a plugin that mounts
// below it), a table that cannot say (a test's), or a read that failed, which costs the check
// and not the claim (logged).
func (e *Engine) targetShows(cl *store.Claim) *store.TargetMount {
	m, err := e.stagingShows(cl.TargetPath)
	if err != nil {
		e.log.Warn("reading what a published target shows: it is not recorded, and a file system mounted over it later is not told from the volume",
			"volume", cl.VolumeID, "alloc", cl.Alloc, "target", cl.TargetPath, "err", err)
		return nil
	}
	if m.root == "" {
		return nil
	}
	return &store.TargetMount{Dev: m.dev, Root: m.root, Ino: m.ino, Birth: m.birth}
}

// coveredTarget is a published claim whose target no longer shows what its NodePublishVolume
// made there (targetCovered): mounts stacked over it since (over), or it replaced. Its alloc
// reads and writes what is mounted there, not the volume, and what it writes is not on the
// volume. Reconcile reports it every pass, the claim held and every mount left, since unmounting
// anything there would pull it from under the alloc; a claim again by the alloc is a conflict.
type coveredTarget struct {
	cl       store.Claim
	over     int
	replaced bool
	// releasing: met by the claim's release, which has marked it releasing already; the words
	// said "nothing was changed" of a claim the release had changed (releasing), and that
	// reconcile would mount the volume again, where it finishes the release.
	releasing bool
}

func (c *coveredTarget) Is(target error) bool { return target == ErrConflict }

func (c *coveredTarget) Error() string {
	changed, again, after := "nothing was changed", ", which mounts the volume there again", ""
	if c.releasing {
		changed, again, after = "nothing was unmounted (the claim is marked releasing)", ", which finishes the release", ", which finishes the release"
	}
	if c.replaced {
		return fmt.Sprintf("claim %q for alloc %q: its target %s no longer shows what NodePublishVolume mounted there (unmounted, and another file system mounted in its place, since): "+
			"its alloc sees that, not the volume, and what it writes there is not on the volume; %s: unmount what is there (`%s`, until `findmnt %s` lists nothing), "+
			"then run `volctl reconcile`%s",
			c.cl.VolumeID, c.cl.Alloc, c.cl.TargetPath, changed, shellquote.Command("umount", c.cl.TargetPath), shellquote.Arg(c.cl.TargetPath), again)
	}
	times := "once"
	if c.over > 1 {
		times = fmt.Sprintf("%d times", c.over)
	}
	return fmt.Sprintf("claim %q for alloc %q: its target %s has %d mount(s) stacked over the one NodePublishVolume made (mounted there since, by hand or by a program): "+
		"its alloc sees the topmost, not the volume, and what it writes there is not on the volume; %s: unmount them (`%s`, %s), then run `volctl reconcile`%s",
		c.cl.VolumeID, c.cl.Alloc, c.cl.TargetPath, c.over, changed, shellquote.Command("umount", c.cl.TargetPath), times, after)
}

// targetCovered refuses to take published claim cl's target as its mount in place when it no
// longer shows what was recorded of it once published (cl.TargetMount): before, reconcile took
// "something is mounted at the target" for the claim's mount, and said "every mount is in place"
// of a target a tmpfs covered (TestReconcileSaysAPublishedTargetCoveredByAnotherMount). Nothing
// recorded (a claim published by an older volctl, a target with no mount of its own) is not
// compared. A claim again of a held claim is refused so too, as a conflict
// (TestClaimAgainOfAHeldClaimWhoseTargetIsCoveredIsAConflict).
func (e *Engine) targetCovered(cl store.Claim) error { return e.targetCoveredOrLost(cl, nil) }

// targetCoveredOrLost is targetCovered, setting *lost, when given, where the table has nothing
// mounted at the target (a view says that: lostTarget).
func (e *Engine) targetCoveredOrLost(cl store.Claim, lost *bool) error {
	m := cl.TargetMount
	if m == nil || m.Root == "" {
		return nil
	}
	was := stagingMark{mountRoot: mountRoot{dev: m.Dev, root: m.Root}, ino: m.Ino, birth: m.Birth}
	// The table's word first, which touches no file system: a topmost mount of the recorded
	// device and root is taken as the one published, with no statx of a target whose file
	// system may hang (a hard NFS mount whose server is gone, under the volume's lock, every
	// pass), as claimWritable reads the table alone. Only another one there is looked into.
	if mr, ok := e.cfg.Mounts.(mountRoots); ok {
		real := e.realPath(cl.TargetPath)
		roots, err := mr.MountRoots(real)
		if err != nil {
			return fmt.Errorf("claim %q for alloc %q: reading what its target %s shows: %w", cl.VolumeID, cl.Alloc, cl.TargetPath, err)
		}
		if top := roots[real]; top.root == "" || top == was.mountRoot {
			if lost != nil {
				*lost = top.root == ""
			}
			return nil
		}
	}
	over, replaced, err := e.coverOf("target", cl.TargetPath, was)
	switch {
	case err != nil:
		return fmt.Errorf("claim %q for alloc %q: %w", cl.VolumeID, cl.Alloc, err)
	case over > 0 || replaced:
		return &coveredTarget{cl: cl, over: over, replaced: replaced}
	}
	return nil
}

// viewLook is what a view's look at one published claim's target found (coversForView):
// covered, targetCovered's words (or lostTarget's, lost set: nothing is mounted there); err,
// what kept it from being told (a read that failed, which is not said as a cover:
// TestVolumeStatusDoesNotCallATargetCoveredWhenItsMountCannotBeRead).
type viewLook struct {
	covered string
	lost    bool
	err     error
}

// mark sets c's Covered and TargetUnmounted as l found them.
func (l viewLook) mark(c *ClaimInfo) { c.Covered, c.TargetUnmounted = l.covered, l.lost }

// coversForView looks at each of cs's targets as a view has it (targetCovered, lostTarget), the
// looks made at once and bounded together (viewLookBound): what is at a target whose topmost
// mount is another is looked into (statx), and a file system that does not answer (a hard NFS
// mount whose server is gone) held the view for as long as it was gone; past the bound, the
// table's word stands, said as such (TestVolumeStatusIsNotHeldByACoverThatDoesNotAnswer).
// Waited for one after the other, a view of many covered claims whose file systems did not
// answer took the bound as many times (TestVolumeStatusOfManyCoveredClaimsIsBoundedAsAWhole).
func (e *Engine) coversForView(cs []ClaimInfo) []viewLook {
	return e.coversForViewUntil(cs, time.Now().Add(viewLookBound))
}

// coversForViewUntil is coversForView with the looks waited for until until (a view that makes
// other looks under the same bound: markUnbound).
func (e *Engine) coversForViewUntil(cs []ClaimInfo, until time.Time) []viewLook {
	looks := make([]func() viewLook, len(cs))
	keys := make([]string, len(cs))
	for i, c := range cs {
		if c.State != string(store.ClaimPublished) || !c.AtRest() {
			continue
		}
		keys[i] = "cover\x00" + c.VolumeKey() + "\x00" + c.AllocKey() + "\x00" + c.TargetPath
		looks[i] = func() viewLook {
			cl := store.Claim{VolumeID: c.VolumeKey(), Alloc: c.AllocKey(), TargetPath: c.TargetPath, TargetMount: c.targetMount}
			var lost bool
			err := e.targetCoveredOrLost(cl, &lost)
			if ct := (*coveredTarget)(nil); errors.As(err, &ct) {
				return viewLook{covered: err.Error()}
			}
			if err == nil && lost {
				return viewLook{covered: lostTarget(cl), lost: true}
			}
			return viewLook{err: err}
		}
	}
	// Past the bound, the table's word stands, said as such.
	return boundedLooks(&e.looks, keys, looks, until, func(i int) viewLook {
		c := cs[i]
		return viewLook{covered: fmt.Sprintf("claim %q for alloc %q: its target %s shows another mount than its NodePublishVolume made (what is there did not answer a look within %s: "+
			"a file system whose server is gone?); its alloc sees that, not the volume: `%s` lists what is mounted there",
			c.VolumeID, c.Alloc, c.TargetPath, viewLookBound, shellquote.Command("findmnt", c.TargetPath))}
	})
}

// boundedLooks runs each of looks (a nil one is no look: its answer is T's zero) at once and
// returns their answers, waiting for them until until: a look not answered by then is said by
// late(i). A view's looks at what a mount that may not answer shows (a hard NFS mount whose
// server is gone) go through it, so that one such mount holds the view the bound once, not once
// per look (coversForViewUntil, markUnbound). Each look runs under its key (keys[i]) in f: one
// still under way for that key, an earlier view's stuck in the kernel, is waited for, not
// started again, so that views and scrapes of a path that never answers leave one goroutine
// asleep on it, not one each (TestScrapesDoNotPileUpGoroutinesOnAHungMount).
func boundedLooks[T any](f *lookFlights, keys []string, looks []func() T, until time.Time, late func(i int) T) []T {
	out := make([]T, len(looks))
	got := make([]*lookFlight, len(looks))
	for i, look := range looks {
		if look == nil {
			continue
		}
		got[i] = f.start(keys[i], func() any { return look() })
	}
	deadline := time.NewTimer(time.Until(until))
	defer deadline.Stop()
	expired := false
	for i, fl := range got {
		if fl == nil {
			continue
		}
		if !expired {
			select {
			case <-fl.done:
				out[i] = fl.val.(T)
				continue
			case <-deadline.C:
				expired = true
			}
		}
		select {
		case <-fl.done:
			out[i] = fl.val.(T)
		default:
			out[i] = late(i)
		}
	}
	return out
}

// lookFlights holds the looks under way (boundedLooks), by key: at most one each.
type lookFlights struct {
	mu sync.Mutex
	m  map[string]*lookFlight
}

// lookFlight is one look under way: val is its answer once done is closed.
type lookFlight struct {
	done chan struct{}
	val  any
}

// start returns the look under way for key, starting look (in a goroutine of its own) when
// none is.
func (f *lookFlights) start(key string, look func() any) *lookFlight {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl, ok := f.m[key]; ok {
		return fl
	}
	if f.m == nil {
		f.m = map[string]*lookFlight{}
	}
	fl := &lookFlight{done: make(chan struct{})}
	f.m[key] = fl
	crash.Go(func() {
		fl.val = look()
		f.mu.Lock()
		delete(f.m, key)
		f.mu.Unlock()
		close(fl.done)
	})
	return fl
}

// lostTarget says, for a view, of published claim cl whose publish recorded a mount of its own
// at its target (cl.TargetMount), that the table has nothing mounted there now (unmounted since,
// by hand, or a reboot before reconcile: targetCoveredOrLost): its alloc sees the host's disk,
// not the volume. Before, a view said it published, at rest, and group status counted its alloc
// ready (TestGroupStatusDoesNotCallReadyAnAllocWhoseTargetLostItsMount).
func lostTarget(cl store.Claim) string {
	return fmt.Sprintf("claim %q for alloc %q: its target %s has nothing mounted, where NodePublishVolume mounted the volume (unmounted since, or a reboot): "+
		"its alloc sees the host's disk there, not the volume, and what it writes is not on the volume; `volctl reconcile` mounts the volume there again",
		cl.VolumeID, cl.Alloc, cl.TargetPath)
}

// markCovered sets Covered of each claim of cs that coversForView says is covered, asking the mount
// table for all their targets at once: one read for a view of many claims (the dashboard's, a
// volume's detail), where a look per claim reads it once each. Only a target whose topmost
// mount is not the one recorded is looked into further.
func (e *Engine) markCovered(cs []ClaimInfo) {
	var idx []int
	var paths []string
	for i := range cs {
		c := &cs[i]
		if c.State == string(store.ClaimPublished) && c.AtRest() && c.targetMount != nil && c.targetMount.Root != "" {
			idx = append(idx, i)
			paths = append(paths, e.realPath(c.TargetPath))
		}
	}
	if len(idx) == 0 {
		return
	}
	until := time.Now().Add(viewLookBound)
	if mr, ok := e.cfg.Mounts.(mountRoots); ok {
		// A statx of each target, which a file system on the way to one that does not answer
		// (a plugin's NFS mount over the publish directory, its server gone) holds in the
		// kernel: bounded with the looks after it, under one key, as a view's other looks are.
		// Before, a scrape or a status held on it for as long as it did not answer
		// (TestScrapeIsNotHeldByAHungMountAboveAPublishedTarget). Joined by a view of other
		// targets, its answer lacks theirs, and they are looked into as another mount is.
		type answer struct {
			roots map[string]mountRoot
			err   error
		}
		got := boundedLooks(&e.looks, []string{"mount-roots"}, []func() answer{func() answer {
			roots, err := mr.MountRoots(paths...)
			return answer{roots, err}
		}}, until, func(int) answer {
			return answer{err: fmt.Errorf("no answer within %s (a file system on the way to a target whose server is gone?)", viewLookBound)}
		})[0]
		roots, err := got.roots, got.err
		if err != nil {
			e.log.Warn("reading what published targets show: whether they are covered is not said", "err", err)
			return
		}
		kept := idx[:0]
		for k, i := range idx {
			m := cs[i].targetMount
			// Another mount on top, or none (lost: lostTarget).
			if top := roots[paths[k]]; top != (mountRoot{dev: m.Dev, root: m.Root}) {
				kept = append(kept, i)
			}
		}
		idx = kept
	}
	// Only a target whose topmost mount is another is looked into, all within one bound
	// (coversForView).
	look := make([]ClaimInfo, len(idx))
	for k, i := range idx {
		look[k] = cs[i]
	}
	for k, l := range e.coversForViewUntil(look, until) {
		i := idx[k]
		if l.err != nil {
			e.log.Warn("reading what a published target shows: whether it is covered is not said", "volume", cs[i].VolumeKey(), "alloc", cs[i].AllocKey(), "err", l.err)
		}
		l.mark(&cs[i])
	}
}

// viewLookBound is how long a view waits for a look at what covers a published target.
const viewLookBound = 2 * time.Second

// heldAsFound says err, a published claim's settling, is a problem found at a mount that is left
// as it is (a read-only target mounted read-write, a target covered): the claim stays held.
func heldAsFound(err error) bool {
	return errors.As(err, new(*writableClaim)) || errors.As(err, new(*coveredTarget))
}
