package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// race39: the pairs of acting commands on one volume, snapshot or plugin that round 32's and
// 33's paused-pair harness (pausepairs_test.go, pausepairs33_test.go) had not run: a detach and
// a claim, a group run and a delete of a volume its allocs claim, an expand and a release (the
// release first), an expand and a deregister, a restore and a delete of its snapshot, two deletes
// of one snapshot, two expands, an expand and a delete. The first command is paused at each
// failpoint it passes (or the first of each kind and the last), the second runs in another
// process; after both, each told the truth, the store matches the plugin and a reconcile finds
// nothing to finish.

// nothingToFinish fails the test when a reconcile, with no command running, finds something to
// do or a problem: every command that returned left what it did finished or undone.
func (h *harness) nothingToFinish(what string) {
	h.t.Helper()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 0 || len(rep.Problems) != 0 {
		h.t.Errorf("%s: reconcile found something left: %v, actions %+v, problems %+v", what, err, rep.Actions, rep.Problems)
	}
}

func detachOf(e *Engine, vol string, force bool) func(ctx context.Context) error {
	return func(ctx context.Context) error { _, err := e.Detach(ctx, vol, force); return err }
}

func deleteOf(e *Engine, vol string) func(ctx context.Context) error {
	return func(ctx context.Context) error { return e.DeleteVolume(ctx, vol) }
}

func expandOf(e *Engine, vol string, size int64) func(ctx context.Context) error {
	return func(ctx context.Context) error { _, err := e.ExpandVolume(ctx, vol, size, 0); return err }
}

// claimedMulti is a multi-node-multi-writer volume v that alloc a-0 holds: another alloc's
// claim is admitted beside it.
func claimedMulti(t *testing.T) *harness {
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a-0", AccessMode: spec.MultiNodeMultiWriter})
	return h
}

func claimMultiOf(e *Engine, vol, alloc string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := e.Claim(ctx, ClaimRequest{VolumeID: vol, Alloc: alloc, AccessMode: spec.MultiNodeMultiWriter})
		return err
	}
}

// A detach of v (a-0 holds it), and another process's claim of v by b-0, on a single-writer
// volume and on a multi-writer one: the detach releases a-0's claim;
// b-0's claim either holds the volume after, published, or was refused (or released by the
// detach it was admitted beside) naming the volume; never a claim recorded published that the
// plugin does not have, nor a mount left that no claim records.
func TestPausedPairDetachClaim(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *harness
		claim func(e *Engine) func(ctx context.Context) error
		force bool
	}{
		{"single-writer", claimedV, func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "b-0") }, false},
		{"multi-writer", claimedMulti, func(e *Engine) func(ctx context.Context) error { return claimMultiOf(e, "v", "b-0") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forSomeFailpoints(t, tc.setup,
				onThis(func(e *Engine) func(ctx context.Context) error { return detachOf(e, "v", tc.force) }),
				onOther(tc.claim),
				func(t *testing.T, h *harness, fp string, out pairOutcome) {
					if out.aErr != nil {
						t.Errorf("at %s: the detach: %v", fp, out.aErr)
					}
					saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
					live := h.liveClaims("v")
					for _, c := range live {
						if c.Alloc == "a-0" {
							t.Errorf("at %s: a-0's claim is left after the detach: %+v", fp, c)
						}
					}
					if out.bErr == nil && (len(live) != 1 || live[0].Alloc != "b-0") {
						t.Errorf("at %s: b-0's claim succeeded, and v's live claims are %+v", fp, live)
					}
					if out.bErr != nil && len(live) != 0 {
						t.Errorf("at %s: b-0's claim failed (%v), and v's live claims are %+v", fp, out.bErr, live)
					}
					h.nothingToFinish("at " + fp)
				}, firstOfEachKindAndLast)
		})
	}
}

