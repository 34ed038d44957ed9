package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// expansionLostAt leaves volume v (created 1MiB) with an expansion to size pending: every
// answer to its ControllerExpandVolume lost, the plugin having grown the storage.
func expansionLostAt(t *testing.T, h *harness, size, limit int64) {
	t.Helper()
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.ExpandVolume(h.ctx, "v", size, limit); err == nil {
		t.Fatalf("expand to %s whose every answer was lost succeeded", spec.FormatSize(size))
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != size {
		t.Fatalf("setup: after the lost answers, expansion pending %s; want %s", spec.FormatSize(v.ExpansionPending), spec.FormatSize(size))
	}
}

// expandKilledAtIntent runs `volume expand v --size size --limit limit`, killed once its intent
// is written, before ControllerExpandVolume is sent, and opens the engine anew (the next volctl).
func expandKilledAtIntent(t *testing.T, h *harness, size, limit int64) {
	t.Helper()
	if !cutShortAt(h, "expand:intent", 1, func() { h.e.ExpandVolume(h.ctx, "v", size, limit) }) {
		t.Fatalf("the expand to %s never reached expand:intent", spec.FormatSize(size))
	}
	h.open(h.e.cfg)
}

// reconcileTwice runs two reconcile passes and returns their problems.
func reconcileTwice(t *testing.T, h *harness) []string {
	t.Helper()
	var problems []string
	for range 2 {
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil {
			t.Logf("reconcile: %v", err)
		}
		for _, p := range rep.Problems {
			problems = append(problems, p.Message)
		}
	}
	return problems
}

// beneathHarness is a harness whose plugin expands on the controller alone, lists no volumes
// (so an expansion sent again is sent, not found listed) and holds at most maxSize (0: no
// bound), with volume "v" of 1MiB; it returns v's storage ID. getVolume false leaves out
// GET_VOLUME too.
func beneathHarness(t *testing.T, maxSize int64, getVolume bool) (*harness, string) {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Node.ExpandVolume, c.Controller.ListVolumes, c.MaxVolumeSize = false, false, maxSize
		if !getVolume {
			c.Controller.GetVolume = false
		}
	})
	return h, h.create(volume("v")).ExternalID
}

// recordedAfterReconcile runs two reconcile passes and wants volume v recorded at size with
// nothing pending and capacity_max capMax, the one the user set last (what says how).
func recordedAfterReconcile(t *testing.T, h *harness, size, capMax int64, what string) {
	t.Helper()
	problems := reconcileTwice(t, h)
	v := h.volumeInfo("v")
	if v.ExpansionPending != 0 || v.CapacityBytes != size || v.RequestedMax != capMax {
		t.Errorf("after reconcile: recorded at %s, expansion pending %s, capacity_max %s; want %s, none, and the %s %s last. Problems:\n  %s",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.ExpansionPending), spec.FormatSize(v.RequestedMax),
			spec.FormatSize(size), spec.FormatSize(capMax), what, strings.Join(problems, "\n  "))
	}
}

// An expansion to 4MiB is pending (its answers lost, the storage grown). `volume expand v
// --size 64MiB`, above what the plugin holds (refused OUT_OF_RANGE for good), wrote its intent
// over the pending one and was killed before sending. Refused live, the pending one is put back
// (TestRefusedExpandBesideAPendingOneKeepsThePendingOne); killed, nothing put it back: every
// reconcile sent 64MiB and was refused, and the lost 4MiB expansion was never recorded, the
// storage at 4MiB recorded at 1MiB. The earlier one is now kept beneath the new intent, and a
// refusal of the new one sent again gives way to it. Found by helper review68 (crash).
func TestExpandKilledAtItsIntentBesideAPendingOneKeepsThePendingOne(t *testing.T) {
	t.Parallel()
	h, _ := beneathHarness(t, 8*mib, true)
	expansionLostAt(t, h, 4*mib, 0)
	expandKilledAtIntent(t, h, 64*mib, 0)
	problems := reconcileTwice(t, h)
	v := h.volumeInfo("v")
	got, _ := h.mem.Volume(v.ExternalID)
	if v.ExpansionPending != 0 || v.CapacityBytes != got.CapacityBytes {
		t.Errorf("the 64MiB expand killed at expand:intent beside the pending 4MiB one, then two reconciles: recorded at %s, expansion pending %s, the storage %s; "+
			"want the lost 4MiB expansion finished, as when the 64MiB one is refused without a kill. Reconcile's problems:\n  %s",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.ExpansionPending), spec.FormatSize(got.CapacityBytes), strings.Join(problems, "\n  "))
	}
	joined := strings.Join(problems, "\n")
	if !strings.Contains(joined, "64MiB") || !strings.Contains(joined, "earlier expansion to 4MiB") {
		t.Errorf("reconcile's problems do not say the refused 64MiB expansion gave way to the earlier 4MiB one:\n  %s", strings.Join(problems, "\n  "))
	}
}

