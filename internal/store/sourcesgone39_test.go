package store

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Migration 0025: a volume from before it has no sources found gone (nil); what SetSourcesGone
// records is read back as given, IDs of any bytes (a quote, a newline) included, and an Update
// (the create recorded, a delete marking it) leaves it as it is.
func TestSourcesGoneMigrateAsNoneAndOutliveUpdate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := open(context.Background(), dir, 23)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, old.Path())
	if _, err := db.Exec(seedV1); err != nil {
		t.Fatalf("seed: %v", err)
	}
	old.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 23: %v", err)
	}
	defer s.Close()
	gone := func() []string {
		t.Helper()
		var got []string
		view(t, s, func(tx *Tx) error {
			var err error
			got, err = tx.Volumes().SourcesGone("db")
			return err
		})
		return got
	}
	if g := gone(); g != nil {
		t.Fatalf("migrated volume: sources_gone %q; want none", g)
	}
	want := []string{"vol-1", "a \"quoted\"\nid"}
	update(t, s, func(tx *Tx) error {
		if err := tx.Volumes().SetSourcesGone("db", want); err != nil {
			return err
		}
		v, err := tx.Volumes().Get("db")
		if err != nil {
			return err
		}
		v.State = VolumeDeleting
		return tx.Volumes().Update(&v)
	})
	if g := gone(); !slices.Equal(g, want) {
		t.Errorf("after SetSourcesGone and an Update: %q; want %q", g, want)
	}
	update(t, s, func(tx *Tx) error { return tx.Volumes().SetSourcesGone("db", nil) })
	if g := gone(); g != nil {
		t.Errorf("after SetSourcesGone(nil): %q; want none", g)
	}
	var errs [2]error
	_ = s.Update(context.Background(), func(tx *Tx) error {
		_, errs[0] = tx.Volumes().SourcesGone("nope")
		errs[1] = tx.Volumes().SetSourcesGone("nope", want)
		return nil
	})
	for i, err := range errs {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("call %d on a volume that does not exist: %v; want ErrNotFound", i, err)
		}
	}
}