// A claim of v by b-0 beside a-0's (multi-writer), and another process's detach of v: the
// detach waits for the claim, then releases both claims; the claim said it holds v (it did,
// until the detach) or named v; nothing left mounted or attached.
func TestPausedPairClaimDetach(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, claimedMulti,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimMultiOf(e, "v", "b-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return detachOf(e, "v", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			saysWhatItWaitedFor(t, "at "+fp+" (claim)", out.aErr, "v")
			if out.bErr != nil {
				t.Errorf("at %s: the detach: %v", fp, out.bErr)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: v's live claims after the detach are %+v", fp, live)
			}
			h.nothingToFinish("at " + fp)
		}, firstOfEachKindAndLast)
}

// A group run, and another process's delete of data[1], which the run's second alloc claims:
// the delete is refused naming the volume and the claim in the way, or deletes the volume and
// the run says it could not claim it (naming it); never a claim on a deleted volume nor a
// volume deleted under a claim.
func TestPausedPairGroupRunVolumeDelete(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.createDBVolumes(2)
		return h
	}
	data1 := spec.AllocName("data", 1)
	forSomeFailpoints(t, setup,
		func(h *harness) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := h.e.RunGroup(ctx, dbGroup(2)); return err }
		},
		onOther(func(e *Engine) func(ctx context.Context) error { return deleteOf(e, data1) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if (out.aErr == nil) == (out.bErr == nil) {
				t.Errorf("at %s: the run: %v; the delete of %s: %v (want exactly one to succeed)", fp, out.aErr, data1, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp+" (delete)", out.bErr, data1)
			saysWhatItWaitedFor(t, "at "+fp+" (run)", out.aErr, data1)
			if out.bErr == nil {
				if !h.volumeGone(data1) {
					t.Errorf("at %s: the delete of %s succeeded and it is still recorded", fp, data1)
				}
				if n := h.pluginVolumeCount(); n != 2 {
					t.Errorf("at %s: the plugin holds %d volumes after %s's delete, want 2", fp, n, data1)
				}
			} else if live := h.liveClaims(data1); len(live) != 1 {
				t.Errorf("at %s: the delete was refused and %s's live claims are %+v", fp, data1, live)
			}
			h.nothingToFinish("at " + fp)
		}, eachStepKindOnce("group"))
}

// A delete of data[1], and another process's group run claiming it: the run waits for the
// delete and says it could not claim data[1] (gone, named), or the delete is refused; the other
// alloc's claims are held either way.
func TestPausedPairVolumeDeleteGroupRun(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.createDBVolumes(2)
		return h
	}
	data1 := spec.AllocName("data", 1)
	forEachFailpoint(t, setup,
		onThis(func(e *Engine) func(ctx context.Context) error { return deleteOf(e, data1) }),
		func(h *harness) func(ctx context.Context, other *Engine) error {
			return func(ctx context.Context, other *Engine) error { _, err := other.RunGroup(ctx, dbGroup(2)); return err }
		},
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if (out.aErr == nil) == (out.bErr == nil) {
				t.Errorf("at %s: the delete: %v; the run: %v (want exactly one to succeed)", fp, out.aErr, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp+" (run)", out.bErr, data1)
			if out.aErr == nil && !h.volumeGone(data1) {
				t.Errorf("at %s: the delete of %s succeeded and it is still recorded", fp, data1)
			}
			if live := h.liveClaims(spec.AllocName("data", 0)); len(live) != 1 {
				t.Errorf("at %s: data[0]'s live claims are %+v, want db[0]'s", fp, live)
			}
			h.nothingToFinish("at " + fp)
		})
}

// A release of a-0's claim, and another process's expand of v: both succeed, the volume ends at
// the new size with no node expansion owed to a claim that is gone, and nothing is left.
func TestPausedPairReleaseExpand(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, claimedV,
		onThis(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil || out.bErr != nil {
				t.Errorf("at %s: the release: %v; the expand: %v", fp, out.aErr, out.bErr)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: live claims %+v after the release", fp, live)
			}
			if v := h.volumeInfo("v"); v.CapacityBytes != 4<<20 {
				t.Errorf("at %s: volume v's capacity is %d after the expand to %d", fp, v.CapacityBytes, 4<<20)
			}
			if pv, ok := h.mem.Volume(h.externalID("v")); !ok || pv.CapacityBytes != 4<<20 {
				t.Errorf("at %s: the plugin's volume is %+v after the expand to %d", fp, pv, 4<<20)
			}
			h.nothingToFinish("at " + fp)
		}, firstOfEachKindAndLast)
}

