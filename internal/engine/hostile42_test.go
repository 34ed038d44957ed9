package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A delete the plugin refuses FAILED_PRECONDITION ("in use, or has snapshots") puts the volume
// back to ready (TestDeleteRefusedOfACreatedVolumeStillKeepsItReady). Found by
// TestFaultSequencesKernel: the refusal may answer for a volume the plugin no longer has: an
// earlier attempt, whose answer was lost, deleted it and the retry is refused (a plugin that
// checks its precondition before looking the volume up), or the plugin deleted it and answered
// the refusal. Before, the volume was put back to ready: a claim of it then failed NOT_FOUND,
// and `volume delete` again was the user's to guess. Where the plugin can say what it holds
// (LIST_VOLUMES), it is asked after the refusal: one it no longer lists stays deleting, the
// error and the event say so, and the next delete or reconcile sends DeleteVolume again and
// forgets it once the plugin answers OK or NOT_FOUND and does not list it.
func TestDeleteRefusedFailedPreconditionForAVolumeThePluginNoLongerListsStaysDeleting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults []csitest.Fault
	}{
		{"refused having deleted it", []csitest.Fault{{Code: codes.FailedPrecondition, Lost: true, Times: 1}}},
		{"refused after a lost attempt deleted it", []csitest.Fault{{Code: codes.Unavailable, Lost: true, Times: 1}, {Code: codes.FailedPrecondition, Times: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			ext := h.create(volume("v")).ExternalID
			for _, f := range tc.faults {
				h.faults.Inject(csi.RPCDeleteVolume, f)
			}
			err := h.e.DeleteVolume(h.ctx, "v")
			if _, held := h.mem.Volume(ext); held {
				t.Fatalf("the plugin still holds %s: the faults did not delete it", ext)
			}
			for _, want := range []string{`volume "v"`, "FailedPrecondition", "no longer lists", "stays marked deleting", "volctl reconcile"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("delete refused FAILED_PRECONDITION for a volume the plugin no longer has: %v; want it saying %q", err, want)
				}
			}
			if v := h.volumeInfo("v"); v.State != string(store.VolumeDeleting) {
				t.Errorf("v after the refusal: %s; want deleting, not ready (the plugin no longer has it)", v.State)
			}
			if msgs := h.eventMessages("volume-delete", "v"); !strings.Contains(msgs, "no longer lists") || strings.Contains(msgs, "delete refused, volume kept") {
				t.Errorf("events say %q; want the refusal recorded with the plugin no longer listing the volume, not the volume kept", msgs)
			}
			h.reconcileLeavesNoVolume(t, "v", "once DeleteVolume is answered")
		})
	}
}

// The refusals the listing does not contradict are the plugin's word, as before: one for a
// volume it still lists, one from a plugin that cannot list (no LIST_VOLUMES nor GET_VOLUME),
// and one whose listing fails, which volctl cannot check.
func TestDeleteRefusedFailedPreconditionKeepsTheVolumeReadyWhereNoListingContradictsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		mut   func(*csitest.MemConfig)
		lost  bool // the plugin deleted the volume all the same
		lists bool // whether ListVolumes is asked
		fails bool // ListVolumes fails
	}{
		{"still listed", nil, false, true, false},
		{"listing fails", nil, true, true, true},
		{"cannot list", func(c *csitest.MemConfig) {
			c.Controller.ListVolumes, c.Controller.ListVolumesPublishedNodes = false, false
		}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tc.mut)
			h.create(volume("v"))
			h.mem.ResetCalls()
			h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Code: codes.FailedPrecondition, Lost: tc.lost, Times: 1})
			if tc.fails {
				h.faults.FailAlways(csi.RPCListVolumes, codes.Unavailable)
			}
			if err := h.e.DeleteVolume(h.ctx, "v"); err == nil || !strings.Contains(err.Error(), "kept, ready") {
				t.Fatalf("delete refused FAILED_PRECONDITION: %v; want the volume kept, ready", err)
			}
			if v := h.volumeInfo("v"); v.State != string(store.VolumeReady) {
				t.Errorf("v after its refused delete: %s; want ready", v.State)
			}
			if n := h.faults.Calls(csi.RPCListVolumes); (n > 0) != tc.lists {
				t.Errorf("ListVolumes sent %d time(s); want it asked: %v", n, tc.lists)
			}
		})
	}
}

// A snapshot create left for reconcile whose CreateSnapshot fails again is reconcile's problem,
// shown as its message alone (`Problem: ...` on stderr): it names the volume snapshotted as well
// as the snapshot. Before, it named the snapshot and the plugin only (found by
// TestFaultSequencesKernel, whose every reconcile problem of its volume must name it).
func TestReconcileProblemOfASnapshotCreateNamesItsVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCCreateSnapshot, codes.Unavailable)
	if _, err := h.e.CreateSnapshot(h.ctx, "v", "nightly", nil); err == nil {
		t.Fatal("a snapshot whose CreateSnapshot fails UNAVAILABLE succeeded")
	}
	rep, _ := h.e.Reconcile(h.ctx)
	if len(rep.Problems) != 1 {
		t.Fatalf("reconcile's problems: %+v; want the snapshot create's", rep.Problems)
	}
	for _, want := range []string{`snapshot "nightly"`, `volume "v"`, `plugin "mem"`} {
		if !strings.Contains(rep.Problems[0].Message, want) {
			t.Errorf("reconcile's problem %q does not say %s", rep.Problems[0].Message, want)
		}
	}
}
