package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A store an older volctl left (its CreateSnapshot took a near answer for a new snapshot)
// records snapshot "one" and "ONE" of one plugin, which finds snapshots by IDs spelled
// otherwise and holds one snapshot. Before, `snapshot delete mem ONE` sent DeleteSnapshot of
// "ONE", which the plugin took for "one": one's data deleted, its record left naming a
// snapshot gone. Now the delete is refused before anything is recorded or sent, naming both
// spellings and the ways out; reconcile finishing a delete of it recorded before does not send
// it either; and the deregister the refusal names works and leaves the snapshot.
func TestDeleteOfANearSpellingOfAnotherSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range nearIDs {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
			first := "one"
			if tc.external != "" {
				first = tc.external
			}
			if _, err := h.e.CreateSnapshot(h.ctx, "db", first, nil); err != nil {
				t.Fatal(err)
			}
			near := tc.answer(first)
			h.update(func(tx *store.Tx) error {
				rec, err := tx.Snapshots().Get("mem", first)
				if err != nil {
					return err
				}
				rec.SnapshotID, rec.Name = near, "older"
				return tx.Snapshots().Put(&rec)
			})
			err := h.e.DeleteSnapshot(h.ctx, "mem", near, nil)
			t.Logf("delete %+q: %v", near, err)
			if !slices.ContainsFunc(h.mem.Snapshots(), func(s csi.Snapshot) bool { return s.ID == first }) {
				t.Fatalf("snapshot %+q was deleted by `snapshot delete mem %+q`", first, near)
			}
			if n := h.mem.CallCount(csi.RPCDeleteSnapshot); n != 0 {
				t.Errorf("DeleteSnapshot sent %d time(s) for %+q, which the plugin takes for %+q", n, near, first)
			}
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("delete of %+q beside %+q: %v; want a conflict", near, first, err)
			}
			for _, want := range []string{fmt.Sprintf("%+q", first), fmt.Sprintf("%+q", near), "volctl volume snapshot deregister mem", "storage provider's tools"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refused delete does not say %s: %v", want, err)
				}
			}
			// Nothing recorded of the refused delete: a restore from it is not refused.
			h.update(func(tx *store.Tx) error {
				if marked, err := tx.Snapshots().Deleting("mem", near); err != nil || marked {
					t.Errorf("the refused delete is recorded (%v, %v)", marked, err)
				}
				// A delete of it recorded before (an older volctl's, killed before its
				// DeleteSnapshot), for reconcile to finish.
				_, err := tx.Snapshots().MarkDeleting("mem", near)
				return err
			})
			if rep, err := h.e.Reconcile(h.ctx); err == nil && rep.OK() {
				t.Errorf("reconcile with the delete of %+q recorded reported nothing; want the refusal reported", near)
			}
			if n := h.mem.CallCount(csi.RPCDeleteSnapshot); n != 0 {
				t.Errorf("reconcile sent DeleteSnapshot %d time(s) finishing the delete of %+q", n, near)
			}
			// The way out the conflict names.
			if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", near); err != nil {
				t.Fatalf("deregister %+q, the refusal's way out: %v", near, err)
			}
			if !slices.ContainsFunc(h.mem.Snapshots(), func(s csi.Snapshot) bool { return s.ID == first }) {
				t.Fatalf("snapshot %+q was deleted by the deregister of %+q", first, near)
			}
			// The honest case: with no near record left, the delete of the one recorded goes on.
			if err := h.e.DeleteSnapshot(h.ctx, "mem", first, nil); err != nil {
				t.Fatalf("delete of %+q alone: %v", first, err)
			}
			if slices.ContainsFunc(h.mem.Snapshots(), func(s csi.Snapshot) bool { return s.ID == first }) {
				t.Errorf("snapshot %+q is still there after its delete", first)
			}
		})
	}
}

// The honest case the key keeps apart: a case-sensitive provider holds "straße" and "STRASSE"
// as two volumes (two words; full case folding is not applied, spec.SameStorageID), and a
// create answered with the second, beside the first recorded, is recorded, and deleting it
// deletes only it.
func TestCreateAnsweredWithAFullCaseFoldingOfAnotherVolumesIDIsRecorded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "stra\u00dfe", CapacityBytes: 1 << 20})
	if _, err := h.e.RegisterVolume(h.ctx, registered("a", "stra\u00dfe")); err != nil {
		t.Fatal(err)
	}
	h.mem.AddVolume(csi.Volume{ID: "STRASSE", CapacityBytes: 1 << 20})
	h.mem.AnswerCreateWith("STRASSE")
	if _, err := h.e.CreateVolume(h.ctx, volume("b")); err != nil {
		t.Fatalf("create of b answered with %q beside a's %q: %v; want it recorded", "STRASSE", "stra\u00dfe", err)
	}
	h.mem.AnswerCreateWith("")
	if err := h.e.DeleteVolume(h.ctx, "b"); err != nil {
		t.Fatalf("delete of b: %v", err)
	}
	if _, ok := h.mem.Volume("stra\u00dfe"); !ok {
		t.Errorf("a's storage was deleted with b's")
	}
}

// A snapshot of another plugin, on another socket (another storage), whose ID is near the one
// deleted does not refuse the delete: the near look reads every plugin's keys, and the rule is
// the plugin's and its socket mates'.
func TestSnapshotDeleteBesideANearIDOfAnotherPluginGoesOn(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "one", nil); err != nil {
		t.Fatal(err)
	}
	other := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	sock, _ := csitest.Serve(t, csitest.WithServer(other))
	h.registerPlugin("mem2", sock)
	h.update(func(tx *store.Tx) error {
		return tx.Snapshots().Put(&store.Snapshot{PluginID: "mem2", SnapshotID: "ONE", Name: "theirs", SourceVolumeID: "elsewhere"})
	})
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "one", nil); err != nil {
		t.Fatalf("delete of mem's snapshot one beside mem2's ONE: %v", err)
	}
	if slices.ContainsFunc(h.mem.Snapshots(), func(s csi.Snapshot) bool { return s.ID == "one" }) {
		t.Errorf("snapshot one is still there after its delete")
	}
}
