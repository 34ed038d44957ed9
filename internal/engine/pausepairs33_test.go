package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// chaos33: the pairs round 32's harness (pausepairs_test.go) had not run: a volume's register
// and deregister, a Nomad handover and take-back, a plugin's deregister, and a group's run and
// stop, each against a single command on one of the volumes, the first paused at each
// failpoint it passes.

// deregisterIn is another process's `volume deregister` (force: --force).
func deregisterIn(e *Engine, vol string, force bool) func(ctx context.Context) error {
	return func(ctx context.Context) error { _, err := e.DeregisterVolume(ctx, vol, force); return err }
}

// volumeGone says whether volume id is no longer recorded.
func (h *harness) volumeGone(id string) bool {
	h.t.Helper()
	_, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.Volume, error) { return tx.Volumes().Get(id) })
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		h.t.Fatal(err)
	}
	return errors.Is(err, store.ErrNotFound)
}

// deregisteredClean fails the test when volume vol (external ID ext), deregistered, left the
// plugin holding a target, a staging or an attachment of it: nothing would ever undo them. It
// then registers the volume again, as its owner would, so that storeMatchesPlugin can compare
// the rest.
func (h *harness) deregisteredClean(what, vol, ext string) {
	h.t.Helper()
	if got := h.mem.Targets(ext); len(got) > 0 {
		h.t.Errorf("%s: volume %q deregistered, and the plugin still has its targets %q (mounted, recorded nowhere)", what, vol, got)
	}
	if _, staged := h.mem.StagingPath(ext); staged {
		h.t.Errorf("%s: volume %q deregistered, and the plugin still has it staged", what, vol)
	}
	if nodes := h.mem.PublishedNodes(ext); len(nodes) > 0 {
		h.t.Errorf("%s: volume %q deregistered, and the plugin still has it attached to %q", what, vol, nodes)
	}
	if _, err := h.e.RegisterVolume(h.ctx, registered(vol, ext)); err != nil {
		h.t.Fatalf("%s: registering volume %q again: %v", what, vol, err)
	}
}

// firstOfEachKindAndLast keeps, of the failpoints a command passes, the first of each kind (the
// text before the colon) and the last: for a pair whose second command waits for the volume's
// lock the first holds throughout, or is refused at once, every step of the first meets it the
// same way, and these show it before the first RPC, at each kind of step, and once everything
// is mounted or unmounted, at a fraction of the cost.
func firstOfEachKindAndLast(fps []string) []string {
	kept := eachStepKindOnce("")(fps)
	if last := fps[len(fps)-1]; !slices.Contains(kept, last) {
		kept = append(kept, last)
	}
	return kept
}

// A claim, and another process's deregister of the volume: the claim succeeds and holds the
// volume; the deregister waited for it and was refused naming the volume (it is claimed).
func TestPausedPairClaimVolumeDeregister(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the claim: %v", fp, out.aErr)
			}
			if out.bErr == nil {
				t.Errorf("at %s: the deregister forgot volume v under a claim that succeeded", fp)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if live := h.liveClaims("v"); len(live) != 1 {
				t.Errorf("at %s: live claims %+v, want a-0's", fp, live)
			}
		}, firstOfEachKindAndLast)
}

// A claim, and another process's forced deregister: the deregister releases what it finds
// claimed and forgets the volume, or waits for the claim and then does; either way nothing of
// the volume stays mounted, staged or attached at the plugin once it is forgotten, and the
// claim either said it held the volume or named it.
func TestPausedPairClaimVolumeDeregisterForced(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", true) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			ext := h.mem.Volumes()[0].ID
			saysWhatItWaitedFor(t, "at "+fp+" (claim)", out.aErr, "v")
			saysWhatItWaitedFor(t, "at "+fp+" (deregister)", out.bErr, "v")
			if out.bErr == nil {
				if !h.volumeGone("v") {
					t.Errorf("at %s: the forced deregister succeeded and volume v is still recorded", fp)
				}
				h.deregisteredClean("at "+fp, "v", ext)
			}
		}, firstOfEachKindAndLast)
}

// A release, and another process's deregister: the deregister waits for the release, then
// forgets the volume (or is refused naming it), and nothing of it is left at the plugin.
func TestPausedPairReleaseVolumeDeregister(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, claimedV,
		onThis(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			ext := h.mem.Volumes()[0].ID
			if out.aErr != nil {
				t.Errorf("at %s: the release: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if out.bErr == nil {
				h.deregisteredClean("at "+fp, "v", ext)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: live claims %+v after the release", fp, live)
			}
		}, firstOfEachKindAndLast)
}

