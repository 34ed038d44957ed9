package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestReaderDuringAMigrationDoesNotReadTheNewerSchemaAfterItCommits: a store opened ForReading
// while another (newer) volctl holds the open lock exclusive to
// migrate reads "the state as last committed" before that migration (readMigrating, docs:
// "the store warns that it shows the state before the migration"). Once that migration
// committed, the reader's next View read the newer schema's rows through this volctl's
// queries: nothing checked the version again, so a row the newer migration moved (as 0024
// moved group run errors out of the spec column) was shown as if empty, without a word.
// The View either still sees the state before the migration, or refuses naming the
// newer schema (ErrNewerSchema).
// Found by helper review70.
func TestReaderDuringAMigrationDoesNotReadTheNewerSchemaAfterItCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, dir := readerDuringAMigration(t)

	// The newer volctl's migration commits: it moves the socket into a column of its own, as
	// 0024 moved run errors, and marks the database at the next version.
	db := rawDB(t, filepath.Join(dir, FileName))
	if _, err := db.Exec(fmt.Sprintf(`BEGIN IMMEDIATE;
		ALTER TABLE plugins ADD COLUMN sockets_v%[1]d TEXT;
		UPDATE plugins SET sockets_v%[1]d = socket, socket = '';
		PRAGMA user_version = %[1]d;
		COMMIT;`, SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}

	var got string
	err := r.View(ctx, func(tx *Tx) error {
		p, err := tx.Plugins().Get("p")
		got = p.Socket
		return err
	})
	switch {
	case err != nil && errors.Is(err, ErrNewerSchema):
		// refused, naming the newer schema: fine
	case err == nil && got == "/run/p.sock":
		// still the state before the migration: fine
	default:
		t.Errorf("a View of the reader after the newer volctl's migration (schema %d > %d) committed: socket %q, err %v; want the state before the migration, or a refusal naming the newer schema",
			SchemaVersion()+1, SchemaVersion(), got, err)
	}
}

// TestStateWithItsSchemaVersionLostIsNamed: a volctl state database whose schema version reads 0 (its header's user_version lost, the
// application id still volctl's) was taken for a new, empty one: Open ran schema.sql over
// the tables it held and failed with SQLite's "table ... already exists" under "migrate
// schema: schema.sql", which named neither the lost version nor what to do.
// Found by helper review70.
func TestStateWithItsSchemaVersionLostIsNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := stateWithPluginP(t)
	db := rawDB(t, filepath.Join(dir, FileName))
	if _, err := db.Exec("PRAGMA user_version = 0"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, dir)
	if err == nil {
		defer s.Close()
		t.Fatal("Open of a volctl state whose schema version reads 0 succeeded")
	}
	t.Logf("err: %v", err)
	if strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), "schema version") {
		t.Errorf("Open of a volctl state whose schema version reads 0: %v; want an error naming the missing schema version, not SQLite's words about schema.sql", err)
	}
}
