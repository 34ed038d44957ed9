package store

import (
	"context"
	"testing"
	"time"
)

// Migration 0020 rewrites the Nomad addresses an older volctl recorded with their credentials,
// and its commit is to truncate the WAL "as forgetGone's does" (its SQL file's comment;
// docs/architecture.md, Schema), whose wipe is a debt of the state (state_mark.wal_secrets)
// that any later process pays when the one that owed it could not: "the wipe is a debt of the
// state, not of the process that owes it" (securedelete.go). Before, the migration's
// transaction ran before Open set s.marked and s.debts, so its commit recorded no debt: a
// reader holding a snapshot across the migration and the migrating process's Close (a
// `sqlite3 .backup` of the state during the upgrade, an older volctl reading without the open
// lock) stopped both truncations short, and no later process ever knew the WAL still held the
// key, the path secret and the token. Found by helper review63.
func TestMigrationsWALWipeIsADebtOfTheState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const (
		key   = "k3y-0f-the-gateway-r63u"
		token = "t0psecret-r63u"
	)
	raw := "http://" + key + "@127.0.0.1:4646/?token=" + token
	db := seedAtVersion(t, dir, 19, seedV1+`
INSERT INTO nomad_handovers (volume_id, address, handed_at) VALUES ('db', '`+raw+`', 1);
INSERT INTO events (at, kind, volume_id, message) VALUES (1, 'nomad-handover', 'db', 'volume "db" handed over to Nomad at `+raw+`');
`)
	if fileHolds(t, dir, key) == "" {
		t.Fatal("the seeded credential is in no file: the test scans the wrong files")
	}

	// A reader of the state from before the upgrade (a backup in progress), with no open lock.
	ctx := context.Background()
	reader, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if _, err := reader.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM nomad_handovers").Scan(&n); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatalf("migrate from 19: %v", err)
	}
	var owed int64
	view(t, s, func(tx *Tx) error { return tx.queryRow("SELECT wal_secrets FROM state_mark").Scan(&owed) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if owed == 0 && fileHolds(t, dir, key) != "" {
		t.Errorf("migration 0020 rewrote the recorded Nomad addresses, its WAL wipe met a reader, and the state records no wipe owed (state_mark.wal_secrets = 0): no later process will truncate the WAL")
	}

	// Another process afterwards: an Open (which pays a wipe owed, for a process that only
	// reads) and a commit (which reads the debt back).
	later, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	update(t, later, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "x", Message: "after the upgrade"}) })
	for _, secret := range []string{key, token} {
		if name := fileHolds(t, dir, secret); name != "" {
			t.Errorf("%s still holds %q, which migration 0020 took out of the state, after another process's open and commit", name, secret)
		}
	}
}

// `volctl volume status` (ForReading) while another volctl holds the open lock exclusive (a
// newer volctl migrating the database, or one stopped with ^Z or hung mid-migration) reads the
// last committed state at once when that state is at its own version (docs/architecture.md,
// Migrations: readMigrating, TestReaderDoesNotWaitForAMigration). A state dir reached through a
// read-only path (a read-only bind of the live state dir, which the docs name for a dashboard
// or a status that reads while a writer uses the writable path) opens through openReadOnly,
// whose lockShared had no whenHeld: it waited the whole busy timeout (30 s by default) behind
// the migration, then failed, for a state it could read. Found by helper review63.
func TestReadOnlyPathReaderDoesNotWaitForAMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := stateWithPluginP(t)
	ro := readOnlyView(t, dir)
	holdMigrationLock(t, dir) // a volctl migrating through the writable path

	start := time.Now()
	r, err := Open(ctx, ro, ForReading(), WithBusyTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("a reader through a read-only path while another volctl migrates: %v (after %v); want the last committed state read at once, as through the writable path", err, time.Since(start).Round(time.Millisecond))
	}
	defer r.Close()
	if err := r.View(ctx, func(tx *Tx) error {
		_, err := tx.Plugins().Get("p")
		return err
	}); err != nil {
		t.Errorf("reading plugin p: %v", err)
	}
}
