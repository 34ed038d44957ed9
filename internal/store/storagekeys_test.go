package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// seedV14Near records, with the version-14 schema as a volctl of that version would have,
// volumes and snapshots whose IDs are near each other (an older volctl's register took them),
// one non-ASCII, one not UTF-8, and one of another plugin.
const seedV14Near = `
INSERT INTO plugins (id, type, socket, created_at, updated_at) VALUES ('hp', 'monolith', '/run/hp.sock', 1, 1), ('other', 'monolith', '/run/other.sock', 1, 1);
INSERT INTO volumes (id, plugin_id, external_id, state, created_at, updated_at) VALUES
	('a', 'hp', 'data-1', 'ready', 1, 1), ('b', 'hp', 'DATA-1', 'ready', 1, 1), ('c', 'hp', 'caf` + "\u00e9" + `', 'ready', 1, 1),
	('d', 'hp', CAST(x'766f6cff' AS TEXT), 'ready', 1, 1), ('e', 'other', ' Data-1', 'ready', 1, 1), ('f', 'hp', '', 'creating', 1, 1);
INSERT INTO snapshots (plugin_id, snapshot_id, source_volume_id, created_at) VALUES
	('hp', 'one', 'a', 1), ('hp', 'ONE', 'a', 1), ('other', 'One', 'e', 1);
`

// seedAtVersion makes, in dir, the database a volctl of schema version left holding what the
// statements seed insert, closed; it returns a raw connection to it for the test's own rows
// and checks.
func seedAtVersion(t *testing.T, dir string, version int, seed string) *sql.DB {
	t.Helper()
	old, err := open(context.Background(), dir, version)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, old.Path())
	if _, err := db.Exec(seed); err != nil {
		t.Fatalf("seed: %v", err)
	}
	old.Close()
	return db
}

// nearIDs is what NearExternalIDs and Snapshots().Near return for id, as "volume:external ID"
// and "plugin/snapshot ID".
func nearIDs(t *testing.T, s *Store, id string) (vols, snaps []string) {
	t.Helper()
	view(t, s, func(tx *Tx) error {
		all, err := tx.Volumes().NearExternalIDs(id)
		if err != nil {
			return err
		}
		for _, o := range all {
			vols = append(vols, o.ID+":"+o.ExternalID)
		}
		sn, err := tx.Snapshots().Near(id)
		for _, o := range sn {
			snaps = append(snaps, o.PluginID+"/"+o.SnapshotID)
		}
		return err
	})
	return vols, snaps
}

// A database made by version 14 is upgraded: every recorded external ID and snapshot ID gets
// the key this volctl computes (none for a volume without one), and the near looks find the
// near spellings an older volctl recorded, of every plugin (the engine keeps its plugin's
// socket mates), and nothing else.
func TestStorageKeysBackfilledFromVersion14(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := seedAtVersion(t, dir, 14, seedV14Near)
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 14: %v", err)
	}
	defer s.Close()
	checkKeys(t, db)
	vols, snaps := nearIDs(t, s, "Data-1")
	if want := []string{"a:data-1", "b:DATA-1", "e: Data-1"}; !slices.Equal(vols, want) {
		t.Errorf("NearExternalIDs(%q) after the migration = %q, want %q", "Data-1", vols, want)
	}
	if vols, _ := nearIDs(t, s, "CAFE\u0301"); !slices.Equal(vols, []string{"c:caf\u00e9"}) {
		t.Errorf("NearExternalIDs of a non-ASCII ID after the migration = %+q", vols)
	}
	if vols, _ := nearIDs(t, s, "VOL\xff"); !slices.Equal(vols, []string{"d:vol\xff"}) {
		t.Errorf("NearExternalIDs of an ID that is not UTF-8 after the migration = %+q", vols)
	}
	if vols, _ := nearIDs(t, s, "VOL\xfe"); len(vols) != 0 {
		t.Errorf("NearExternalIDs(%+q) = %+q: another byte", "VOL\xfe", vols)
	}
	if _, snaps = nearIDs(t, s, "oNe"); !slices.Equal(snaps, []string{"hp/ONE", "hp/one", "other/One"}) {
		t.Errorf("Snapshots().Near(%q) after the migration = %q", "oNe", snaps)
	}
}