// Two expands of one volume from two processes, to two sizes: the volume ends at the larger on
// both sides (a smaller expand after a larger one is no shrink), and nothing is owed.
func TestPausedPairExpandExpand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		first, then int64
	}{{"larger second", 4 << 20, 8 << 20}, {"smaller second", 8 << 20, 4 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachFailpoint(t, claimedV,
				onThis(func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", tc.first) }),
				onOther(func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", tc.then) }),
				func(t *testing.T, h *harness, fp string, out pairOutcome) {
					if out.aErr != nil {
						t.Errorf("at %s: the first expand: %v", fp, out.aErr)
					}
					saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
					want := max(tc.first, tc.then)
					if out.bErr != nil {
						want = tc.first
					}
					if v := h.volumeInfo("v"); v.CapacityBytes != want {
						t.Errorf("at %s: volume v's capacity is %d, want %d", fp, v.CapacityBytes, want)
					}
					if pv, ok := h.mem.Volume(h.externalID("v")); !ok || pv.CapacityBytes != want {
						t.Errorf("at %s: the plugin's volume is %+v, want capacity %d", fp, pv, want)
					}
					if owed := h.owed("v"); owed != 0 {
						t.Errorf("at %s: node expansion owed %d after both", fp, owed)
					}
					h.nothingToFinish("at " + fp)
				})
		})
	}
}

// An expand of v, and another process's delete of it (no claim): the delete waits, then deletes
// it (gone from both) or is refused naming it; the expand said it grew v, or named it.
func TestPausedPairExpandVolumeDelete(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }),
		onOther(func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "v") }),
		thenDeleted("expand", "v"))
}

// A delete of v, and another process's expand of it: the expand waits for the delete, then
// says v is gone (naming it), or the delete was refused and v grew; never a size recorded for a
// volume the plugin no longer has.
func TestPausedPairVolumeDeleteExpand(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "v") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the delete: %v", fp, out.aErr)
			}
			if out.bErr == nil {
				t.Errorf("at %s: the expand of v succeeded beside its delete", fp)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if !errors.Is(out.bErr, ErrNotFound) && !errors.Is(out.bErr, ErrConflict) {
				t.Errorf("at %s: the expand of a volume being deleted: %v, want not found or a conflict", fp, out.bErr)
			}
			h.nothingToFinish("at " + fp)
		})
}

// An expand of v, and another process's deregister of it: the deregister waits for the
// expand, then forgets v, whose storage is left at the plugin at the new size; the expand
// said it grew v.
func TestPausedPairExpandVolumeDeregister(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }),
		onOther(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			ext := h.mem.Volumes()[0].ID
			if out.aErr != nil {
				t.Errorf("at %s: the expand: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if pv, _ := h.mem.Volume(ext); pv.CapacityBytes != 4<<20 {
				t.Errorf("at %s: the plugin's volume is %+v after the expand to %d", fp, pv, 4<<20)
			}
			if out.bErr == nil {
				if !h.volumeGone("v") {
					t.Errorf("at %s: the deregister succeeded and v is still recorded", fp)
				}
				h.deregisteredClean("at "+fp, "v", ext)
			}
			h.nothingToFinish("at " + fp)
		})
}