// A registration that grows the volume (its capacity_min past the recorded size: an expand
// first), and another process's claim: both succeed, the claim on the volume as registered.
func TestPausedPairVolumeRegisterGrowingClaim(t *testing.T) {
	t.Parallel()
	grown := func(h *harness) spec.Volume {
		sv := registered("v", h.externalID("v"))
		sv.CapacityMin = 4 << 20
		sv.Context = nil
		return sv
	}
	forEachFailpoint(t, createdV,
		func(h *harness) func(ctx context.Context) error {
			sv := grown(h)
			return func(ctx context.Context) error { _, err := h.e.RegisterVolume(ctx, sv); return err }
		},
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "b-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil || out.bErr != nil {
				t.Errorf("at %s: the register: %v; the claim: %v", fp, out.aErr, out.bErr)
			}
			if live := h.liveClaims("v"); len(live) != 1 {
				t.Errorf("at %s: live claims %+v, want b-0's", fp, live)
			}
		})
}

// A registration that grows the volume, and another process's delete of it: the delete waits,
// then deletes it (nothing left at the plugin) or is refused naming it.
func TestPausedPairVolumeRegisterGrowingDelete(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		func(h *harness) func(ctx context.Context) error {
			sv := registered("v", h.externalID("v"))
			sv.CapacityMin, sv.Context = 4<<20, nil
			return func(ctx context.Context) error { _, err := h.e.RegisterVolume(ctx, sv); return err }
		},
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeleteVolume(ctx, "v") }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the register: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if out.bErr == nil && (!h.volumeGone("v") || len(h.mem.Volumes()) != 0) {
				t.Errorf("at %s: the delete said it deleted v; recorded still %v, the plugin holds %+v", fp, !h.volumeGone("v"), h.mem.Volumes())
			}
		})
}

// A reconcile finishing a claim cut short, and another process's deregister of the volume:
// the deregister waits for the reconcile, and is refused naming the volume while the claim is
// held; the store matches the plugin after.
func TestPausedPairReconcileVolumeDeregister(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.create(volume("v"))
		h.faults.FailAlways("NodePublishVolume", 14) // UNAVAILABLE: the claim is left for reconcile
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a-0"}); err == nil {
			t.Fatal("the claim succeeded with NodePublishVolume failing")
		}
		h.faults.Clear("NodePublishVolume")
		return h
	}
	forEachFailpoint(t, setup, onThis(reconcileIn),
		onOther(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the reconcile: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if out.bErr == nil {
				h.deregisteredClean("at "+fp, "v", h.mem.Volumes()[0].ID)
			}
		})
}

// A claim, and another process's deregister of the volume's plugin: refused, naming the
// volume using it; the claim succeeds.
func TestPausedPairClaimPluginDeregister(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeregisterPlugin(ctx, "mem", false) }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the claim: %v", fp, out.aErr)
			}
			if out.bErr == nil {
				t.Errorf("at %s: plugin mem deregistered under volume v's claim", fp)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
		}, firstOfEachKindAndLast)
}

// A claim, and another process's forced deregister of the volume's plugin (the volume left
// recorded): once the plugin is registered again and a reconcile runs, the store matches the
// plugin: the claim in flight neither leaked a mount nor left a record of one not there.
func TestPausedPairClaimPluginDeregisterForced(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeregisterPlugin(ctx, "mem", true) }
		}),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.bErr != nil {
				t.Errorf("at %s: the forced plugin deregister: %v", fp, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.aErr, "v")
			h.registerPlugin("mem", h.socket)
			if err := reconcileIn(h.e)(h.ctx); err != nil {
				t.Errorf("at %s: the reconcile once mem is registered again: %v", fp, err)
			}
		}, firstOfEachKindAndLast)
}

// handOverIn is a `volctl nomad register` of vol from engine e, whose registration in Nomad
// (answered OK) passes failpoint "test:nomad-registering" on its way: Nomad's answer pending.
func handOverIn(e *Engine, vol string, force bool) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := e.HandOver(ctx, vol, HandoverTarget{Address: "http://127.0.0.1:4646"}, force,
			func(ctx context.Context, first bool, v VolumeInfo) (Registered, error) {
				e.failpoint("test:nomad-registering")
				return Registered{OK: true, Index: 7}, nil
			})
		return err
	}
}

