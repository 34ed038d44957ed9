package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// chaos32: two volctl processes, the first paused at each failpoint it passes (the checkpoints
// the crash tests kill it at) while the second runs its command; then the first goes on. Both
// must tell the truth, and the store must match the plugin after them.

// failpointPause holds the first operation to pass failpoint name there until proceed is closed,
// having closed reached; every later pass (the other process's, at the same name) goes through.
type failpointPause struct {
	name             string
	reached, proceed chan struct{}
	fired            atomic.Bool
	letGo            sync.Once
}

// release lets the paused operation go on (once; the test's end does it too).
func (p *failpointPause) release() { p.letGo.Do(func() { close(p.proceed) }) }

// pauseAtFailpoint arms a failpointPause at name on engine e (its failpointHook: another
// process's engine passes it unpaused) for the rest of the test; the test's end lets a paused
// operation go.
func pauseAtFailpoint(t *testing.T, e *Engine, name string) *failpointPause {
	t.Helper()
	p := &failpointPause{name: name, reached: make(chan struct{}), proceed: make(chan struct{})}
	e.failpointHook = func(n string) {
		if n == name && p.fired.CompareAndSwap(false, true) {
			close(p.reached)
			<-p.proceed
		}
	}
	t.Cleanup(func() { p.release(); e.failpointHook = nil })
	return p
}

// onFailpoints runs hook at each failpoint the engines pass, for the rest of the test.
func onFailpoints(t *testing.T, hook func(name string), engines ...*Engine) {
	t.Helper()
	for _, e := range engines {
		e.failpointHook = hook
	}
	t.Cleanup(func() {
		for _, e := range engines {
			e.failpointHook = nil
		}
	})
}

