package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A create whose CreateVolume answers were all lost (the plugin made the volume under the CSI
// name) and whose next CreateVolume, sent again under that name, is answered with another volctl
// volume's storage: that answer is refused and the storage left to its volume, but the intent,
// and with it the CSI name that finds the volume the lost answers were about, is kept. Forgotten,
// the plugin's volume would be storage nothing tracks.
func TestCreateResentAnsweredWithAnotherVolumesStorageKeepsTheIntent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	a := h.create(volume("a"))
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, volume("b")); err == nil {
		t.Fatal("create with every answer lost succeeded")
	}
	if n := h.pluginVolumeCount(); n != 2 {
		t.Fatalf("plugin has %d volumes, want a's and the one the lost answers were about", n)
	}

	h.mem.AnswerCreateWith(a.ExternalID)
	_, err := h.e.CreateVolume(h.ctx, volume("b"))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `already volume "a"`) {
		t.Fatalf("create of b answered with a's storage: %v, want a conflict naming volume a", err)
	}
	if _, ok := h.mem.Volume(a.ExternalID); !ok {
		t.Fatalf("a's storage %q was deleted", a.ExternalID)
	}
	info, err := h.e.Volume(h.ctx, "b")
	if err != nil || info.State != string(store.VolumeCreating) || info.ExternalID != "" {
		t.Fatalf("b after its resent create was answered with a's storage: state %q, external ID %q, %v; want its intent kept, creating, no external ID",
			info.State, info.ExternalID, err)
	}
	if _, err := h.e.CreateVolume(h.ctx, volume("b")); err == nil || !strings.Contains(err.Error(), "stays recorded") || !strings.Contains(err.Error(), info.CSIName) {
		t.Errorf("the same create again: %v; want the conflict to say the create stays recorded and name %q", err, info.CSIName)
	}

	// The plugin answers for the name again: the create finishes with the volume it made.
	h.mem.AnswerCreateWith("")
	h.faults.Clear()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if info := h.volumeInfo("b"); info.State != string(store.VolumeReady) || info.ExternalID == a.ExternalID {
		t.Fatalf("b after reconcile = %+v; want ready on its own storage", info)
	}
	if n := h.pluginVolumeCount(); n != 2 {
		t.Fatalf("plugin has %d volumes, want 2", n)
	}
}

// The same for a snapshot: CreateSnapshot answers lost, then the one sent again under the name
// answered with another snapshot volctl records: refused, the intent kept. Reconcile finishes
// it once the plugin answers for the name; the conflict names the way to forget it meanwhile,
// `snapshot deregister` (a `snapshot delete` of the name sends CreateSnapshot again first, and
// gets the same answer).
func TestCreateSnapshotResentAnsweredWithAnotherSnapshotKeepsTheIntent(t *testing.T) {
	t.Parallel()
	pending := func(h *harness) bool {
		var found bool
		h.update(func(tx *store.Tx) error {
			_, err := tx.Snapshots().GetCreate("mem", "two")
			found = err == nil
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
		return found
	}
	refused := func(t *testing.T) (*harness, SnapshotInfo) {
		h, _ := snapshotHarness(t, nil)
		one := h.snapshot("one")
		h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
		if _, err := h.e.CreateSnapshot(h.ctx, "db", "two", nil); err == nil {
			t.Fatal("snapshot with every answer lost succeeded")
		}
		h.mem.AnswerSnapshotWith(one.ID)
		_, err := h.e.CreateSnapshot(h.ctx, "db", "two", nil)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"one"`) {
			t.Fatalf("snapshot two answered with one: %v, want a conflict naming \"one\"", err)
		}
		if !pending(h) {
			t.Fatal("snapshot two's intent was forgotten, with the snapshot the lost answers were about")
		}
		if way := "`volctl volume snapshot deregister mem two`"; !strings.Contains(err.Error(), way) {
			t.Errorf("the conflict does not name %s: %v", way, err)
		}
		return h, one
	}
	t.Run("reconcile finishes it", func(t *testing.T) {
		h, one := refused(t)
		h.mem.AnswerSnapshotWith("")
		h.faults.Clear()
		if rep, err := h.e.Reconcile(h.ctx); err != nil {
			t.Fatalf("reconcile: %v %+v", err, rep)
		}
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, sn := range list.Snapshots {
			if sn.Name == "two" && sn.ID != one.ID {
				found = true
			}
		}
		if !found {
			t.Fatalf("snapshot two not recorded on its own after reconcile: %+v", list.Snapshots)
		}
	})
	t.Run("deregister forgets it", func(t *testing.T) {
		h, _ := refused(t)
		if err := h.e.DeleteSnapshot(h.ctx, "mem", "two", nil); err == nil {
			t.Error("snapshot delete two succeeded while the plugin answers with snapshot one")
		}
		if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", "two"); err != nil {
			t.Fatalf("snapshot deregister two: %v", err)
		}
		if pending(h) {
			t.Error("snapshot two's intent is still recorded after its deregistration")
		}
	})
}

// A create interrupted (every CreateVolume answer lost) and run again from a spec whose
// capacity_min was raised meanwhile: the replay sends the recorded request, as CSI's
// idempotency by name wants, and the volume it records is the smaller one. It is then expanded
// to the spec's capacity_min, as the same create of an existing volume does; before, the create
// succeeded with a volume smaller than the spec says.
func TestCreateReplayedFromALargerSpecIsExpanded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, volume("b")); err == nil {
		t.Fatal("create with every answer lost succeeded")
	}
	sv := volume("b")
	sv.CapacityMin = 8 << 20
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err != nil {
		t.Fatalf("create again with capacity_min 8 MiB: %v", err)
	}
	if v.State != string(store.VolumeReady) || v.CapacityBytes < sv.CapacityMin {
		t.Errorf("create again with capacity_min %d: %s, %d bytes; want it ready with at least that", sv.CapacityMin, v.State, v.CapacityBytes)
	}
	if pv, ok := h.mem.Volume(v.ExternalID); !ok || pv.CapacityBytes < sv.CapacityMin {
		t.Errorf("the plugin's volume %q: %+v (found %v); want at least %d bytes", v.ExternalID, pv, ok, sv.CapacityMin)
	}
	if n := h.pluginVolumeCount(); n != 1 {
		t.Errorf("plugin has %d volumes, want 1", n)
	}
}
