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
// once Nomad has let go of it; between the two, during runs.
func (h *harness) takenBack(id string, during func()) {
	h.t.Helper()
	if _, err := h.e.HandOver(h.ctx, id, HandoverTarget{Address: "http://127.0.0.1:4646"}, false, nil); err != nil {
		h.t.Fatal(err)
	}
	during()
	if had, err := h.e.TakeBack(h.ctx, id, func(HandoverInfo) (string, error) { return "deregistered", nil }); err != nil || !had {
		h.t.Fatalf("take back %q: %v, %v", id, had, err)
	}
}

// SizeAfterHandover learns the size of a volume grown while in Nomad from the plugin, by
// ListVolumes or, for a plugin that only answers for one volume, ControllerGetVolume; records
// it with the node expansion owed, and never lowers the record.
func TestSizeAfterHandoverRecordsTheSizeThePluginLists(t *testing.T) {
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
			h.takenBack("v", func() { h.growBehindVolctl("v", 4*mib) })
			sc, err := h.e.SizeAfterHandover(h.ctx, "v")
			if err != nil {
				t.Fatal(err)
			}
			if want := (SizeCheck{Asked: tc.asked, Recorded: mib, Listed: 4 * mib, Grown: true, NodeOwed: 4 * mib}); sc != want {
				t.Errorf("size check = %+v, want %+v", sc, want)
			}
			if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 4*mib {
				t.Errorf("recorded capacity %d, node expansion owed %d; want both %d", v.CapacityBytes, v.NodeExpansionOwed, 4*mib)
			}
			// Asked again, the plugin lists what volctl has: nothing changes.
			if sc, err := h.e.SizeAfterHandover(h.ctx, "v"); err != nil || sc.Grown {
				t.Errorf("size check again: %+v, %v; want nothing grown", sc, err)
			}
		})
	}
}

// A plugin that lists a volume smaller than volctl's record (or at a negative size) does not
// shrink the record; one that cannot say a volume's size is not asked; a volume handed over
// again is not asked about (Nomad has it, and grows it).
func TestSizeAfterHandoverNeverShrinksNorAsksWhatItCannot(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.mem.AnswerExpandWith(3 * mib) // recorded at 3MiB, the plugin's storage left at 1MiB
	if _, err := h.e.ExpandVolume(h.ctx, "v", 3*mib, 0); err != nil {
		t.Fatal(err)
	}
	h.mem.AnswerExpandWith(0)
	sc, err := h.e.SizeAfterHandover(h.ctx, "v")
	if err != nil || sc.Grown || sc.Listed != mib || h.volumeInfo("v").CapacityBytes != 3*mib {
		t.Errorf("size check of a volume the plugin lists smaller than recorded: %+v, %v, recorded %d; want the record kept at %d", sc, err, h.volumeInfo("v").CapacityBytes, 3*mib)
	}

	if _, err := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
		t.Fatal(err)
	}
	h.growBehindVolctl("v", 8*mib)
	if sc, err := h.e.SizeAfterHandover(h.ctx, "v"); err != nil || sc.Asked != "" || sc.Grown {
		t.Errorf("size check of a volume handed over: %+v, %v; want nothing asked", sc, err)
	}

	n := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false })
	n.create(volume("w"))
	if sc, err := n.e.SizeAfterHandover(n.ctx, "w"); err != nil || !sc.CannotSay || sc.Asked != "" {
		t.Errorf("size check of a volume whose plugin cannot say: %+v, %v; want CannotSay, nothing asked", sc, err)
	}
}

// A size check that fails for the volume's own sake (its lock held past the command's patience)
// is not the plugin's failure, and a take-back of many volumes asks the plugin's other volumes
// all the same; one whose plugin is gone is (ErrSizeNotAnswered), and the others need not wait
// on it. `nomad release --all` cached every failure by plugin: one volume's held lock left the
// plugin's other volumes unasked, their records behind what Nomad grew them to.
func TestSizeAfterHandoverSaysWhenThePluginDidNotAnswer(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v"))
	unlock, err := h.e.locks.volume(h.ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 300*time.Millisecond)
	_, err = h.e.SizeAfterHandover(ctx, "v")
	cancel()
	unlock()
	if err == nil || errors.Is(err, ErrSizeNotAnswered) {
		t.Errorf("size check while another operation held the volume's lock: %v; want a failure, not the plugin's", err)
	}
	h.stopServe()
	if _, err := h.e.SizeAfterHandover(h.ctx, "v"); !errors.Is(err, ErrSizeNotAnswered) {
		t.Errorf("size check with the plugin gone: %v; want ErrSizeNotAnswered", err)
	}
}