// A deregister of v, and another process's expand of it: the expand waits for the deregister,
// then says v is not found (naming it); the storage is left at the plugin at its old size.
func TestPausedPairVolumeDeregisterExpand(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", false) }),
		onOther(func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			ext := h.mem.Volumes()[0].ID
			if out.aErr != nil {
				t.Errorf("at %s: the deregister: %v", fp, out.aErr)
			}
			if !errors.Is(out.bErr, ErrNotFound) {
				t.Errorf("at %s: the expand of a volume deregistered meanwhile: %v, want not found", fp, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if pv, _ := h.mem.Volume(ext); pv.CapacityBytes != 1<<20 {
				t.Errorf("at %s: the plugin's volume is %+v, grown by an expand that failed", fp, pv)
			}
			h.deregisteredClean("at "+fp, "v", ext)
			h.nothingToFinish("at " + fp)
		})
}

// restoreOf is a `volume create` of volume id from snapshot snap on engine e.
func restoreOf(e *Engine, id, snap string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		sv := volume(id)
		sv.SnapshotID = snap
		_, err := e.CreateVolume(ctx, sv)
		return err
	}
}

func snapshotDeleteOf(e *Engine, snap string) func(ctx context.Context) error {
	return func(ctx context.Context) error { return e.DeleteSnapshot(ctx, "mem", snap, nil) }
}

// snapshottedDB is the snapshot harness with snapshot "nightly" of volume db taken; its ID.
func snapshottedDB(t *testing.T) (*harness, string) {
	h := snapshotDB(t)
	return h, h.snapshot("nightly").ID
}

// nightlyIDs keeps, for each harness a paused pair's setup made (snapshottedDB), the ID of
// its snapshot nightly, which the pair's commands and check name: one per harness, as
// forEachFailpoint runs its subtests in parallel (one variable written by each setup raced).
type nightlyIDs struct{ ids sync.Map }

func (s *nightlyIDs) setup(t *testing.T) *harness {
	h, id := snapshottedDB(t)
	s.ids.Store(h, id)
	return h
}

func (s *nightlyIDs) of(h *harness) string {
	id, ok := s.ids.Load(h)
	if !ok {
		h.t.Fatal("no snapshot recorded for this harness: made by nightlyIDs.setup?")
	}
	return id.(string)
}

// A restore from snapshot nightly, and another process's delete of nightly: the restore
// succeeds; the delete either waited for nothing and was refused naming the volume being
// restored from it, or deleted the snapshot once the restore was recorded ready. After both,
// the snapshots and volumes match the plugin's, and nothing is left for reconcile (a restore
// whose snapshot went from under its CreateVolume would be NOT_FOUND at every pass for good).
func TestPausedPairRestoreSnapshotDelete(t *testing.T) {
	t.Parallel()
	var snaps nightlyIDs
	forEachFailpoint(t, snaps.setup,
		func(h *harness) func(ctx context.Context) error { return restoreOf(h.e, "restored", snaps.of(h)) },
		func(h *harness) func(ctx context.Context, other *Engine) error {
			snap := snaps.of(h)
			return func(ctx context.Context, other *Engine) error { return snapshotDeleteOf(other, snap)(ctx) }
		},
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if fp == "restore:checked" || fp == "restore:ready" {
				// Paused before it recorded anything (no delete of the snapshot recorded when
				// it looked, or after its check): the delete, first, deletes the snapshot, and
				// the restore, its snapshot gone, is refused saying so, leaving no volume.
				if out.bErr != nil || !errors.Is(out.aErr, ErrConflict) || !strings.Contains(out.aErr.Error(), "was deleted by another volctl while this restore") {
					t.Errorf("at %s: the restore: %v; the delete: %v; want the delete done and the restore refused saying so", fp, out.aErr, out.bErr)
				}
				if _, err := h.e.Volume(h.ctx, "restored"); !errors.Is(err, ErrNotFound) {
					t.Errorf("at %s: volume restored after its refused restore: %v, want none", fp, err)
				}
				h.snapshotsMatch("at " + fp)
				h.nothingToFinish("at " + fp)
				return
			}
			if out.aErr != nil {
				t.Errorf("at %s: the restore: %v", fp, out.aErr)
			}
			if out.bErr != nil && (!errors.Is(out.bErr, ErrConflict) || !strings.Contains(out.bErr.Error(), `volume "restored"`)) {
				t.Errorf("at %s: the snapshot's delete: %v, want it to succeed or be refused naming the volume restored from it", fp, out.bErr)
			}
			if out.bErr == nil && len(h.mem.Snapshots()) != 0 {
				t.Errorf("at %s: the delete said it deleted the snapshot, and the plugin has %+v", fp, h.mem.Snapshots())
			}
			if v := h.volumeInfo("restored"); v.State != "ready" {
				t.Errorf("at %s: volume restored is %s, want ready", fp, v.State)
			}
			h.snapshotsMatch("at " + fp)
			h.nothingToFinish("at " + fp)
		})
}

