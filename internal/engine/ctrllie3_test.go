package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A plugin that ignores limit_bytes (it allocates in 1 GiB units) answers a create asked for
// 1 to 2 MiB with a 1 GiB volume: that is outside the request as a too-small answer is, so it
// is refused the same way: the volume it made is deleted and the create forgotten, which the
// error says (it named the volume made, and not what became of it).
func TestCreateAnsweredAboveTheLimitIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 1 << 30 })
	sv := volume("v")
	sv.CapacityMax = 2 << 20
	_, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil || !strings.Contains(err.Error(), "above the requested maximum") || !strings.Contains(err.Error(), "(volctl deleted that volume again: DeleteVolume answered OK)") {
		t.Fatalf("create answered with 1 GiB for at most 2 MiB: %v, want it refused as above the maximum, saying the volume made was deleted", err)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused create is still recorded: %v", err)
	}
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin still holds %+v: the volume made above the limit was not deleted", vols)
	}
}

// The same answer to a create sent again after an earlier one whose answer was lost
// (UNAVAILABLE at every try): the volume answered, which CSI's idempotency by name makes the one
// any earlier call made, is deleted, so nothing is left under the name and the create is
// forgotten. Before, the intent was kept "since an earlier CreateVolume may have made the
// volume", and every reconcile pass (the agent's every minute) sent CreateVolume again, made and
// deleted the unusable volume anew, and reported the create for good.
func TestCreateSentAgainAnsweredAboveTheLimitIsForgottenOnceDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 1 << 30 })
	sv := volume("v")
	sv.CapacityMax = 2 << 20
	h.faults.FailAlways(csi.RPCCreateVolume, codes.Unavailable)
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("a create unanswered succeeded")
	}
	h.faults.Clear()
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil || !strings.Contains(err.Error(), "above the requested maximum") {
		t.Fatalf("create again answered with 1 GiB for at most 2 MiB: %v, want it refused as above the maximum", err)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused create is still recorded, its unusable volume deleted: %v", err)
	}
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin still holds %+v", vols)
	}
	h.reconcileClean(1)
}

// The same answer with another volctl volume's storage: refused, and that storage left alone
// (refuseSharedStorage), as for a too-small answer.
func TestCreateAboveTheLimitAnsweredWithAnotherVolumesStorageDeletesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	a := h.create(volume("a")) // 1 MiB
	h.mem.AnswerCreateWith(a.ExternalID)
	sv := volume("b")
	sv.CapacityMin, sv.CapacityMax = 1<<10, 1<<15
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `already volume "a"`) {
		t.Errorf("create of b: %v, want a conflict naming volume a", err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s): the storage is a's", n)
	}
	if _, ok := h.mem.Volume(a.ExternalID); !ok {
		t.Fatalf("a's storage %q was deleted by b's failed create", a.ExternalID)
	}
}

// A volume made outside the request whose DeleteVolume fails: the plugin still has it, so the
// create is not forgotten (that would leak the storage with no record of it): the volume stays
// recorded, marked deleting with the plugin's ID, and reconcile deletes it like any delete. So
// too when DeleteVolume answers OK while the plugin still lists the volume (LIST_VOLUMES): the
// storage is still there.
func TestCreateRefusedAnswerWhoseCleanupFailsIsKept(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		lie    bool   // DeleteVolume answers OK and keeps the volume; else it fails
		saying string // what the create's error says of the cleanup
	}{
		{name: "delete fails", saying: "reconcile"},
		{name: "delete answered OK, volume still listed", lie: true, saying: "still lists volume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 1 << 30; c.DeleteLater = tc.lie })
			if !tc.lie {
				h.faults.FailAlways(csi.RPCDeleteVolume, codes.Unavailable)
			}
			sv := volume("v")
			sv.CapacityMax = 2 << 20
			_, err := h.e.CreateVolume(h.ctx, sv)
			if err == nil || !strings.Contains(err.Error(), "above the requested maximum") {
				t.Fatalf("create: %v, want it refused as above the maximum", err)
			}
			vols := h.mem.Volumes()
			if len(vols) != 1 {
				t.Fatalf("the plugin holds %d volumes, want the one it made", len(vols))
			}
			v, verr := h.e.Volume(h.ctx, "v")
			if verr != nil || v.State != string(store.VolumeDeleting) || v.ExternalID != vols[0].ID {
				t.Fatalf("volume v after a failed cleanup: %+v, %v; want it kept, deleting %q (the plugin still has it)", v, verr, vols[0].ID)
			}
			if !strings.Contains(err.Error(), tc.saying) {
				t.Errorf("error does not say %q: %v", tc.saying, err)
			}
			h.faults.Clear(csi.RPCDeleteVolume)
			h.mem.Reconfigure(func(c *csitest.MemConfig) { c.DeleteLater = false })
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatal(err)
			}
			if vols := h.mem.Volumes(); len(vols) != 0 {
				t.Errorf("the plugin still holds %+v after reconcile", vols)
			}
			if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume v still recorded after reconcile deleted it: %v", err)
			}
		})
	}
}

