package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// growBehindVolctl expands volume id through the harness's plugin as Nomad does while it has
// the volume: ControllerExpandVolume to size, sent by another client, which volctl never hears.
func (h *harness) growBehindVolctl(id string, size int64) {
	h.t.Helper()
	c, err := csi.New(csi.Config{ControllerSocket: h.socket})
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ControllerExpandVolume(h.ctx, csi.ControllerExpandVolumeRequest{VolumeID: h.volumeInfo(id).ExternalID, CapacityMin: size}); err != nil {
		h.t.Fatalf("ControllerExpandVolume of %q to %d from another client: %v", id, size, err)
	}
}

// takenBack hands volume id over (no registration) and takes it back, as nomad release does
// once Nomad has let go of it; between the two, during runs. It returns what the take-back
// learnt of the volume's size. The handover is forced: a volume owed a node expansion is handed
// over all the same.
func (h *harness) takenBack(id string, during func()) TakeBackResult {
	h.t.Helper()
	if _, err := h.e.HandOver(h.ctx, id, HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		h.t.Fatal(err)
	}
	during()
	r, err := h.e.TakeBack(h.ctx, id, func(HandoverInfo) (string, error) { return "deregistered", nil }, nil)
	if err != nil || !r.Had {
		h.t.Fatalf("take back %q: %v, %v", id, r.Had, err)
	}
	return r
}

// A take-back learns the size of a volume grown while in Nomad from the plugin, by ListVolumes
// or, for a plugin that only answers for one volume, ControllerGetVolume; records it with the
// node expansion owed, and never lowers the record.
func TestTakeBackRecordsTheSizeThePluginLists(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cfg   func(*csitest.MemConfig)
		asked string
	}{
		{"ListVolumes", nil, csi.RPCListVolumes},
		{"ControllerGetVolume", func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, true }, csi.RPCControllerGetVolume},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			h.create(volume("v"))
			r := h.takenBack("v", func() { h.growBehindVolctl("v", 4*mib) })
			if r.SizeErr != nil {
				t.Fatal(r.SizeErr)
			}
			if want := (SizeCheck{Asked: tc.asked, Recorded: mib, Listed: 4 * mib, Grown: true, NodeOwed: 4 * mib,
				PayWith: "`volctl volume claim v --alloc expand`, then `volctl volume release v --alloc expand`"}); r.Size != want {
				t.Errorf("size check = %+v, want %+v", r.Size, want)
			}
			if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 4*mib {
				t.Errorf("recorded capacity %d, node expansion owed %d; want both %d", v.CapacityBytes, v.NodeExpansionOwed, 4*mib)
			}
			// Taken back again, the plugin lists what volctl has: nothing changes.
			if r := h.takenBack("v", func() {}); r.SizeErr != nil || r.Size.Grown {
				t.Errorf("size check again: %+v, %v; want nothing grown", r.Size, r.SizeErr)
			}
		})
	}
}

// A plugin that lists a volume smaller than volctl's record (or at a negative size) does not
// shrink the record; one that cannot say a volume's size is not asked.
func TestTakeBackNeverShrinksNorAsksWhatItCannot(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.mem.AnswerExpandWith(3 * mib) // recorded at 3MiB, the plugin's storage left at 1MiB
	if _, err := h.e.ExpandVolume(h.ctx, "v", 3*mib, 0); err != nil {
		t.Fatal(err)
	}
	h.mem.AnswerExpandWith(0)
	r := h.takenBack("v", func() {})
	if r.SizeErr != nil || r.Size.Grown || r.Size.Listed != mib || h.volumeInfo("v").CapacityBytes != 3*mib {
		t.Errorf("size check of a volume the plugin lists smaller than recorded: %+v, %v, recorded %d; want the record kept at %d", r.Size, r.SizeErr, h.volumeInfo("v").CapacityBytes, 3*mib)
	}

	n := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false })
	n.create(volume("w"))
	if r := n.takenBack("w", func() {}); r.SizeErr != nil || !r.Size.CannotSay || r.Size.Asked != "" {
		t.Errorf("size check of a volume whose plugin cannot say: %+v, %v; want CannotSay, nothing asked", r.Size, r.SizeErr)
	}
}

// A take-back that fails for the volume's own sake (its lock held past the command's patience)
// is the take-back's failure, the mark kept, not a size check's; one whose plugin is gone is
// done, its size check failed with ErrSizeNotAnswered, so that the plugin's other volumes need
// not wait on it. `nomad release --all` cached every failure by plugin: one volume's held lock
// left the plugin's other volumes unasked, their records behind what Nomad grew them to.
func TestTakeBackSaysWhenThePluginDidNotAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, false, nil); err != nil {
		t.Fatal(err)
	}
	deregistered := func(HandoverInfo) (string, error) { return "deregistered", nil }
	unlock, err := h.e.locks.volume(h.ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 300*time.Millisecond)
	r, err := h.e.TakeBack(ctx, "v", deregistered, nil)
	cancel()
	unlock()
	if err == nil || errors.Is(err, ErrSizeNotAnswered) || r.SizeErr != nil {
		t.Errorf("take-back while another operation held the volume's lock: %v (size: %v); want the take-back's failure, not the plugin's", err, r.SizeErr)
	}
	h.stopServe()
	if r, err := h.e.TakeBack(h.ctx, "v", deregistered, nil); err != nil || !r.Had || !errors.Is(r.SizeErr, ErrSizeNotAnswered) {
		t.Errorf("take-back with the plugin gone: %v, had %v, size %v; want it done, ErrSizeNotAnswered", err, r.Had, r.SizeErr)
	}
}