// A delete of snapshot nightly, and another process's restore from it: the restore is refused
// naming the snapshot (being deleted) or fails as the plugin no longer has it, recording
// nothing; or the delete was refused. Never a volume recorded creating from a snapshot that is
// gone.
func TestPausedPairSnapshotDeleteRestore(t *testing.T) {
	t.Parallel()
	var snaps nightlyIDs
	forEachFailpoint(t, snaps.setup,
		func(h *harness) func(ctx context.Context) error { return snapshotDeleteOf(h.e, snaps.of(h)) },
		func(h *harness) func(ctx context.Context, other *Engine) error {
			snap := snaps.of(h)
			return func(ctx context.Context, other *Engine) error { return restoreOf(other, "restored", snap)(ctx) }
		},
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			snap := snaps.of(h)
			if (out.aErr == nil) == (out.bErr == nil) {
				t.Errorf("at %s: the delete: %v; the restore: %v (want exactly one to succeed)", fp, out.aErr, out.bErr)
			}
			if out.bErr != nil {
				if !strings.Contains(out.bErr.Error(), snap) || !strings.Contains(out.bErr.Error(), `"restored"`) {
					t.Errorf("at %s: the restore's failure does not name the snapshot and the volume: %v", fp, out.bErr)
				}
				if !h.volumeGone("restored") {
					t.Errorf("at %s: the restore failed (%v) and volume restored is recorded", fp, out.bErr)
				}
			}
			h.snapshotsMatch("at " + fp)
			h.nothingToFinish("at " + fp)
		})
}

// Two deletes of snapshot nightly from two processes: the first deletes it; the second waits
// for the first's snapshot lock, then finds it gone (done) or says why not, naming it; the
// plugin and the store are left with no snapshot, and nothing for reconcile.
func TestPausedPairSnapshotDeleteSnapshotDelete(t *testing.T) {
	t.Parallel()
	snapshotDeleteThen(t, func(ctx context.Context, other *Engine, snap string) error {
		return snapshotDeleteOf(other, snap)(ctx)
	})
}

// snapshotDeleteThen pairs a delete of snapshot nightly with second, another process's
// command on it: the delete succeeds; second waits for the delete's snapshot lock, then ends
// or says why not, naming the snapshot; the plugin is left with no snapshot, the store
// matching it, and nothing for reconcile.
func snapshotDeleteThen(t *testing.T, second func(ctx context.Context, other *Engine, snap string) error) {
	t.Helper()
	var snaps nightlyIDs
	forEachFailpoint(t, snaps.setup,
		func(h *harness) func(ctx context.Context) error { return snapshotDeleteOf(h.e, snaps.of(h)) },
		func(h *harness) func(ctx context.Context, other *Engine) error {
			snap := snaps.of(h)
			return func(ctx context.Context, other *Engine) error { return second(ctx, other, snap) }
		},
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			snap := snaps.of(h)
			if out.aErr != nil {
				t.Errorf("at %s: the delete: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, snap)
			if n := len(h.mem.Snapshots()); n != 0 {
				t.Errorf("at %s: the plugin has %d snapshots after the delete and the other command", fp, n)
			}
			h.snapshotsMatch("at " + fp)
			h.nothingToFinish("at " + fp)
		})
}

// A snapshot create of db, and another process's deregister of db: the deregister waits for
// the snapshot's record, then forgets db (its storage left at the plugin); the snapshot is
// recorded as the plugin has it.
func TestPausedPairSnapshotCreateVolumeDeregister(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, snapshotDB, onThis(snapshotCreateOf),
		onOther(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "db", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			ext := h.mem.Volumes()[0].ID
			if out.aErr != nil {
				t.Errorf("at %s: the snapshot create: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "db")
			h.snapshotsMatch("at " + fp)
			if out.bErr == nil {
				h.deregisteredClean("at "+fp, "db", ext)
			}
			h.nothingToFinish("at " + fp)
		})
}

// A volume create, and another process's deregister of its plugin: the deregister is refused
// naming the volume being created (or created), and the create succeeds; never a volume
// recorded on a plugin that is gone, nor storage made for one nobody records.
func TestPausedPairCreatePluginDeregister(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, func(t *testing.T) *harness { return newHarness(t, nil) },
		onThis(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := e.CreateVolume(ctx, volume("n")); return err }
		}),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeregisterPlugin(ctx, "mem", false) }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the create: %v", fp, out.aErr)
			}
			if out.bErr == nil {
				t.Errorf("at %s: plugin mem deregistered under volume n's create", fp)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "n")
			h.nothingToFinish("at " + fp)
		})
}