// Two processes create volumes that the plugin answers with one storage volume: usable for b,
// above a's limit. b's answer is in, and a's create runs before b records it: a must not
// delete the storage (its cleanup of an unusable answer) that b is about to record. The
// controller lock covers each create from its CreateVolume to its record or cleanup, so a
// waits, then sees b's record and leaves the storage alone.
func TestCreateCleanupNeverDeletesStorageAConcurrentCreateRecords(t *testing.T) {
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "shared", CapacityBytes: 1 << 30})
	h.mem.AnswerCreateWith("shared")
	other, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	aDone := make(chan error, 1)
	swapsGlobals(t, "testHookCreateAnswered")
	old := testHookCreateAnswered
	t.Cleanup(func() { testHookCreateAnswered = old })
	testHookCreateAnswered = func(id string) {
		if id != "b" {
			return
		}
		go func() {
			sv := volume("a")
			sv.CapacityMax = 2 << 20
			_, err := other.CreateVolume(h.ctx, sv)
			aDone <- err
		}()
		select { // a runs to its end here unless something holds it back
		case err := <-aDone:
			aDone <- err
		case <-time.After(300 * time.Millisecond):
		}
	}
	if _, err := h.e.CreateVolume(h.ctx, volume("b")); err != nil {
		t.Fatalf("create b: %v", err)
	}
	if err := <-aDone; err == nil {
		t.Error("create a, answered above its limit, succeeded")
	}
	if _, ok := h.mem.Volume("shared"); !ok {
		t.Fatalf("the storage volume b records was deleted by a's cleanup (DeleteVolume sent %d times)", h.mem.CallCount(csi.RPCDeleteVolume))
	}
	if b := h.volumeInfo("b"); b.ExternalID != "shared" || b.State != string(store.VolumeReady) {
		t.Errorf("b: external ID %q, state %s; want shared, ready", b.ExternalID, b.State)
	}
}

// Deleting that pending snapshot cannot learn its ID (CreateSnapshot under its name gets the
// same answer): the intent is forgotten, as asked, but the command fails saying the snapshot
// was not deleted and the plugin still has it.
func TestDeletePendingSnapshotWithAnUnreadableAnswerSaysItWasNotDeleted(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.open(Config{Now: func() time.Time { return snapshotClock }, Timeouts: contentTimeouts}) // 5 MiB of answer, under -race
	h.faults.Pad(csi.RPCCreateSnapshot, 5<<20)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil); err == nil {
		t.Fatal("snapshot succeeded with an answer over gRPC's limit")
	}
	err := h.e.DeleteSnapshot(h.ctx, "mem", "s1", nil)
	if err == nil || !strings.Contains(err.Error(), "not deleted") || strings.Contains(err.Error(), "stays recorded") {
		t.Errorf("delete of a snapshot whose ID cannot be read: %v; want it to say the snapshot was not deleted", err)
	}
	if n := len(h.mem.Snapshots()); n != 1 {
		t.Errorf("the plugin holds %d snapshots, want 1", n)
	}
}

// A DeleteVolume answer over gRPC's limit: the plugin deleted the storage and answered; every
// delete gets the same answer, so the error must not advise running it again, but name what
// forgets the volume, which then works.
func TestDeleteAnswerOverGRPCLimitAdvisesWhatWorks(t *testing.T) {
	t.Parallel()
	h := newHarnessConfig(t, nil, Config{Timeouts: contentTimeouts}) // 5 MiB of answer, under -race
	h.create(volume("v"))
	h.faults.Pad(csi.RPCDeleteVolume, 5<<20)
	err := h.e.DeleteVolume(h.ctx, "v")
	if err == nil || strings.Contains(err.Error(), "run the delete again") || !strings.Contains(err.Error(), "volctl volume deregister v") {
		t.Fatalf("delete answered over gRPC's limit: %v; want it to name `volctl volume deregister v`, not a retry", err)
	}
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		t.Fatal("the delete again succeeded against the same answer")
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Fatalf("the advised deregister: %v", err)
	}
}

