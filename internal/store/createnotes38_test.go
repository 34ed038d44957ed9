package store

import (
	"context"
	"errors"
	"testing"
)

// Migration 0022: a volume in a database from before it is no create's cleanup and no restore
// under its source's freed ID (the safe side: a refused delete puts it back to ready, and a
// restore recorded as its source is refused its delete, as before). The marks are set and read
// by their own calls alone, and Update leaves them as they are: a `volume delete` of a
// cleanup's record (Update to deleting) keeps it the cleanup.
func TestCreateNotesMigrateAsUnsetAndOutliveUpdate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := open(context.Background(), dir, 21)
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
		t.Fatalf("migrate from 21: %v", err)
	}
	defer s.Close()
	marks := func() (cleanup, gone bool) {
		t.Helper()
		view(t, s, func(tx *Tx) error {
			var err error
			if cleanup, err = tx.Volumes().CreateCleanup("db"); err != nil {
				return err
			}
			gone, err = tx.Volumes().SourceGone("db")
			return err
		})
		return cleanup, gone
	}
	if c, g := marks(); c || g {
		t.Fatalf("migrated volume: create_cleanup %v, source_gone %v; want neither", c, g)
	}
	update(t, s, func(tx *Tx) error {
		if err := tx.Volumes().SetCreateCleanup("db", true); err != nil {
			return err
		}
		if err := tx.Volumes().SetSourceGone("db"); err != nil {
			return err
		}
		v, err := tx.Volumes().Get("db")
		if err != nil {
			return err
		}
		v.State = VolumeDeleting
		return tx.Volumes().Update(&v)
	})
	if c, g := marks(); !c || !g {
		t.Errorf("after the marks and an Update: create_cleanup %v, source_gone %v; want both kept", c, g)
	}
	update(t, s, func(tx *Tx) error { return tx.Volumes().SetCreateCleanup("db", false) })
	if c, _ := marks(); c {
		t.Error("create_cleanup still set after SetCreateCleanup(false)")
	}
	var errs [3]error
	_ = s.View(context.Background(), func(tx *Tx) error {
		_, errs[0] = tx.Volumes().CreateCleanup("nope")
		_, errs[1] = tx.Volumes().SourceGone("nope")
		return nil
	})
	_ = s.Update(context.Background(), func(tx *Tx) error { errs[2] = tx.Volumes().SetSourceGone("nope"); return nil })
	for i, err := range errs {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("call %d on a volume that does not exist: %v; want ErrNotFound", i, err)
		}
	}
}
