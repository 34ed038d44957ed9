package store

import (
	"context"
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

// staleKeyWhere is the condition on column col (external_key, snapshot_key) of a row whose key
// this volctl did not store: NULL (written by hand, or before migration 0015's step) or another
// version's (a volctl built with other Unicode tables). Such a row is a candidate of every near
// look (nearKeyWhere) until it is keyed again.
func staleKeyWhere(col string) (string, []any) {
	return fmt.Sprintf(`(%[1]s IS NULL OR (%[1]s > '' AND %[1]s < ?) OR %[1]s >= ?)`, col), []any{keyPrefix, keyPrefixEnd}
}

// backfillStorageKeys is migration 0015's step: the key of every volume's external ID and every
// snapshot's ID recorded before it.
func backfillStorageKeys(tx *Tx) error { return keyStaleRows(tx) }

// keyStaleRows stores this volctl's key for every volume and snapshot whose key it did not
// store (staleKeyWhere): all of them in migration 0015, and at a writable open those a volctl
// with other Unicode tables or a hand keyed (rekeyAtOpen).
func keyStaleRows(tx *Tx) error {
	type row struct{ a, b string }
	volStale, volArgs := staleKeyWhere("external_key")
	vols, err := listAll(tx, "read external IDs to key", func(sc scanner) (row, error) {
		var r row
		return r, sc.Scan(&r.a, &r.b)
	}, `SELECT id, external_id FROM volumes WHERE external_id != '' AND `+volStale, volArgs...)
	if err != nil {
		return err
	}
	for _, v := range vols {
		if _, err := tx.exec(`UPDATE volumes SET external_key = ? WHERE id = ?`, storageKey(v.b), v.a); err != nil {
			return wrap(err, volumeWhat(v.a), "")
		}
		testHookBackfilled()
	}
	if _, err := tx.exec(`UPDATE volumes SET external_key = '' WHERE external_id = '' AND external_key IS NOT ''`); err != nil {
		return wrap(err, "key volumes without an external ID", "")
	}
	snapStale, snapArgs := staleKeyWhere("snapshot_key")
	snaps, err := listAll(tx, "read snapshot IDs to key", func(sc scanner) (row, error) {
		var r row
		return r, sc.Scan(&r.a, &r.b)
	}, `SELECT plugin_id, snapshot_id FROM snapshots WHERE `+snapStale, snapArgs...)
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

// staleKeysQuery says whether any row's key is stale (staleKeyWhere): ranges of the keys'
// indexes, nothing read when there is none.
var staleKeysQuery = func() string {
	v, _ := staleKeyWhere("external_key")
	sn, _ := staleKeyWhere("snapshot_key")
	return `SELECT EXISTS (SELECT 1 FROM volumes WHERE ` + v + `) OR EXISTS (SELECT 1 FROM snapshots WHERE ` + sn + `)`
}()

// rekeyAtOpen keys again, at a writable open, the rows whose key this volctl did not store:
// after an upgrade to a volctl built with other Unicode tables every row's key is of another
// version, and each one a candidate of every create's and delete's near look, the whole table
// read into Go each time, for good (TestOpenRekeysKeysOfAnotherVersion). Most opens find none,
// through the keys' indexes. A failure leaves the rows as they were, every check still right
// (such rows stay candidates), and is logged, not the open's.
func (s *Store) rekeyAtOpen(ctx context.Context) {
	c, err := s.w.get(ctx, s.busyTimeout)
	if err != nil {
		return
	}
	var stale bool
	err = (&Tx{ctx: ctx, c: c, s: s}).queryRow(staleKeysQuery, keyPrefix, keyPrefixEnd, keyPrefix, keyPrefixEnd).Scan(&stale)
	s.w.put(c)
	if err != nil || !stale {
		return
	}
	if err := s.Update(ctx, keyStaleRows); err != nil && s.log != nil {
		s.log.Warn("state: could not key again the storage and snapshot IDs keyed by another volctl (each stays a candidate of every near look)", "err", err)
	}
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