// An answer over gRPC's limit to a claim's or a release's node and controller RPCs (the plugin
// did the call): a claim is rolled back, undoing what the plugin did, and a release is left for
// reconcile, which finishes it once the plugin answers sanely. Nothing stays attached, staged
// or published behind volctl's back. (ControllerPublishVolume's claim side is
// TestPublishContextOverGRPCLimit.)
func TestClaimAndReleaseAnswersOverGRPCLimitLeaveNothingBehind(t *testing.T) {
	t.Parallel()
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		t.Run("claim "+rpc, func(t *testing.T) {
			h := newHarnessConfig(t, nil, Config{Timeouts: contentTimeouts}) // 5 MiB of answer, under -race
			v := h.create(volume("v"))
			h.faults.Pad(rpc, 5<<20)
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil || !strings.Contains(err.Error(), "rolled back") {
				t.Fatalf("claim: %v, want it rolled back", err)
			}
			h.nothingLeft(v.ExternalID)
		})
	}
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		t.Run("release "+rpc, func(t *testing.T) {
			h := newHarnessConfig(t, nil, Config{Timeouts: contentTimeouts}) // 5 MiB of answer, under -race
			v := h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			h.faults.Pad(rpc, 5<<20)
			if _, err := h.e.Release(h.ctx, "v", "a"); err == nil || !strings.Contains(err.Error(), "reconcile") {
				t.Fatalf("release: %v, want it left for reconcile", err)
			}
			if len(h.liveClaims("v")) != 1 {
				t.Fatal("the claim went although its release did not finish")
			}
			h.faults.Clear()
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatal(err)
			}
			h.nothingLeft(v.ExternalID)
		})
	}
}

// nothingLeft checks that volume v has no live claim and the plugin holds it nowhere.
func (h *harness) nothingLeft(ext string) {
	h.t.Helper()
	_, staged := h.mem.StagingPath(ext)
	if live, pub, tg := h.liveClaims("v"), h.mem.PublishedNodes(ext), h.mem.Targets(ext); len(live) > 0 || len(pub) > 0 || staged || len(tg) > 0 {
		h.t.Errorf("left behind: claims %+v, attached to %v, staged %v, targets %v", live, pub, staged, tg)
	}
}

// A create's cleanup of an unusable answer (above its limit) while, from another process, the
// same storage is registered as another volume: the cleanup's DeleteVolume, held at the plugin,
// must not delete storage that a volume records by the time it runs. The storage being
// deleted is recorded (the intent marked deleting with its external ID) before DeleteVolume is
// sent, so the register sees it and is refused, and the cleanup deletes only what nobody has.
func TestCreateCleanupRacingARegisterOfTheSameStorage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "shared", CapacityBytes: 1 << 30})
	h.mem.AnswerCreateWith("shared")
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Gate: gate, Times: 1})
	other, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	done := make(chan error, 1)
	go func() {
		sv := volume("a")
		sv.CapacityMax = 2 << 20
		_, err := h.e.CreateVolume(h.ctx, sv)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for h.faults.Calls(csi.RPCDeleteVolume) == 0 {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatalf("the cleanup's DeleteVolume never came: %v", <-done)
		}
		time.Sleep(time.Millisecond)
	}
	reg := volume("r")
	reg.ExternalID = "shared"
	_, rerr := other.RegisterVolume(h.ctx, reg)
	close(gate)
	if err := <-done; err == nil {
		t.Error("create a, answered above its limit, succeeded")
	}
	_, stillThere := h.mem.Volume("shared")
	if _, err := h.e.Volume(h.ctx, "r"); err == nil && !stillThere {
		t.Fatalf("volume r was registered on storage %q during a's cleanup (register: %v), which then deleted it", "shared", rerr)
	}
}

// A plugin that creates the volume and answers so that volctl cannot use the answer: over
// gRPC's 4 MiB limit (a huge volume_context), or without the volume's ID. The outcome is not
// "nothing was made": the create stays recorded, and the error names the plugin-side name (the
// CSI name) to look for, rather than forgetting a volume the plugin has.
func TestCreateWhoseAnswerCannotBeUsedKeepsTheIntent(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*csitest.MemConfig){
		"over gRPC's limit": func(c *csitest.MemConfig) { c.CreateContext = map[string]string{"pad": strings.Repeat("x", 5<<20)} },
		"without an ID":     func(c *csitest.MemConfig) { c.AnswerWithoutID = true },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, mutate)
			_, err := h.e.CreateVolume(h.ctx, volume("v"))
			if err == nil {
				t.Fatal("create succeeded with an answer it cannot use")
			}
			if n := len(h.mem.Volumes()); n != 1 {
				t.Fatalf("the plugin holds %d volumes, want the one it made", n)
			}
			v, verr := h.e.Volume(h.ctx, "v")
			if verr != nil || v.State != string(store.VolumeCreating) {
				t.Fatalf("volume v: %v; want the create kept (the plugin made the volume); create error: %v", verr, err)
			}
			if !strings.Contains(err.Error(), v.CSIName) {
				t.Errorf("error does not name the plugin-side volume %q: %v", v.CSIName, err)
			}
		})
	}
}