// A claim between its RPCs, and another process's `plugin register` of its plugin at another
// socket (the plugin moved: the same plugin served there, its old socket closed once the new
// registration is recorded): the claim ends published through the plugin, or, past its first
// RPC, fails naming the volume and saying the plugin was registered again at its new socket (it
// never sends the rest of its steps to another process than the one it began with), and is
// finished by one reconcile through the new socket; the store matches the plugin and nothing is
// left after. Before, a claim that had sent nothing yet failed through the old socket, and every
// failure said "is the plugin running?" of the old socket while the plugin ran at the new one.
func TestPausedPairClaimPluginMoved(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		func(h *harness) func(ctx context.Context, other *Engine) error {
			moved, _ := csitest.Serve(h.t, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
			return func(ctx context.Context, other *Engine) error {
				if _, err := other.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: moved}); err != nil {
					return err
				}
				h.stopServe()
				return nil
			}
		},
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.bErr != nil {
				t.Errorf("at %s: the plugin's register at its new socket: %v", fp, out.bErr)
			}
			t.Logf("at %s: the claim: %v", fp, out.aErr)
			saysWhatItWaitedFor(t, "at "+fp, out.aErr, "v")
			if fp == "claim:taken" && out.aErr != nil {
				// Nothing sent yet: the claim connects to the plugin as registered now.
				t.Errorf("at %s: the claim, which had sent nothing, failed through the old socket: %v", fp, out.aErr)
			}
			if out.aErr != nil && !strings.Contains(out.aErr.Error(), `plugin "mem" was registered again at `+h.pluginSocket("mem")+" by another volctl") {
				t.Errorf("at %s: the claim's failure does not say its plugin was registered again at its new socket: %v", fp, out.aErr)
			}
			if out.aErr != nil {
				if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
					t.Errorf("at %s: reconcile after the claim failed: %v, problems %+v", fp, err, rep.Problems)
				}
			}
			h.nothingToFinish("at " + fp)
		}, firstOfEachKindAndLast)
}

// A handover of v to Nomad on its way, and another process's delete, expand, forced detach or
// deregister of v: each is refused naming the volume (handed over: Nomad's allocs may stage
// it), or waited and was refused; v stays at the plugin, recorded and handed over, at its size.
func TestPausedPairHandOverThenOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		op   func(e *Engine) func(ctx context.Context) error
	}{
		{"delete", func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "v") }},
		{"expand", func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }},
		{"forced detach", func(e *Engine) func(ctx context.Context) error { return detachOf(e, "v", true) }},
		{"deregister", func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", false) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachFailpoint(t, createdV,
				onThis(func(e *Engine) func(ctx context.Context) error { return handOverIn(e, "v", false) }),
				onOther(tc.op),
				func(t *testing.T, h *harness, fp string, out pairOutcome) {
					if out.aErr != nil {
						t.Errorf("at %s: the handover: %v", fp, out.aErr)
					}
					if out.bErr == nil {
						t.Errorf("at %s: the %s of v succeeded beside its handover to Nomad", fp, tc.name)
					}
					saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
					if !h.handedOver("v") || h.volumeGone("v") {
						t.Errorf("at %s: v handed over %v, recorded %v", fp, h.handedOver("v"), !h.volumeGone("v"))
					}
					if pv, ok := h.mem.Volume(h.mem.Volumes()[0].ID); !ok || pv.CapacityBytes != 1<<20 {
						t.Errorf("at %s: the plugin's volume is %+v (%v), want it kept at 1 MiB", fp, pv, ok)
					}
				})
		})
	}
}