// failpointsOf runs op and returns the failpoints engine e passed meanwhile, each once, in the
// order first passed.
func failpointsOf(t *testing.T, e *Engine, op func()) []string {
	t.Helper()
	var mu sync.Mutex
	var names []string
	e.failpointHook = func(n string) {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	defer func() { e.failpointHook = nil }()
	op()
	return names
}

// pairOutcome is what the two processes' commands returned, and whether the second waited for a
// lock the first held.
type pairOutcome struct {
	aErr, bErr error
	bWaited    bool
}

// pausedPair runs a (this process's command) until it passes failpoint fp, then b (another
// process's) until it returns or waits for a lock, then lets a go on, and returns both results.
// a must reach fp (the test listed fp as one a passes).
func (h *harness) pausedPair(fp string, a func(ctx context.Context) error, b func(ctx context.Context, other *Engine) error) pairOutcome {
	h.t.Helper()
	other := h.otherProcess()
	p := pauseAtFailpoint(h.t, h.e, fp)
	aDone := make(chan error, 1)
	go func() { aDone <- a(h.ctx) }()
	select {
	case <-p.reached:
	case err := <-aDone:
		h.t.Fatalf("the first command returned without passing failpoint %s: %v", fp, err)
	case <-time.After(30 * time.Second):
		h.t.Fatalf("the first command never reached failpoint %s", fp)
	}
	ctx, waiting := whenWaitingForAnyLock(h.ctx)
	bDone := make(chan error, 1)
	go func() { bDone <- b(ctx, other) }()
	var out pairOutcome
	bReturned := false
	select {
	case out.bErr = <-bDone:
		bReturned = true
	case <-waiting:
		out.bWaited = true
	case <-time.After(30 * time.Second):
		h.t.Fatalf("the second command neither returned nor waited for a lock with the first paused at %s", fp)
	}
	p.release()
	select {
	case out.aErr = <-aDone:
	case <-time.After(30 * time.Second):
		h.t.Fatalf("the first command, let go at %s, never returned (the second waited: %v)", fp, out.bWaited)
	}
	if !bReturned {
		select {
		case out.bErr = <-bDone:
		case <-time.After(30 * time.Second):
			h.t.Fatalf("the second command never returned once the first (paused at %s) returned %v", fp, out.aErr)
		}
	}
	return out
}

// storeMatchesPlugin fails the test where the store and the plugin disagree once no command
// runs: a live claim not at rest (each command that returned left what it did finished or
// undone), a published claim whose target the plugin does not have or a target the plugin has
// that no published claim records, a staging or attachment one side has and the other not, a
// volume the plugin holds that no volume records.
func (h *harness) storeMatchesPlugin(what string) {
	h.t.Helper()
	var vols []store.Volume
	claims := map[string][]store.Claim{}
	stagings := map[string]store.Staging{}
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		var err error
		if vols, err = tx.Volumes().List(store.VolumeFilter{}); err != nil {
			return err
		}
		for _, v := range vols {
			if claims[v.ID], err = tx.Claims().ByVolume(v.ID); err != nil {
				return err
			}
			st, err := tx.Stagings().Get(v.ID)
			if err == nil {
				stagings[v.ID] = st
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	}); err != nil {
		h.t.Fatal(err)
	}
	known := map[string]bool{}
	for _, v := range vols {
		if v.ExternalID == "" {
			continue
		}
		known[v.ExternalID] = true
		var want []string
		for _, c := range claims[v.ID] {
			if !c.AtRest() {
				h.t.Errorf("%s: volume %q's claim of %q is left %s (releasing %v, needs reconcile %v)", what, v.ID, c.Alloc, c.State, c.Releasing, c.NeedsReconcile)
				continue
			}
			want = append(want, c.TargetPath)
		}
		got := h.mem.Targets(v.ExternalID)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			h.t.Errorf("%s: volume %q: the plugin has targets %q, the store's published claims %q", what, v.ID, got, want)
		}
		st := stagings[v.ID]
		if _, staged := h.mem.StagingPath(v.ExternalID); staged != st.Staged {
			h.t.Errorf("%s: volume %q: staged at the plugin %v, in the store %v", what, v.ID, staged, st.Staged)
		}
		if attached := len(h.mem.PublishedNodes(v.ExternalID)) > 0; attached != st.ControllerPublished {
			h.t.Errorf("%s: volume %q: attached at the plugin %v, in the store %v", what, v.ID, attached, st.ControllerPublished)
		}
	}
	for _, pv := range h.mem.Volumes() {
		if !known[pv.ID] {
			h.t.Errorf("%s: the plugin holds volume %q, which no volume in the store records (leaked)", what, pv.ID)
		}
	}
}

// saysWhatItWaitedFor fails the test when err, the second command's refusal, is a bare store
// error ("database is locked") or does not name vol.
func saysWhatItWaitedFor(t *testing.T, what string, err error, vol string) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY") {
		t.Errorf("%s: %v (a bare store error, not what the other operation is)", what, err)
	}
	if !strings.Contains(msg, `"`+vol+`"`) && !strings.Contains(msg, vol) {
		t.Errorf("%s: %v (does not name volume %q)", what, err, vol)
	}
}

// forEachFailpoint lists the failpoints a passes on a harness set up by setup, then, for each,
// runs the pair on a new harness so set up and checks it with check.
func forEachFailpoint(t *testing.T, setup func(t *testing.T) *harness, a func(h *harness) func(ctx context.Context) error,
	b func(h *harness) func(ctx context.Context, other *Engine) error, check func(t *testing.T, h *harness, fp string, out pairOutcome)) {
	t.Helper()
	forSomeFailpoints(t, setup, a, b, check, slices.Clone)
}

// eachStepKindOnce keeps, of the failpoints a command passes, those of the command's own kind
// (prefix own, e.g. "group") and the first of each other kind (the text before the colon:
// "claim", "rpc", "release", "check"): for a command made of claims or releases (a group's run
// and stop), whose every step the claim and release harnesses pass one by one, one of each kind
// shows how the command meets it, at a fraction of the cost.
func eachStepKindOnce(own string) func([]string) []string {
	return func(fps []string) []string {
		var kept []string
		seen := map[string]bool{}
		for _, fp := range fps {
			kind, _, _ := strings.Cut(fp, ":")
			if kind == own || !seen[kind] {
				kept = append(kept, fp)
			}
			seen[kind] = true
		}
		return kept
	}
}