// The same, the user running the killed expand again instead of reconcile: refused, it says
// the earlier expansion is pending in its place, and reconcile records it.
func TestExpandRunAgainAfterAKillAtItsIntentGivesWayToTheEarlierOne(t *testing.T) {
	t.Parallel()
	h, _ := beneathHarness(t, 8*mib, true)
	expansionLostAt(t, h, 4*mib, 0)
	expandKilledAtIntent(t, h, 64*mib, 0)
	owed, err := h.e.Owed(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(owed) != 1 || !strings.Contains(owed[0].What, "over an earlier one to 4MiB") {
		t.Errorf("the work owed after the kill: %+v; want the 64MiB expansion, over the earlier 4MiB one", owed)
	}
	_, err = h.e.ExpandVolume(h.ctx, "v", 64*mib, 0)
	if err == nil {
		t.Fatal("the 64MiB expand, above the plugin's maximum, succeeded when run again")
	}
	if !strings.Contains(err.Error(), "earlier expansion to 4MiB") || !strings.Contains(err.Error(), "volctl reconcile") {
		t.Errorf("the refused expand run again does not say the earlier 4MiB expansion is pending in its place: %v", err)
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("after the refusal: expansion pending %s; want the earlier 4MiB", spec.FormatSize(v.ExpansionPending))
	}
	reconcileTwice(t, h)
	if v := h.volumeInfo("v"); v.ExpansionPending != 0 || v.CapacityBytes != 4*mib {
		t.Errorf("after reconcile: recorded at %s, expansion pending %s; want 4MiB, none", spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.ExpansionPending))
	}
}

// An expansion to 6MiB is pending; an expand to 5MiB was killed at its intent, so 5MiB is
// pending over the 6MiB kept beneath it. A --limit of 5.5MiB is above the pending one, but the
// 6MiB beneath it is sent again with that limit once the 5MiB one gives way: refused, as a limit
// below the pending one is.
func TestLimitBelowTheExpansionKeptBeneathIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := beneathHarness(t, 0, true)
	expansionLostAt(t, h, 6*mib, 0)
	expandKilledAtIntent(t, h, 5*mib, 0)
	_, err := h.e.ExpandVolume(h.ctx, "v", mib, 5*mib+mib/2)
	if err == nil || !strings.Contains(err.Error(), "expansion to 6MiB pending") {
		t.Errorf("--limit 5.5MiB below the 6MiB expansion kept beneath the pending 5MiB one: %v; want it refused, naming 6MiB", err)
	}
}

// A capacity_max set beside a pending expansion becomes its limit, and the limit of the one kept
// beneath it: that one, sent again once the pending one gives way, records its limit as
// capacity_max, and the one set last must not be undone.
func TestLimitSetBesideAnExpansionKeptBeneathBoundsItsReplay(t *testing.T) {
	t.Parallel()
	h, _ := beneathHarness(t, 32*mib, false)
	expansionLostAt(t, h, 4*mib, 8*mib)
	expandKilledAtIntent(t, h, 64*mib, 0)
	if _, err := h.e.ExpandVolume(h.ctx, "v", mib, 100*mib); err != nil {
		t.Fatalf("expand --size 1MiB --limit 100MiB (capacity_max set, above the pending 64MiB): %v", err)
	}
	recordedAfterReconcile(t, h, 4*mib, 100*mib, "set")
}

// A registration again whose capacity_max equals the limit of the pending expansion
// (written by an expand killed at its intent over an earlier pending one with another limit)
// left the limit of the one kept beneath it as it was: SetExpansionLimit ran only where the
// registration's limit differed from the pending one's, not from the one beneath. The refused
// pending one gave way to the earlier one, whose replay recorded its old limit as capacity_max,
// undoing the capacity_max registered last (limitChanges). Found by helper review69.
func TestRegisterCapacityMaxEqualToThePendingLimitBoundsTheOneBeneath(t *testing.T) {
	t.Parallel()
	h, ext := beneathHarness(t, 32*mib, false)
	expansionLostAt(t, h, 4*mib, 8*mib)         // 4MiB pending, limit 8MiB
	expandKilledAtIntent(t, h, 64*mib, 100*mib) // 64MiB pending (limit 100MiB) over it
	re := registered("v", ext)
	re.CapacityMin, re.CapacityMax = volume("v").CapacityMin, 100*mib
	if _, err := h.e.RegisterVolume(h.ctx, re); err != nil {
		t.Fatalf("registration again with capacity_max 100MiB (above both pending sizes): %v", err)
	}
	if v := h.volumeInfo("v"); v.RequestedMax != 100*mib {
		t.Fatalf("capacity_max after the registration = %s; want 100MiB", spec.FormatSize(v.RequestedMax))
	}
	recordedAfterReconcile(t, h, 4*mib, 100*mib, "registered")
}

// Three expands, the last two killed at their intent: 4MiB pending (its answers lost,
// the storage grown to 4MiB), then 64MiB written over it (4MiB kept beneath), then 128MiB
// written over that, which kept the 64MiB beneath and dropped the 4MiB one (one level beneath).
// Neither 64MiB nor 128MiB was ever sent, and the plugin (at most 8MiB) refuses both for good:
// reconcile gave way from 128MiB to 64MiB, which then stayed pending, refused by every
// reconcile, and the 4MiB expansion the plugin did was never recorded. The oldest lost one is
// kept beneath now. Found by helper review69.
func TestChainOfTwoKilledExpandsOverALostOneKeepsTheLostOne(t *testing.T) {
	t.Parallel()
	h, _ := beneathHarness(t, 8*mib, true)
	expansionLostAt(t, h, 4*mib, 0)
	expandKilledAtIntent(t, h, 64*mib, 0)
	expandKilledAtIntent(t, h, 128*mib, 0)
	problems := append(reconcileTwice(t, h), reconcileTwice(t, h)...)
	v := h.volumeInfo("v")
	got, _ := h.mem.Volume(v.ExternalID)
	if v.ExpansionPending != 0 || v.CapacityBytes != got.CapacityBytes {
		t.Errorf("4MiB lost, 64MiB then 128MiB killed at expand:intent, then four reconciles: recorded at %s, expansion pending %s, the storage %s; "+
			"want the lost 4MiB expansion recorded. Reconcile's problems:\n  %s",
			spec.FormatSize(v.CapacityBytes), spec.FormatSize(v.ExpansionPending), spec.FormatSize(got.CapacityBytes), strings.Join(problems, "\n  "))
	}
}
