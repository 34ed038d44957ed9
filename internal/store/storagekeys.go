package store

import (
	"fmt"

	"github.com/volctl/volctl/internal/spec"
)

// keysVersion is the schema version from which volumes and snapshots have the storage keys
// (migration 0015).
const keysVersion = 15

// keyPrefix begins every storage key this volctl stores (external_key, snapshot_key): the
// version of spec.StorageIDKey's definition and Unicode tables. A key stored under another
// prefix (a volctl built with other tables) or none (NULL: a row written by hand) may differ
// from the key this volctl computes for the same ID, so every near look reads such rows as
// candidates (nearKeyWhere) and decides in Go.
const keyPrefix = spec.StorageIDKeyVersion + ":"

// keyPrefixEnd is the least string above every key that begins with keyPrefix.
const keyPrefixEnd = spec.StorageIDKeyVersion + ";"

// storageKey is the key stored beside a recorded volume's external ID or a snapshot's ID; ""
// for no ID (a volume whose create has no answer yet).
func storageKey(id string) string {
	if id == "" {
		return ""
	}
	return keyPrefix + spec.StorageIDKey(id)
}

// nearKeyWhere is the condition on column col (external_key, snapshot_key) that a row whose ID
// may be SameStorageID's with an ID of key k meets: its key is k, or one of another version's,
// or NULL. Each term is a range of col's index, so the look reads those rows alone, not the
// table. Its arguments follow it.
func nearKeyWhere(col, k string) (string, []any) {
	return fmt.Sprintf(`(%[1]s = ? OR %[1]s IS NULL OR (%[1]s > '' AND %[1]s < ?) OR %[1]s >= ?)`, col), []any{k, keyPrefix, keyPrefixEnd}
}

// backfillStorageKeys is migration 0015's step: the key of every volume's external ID and every
// snapshot's ID recorded before it.
func backfillStorageKeys(tx *Tx) error {
	type row struct{ a, b string }
	vols, err := listAll(tx, "read external IDs to key", func(sc scanner) (row, error) {
		var r row
		return r, sc.Scan(&r.a, &r.b)
	}, `SELECT id, external_id FROM volumes WHERE external_id != ''`)
	if err != nil {
		return err
	}
	for _, v := range vols {
		if _, err := tx.exec(`UPDATE volumes SET external_key = ? WHERE id = ?`, storageKey(v.b), v.a); err != nil {
			return wrap(err, volumeWhat(v.a), "")
		}
		testHookBackfilled()
	}
	if _, err := tx.exec(`UPDATE volumes SET external_key = '' WHERE external_id = ''`); err != nil {
		return wrap(err, "key volumes without an external ID", "")
	}
	snaps, err := listAll(tx, "read snapshot IDs to key", func(sc scanner) (row, error) {
		var r row
		return r, sc.Scan(&r.a, &r.b)
	}, `SELECT plugin_id, snapshot_id FROM snapshots`)
	if err != nil {
		return err
	}
	for _, sn := range snaps {
		if _, err := tx.exec(`UPDATE snapshots SET snapshot_key = ? WHERE plugin_id = ? AND snapshot_id = ?`, storageKey(sn.b), sn.a, sn.b); err != nil {
			return wrap(err, snapshotWhat(sn.a, sn.b), "")
		}
		testHookBackfilled()
	}
	return nil
}

// testHookBackfilled runs, in tests, after each row backfillStorageKeys keyed.
var testHookBackfilled = func() {}

// keyColumn is ", col" and its value for a write of ID id to a store whose schema has the keys
// (Store.keyed), or nothing for one opened at an older version (tests build such databases
// with this version's writes).
func (tx *Tx) keyColumn(col, id string) (string, []any) {
	if !tx.s.keyed {
		return "", nil
	}
	return ", " + col, []any{storageKey(id)}
}