// forSomeFailpoints is forEachFailpoint on the failpoints pick keeps of those a passes.
func forSomeFailpoints(t *testing.T, setup func(t *testing.T) *harness, a func(h *harness) func(ctx context.Context) error,
	b func(h *harness) func(ctx context.Context, other *Engine) error, check func(t *testing.T, h *harness, fp string, out pairOutcome),
	pick func([]string) []string) {
	t.Helper()
	h0 := setup(t)
	run := a(h0)
	var firstErr error
	fps := failpointsOf(t, h0.e, func() { firstErr = run(h0.ctx) })
	if firstErr != nil {
		t.Fatalf("the first command alone: %v", firstErr)
	}
	if len(fps) == 0 {
		t.Fatal("the first command passed no failpoint")
	}
	for _, fp := range pick(fps) {
		t.Run(strings.ReplaceAll(fp, ":", "_"), func(t *testing.T) {
			t.Parallel() // each pair on its own harness, the pause on its engine alone
			h := setup(t)
			out := h.pausedPair(fp, a(h), b(h))
			t.Logf("first: %v; second (waited %v): %v", out.aErr, out.bWaited, out.bErr)
			check(t, h, fp, out)
			h.storeMatchesPlugin("after both (the first paused at " + fp + ")")
		})
	}
}

// Two allocs claim one single-node-writer volume from two processes, the first paused at each of
// its checkpoints: exactly one of them holds it after, the other was refused (or waited and was
// refused) naming the volume, and the store matches the plugin.
func TestPausedPairClaimClaimSingleWriter(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.create(volume("v", capab(spec.SingleNodeWriter)))
		return h
	}
	forEachFailpoint(t, setup,
		func(h *harness) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				_, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a-0", AccessMode: spec.SingleNodeWriter})
				return err
			}
		},
		func(h *harness) func(ctx context.Context, other *Engine) error {
			return func(ctx context.Context, other *Engine) error {
				_, err := other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "b-0", AccessMode: spec.SingleNodeWriter})
				return err
			}
		},
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the first claim: %v", fp, out.aErr)
			}
			if out.bErr == nil {
				t.Errorf("at %s: the second single-writer claim succeeded beside the first", fp)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "a-0" {
				t.Errorf("at %s: live claims %+v, want a-0's alone", fp, live)
			}
		})
}

// claimOf, releaseIn, reconcileIn and deleteIn are the commands the pairs run, on engine e (this
// process's or the other's).
func claimOf(e *Engine, vol, alloc string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := e.Claim(ctx, ClaimRequest{VolumeID: vol, Alloc: alloc})
		return err
	}
}

func releaseIn(e *Engine, vol, alloc string) func(ctx context.Context) error {
	return func(ctx context.Context) error { _, err := e.Release(ctx, vol, alloc); return err }
}

func reconcileIn(e *Engine) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		rep, err := e.Reconcile(ctx)
		if err == nil && !rep.OK() {
			return fmt.Errorf("reconcile's problems: %+v", rep.Problems)
		}
		return err
	}
}

// onOther makes a command of another process's engine from what makes one of an engine.
func onOther(mk func(e *Engine) func(ctx context.Context) error) func(h *harness) func(ctx context.Context, other *Engine) error {
	return func(*harness) func(ctx context.Context, other *Engine) error {
		return func(ctx context.Context, other *Engine) error { return mk(other)(ctx) }
	}
}

// onThis makes this process's command from what makes one of an engine.
func onThis(mk func(e *Engine) func(ctx context.Context) error) func(h *harness) func(ctx context.Context) error {
	return func(h *harness) func(ctx context.Context) error { return mk(h.e) }
}

func claimedV(t *testing.T) *harness {
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a-0"})
	return h
}

func createdV(t *testing.T) *harness {
	h := newHarness(t, nil)
	h.create(volume("v"))
	return h
}