// checkKeys checks every row's stored key is the one this volctl computes, and counts them.
func checkKeys(t *testing.T, db *sql.DB) (keyed int) {
	t.Helper()
	rows, err := db.Query(`SELECT external_id, external_key FROM volumes UNION ALL SELECT snapshot_id, snapshot_key FROM snapshots`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var key sql.NullString
		if err := rows.Scan(&id, &key); err != nil {
			t.Fatal(err)
		}
		if !key.Valid || key.String != storageKey(id) {
			t.Errorf("ID %+q is stored with key %+q (valid %v), want %+q", id, key.String, key.Valid, storageKey(id))
		}
		keyed++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return keyed
}

// backfillKillEnv tells a child of TestStorageKeyBackfillKilledHalfwayIsRedone which state dir
// to migrate.
const backfillKillEnv = "VOLCTL_STORE_BACKFILL_KILL_DIR"

// A volctl killed (SIGKILL) in the middle of migration 0015's backfill, half the rows keyed:
// the next open finds the database at version 14, every row as it was, and migrates it whole,
// every row keyed. The child (this test binary again) kills itself from the backfill's hook.
func TestStorageKeyBackfillKilledHalfwayIsRedone(t *testing.T) {
	if dir := os.Getenv(backfillKillEnv); dir != "" {
		n := 0
		testHookBackfilled = func() {
			if n++; n == 3 {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
		_, err := Open(context.Background(), dir)
		t.Fatalf("the migration ended (%v): the backfill was to kill this process first", err)
	}
	t.Parallel()
	dir := t.TempDir()
	db := seedAtVersion(t, dir, 14, seedV14Near)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStorageKeyBackfillKilledHalfwayIsRedone$", "-test.count=1")
	cmd.Env = append(os.Environ(), backfillKillEnv+"="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child migrating the database was not killed in the backfill: %v\n%s", err, out.String())
	}
	if got := userVersion(t, db); got != 14 {
		t.Fatalf("after a backfill killed halfway the database is at version %d, want 14", got)
	}
	var cols int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('volumes') WHERE name = 'external_key'`).Scan(&cols); err != nil || cols != 0 {
		t.Errorf("after a backfill killed halfway volumes has external_key (%d, %v), want the version-14 table", cols, err)
	}
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("open after a backfill killed halfway: %v", err)
	}
	defer s.Close()
	if got := userVersion(t, db); got != SchemaVersion() {
		t.Fatalf("version after migrating again = %d, want %d", got, SchemaVersion())
	}
	if n := checkKeys(t, db); n != 9 {
		t.Errorf("%d rows after migrating again, want the 9 seeded", n)
	}
}

// A row whose key is NULL (written by hand) or was stored by a volctl with other Unicode tables
// is a candidate of every near look, decided in Go: such a key may differ from this one's for
// the same ID. A row of this version's key that differs is not read.
func TestNearLooksReadKeysOfAnotherVersion(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	insertExternalIDs(t, s, []string{"hand-1", "older-1", "newer-1", "far-1"})
	db := rawDB(t, s.Path())
	for _, set := range []struct{ id, key string }{{"a", ""}, {"b", "0/9.0.0/9.0.0:HAND-1"}, {"c", spec.StorageIDKeyVersion + "~:X"}} {
		var key any = set.key
		if set.key == "" {
			key = nil
		}
		if _, err := db.Exec(`UPDATE volumes SET external_key = ? WHERE id = ?`, key, set.id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO snapshots (plugin_id, snapshot_id, created_at) VALUES ('p', 'Hand-1', 1)`); err != nil {
		t.Fatal(err)
	}
	vols, snaps := nearIDs(t, s, "x-1")
	if want := []string{"a:hand-1", "b:older-1", "c:newer-1"}; !slices.Equal(vols, want) {
		t.Errorf("NearExternalIDs = %q, want the rows of a NULL key and another version's key %q", vols, want)
	}
	if want := []string{"p/Hand-1"}; !slices.Equal(snaps, want) {
		t.Errorf("Snapshots().Near = %q, want the row written without a key %q", snaps, want)
	}
}

// The near looks are ranges of the key's index, not a pass over the table: what made a check
// among 10,000 volumes cost 4 ms (ASCII) to 14 ms (non-ASCII) of CPU.
func TestNearLooksUseTheKeyIndex(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	db := rawDB(t, s.Path())
	for _, q := range []struct{ col, table, query string }{
		{"external_key", "volumes", nearExternalIDsQuery},
		{"snapshot_key", "snapshots", nearSnapshotsQuery},
	} {
		where, args := nearKeyWhere(q.col, storageKey("x"))
		text := queryPlan(t, db, fmt.Sprintf(q.query, where), args...)
		if strings.Contains(text, "SCAN "+q.table) || !strings.Contains(text, "INDEX") {
			t.Errorf("the near look of %s is planned as %q: a pass over the table", q.table, text)
		}
	}
}

// A key another volctl stored (one built with other Unicode tables: a Go upgrade) or none (a
// row written by hand) is read by every near look, of every plugin: after such an upgrade every
// create's and delete's look read the whole table again, for good, since nothing re-keyed the
// rows. A writable open re-keys them, so the looks are indexed equalities again; an open for
// reading writes nothing.
func TestOpenRekeysKeysOfAnotherVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	insertExternalIDs(t, s, []string{"hand-1", "older-1", "newer-1", "far-1", ""})
	db := rawDB(t, s.Path())
	for _, q := range []string{
		`UPDATE volumes SET external_key = NULL WHERE id IN ('a', 'e')`,
		`UPDATE volumes SET external_key = '0/9.0.0/9.0.0:OLDER-1' WHERE id = 'b'`,
		`UPDATE volumes SET external_key = '` + spec.StorageIDKeyVersion + `~:NEWER-1' WHERE id = 'c'`,
		`INSERT INTO snapshots (plugin_id, snapshot_id, created_at) VALUES ('p', 'Hand-1', 1), ('p', 'Old-1', 1)`,
		`UPDATE snapshots SET snapshot_key = '0/9.0.0/9.0.0:OLD-1' WHERE snapshot_id = 'Old-1'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s.Close()
	stale := func() (n int) {
		t.Helper()
		if err := db.QueryRow(`SELECT count(*) FROM volumes WHERE external_key IS NULL OR external_key != '' AND external_key NOT LIKE ? ESCAPE '\'`,
			keyPrefix+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	r, err := Open(context.Background(), dir, ForReading())
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if n := stale(); n != 4 {
		t.Fatalf("an open for reading left %d of the 4 volumes keyed by hand or another version so, want 4 (it writes nothing)", n)
	}
	s, err = Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := checkKeys(t, db); n != 7 {
		t.Errorf("%d rows checked, want 7", n)
	}
	if vols, snaps := nearIDs(t, s, "x-1"); len(vols)+len(snaps) != 0 {
		t.Errorf("after a writable open, the near looks of %q still read %q and %q as candidates", "x-1", vols, snaps)
	}
}

// rekeyAtOpen's look for stale keys is ranges of the keys' indexes, not a pass over the
// tables: every writable open makes it.
func TestStaleKeysLookUsesTheKeyIndexes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	text := queryPlan(t, rawDB(t, s.Path()), staleKeysQuery, keyPrefix, keyPrefixEnd, keyPrefix, keyPrefixEnd)
	if strings.Contains(text, "SCAN volumes") || strings.Contains(text, "SCAN snapshots") || strings.Count(text, "INDEX") < 2 {
		t.Errorf("the look for stale keys is planned as %q: a pass over a table", text)
	}
}

// queryPlan is SQLite's plan of query with args, its steps' details joined by "; ".
func queryPlan(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return strings.Join(plan, "; ")
}
