package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// expand36: expansion's leftovers. A ControllerExpandVolume sent again within one run after its
// answer was lost, the recorded capacity_max applied under the volume's lock, and what a plugin
// answers an expansion with.

// A ControllerExpandVolume whose answer is lost in transport (the plugin grew the volume, the
// answer did not arrive: UNAVAILABLE, retryable) through a plugin that grows the volume by the
// delta each call (ExpandByDelta): the retry within the same `volume expand` sent it again, and
// the storage grew to 7MiB for the 4MiB asked. Now the retry asks the plugin the volume's size
// first (ListVolumes, else ControllerGetVolume), as an owed step does, and a volume listed at the
// size asked has had it: not sent again, recorded at the size listed, the node's step owed (its
// node_expansion_required was lost with the answer). A plugin that cannot list is sent it again,
// as the CSI spec (the RPC is idempotent) allows, and what it answers is what is recorded.
func TestExpandRetryAfterALostAnswerAsksTheListingFirst(t *testing.T) {
	t.Parallel()
	for _, lists := range []string{"ListVolumes", "ControllerGetVolume", "neither"} {
		t.Run(lists, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) {
				c.Controller.ListVolumes = lists == "ListVolumes"
				c.Controller.GetVolume = lists == "ControllerGetVolume"
			})
			ext := h.create(volume("v")).ExternalID
			h.mem.ExpandByDelta(true)
			h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: 1})
			info, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
			if err != nil {
				t.Fatalf("expand whose first answer was lost: %v", err)
			}
			mv, _ := h.mem.Volume(ext)
			sent := h.mem.CallCount(csi.RPCControllerExpandVolume)
			if lists == "neither" {
				// Sent again, on the spec's word; the plugin's answer is the truth recorded.
				if sent != 2 || mv.CapacityBytes != 7*mib || info.CapacityBytes != 7*mib {
					t.Errorf("a plugin that cannot list: ControllerExpandVolume sent %d times, storage %d, recorded %d; want sent again (2), the 7MiB it grew to recorded",
						sent, mv.CapacityBytes, info.CapacityBytes)
				}
				return
			}
			if sent != 1 || mv.CapacityBytes != 4*mib {
				t.Errorf("ControllerExpandVolume sent %d times, storage %d; want once, grown to 4MiB once (its %s says the first attempt did it)", sent, mv.CapacityBytes, lists)
			}
			if info.CapacityBytes != 4*mib || info.RequestedMin != 4*mib || info.NodeExpansionOwed != 4*mib {
				t.Errorf("recorded %d (capacity_min %d), node expansion owed %d; want 4MiB, with the node's step owed (its answer was lost)",
					info.CapacityBytes, info.RequestedMin, info.NodeExpansionOwed)
			}
			if ev := h.eventsOf("volume-expand", "v", "not sent again"); len(ev) != 1 || !strings.Contains(ev[0], fmt.Sprintf("lists the volume at 4MiB")) {
				t.Errorf("events saying it was not sent again: %q; want one naming the size listed", ev)
			}
		})
	}
}

// The same across runs: a volctl killed once ControllerExpandVolume answered, before the answer
// was recorded (rpc:ControllerExpandVolume), leaves the expansion pending, and reconcile sends it
// again. Through a plugin that grows the volume by the delta each call, that grew the storage to
// 7MiB for the 4MiB asked. Now the plugin is asked the volume's size first, and a volume listed
// at the size pending has had it: recorded so, the node's step owed, the RPC not sent again.
func TestPendingExpansionSentAgainAsksTheListingFirst(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	h.mem.ExpandByDelta(true)
	killedAt(h, "rpc:ControllerExpandVolume", func() { h.e.ExpandVolume(h.ctx, "v", 4*mib, 0) })
	if v := h.volumeInfo("v"); v.ExpansionPending != 4*mib {
		t.Fatalf("after the kill: expansion pending %d; want 4MiB", v.ExpansionPending)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile: %v (%+v)", err, rep.Problems)
	}
	mv, _ := h.mem.Volume(ext)
	v := h.volumeInfo("v")
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 1 || mv.CapacityBytes != 4*mib {
		t.Errorf("ControllerExpandVolume sent %d times, storage %d; want once, grown to 4MiB once", n, mv.CapacityBytes)
	}
	if v.CapacityBytes != 4*mib || v.ExpansionPending != 0 || v.NodeExpansionOwed != 4*mib {
		t.Errorf("recorded %d, pending %d, node expansion owed %d; want 4MiB, none pending, the node's step owed", v.CapacityBytes, v.ExpansionPending, v.NodeExpansionOwed)
	}
}

