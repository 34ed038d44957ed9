package store

import (
	"context"
	"testing"
)

// Migration 0018: a node expansion owed in a database from before it reads as not known to
// have had its controller's step (the safe side: the engine sends ControllerExpandVolume
// first, idempotent, where the plugin declares the controller's EXPAND_VOLUME, as before).
// Update writes the mark only with a debt, SetNodeExpansion clears it with the debt, and
// SetNodeExpansionControllerDone sets it only on a volume that owes one.
func TestNodeExpansionControllerMarkMigratesAsNotKnown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := open(context.Background(), dir, 17)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, old.Path())
	if _, err := db.Exec(seedV1); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if _, err := db.Exec(`UPDATE volumes SET node_expand_min = 4194304, node_expand_max = 8388608 WHERE id = 'db'`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 17: %v", err)
	}
	defer s.Close()
	get := func() Volume {
		t.Helper()
		var v Volume
		view(t, s, func(tx *Tx) error {
			var err error
			v, err = tx.Volumes().Get("db")
			return err
		})
		return v
	}
	if v := get(); v.NodeExpandMin != 4<<20 || v.NodeExpandMax != 8<<20 || v.NodeExpandControllerDone {
		t.Fatalf("after the migration: owed %d..%d, controller done %v; want 4MiB..8MiB, not known", v.NodeExpandMin, v.NodeExpandMax, v.NodeExpandControllerDone)
	}
	update(t, s, func(tx *Tx) error { return tx.Volumes().SetNodeExpansionControllerDone("db") })
	if v := get(); !v.NodeExpandControllerDone || v.NodeExpandMin != 4<<20 {
		t.Errorf("marked: %+v", v)
	}
	update(t, s, func(tx *Tx) error { return tx.Volumes().SetNodeExpansion("db", 0, 0) })
	if v := get(); v.NodeExpandControllerDone || v.NodeExpandMin != 0 {
		t.Errorf("debt cleared: owed %d, controller done %v; want neither", v.NodeExpandMin, v.NodeExpandControllerDone)
	}
	// No debt: neither SetNodeExpansionControllerDone nor an Update carrying the flag marks it.
	update(t, s, func(tx *Tx) error {
		if err := tx.Volumes().SetNodeExpansionControllerDone("db"); err != nil {
			return err
		}
		v, err := tx.Volumes().Get("db")
		if err != nil {
			return err
		}
		v.NodeExpandControllerDone = true
		return tx.Volumes().Update(&v)
	})
	if v := get(); v.NodeExpandControllerDone {
		t.Errorf("a volume owing nothing reads its controller step done")
	}
	update(t, s, func(tx *Tx) error {
		v, err := tx.Volumes().Get("db")
		if err != nil {
			return err
		}
		v.NodeExpandMin, v.NodeExpandControllerDone = 2<<20, true
		return tx.Volumes().Update(&v)
	})
	if v := get(); !v.NodeExpandControllerDone || v.NodeExpandMin != 2<<20 {
		t.Errorf("updated with a debt its controller had: owed %d, controller done %v", v.NodeExpandMin, v.NodeExpandControllerDone)
	}
}