// handedOver says whether volume id has a handover mark.
func (h *harness) handedOver(id string) bool {
	h.t.Helper()
	hs, err := h.e.Handovers(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return len(hs) > 0
}

// A claim, and another process's handover of the volume to Nomad: never both. The claim wins
// (it held the volume first) and the handover is refused naming the volume's claim.
func TestPausedPairClaimHandOver(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return handOverIn(e, "v", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the claim: %v", fp, out.aErr)
			}
			if out.bErr == nil || h.handedOver("v") {
				t.Errorf("at %s: volume v handed over to Nomad (%v) beside a local claim", fp, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
		}, firstOfEachKindAndLast)
}

// A handover whose registration in Nomad is on its way, and another process's claim: the claim
// is refused naming the volume (handed over), and holds nothing.
func TestPausedPairHandOverClaim(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error { return handOverIn(e, "v", false) }),
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "b-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the handover: %v", fp, out.aErr)
			}
			if out.bErr == nil {
				t.Errorf("at %s: a local claim of v succeeded while it was being handed over to Nomad", fp)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: live claims %+v of a handed-over volume", fp, live)
			}
		})
}

// A release, and another process's handover: the handover waits for the release, then hands
// the volume over with nothing left attached or staged here (Nomad's allocs stage it).
func TestPausedPairReleaseHandOver(t *testing.T) {
	t.Parallel()
	forSomeFailpoints(t, claimedV,
		onThis(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		onOther(func(e *Engine) func(ctx context.Context) error { return handOverIn(e, "v", false) }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the release: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if out.bErr == nil {
				if live := h.liveClaims("v"); len(live) != 0 {
					t.Errorf("at %s: handed over with live local claims %+v", fp, live)
				}
				ext := h.externalID("v")
				if _, staged := h.mem.StagingPath(ext); staged || len(h.mem.PublishedNodes(ext)) > 0 {
					t.Errorf("at %s: handed over with the volume still staged (%v) or attached (%q) here", fp, staged, h.mem.PublishedNodes(ext))
				}
			}
		}, firstOfEachKindAndLast)
}

// A take-back from Nomad, and another process's claim: the claim is refused naming the volume
// (still handed over) or, after the take-back, holds it; never a claim while Nomad may.
func TestPausedPairTakeBackClaim(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := createdV(t)
		if err := handOverIn(h.e, "v", false)(h.ctx); err != nil {
			t.Fatal(err)
		}
		return h
	}
	forEachFailpoint(t, setup,
		onThis(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				_, err := e.TakeBack(ctx, "v", func(HandoverInfo) (string, error) { return "gone from Nomad", nil }, nil)
				return err
			}
		}),
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "b-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the take-back: %v", fp, out.aErr)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, "v")
			if out.bErr == nil && !out.bWaited {
				t.Errorf("at %s: the claim succeeded without waiting for the take-back", fp)
			}
		})
}

// A group run, and another process's claim of one of its volumes by an alloc of no group: the
// single-writer volume has one claim after, and the run says what it could not claim.
func TestPausedPairGroupRunSingleClaim(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.createDBVolumes(2)
		return h
	}
	data0 := spec.AllocName("data", 0)
	forSomeFailpoints(t, setup,
		func(h *harness) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := h.e.RunGroup(ctx, dbGroup(2)); return err }
		},
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, data0, "x") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			live := h.liveClaims(data0)
			if len(live) != 1 {
				t.Errorf("at %s: volume %s has live claims %+v, want one (single writer)", fp, data0, live)
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, data0)
			if out.bErr == nil && out.aErr == nil && len(h.groupLiveClaims("db")) == 4 {
				t.Errorf("at %s: both the run (all four claims) and x's claim of %s succeeded", fp, data0)
			}
		}, eachStepKindOnce("group"))
}

// A group stop, and another process's claim of one of the group's volumes by an alloc of no
// group: the stop releases the group's claims only; a claim x got is kept.
// Past group:stopped, x's claim waits for data[0]'s lock, which the stop's release of db[0]'s
// claim holds throughout: the same outcome at each of that release's steps (mend33: every
// one of the 8 ran, 7 of them waiting alike), so the first of each kind and the last.
func TestPausedPairGroupStopSingleClaim(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.createDBVolumes(2)
		if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
			t.Fatal(err)
		}
		return h
	}
	data0 := spec.AllocName("data", 0)
	forSomeFailpoints(t, setup,
		func(h *harness) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := h.e.StopGroup(ctx, "db"); return err }
		},
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, data0, "x") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil {
				t.Errorf("at %s: the stop: %v", fp, out.aErr)
			}
			if live := h.groupLiveClaims("db"); len(live) != 0 {
				t.Errorf("at %s: group db holds %d claims after its stop", fp, len(live))
			}
			saysWhatItWaitedFor(t, "at "+fp, out.bErr, data0)
			live := h.liveClaims(data0)
			if out.bErr == nil && (len(live) != 1 || live[0].Alloc != "x") {
				t.Errorf("at %s: x's claim of %s succeeded, and the volume's claims are %+v", fp, data0, live)
			}
			if out.bErr != nil && len(live) != 0 {
				t.Errorf("at %s: x's claim was refused (%v), and %s has claims %+v", fp, out.bErr, data0, live)
			}
		}, firstOfEachKindAndLast)
}