// The same for CreateSnapshot: the plugin took the snapshot, and its intent stays (pending),
// the error naming the snapshot's name on the plugin's side.
func TestCreateSnapshotWhoseAnswerCannotBeUsedKeepsTheIntent(t *testing.T) {
	t.Parallel()
	for name, lie := range map[string]func(*harness){
		"over gRPC's limit": func(h *harness) { h.faults.Pad(csi.RPCCreateSnapshot, 5<<20) },
		"without an ID":     func(h *harness) { h.mem.SetAnswerWithoutID(true) },
	} {
		t.Run(name, func(t *testing.T) {
			h, _ := snapshotHarness(t, nil)
			h.open(Config{Now: func() time.Time { return snapshotClock }, Timeouts: contentTimeouts}) // 5 MiB of answer, under -race
			lie(h)
			_, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
			if err == nil {
				t.Fatal("snapshot succeeded with an answer it cannot use")
			}
			if n := len(h.mem.Snapshots()); n != 1 {
				t.Fatalf("the plugin holds %d snapshots, want the one it took", n)
			}
			list, lerr := h.e.ListSnapshots(h.ctx, "mem", nil)
			if lerr != nil {
				t.Fatal(lerr)
			}
			pending := false
			for _, s := range list.Snapshots {
				pending = pending || s.Name == "s1" && s.Pending
			}
			if !pending {
				t.Errorf("snapshot s1 is not recorded as pending after the plugin took it: %+v (error: %v)", list.Snapshots, err)
			}
			if !strings.Contains(err.Error(), `"s1"`) {
				t.Errorf("error does not name the snapshot: %v", err)
			}
		})
	}
}

// The advice a create answered unreadably gives (the plugin made the volume or took the
// snapshot, volctl has no ID for it): forget it with volctl, delete it with the storage
// provider's tools. Followed in the order it is given, with a reconcile pass between the steps
// (the agent runs one every minute, and reconcile replays a create still recorded), it must
// leave nothing on the plugin's side: a create replayed after the hand delete makes the
// storage again, and a forget after that leaves it with no record anywhere.
func TestUnreadableCreateAdviceFollowedInOrderLeavesNothing(t *testing.T) {
	t.Parallel()
	type step struct {
		at  int
		run func(h *harness) error
	}
	follow := func(t *testing.T, h *harness, msg, forget, tools string, steps map[string]func(*harness) error, left func() int) {
		t.Helper()
		i, j := strings.Index(msg, forget), strings.Index(msg, tools)
		if i < 0 || j < 0 {
			t.Fatalf("the advice does not name %q and %q: %s", forget, tools, msg)
		}
		order := []step{{i, steps[forget]}, {j, steps[tools]}}
		if j < i {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			_, _ = h.e.Reconcile(h.ctx) // its problems (the unreadable create) are not this test's
			if err := s.run(h); err != nil {
				t.Logf("step: %v", err) // the forget may say what it did not delete
			}
		}
		_, _ = h.e.Reconcile(h.ctx)
		if n := left(); n != 0 {
			t.Errorf("after following the advice in its order (reconcile between the steps), the plugin holds %d, want none: %s", n, msg)
		}
	}
	t.Run("volume", func(t *testing.T) {
		h := newHarness(t, func(c *csitest.MemConfig) { c.AnswerWithoutID = true })
		_, err := h.e.CreateVolume(h.ctx, volume("v"))
		if err == nil {
			t.Fatal("create succeeded with an answer it cannot use")
		}
		follow(t, h, err.Error(), "volctl volume delete v", "storage provider's tools", map[string]func(*harness) error{
			"volctl volume delete v": func(h *harness) error { return h.e.DeleteVolume(h.ctx, "v") },
			"storage provider's tools": func(h *harness) error {
				for _, v := range h.mem.Volumes() {
					h.mem.DropVolume(v.ID)
				}
				return nil
			},
		}, func() int { return len(h.mem.Volumes()) })
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume v after the advice: %v, want it forgotten", err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		h, _ := snapshotHarness(t, nil)
		h.mem.SetAnswerWithoutID(true)
		_, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
		if err == nil {
			t.Fatal("snapshot succeeded with an answer it cannot use")
		}
		follow(t, h, err.Error(), "volctl volume snapshot delete mem s1", "storage provider's tools", map[string]func(*harness) error{
			"volctl volume snapshot delete mem s1": func(h *harness) error { return h.e.DeleteSnapshot(h.ctx, "mem", "s1", nil) },
			"storage provider's tools": func(h *harness) error {
				for _, s := range h.mem.Snapshots() {
					h.mem.DropSnapshot(s.ID)
				}
				return nil
			},
		}, func() int { return len(h.mem.Snapshots()) })
	})
}
