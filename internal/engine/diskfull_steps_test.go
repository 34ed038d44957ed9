package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
)

// chaos32: the state dir's file system fills up at each failpoint a command passes (right after
// a step is committed, or right after an RPC answered), so that the command's next commit finds
// the disk full, whatever step it is: the steps diskfull_test.go fills after are the RPCs of a
// claim, a release, a create, a delete and a snapshot create; these are every step of those and
// of a snapshot delete and an expansion, and a group's run and its stop at each of their own
// steps and one of each kind of their claims' and releases' (eachStepKindOnce: the claim and
// release tests here fill at every one).

// diskFullAtEachFailpoint lists the failpoints run passes on a harness setup made, then, for
// each, runs it on a harness on a small tmpfs so set up, filling the file system when it passes
// that failpoint. A command that fails says the disk is full; one that succeeds left the store
// matching the plugin; and once space is freed, reconcile finishes what was left without a
// problem, the store matching the plugin after it.
func diskFullAtEachFailpoint(t *testing.T, setup func(h *harness), run func(h *harness) error) {
	t.Helper()
	diskFullAtSomeFailpoints(t, setup, run, slices.Clone)
}

// diskFullAtSomeFailpoints is diskFullAtEachFailpoint at the failpoints pick keeps of those run
// passes.
func diskFullAtSomeFailpoints(t *testing.T, setup func(h *harness), run func(h *harness) error, pick func([]string) []string) {
	t.Helper()
	h0 := newHarness(t, nil)
	setup(h0)
	var err0 error
	fps := failpointsOf(t, h0.e, func() { err0 = run(h0) })
	if err0 != nil {
		t.Fatalf("the command alone: %v", err0)
	}
	pass := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return handler(ctx, req)
	}
	for _, fp := range pick(fps) {
		t.Run(strings.ReplaceAll(fp, ":", "_"), func(t *testing.T) {
			t.Parallel() // each on a tmpfs of its own, its failpoint hook its engine's
			h, mnt := tmpfsStateHarness(t, "size=2m", pass)
			setup(h)
			fill := filepath.Join(mnt, "fill")
			var filled atomic.Bool
			h.e.failpointHook = func(n string) {
				if n == fp && filled.CompareAndSwap(false, true) {
					fillUp(fill)
				}
			}
			err := run(h)
			h.e.failpointHook = nil
			t.Logf("filled up at %s: %v", fp, err)
			if !filled.Load() {
				t.Fatalf("the command did not pass %s this time (it returned %v)", fp, err)
			}
			if err != nil {
				wantDiskFull(t, "the command filled up at "+fp, err, h)
			} else {
				h.storeMatchesPlugin("the command's success on a disk filled at " + fp)
				h.snapshotsMatch("the command's success on a disk filled at " + fp)
			}
			if err := os.Remove(fill); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			rep, rerr := h.e.Reconcile(h.ctx)
			if rerr != nil || !rep.OK() {
				t.Fatalf("reconcile once space is freed (the command filled up at %s returned %v): %v, problems %+v", fp, err, rerr, rep.Problems)
			}
			h.storeMatchesPlugin("after reconcile (filled up at " + fp + ")")
			h.snapshotsMatch("after reconcile (filled up at " + fp + ")")
		})
	}
}

func TestDiskFullAtEachStepOfAClaim(t *testing.T) {
	t.Parallel()
	diskFullAtEachFailpoint(t, func(h *harness) { h.create(volume("v")) },
		func(h *harness) error { return claimOf(h.e, "v", "a-0")(h.ctx) })
}

func TestDiskFullAtEachStepOfARelease(t *testing.T) {
	t.Parallel()
	diskFullAtEachFailpoint(t, func(h *harness) { h.create(volume("v")); h.claim(ClaimRequest{VolumeID: "v", Alloc: "a-0"}) },
		func(h *harness) error { return releaseIn(h.e, "v", "a-0")(h.ctx) })
}

func TestDiskFullAtEachStepOfACreateAndADelete(t *testing.T) {
	t.Parallel()
	t.Run("create", func(t *testing.T) {
		diskFullAtEachFailpoint(t, func(*harness) {},
			func(h *harness) error { _, err := h.e.CreateVolume(h.ctx, volume("v")); return err })
	})
	t.Run("delete", func(t *testing.T) {
		diskFullAtEachFailpoint(t, func(h *harness) { h.create(volume("v")) },
			func(h *harness) error { return h.e.DeleteVolume(h.ctx, "v") })
	})
}

func TestDiskFullAtEachStepOfASnapshotCreateAndDelete(t *testing.T) {
	t.Parallel()
	t.Run("create", func(t *testing.T) {
		diskFullAtEachFailpoint(t, func(h *harness) { h.create(volume("db")) },
			func(h *harness) error { return snapshotCreateOf(h.e)(h.ctx) })
	})
	t.Run("delete", func(t *testing.T) {
		diskFullAtEachFailpoint(t, func(h *harness) { h.create(volume("db")); h.snapshot("nightly") },
			func(h *harness) error { return h.e.DeleteSnapshot(h.ctx, "mem", "nightly", nil) })
	})
}

func TestDiskFullAtEachStepOfAnExpansion(t *testing.T) {
	t.Parallel()
	diskFullAtEachFailpoint(t, func(h *harness) {
		h.mem.AnswerNodeExpansionRequired(true)
		h.create(volume("v"))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a-0"})
	}, func(h *harness) error { _, err := h.e.ExpandVolume(h.ctx, "v", 4<<20, 0); return err })
}

func TestDiskFullAtEachStepOfAGroupRunAndStop(t *testing.T) {
	t.Parallel()
	t.Run("run", func(t *testing.T) {
		diskFullAtSomeFailpoints(t, func(h *harness) { h.createDBVolumes(2) },
			func(h *harness) error { _, err := h.e.RunGroup(h.ctx, dbGroup(2)); return err },
			eachStepKindOnce("group"))
	})
	t.Run("stop", func(t *testing.T) {
		diskFullAtSomeFailpoints(t, func(h *harness) {
			h.createDBVolumes(2)
			if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
				h.t.Fatal(err)
			}
		}, func(h *harness) error { _, err := h.e.StopGroup(h.ctx, "db"); return err }, eachStepKindOnce("group"))
	})
}
