package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// cloneOfUnknownSizeWhoseSourceGrew is a harness whose plugin cannot say a volume's size
// (neither LIST_VOLUMES nor GET_VOLUME), with volume "src" (recorded 1 MiB) cloned as "clone"
// (capacity_min 1MiB, the plugin answering CreateVolume with no size: recorded without a
// capacity, made at 1 MiB), and src expanded to 8 MiB afterwards; the clone stays 1 MiB.
func cloneOfUnknownSizeWhoseSourceGrew(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false })
	src := volume("src")
	src.CapacityMin = 1 * mib
	srcInfo := h.create(src)
	if srcInfo.CapacityBytes != 1*mib {
		t.Fatalf("src recorded at %d bytes, want 1MiB", srcInfo.CapacityBytes)
	}
	sv := volume("clone")
	sv.CapacityMin = 1 * mib
	sv.CloneID = srcInfo.ExternalID
	answerCreateVolumeAt(h, 0)
	if v := h.create(sv); v.CapacityBytes != 0 {
		t.Fatalf("clone recorded at %d bytes, want 0 (the plugin answered no size)", v.CapacityBytes)
	}
	if pv, ok := h.mem.Volume(h.externalID("clone")); !ok || pv.CapacityBytes != 1*mib {
		t.Fatalf("the plugin's clone: %+v (found %v), want 1MiB, its source's size when cloned", pv, ok)
	}
	if _, err := h.e.ExpandVolume(h.ctx, "src", 8*mib, 0); err != nil {
		t.Fatalf("expand src to 8MiB: %v", err)
	}
	if pv, _ := h.mem.Volume(h.externalID("clone")); pv.CapacityBytes != 1*mib {
		t.Fatalf("the plugin's clone is %d bytes after src grew; want still 1MiB", pv.CapacityBytes)
	}
	h.mem.ResetCalls()
	return h
}

// TestExpandOfACloneOfUnknownSizeIsNotSizedByItsSourceGrownSince: through a plugin that cannot
// say a volume's size (neither LIST_VOLUMES nor GET_VOLUME), volume "src" (1 MiB) is cloned
// with capacity_min 1MiB, the plugin answering CreateVolume without a size (0, unknown), so the clone is recorded with
// no capacity; the plugin made it at 1 MiB, its source's size then. src is expanded to 8 MiB
// afterwards. `volume expand clone --size 4MiB` then finds the clone's size unknown and
// unlisted, and atLeastItsSource takes sourceSize, src's recorded capacity now (8 MiB), for a
// lower bound of the clone: 4 MiB is "had already", the outcome Measured, ControllerExpandVolume
// never sent, and capacity_min 4MiB recorded with an event saying the clone "is at least
// 8MiB", while the storage is still 1 MiB. The user is told the volume holds 4 MiB when it
// holds 1 MiB (an alloc writing past 1 MiB hits ENOSPC), and no later expand to 4 MiB or less
// ever sends the RPC. A source's recorded capacity is its size now, not at the clone's
// making: it bounds the clone only at create time (CreateVolumeRequest.SourceSize). Correct:
// the expansion is sent (the clone grows to 4 MiB), or, without a bound that holds for the
// clone's whole life, the outcome is Sized, never Measured on the source's later size.
// Found by helper review75.
func TestExpandOfACloneOfUnknownSizeIsNotSizedByItsSourceGrownSince(t *testing.T) {
	t.Parallel()
	h := cloneOfUnknownSizeWhoseSourceGrew(t)

	_, after, grew, err := h.e.ExpandVolumeFrom(h.ctx, "clone", 4*mib, 0)
	if err != nil {
		t.Fatalf("expand clone to 4MiB: %v", err)
	}
	pv, _ := h.mem.Volume(h.externalID("clone"))
	if pv.CapacityBytes < 4*mib {
		t.Errorf("expand clone --size 4MiB: outcome %v, ControllerExpandVolume sent %d time(s), capacity_min recorded %d, events %q; "+
			"the plugin's clone is still %d bytes: the clone was taken to be at least src's 8MiB, a size src reached after the clone was made; "+
			"want the expansion sent and the clone grown to 4MiB",
			grew, h.mem.CallCount(csi.RPCControllerExpandVolume), after.RequestedMin, h.eventsOf("volume-expand", "clone", ""), pv.CapacityBytes)
	}
	if grew == Measured {
		t.Errorf("outcome Measured (said to have the size already) for a clone whose storage is %d bytes, under the 4MiB asked", pv.CapacityBytes)
	}
}

// TestExpandOfACloneOfUnknownSizeUnderALimitBelowItsSourceGrownSinceIsNotRefused: the same
// clone (1 MiB on the plugin, recorded without a size; its source src grown to 8 MiB after the
// clone was made). `volume expand clone --size 2MiB --limit 4MiB` is refused as invalid:
// "volume "clone" is at least 8MiB, the recorded size of the volume ... it was cloned from ...
// above the limit 4MiB asked: volumes cannot shrink; nothing was sent". The clone is 1 MiB;
// the expand is valid and the plugin would grow it to 2 MiB. atLeastItsSource reads src's
// recorded capacity now, not its size when cloned, so the refusal states a false size and no
// expand under 8 MiB with a limit can ever be sent. Correct: the expansion is sent and the
// clone grown to 2 MiB (at most 4 MiB).
// Found by helper review75.
func TestExpandOfACloneOfUnknownSizeUnderALimitBelowItsSourceGrownSinceIsNotRefused(t *testing.T) {
	t.Parallel()
	h := cloneOfUnknownSizeWhoseSourceGrew(t)
	_, _, _, err := h.e.ExpandVolumeFrom(h.ctx, "clone", 2*mib, 4*mib)
	pv, _ := h.mem.Volume(h.externalID("clone"))
	if err != nil || pv.CapacityBytes < 2*mib || pv.CapacityBytes > 4*mib {
		t.Errorf("expand clone --size 2MiB --limit 4MiB of a clone that is 1MiB: %v; ControllerExpandVolume sent %d time(s), the plugin's clone %d bytes; "+
			"want it sent and the clone grown to 2MiB: the clone is not sized by src's 8MiB, reached after the clone was made",
			err, h.mem.CallCount(csi.RPCControllerExpandVolume), pv.CapacityBytes)
	}
}