// A delete of the volume, and another process's claim of it: the claim, admitted without the
// lock the delete holds, finds the volume being deleted and waits; then says the volume is
// gone (naming it), or the delete was refused; never a claim on a deleted volume.
func TestPausedPairVolumeDeleteClaim(t *testing.T) {
	t.Parallel()
	forEachFailpoint(t, createdV,
		onThis(func(e *Engine) func(ctx context.Context) error {
			return func(ctx context.Context) error { return e.DeleteVolume(ctx, "v") }
		}),
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "b-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if (out.aErr == nil) == (out.bErr == nil) {
				t.Errorf("at %s: the delete: %v; the claim: %v (want exactly one to succeed)", fp, out.aErr, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp+" (claim)", out.bErr, "v")
			if out.aErr == nil && len(h.mem.Volumes()) != 0 {
				t.Errorf("at %s: the delete said it deleted v, and the plugin holds %+v", fp, h.mem.Volumes())
			}
		})
}

// A reconcile finishing a claim cut short, and another process's release of that claim: both
// succeed, and nothing is left claimed or mounted.
func TestPausedPairReconcileRelease(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.create(volume("v"))
		h.faults.FailAlways("NodePublishVolume", 14) // UNAVAILABLE: the claim is left for reconcile
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a-0"}); err == nil {
			t.Fatal("the claim succeeded with NodePublishVolume failing")
		}
		h.faults.Clear("NodePublishVolume")
		return h
	}
	forEachFailpoint(t, setup, onThis(reconcileIn),
		onOther(func(e *Engine) func(ctx context.Context) error { return releaseIn(e, "v", "a-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil || out.bErr != nil {
				t.Errorf("at %s: the reconcile: %v; the release: %v", fp, out.aErr, out.bErr)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Errorf("at %s: live claims %+v after the release", fp, live)
			}
		})
}

// A reconcile finishing a claim cut short, and another process's claim again by the same alloc
// (its task restarted): one claim, published, and both say so.
func TestPausedPairReconcileClaimAgain(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.create(volume("v"))
		h.faults.FailAlways("NodePublishVolume", 14)
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a-0"}); err == nil {
			t.Fatal("the claim succeeded with NodePublishVolume failing")
		}
		h.faults.Clear("NodePublishVolume")
		return h
	}
	forEachFailpoint(t, setup, onThis(reconcileIn),
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "a-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if out.aErr != nil || out.bErr != nil {
				t.Errorf("at %s: the reconcile: %v; the claim again: %v", fp, out.aErr, out.bErr)
			}
			if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimPublished {
				t.Errorf("at %s: live claims %+v, want a-0's, published", fp, live)
			}
		})
}

// A forced deregister (its claims released first, outside the volume's lock), and another
// process's claim of the multi-writer volume by another alloc meanwhile: never both, a claim
// left on a forgotten volume; the refused one names the volume.
func TestPausedPairVolumeDeregisterForcedClaim(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) *harness {
		h := newHarness(t, nil)
		h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a-0"})
		return h
	}
	forSomeFailpoints(t, setup,
		onThis(func(e *Engine) func(ctx context.Context) error { return deregisterIn(e, "v", true) }),
		onOther(func(e *Engine) func(ctx context.Context) error { return claimOf(e, "v", "b-0") }),
		func(t *testing.T, h *harness, fp string, out pairOutcome) {
			if (out.aErr == nil) == (out.bErr == nil) {
				t.Errorf("at %s: the forced deregister: %v; the claim: %v (want exactly one to succeed)", fp, out.aErr, out.bErr)
			}
			saysWhatItWaitedFor(t, "at "+fp+" (deregister)", out.aErr, "v")
			saysWhatItWaitedFor(t, "at "+fp+" (claim)", out.bErr, "v")
			if out.aErr != nil && (strings.Contains(out.aErr.Error(), "--force` releases them first") || !strings.Contains(out.aErr.Error(), "claimed by another volctl")) {
				t.Errorf("at %s: the forced deregister: %v\nwant it to say the volume was claimed by another volctl meanwhile, not to advise the --force it was run with", fp, out.aErr)
			}
			if out.aErr == nil {
				h.deregisteredClean("at "+fp, "v", h.mem.Volumes()[0].ID)
			}
		}, firstOfEachKindAndLast)
}
