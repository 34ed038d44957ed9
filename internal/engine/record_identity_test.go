package engine

import "testing"

// TestEveryVolumeListCarriesWhichRecordItIs: a volume deleted and created again under its ID is
// another record, with new storage. The dashboard acts on rows read up to a refresh earlier, and
// had nothing in a row to tell the record drawn from the one its question read (it deleted a
// volume re-made since the list was drawn). Each list carries the record's created-at, the same
// as the volume's own read, and another for the volume re-made: the dashboard's read
// (Dashboard), Volumes and EachVolume with every field (volume status --json).
func TestEveryVolumeListCarriesWhichRecordItIs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	lists := func() map[string]VolumeSummary {
		d, err := h.e.Dashboard(h.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := h.e.Volumes(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var each VolumeSummary
		if err := h.e.eachVolume(h.ctx, AllVolumeFields, false, func(v *VolumeSummary) error { each = *v; return nil }); err != nil {
			t.Fatal(err)
		}
		return map[string]VolumeSummary{"Dashboard": d.Volumes[0], "Volumes": vs[0], "EachVolume(AllVolumeFields)": each}
	}
	first := h.volumeInfo("db")
	if first.CreatedAt.IsZero() {
		t.Fatal("the volume's own read has no created-at")
	}
	for name, v := range lists() {
		if !v.CreatedAt.Equal(first.CreatedAt) {
			t.Errorf("%s: created-at %v, want the record's %v", name, v.CreatedAt, first.CreatedAt)
		}
	}
	if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
	h.create(volume("db"))
	again := h.volumeInfo("db")
	if again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("the volume re-made has the old record's created-at %v", first.CreatedAt)
	}
	for name, v := range lists() {
		if !v.CreatedAt.Equal(again.CreatedAt) {
			t.Errorf("%s, the volume re-made: created-at %v, want the new record's %v", name, v.CreatedAt, again.CreatedAt)
		}
	}
}