// A delete or an expand of v, and another process's handover of v: the handover waits for the
// volume's lock, then is refused naming v (gone, or owed the NodeExpandVolume the expand left,
// which Nomad would never send); never a volume handed over that the plugin no longer has, nor
// one handed over with its file system at the old size.
func TestPausedPairOthersThenHandOver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		op   func(e *Engine) func(ctx context.Context) error
	}{
		{"delete", func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "v") }},
		{"expand", func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachFailpoint(t, createdV, onThis(tc.op),
				onOther(func(e *Engine) func(ctx context.Context) error { return handOverIn(e, "v", false) }),
				func(t *testing.T, h *harness, fp string, out pairOutcome) {
					if out.aErr != nil {
						t.Errorf("at %s: the %s: %v", fp, tc.name, out.aErr)
					}
					saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
					if tc.name == "delete" {
						if out.bErr == nil || !h.volumeGone("v") || h.pluginVolumeCount() != 0 {
							t.Errorf("at %s: the handover of v deleted meanwhile: %v; recorded %v; the plugin holds %d", fp, out.bErr, !h.volumeGone("v"), h.pluginVolumeCount())
						}
						return
					}
					// An unclaimed volume grown is owed its NodeExpandVolume, which Nomad never
					// sends: the handover is refused saying so, not made at the old size.
					if out.bErr == nil || !errors.Is(out.bErr, ErrConflict) || !strings.Contains(out.bErr.Error(), "owed a NodeExpandVolume to 4MiB") || h.handedOver("v") {
						t.Errorf("at %s: the handover after the expand: %v (handed over %v), want it refused naming the NodeExpandVolume owed", fp, out.bErr, h.handedOver("v"))
					}
					if v := h.volumeInfo("v"); v.CapacityBytes != 4<<20 {
						t.Errorf("at %s: v is %d after the expand to %d", fp, v.CapacityBytes, 4<<20)
					}
				})
		})
	}
}

// pluginSocket is the socket plugin id is registered at.
func (h *harness) pluginSocket(id string) string {
	h.t.Helper()
	p, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.Plugin, error) { return tx.Plugins().Get(id) })
	if err != nil {
		h.t.Fatal(err)
	}
	return p.Socket
}

// A delete of db, and another process's snapshot create of it: the snapshot create waits for
// the delete's lock, then says db is gone (naming it), or the delete was refused and the
// snapshot recorded; never a snapshot recorded of a volume deleted under it, nor one the plugin
// made that nobody records.
func TestPausedPairVolumeDeleteSnapshotCreate(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, snapshotDB,
		onThis(func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "db") }),
		onOther(snapshotCreateOf),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if (out.aErr == nil) == (out.bErr == nil) {
				t.Errorf("at %s: the delete: %v; the snapshot create: %v (want exactly one to succeed)", fp, out.aErr, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "db")
			h.snapshotsMatch("at " + fp)
			h.nothingToFinish("at " + fp)
		})
}

// A delete of snapshot nightly, and another process's deregister of it: the deregister waits
// for the delete's snapshot lock, then finds nothing left to forget (naming it) or forgets what
// the delete left; the store records no snapshot the plugin lacks.
func TestPausedPairSnapshotDeleteSnapshotDeregister(t *testing.T) {
	t.Parallel()
	snapshotDeleteThen(t, func(ctx context.Context, other *Engine, snap string) error {
		_, err := other.DeregisterSnapshot(ctx, "mem", snap)
		return err
	})
}