// A claim, and a release of the same alloc's claim from another process: the claim succeeds;
// the release either released it (none left) or refused naming the volume (the claim kept).
func TestPausedPairClaimRelease(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the claim: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			want := 1
			if out.bErr == nil {
				want = 0
			}
			if live := h.liveClaims("v"); len(live) != want {
				t.Errorf("at %s: live claims %+v, want %d (the release returned %v)", fp, live, want, out.bErr)
			}
		})
}

// Two releases of one claim from two processes: the first releases it; the second either found
// nothing left to release or refused naming the volume; nothing is left claimed.
func TestPausedPairReleaseRelease(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, claimedV,
		onThis(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the release: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: live claims %+v after two releases", fp, live)
			}
		})
}

// A release, and another process's reconcile: both succeed, and nothing is left claimed.
func TestPausedPairReleaseReconcile(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, claimedV,
		onThis(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		onOther(reconcileIn),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil || out.bErr != nil {
				t.Errorf("at %s: the release: %v; the reconcile: %v", fp, out.aErr, out.bErr)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: live claims %+v after the release", fp, live)
			}
		})
}

// A claim, and another process's delete of the volume: the claim succeeds and the delete is
// refused naming the volume (it is in use), or the delete went first and the claim says the
// volume is gone.
func TestPausedPairClaimVolumeDelete(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeleteVolume(ctx, "v") }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if (out.aErr == nil) == (out.bErr == nil) {
				t.Errorf("at %s: the claim: %v; the delete: %v (want exactly one to succeed)", fp, out.aErr, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp+" (delete)", out.bErr, "v")
			saysWhatItWaitedFor(t, "at "+fp+" (claim)", out.aErr, "v")
		})
}

// Two processes create one volume name: one volume at the plugin, one in the store, and both
// commands tell the truth (the second found it created, or refused naming it).
func TestPausedPairCreateCreate(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness { return newHarness(t, nil) }
	mk := func(e *Engine) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := e.CreateVolume(ctx, volume("n")); return err }
	}
	forEachFailpoint(t, setup, onThis(mk), onOther(mk),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the first create: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "n")
			if n := h.pluginVolumeCount(); n != 1 {
				t.Errorf("at %s: the plugin holds %d volumes, want 1", fp, n)
			}
		})
}

// A group run, and another process's stop of the group: after both, the group holds no claim
// when the stop succeeded, and the run says it lost when it did not run to the end.
func TestPausedPairGroupRunStop(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.createDBVolumes(2)
		return h
	}
	forSomeFailpoints(t, setup,
		func(h *harness) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := h.e.RunGroup(ctx, dbGroup(2)); return err }
		},
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := e.StopGroup(ctx, "db"); return err }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			live := h.groupLiveClaims("db")
			if out.bErr == nil && len(live) != 0 {
				t.Errorf("at %s: the stop succeeded and group db holds %d claims (the run: %v)", fp, len(live), out.aErr)
			}
			if out.aErr == nil && len(live) != 4 {
				t.Errorf("at %s: the run succeeded and group db holds %d claims, want 4 (the stop: %v)", fp, len(live), out.bErr)
			}
		}, eachStepKindOnce("group"))
}

// An expansion of a claimed volume, and another process's release of its claim: both succeed.
func TestPausedPairExpandRelease(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, claimedV,
		func(h *harness) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := h.e.ExpandVolume(ctx, "v", 4<<20, 0); return err }
		},
		onOther(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil || out.bErr != nil {
				t.Errorf("at %s: the expand: %v; the release: %v", fp, out.aErr, out.bErr)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: live claims %+v after the release", fp, live)
			}
		})
}