// A registration lowering a volume's capacity_max (another process, holding the volume's lock)
// while `volume expand` without --limit waits for that lock. The CLI read the capacity_max before
// the lock and sent it as the expand's limit, and ExpandVolume given no limit applied none: the
// storage grew to 6MiB past the 3MiB the volume now records as its bound. Now the engine applies
// the capacity_max it reads under the lock: the expand is refused (invalid, as the CLI's own
// check), naming the bound and --limit, nothing sent. The honest expand within the bound is sent
// with it as limit_bytes.
func TestExpandAppliesTheRecordedLimitUnderTheLock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := volume("v")
	sv.CapacityMax = 8 * mib
	ext := h.create(sv).ExternalID
	// The honest case: within the bound, sent with it.
	if _, err := h.e.ExpandVolume(h.ctx, "v", 2*mib, 0); err != nil {
		t.Fatalf("expand within capacity_max: %v", err)
	}
	if reqs := csitest.Requests[csi.ControllerExpandVolumeRequest](h.mem); len(reqs) != 1 || reqs[0].CapacityMax != 8*mib {
		t.Errorf("ControllerExpandVolume %+v; want one, with limit_bytes the recorded 8MiB", reqs)
	}
	// The other process registers the volume again with capacity_max 3MiB, and holds its lock
	// (paused once the plugin validated it, before recording it) while the expand waits for it.
	other := h.otherProcess()
	p := pauseAtFailpoint(t, other, "register:validated")
	lowered := sv
	lowered.CapacityMin, lowered.CapacityMax, lowered.ExternalID = 2*mib, 3*mib, ext
	registered := make(chan error, 1)
	go func() { _, err := other.RegisterVolume(h.ctx, lowered); registered <- err }()
	<-p.reached
	if before := h.volumeInfo("v"); before.RequestedMax != 8*mib { // what the CLI reads
		t.Fatalf("capacity_max %d before the registration is recorded; want 8MiB", before.RequestedMax)
	}
	ctx, waiting := whenWaitingForAnyLock(h.ctx)
	expanded := make(chan error, 1)
	go func() { _, err := h.e.ExpandVolume(ctx, "v", 6*mib, 0); expanded <- err }()
	select {
	case <-waiting:
	case err := <-expanded:
		t.Fatalf("the expand returned without waiting for the registration's lock: %v", err)
	}
	p.release()
	if err := <-registered; err != nil {
		t.Fatalf("registration lowering capacity_max: %v", err)
	}
	err := <-expanded
	mv, _ := h.mem.Volume(ext)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "above its capacity_max 3MiB; pass --limit") {
		t.Errorf("expand to 6MiB after capacity_max was lowered to 3MiB: %v; want it refused, naming the 3MiB capacity_max and --limit", err)
	}
	if mv.CapacityBytes != 2*mib || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 {
		t.Errorf("storage %d, ControllerExpandVolume sent %d times; want 2MiB, nothing sent past the new capacity_max", mv.CapacityBytes, h.mem.CallCount(csi.RPCControllerExpandVolume))
	}
	// Within the new bound: sent with it.
	if _, err := h.e.ExpandVolume(h.ctx, "v", 3*mib, 0); err != nil {
		t.Fatalf("expand within the new capacity_max: %v", err)
	}
	if reqs := csitest.Requests[csi.ControllerExpandVolumeRequest](h.mem); reqs[len(reqs)-1].CapacityMax != 3*mib {
		t.Errorf("ControllerExpandVolume %+v; want limit_bytes the recorded 3MiB", reqs[len(reqs)-1])
	}
}

// NodeExpandVolume whose answer is lost (the node grew the file system, UNAVAILABLE arrived) is
// sent again by the same expand's retry, unasked: the CSI spec makes it idempotent, the node has
// no listing to ask, and a file system (or a block device's size) grown to the size the storage
// has is found done the second time. The expand succeeds, the debt cleared, the volume recorded
// at the size the controller answered.
func TestNodeExpandWhoseAnswerIsLostIsSentAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Lost: true, Times: 1})
	info, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err != nil {
		t.Fatalf("expand whose NodeExpandVolume's first answer was lost: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 2 || info.CapacityBytes != 4*mib || info.NodeExpansionOwed != 0 {
		t.Errorf("NodeExpandVolume sent %d times, recorded %d, owed %d; want it sent again (2), 4MiB, nothing owed", n, info.CapacityBytes, info.NodeExpansionOwed)
	}
}

// The listing asked before a ControllerExpandVolume is sent again names the volume twice, at the
// size asked (first) and at the size it has: a listing that disagrees with itself. The first
// attempt failed without reaching the plugin (UNAVAILABLE, nothing grown). Taking the first
// entry, volctl skipped the RPC and recorded the volume at 4MiB with the storage at 1MiB; the
// smaller size is the safe answer, and the RPC is sent.
func TestExpandRetryAsksAListingThatNamesTheVolumeTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Code: codes.Unavailable, Times: 1})
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.ListVolumesResponse)
		for _, en := range resp.Entries {
			if en.GetVolume().GetVolumeId() == ext {
				lie := proto.Clone(en).(*csipb.ListVolumesResponse_Entry)
				lie.Volume.CapacityBytes = 4 * mib
				resp.Entries = append([]*csipb.ListVolumesResponse_Entry{lie}, resp.Entries...)
				return
			}
		}
	}})
	info, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	mv, _ := h.mem.Volume(ext)
	if mv.CapacityBytes != 4*mib || info.CapacityBytes != 4*mib || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 {
		t.Errorf("storage %d, recorded %d, ControllerExpandVolume reaching the plugin %d times; want it sent, the storage grown to the 4MiB recorded",
			mv.CapacityBytes, info.CapacityBytes, h.mem.CallCount(csi.RPCControllerExpandVolume))
	}
}