// A take-back of v from Nomad, and another process's delete or expand of v: it is refused
// naming v (still handed over) or waits for the take-back and then acts on a volume volctl
// holds again; never a delete or an expand while Nomad may have it.
func TestPausedPairTakeBackThenOthers(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := createdV(t)
		if err := handOverIn(h.e, "v", false)(h.ctx); err != nil {
			t.Fatal(err)
		}
		return h
	}
	for _, tc := range []struct {
		name string
		op   func(e *Engine) func(ctx context.Context) error
	}{
		{"delete", func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "v") }},
		{"expand", func(e *Engine) func(ctx context.Context) error { return expandOf(e, "v", 4<<20) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachFailpoint(t, setup,
				onThis(func(e *Engine) func(ctx context.Context) error {
					return func(ctx context.Context) error {
						_, err := e.TakeBack(ctx, "v", func(HandoverInfo) (string, error) { return "gone from Nomad", nil }, nil)
						return err
					}
				}),
				onOther(tc.op),
				func(t *testing.T, h *harness, fp string, out pairOutcome) {
					if out.aErr != nil {
						t.Errorf("at %s: the take-back: %v", fp, out.aErr)
					}
					saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
					if out.bErr == nil && !out.bWaited {
						t.Errorf("at %s: the %s succeeded without waiting for the take-back", fp, tc.name)
					}
					if h.handedOver("v") {
						t.Errorf("at %s: v is still handed over after the take-back", fp)
					}
					h.nothingToFinish("at " + fp)
				})
		})
	}
}

// A create of volume n, and another process's delete of n: the delete waits for the create's
// lock, then deletes what the create made (gone from both) or is refused naming n; never
// storage the plugin keeps that no volume records.
func TestPausedPairCreateVolumeDelete(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, func(t *testing.T) *harness { return newHarness(t, nil) },
		onThis(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := e.CreateVolume(ctx, volume("n")); return err }
		}),
		onOther(func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "n") }),
		thenDeleted("create", "n"))
}

// thenDeleted checks a pair whose second command deletes the volume name the first (what)
// acted on: the first succeeded; the delete named name in what it waited for or was refused
// by, or deleted it from the store and the plugin both; reconcile has nothing to finish.
func thenDeleted(what, name string) func(t *testing.T, h *harness, fp string, out pairOutcome) {
	return func(t *testing.T, h *harness, fp string, out pairOutcome) {
		if out.aErr != nil {
			t.Errorf("at %s: the %s: %v", fp, what, out.aErr)
		}
		saysWhatItWaitedFor(t, "at "+fp, out.bErr, name)
		if out.bErr == nil && (!h.volumeGone(name) || h.pluginVolumeCount() != 0) {
			t.Errorf("at %s: the delete said it deleted %s, and it is recorded %v, the plugin holds %d volumes", fp, name, !h.volumeGone(name), h.pluginVolumeCount())
		}
		h.nothingToFinish("at " + fp)
	}
}

// A delete of v, and another process's create of a volume of the same ID: the create is
// refused naming v (being deleted) or waits for the delete and then makes new storage, which
// the delete, over by then, never touches; one volume at the plugin at most, and recorded.
func TestPausedPairVolumeDeleteCreate(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return deleteOf(e, "v") }),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := e.CreateVolume(ctx, volume("v")); return err }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the delete: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			want := 0
			if out.bErr == nil {
				want = 1
				if h.volumeGone("v") {
					t.Errorf("at %s: the create of v succeeded after its delete, and v is not recorded", fp)
				}
			}
			if n := h.pluginVolumeCount(); n != want {
				t.Errorf("at %s: the plugin holds %d volumes, want %d (the create: %v)", fp, n, want, out.bErr)
			}
			h.nothingToFinish("at " + fp)
		})
}