// snapshotsMatch fails the test where the store's snapshot records and the plugin's snapshots
// differ: a snapshot the plugin has that volctl does not record (leaked: nothing lists or
// deletes it) or a record of one the plugin does not have.
func (h *harness) snapshotsMatch(what string) {
	h.t.Helper()
	var recs []store.Snapshot
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		var err error
		recs, err = tx.Snapshots().List("mem")
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	var stored, held []string
	for _, r := range recs {
		stored = append(stored, r.SnapshotID)
	}
	for _, s := range h.mem.Snapshots() {
		held = append(held, s.ID)
	}
	slices.Sort(stored)
	slices.Sort(held)
	if !slices.Equal(stored, held) {
		h.t.Errorf("%s: the store records snapshots %q, the plugin has %q", what, stored, held)
	}
}

func snapshotDB(t *testing.T) *harness { h, _ := snapshotHarness(t, nil); return h }

func snapshotCreateOf(e *Engine) func(ctx context.Context) error {
	return func(ctx context.Context) error { _, err := e.CreateSnapshot(ctx, "db", "nightly", nil); return err }
}

// A snapshot create, and another process's delete of its source volume: the snapshot is
// recorded as the plugin has it, the volume is gone from both or from neither, and a refusal
// names the volume.
func TestPausedPairSnapshotCreateVolumeDelete(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, snapshotDB, onThis(snapshotCreateOf),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeleteVolume(ctx, "db") }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the snapshot create: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "db")
			h.snapshotsMatch("at " + fp)
		})
}

// A snapshot create, and another process's delete of the same snapshot name: after both, the
// store's records match the plugin's snapshots, and a delete that said it deleted did.
func TestPausedPairSnapshotCreateSnapshotDelete(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, snapshotDB, onThis(snapshotCreateOf),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeleteSnapshot(ctx, "mem", "nightly", nil) }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the snapshot create: %v", fp, out.aErr)
			}
			if out.bErr == nil && len(h.mem.Snapshots()) != 0 {
				t.Errorf("at %s: the delete of nightly said it deleted it, and the plugin has %+v", fp, h.mem.Snapshots())
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "nightly")
			h.snapshotsMatch("at " + fp)
		})
}

// A snapshot delete, and another process's create of the same name: after both, the store's
// records match the plugin's snapshots.
func TestPausedPairSnapshotDeleteSnapshotCreate(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness { h := snapshotDB(t); h.snapshot("nightly"); return h }
	forEachFailpoint(t, setup,
		onThis(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeleteSnapshot(ctx, "mem", "nightly", nil) }
		}),
		onOther(snapshotCreateOf),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the snapshot delete: %v", fp, out.aErr)
			}
			if out.bErr == nil && len(h.mem.Snapshots()) != 1 {
				t.Errorf("at %s: the create of nightly said it made it, and the plugin has %+v", fp, h.mem.Snapshots())
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "nightly")
			h.snapshotsMatch("at " + fp)
		})
}

// A snapshot deregister, and another process's delete of the snapshot: the delete waits for the
// deregister's snapshot lock (failpoint snapshot:deregistering, review32f), then either deletes
// the snapshot the deregister left or says why not; the deregister never forgets a delete in
// flight.
func TestPausedPairSnapshotDeregisterSnapshotDelete(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness { h := snapshotDB(t); h.snapshot("nightly"); return h }
	forEachFailpoint(t, setup,
		onThis(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := e.DeregisterSnapshot(ctx, "mem", "nightly"); return err }
		}),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeleteSnapshot(ctx, "mem", "nightly", nil) }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the deregister: %v", fp, out.aErr)
			}
			if !out.bWaited {
				t.Errorf("at %s: the delete did not wait for the deregister's snapshot lock (it returned %v)", fp, out.bErr)
			}
			if out.bErr == nil && len(h.mem.Snapshots()) != 0 {
				t.Errorf("at %s: the delete said it deleted nightly, and the plugin has %+v", fp, h.mem.Snapshots())
			}
			if out.bErr != nil {
				saysWhatItWaitedFor(t, "at "+fp, out.bErr, "nightly")
			}
			recs, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Snapshot, error) { return tx.Snapshots().List("mem") })
			if err != nil || len(recs) != 0 {
				t.Errorf("at %s: after the deregister and the delete, the store records %+v (%v)", fp, recs, err)
			}
		})
}
