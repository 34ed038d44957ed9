package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// schemaOf is the database's schema as SQLite records it, for comparing a migrated database with
// a fresh one.
func schemaOf(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// seedV1 writes one row per table with the version-1 schema, the way a volctl of that version
// would have, including a secret and a mount flag.
const seedV1 = `
INSERT INTO plugins (id, type, socket, exec, node_id, healthy, ready, created_at, updated_at)
	VALUES ('hp', 'monolith', '/run/hp.sock', '{"command":"hp","args":null,"env":{"TOKEN":"t0ken"}}', 'node-1', 1, 1, 1000, 2000);
INSERT INTO volumes (id, namespace, name, plugin_id, external_id, state, capabilities, mount_options, secrets, context, created_at, updated_at)
	VALUES ('db', 'default', 'db', 'hp', 'ext-db', 'ready', '[{"access_mode":"single-node-writer","attachment_mode":"file-system"}]',
	        '{"fs_type":"ext4","mount_flags":["noatime"]}', '{"password":"s3cret"}', '{}', 1000, 2000);
INSERT INTO claims (volume_id, alloc, mode, access_mode, attachment_mode, mount_flags, state, target_path, created_at, updated_at)
	VALUES ('db', 'web-0', 'write', 'single-node-writer', 'file-system', '["noatime"]', 'published', '/t/web-0', 3000, 4000);
INSERT INTO claim_history (claim_id, volume_id, alloc, mode, access_mode, attachment_mode, state, created_at, updated_at, freed_at, outcome)
	VALUES (99, 'db', 'old-0', 'read', 'single-node-writer', 'file-system', 'controller-detached', 10, 20, 30, 'released');
INSERT INTO stagings (volume_id, plugin_id, staging_path, staged, updated_at) VALUES ('db', 'hp', '/s/db', 1, 5000);
INSERT INTO snapshots (plugin_id, snapshot_id, source_volume_id, created_at) VALUES ('hp', 'snap-1', 'db', 6000);
INSERT INTO groups (name, spec, count, state, created_at, updated_at)
	VALUES ('web', '{"name":"web","count":1,"volumes":null,"volume_mounts":null}', 1, 'running', 7000, 7000);
INSERT INTO events (at, kind, volume_id, message) VALUES (8000, 'claim', 'db', 'claimed');
`

// seedV5 writes a handover mark with the version-5 schema (migration 0005), as a volctl of that
// version would have.
const seedV5 = `
INSERT INTO nomad_handovers (volume_id, address, region, namespace, forced, handed_at)
	VALUES ('db', 'http://n1:4646', 'eu', 'prod', 1, 9000);
`

// An empty database and one at every earlier version migrate to the current schema, which is
// then exactly a fresh database's, and keep every row.
func TestMigrateFromEachVersion(t *testing.T) {
	t.Parallel()
	fresh := newStore(t)
	want := schemaOf(t, rawDB(t, fresh.Path()))
	if len(want) == 0 {
		t.Fatal("fresh database has no schema")
	}

	for from := 0; from < SchemaVersion(); from++ {
		t.Run(fmt.Sprintf("from %d", from), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			old, err := open(context.Background(), dir, from)
			if err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, old.Path())
			if got := userVersion(t, db); got != from {
				t.Fatalf("built database at version %d, want %d", got, from)
			}
			if from >= 1 {
				if _, err := db.Exec(seedV1); err != nil {
					t.Fatalf("seed: %v", err)
				}
			}
			if from >= 5 {
				if _, err := db.Exec(seedV5); err != nil {
					t.Fatalf("seed: %v", err)
				}
			}
			old.Close()

			s, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatalf("migrate from %d: %v", from, err)
			}
			defer s.Close()
			if got := userVersion(t, db); got != SchemaVersion() {
				t.Errorf("version after migration = %d, want %d", got, SchemaVersion())
			}
			if got := schemaOf(t, db); !reflect.DeepEqual(got, want) {
				t.Errorf("schema after migrating from %d differs from a fresh one:\n got: %q\nwant: %q", from, got, want)
			}
			if from >= 5 {
				checkSeedV5(t, s)
			}
			if from >= 1 {
				checkSeed(t, s)
			}
		})
	}
}

// checkSeedV5 checks seedV5's mark after migration: as it was, not unsettled and with no Raft
// index (0007), and those two written and read back.
func checkSeedV5(t *testing.T, s *Store) {
	t.Helper()
	view(t, s, func(tx *Tx) error {
		h, err := tx.Handovers().Get("db")
		if err != nil {
			return err
		}
		if h.Address != "http://n1:4646" || h.Region != "eu" || h.Namespace != "prod" || !h.Forced || h.Unsettled || h.Index != 0 || h.HandedAt != decTime(9000) {
			t.Errorf("handover after migration: %+v", h)
		}
		return nil
	})
	update(t, s, func(tx *Tx) error { return tx.Handovers().SetOutcome("db", true, 42, nil) })
	view(t, s, func(tx *Tx) error {
		if h, err := tx.Handovers().Get("db"); err != nil || !h.Unsettled || h.Index != 42 {
			t.Errorf("handover marked unsettled after migration: %+v, %v", h, err)
		}
		return nil
	})
	// checkSeed frees the claim; the mark does not stand in its way.
}

func checkSeed(t *testing.T, s *Store) {
	t.Helper()
	view(t, s, func(tx *Tx) error {
		p, err := tx.Plugins().Get("hp")
		if err != nil {
			return err
		}
		if p.Exec == nil || p.Exec.Env["TOKEN"] != "t0ken" || p.Fingerprint.NodeID != "node-1" || !p.Health.Ready {
			t.Errorf("plugin after migration: %+v", p)
		}
		v, err := tx.Volumes().Get("db")
		if err != nil {
			return err
		}
		if v.Secrets["password"] != "s3cret" || v.MountOptions.MountFlags[0] != "noatime" || v.Context == nil ||
			len(v.Capabilities) != 1 || v.Capabilities[0].AccessMode != spec.SingleNodeWriter || v.CreatedAt != decTime(1000) {
			t.Errorf("volume after migration: %+v", v)
		}
		c, err := tx.Claims().Find("db", "web-0")
		if err != nil {
			return err
		}
		if c.State != ClaimPublished || c.TargetPath != "/t/web-0" || c.MountFlags[0] != "noatime" {
			t.Errorf("claim after migration: %+v", c)
		}
		past, err := tx.History("db", 0)
		if err != nil {
			return err
		}
		if len(past) != 1 || past[0].ID != 99 || past[0].Outcome != OutcomeReleased {
			t.Errorf("history after migration: %+v", past)
		}
		if st, err := tx.Stagings().Get("db"); err != nil || !st.Staged {
			t.Errorf("staging after migration: %+v, %v", st, err)
		}
		if _, err := tx.Snapshots().Get("hp", "snap-1"); err != nil {
			t.Errorf("snapshot after migration: %v", err)
		}
		if g, err := tx.Groups().Get("web"); err != nil || g.Spec.Name != "web" {
			t.Errorf("group after migration: %+v, %v", g, err)
		}
		evs, err := tx.Events().Recent(0, EventFilter{VolumeID: "db"})
		if err != nil {
			return err
		}
		if len(evs) != 1 || evs[0].Message != "claimed" {
			t.Errorf("events after migration: %+v", evs)
		}
		return nil
	})
	// And the migrated database takes writes that depend on the old rows.
	update(t, s, func(tx *Tx) error {
		c, err := tx.Claims().Find("db", "web-0")
		if err != nil {
			return err
		}
		if err := tx.Claims().Free(c.ID, OutcomeReleased); err != nil {
			return err
		}
		return tx.Events().Append(&Event{Kind: "release", VolumeID: "db"})
	})
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.Close()
	db := rawDB(t, s.Path())
	newer := SchemaVersion() + 1
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", newer)); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), filepath.Dir(s.Path()))
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open of a newer database: err = %v, want ErrNewerSchema", err)
	}
	for _, want := range []string{s.Path(), fmt.Sprintf("schema version %d", newer),
		fmt.Sprintf("up to %d", SchemaVersion()), "upgrade volctl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := userVersion(t, db); got != newer {
		t.Errorf("refused database's version changed to %d", got)
	}
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup string
		want  string // after "not a volctl state database"
	}{
		{"other application", "CREATE TABLE t (x); PRAGMA application_id = 42;", " (application id 0x2a, schema version 0)"},
		{"unmarked but versioned", "CREATE TABLE t (x); PRAGMA user_version = 1;", " (application id 0x0, schema version 1)"},
		// Neither mark, like any SQLite file another program made: only an empty one is new.
		{"unmarked with tables", "CREATE TABLE t (x); CREATE INDEX a ON t (x);", " (it holds other tables: t, a)"},
		{"unmarked with many tables", "CREATE TABLE a (x); CREATE TABLE b (x); CREATE TABLE c (x); CREATE TABLE d (x); CREATE TABLE e (x); CREATE TABLE f (x);",
			" (it holds other tables: a, b, c, d, e, ...)"},
		{"unmarked with a view", "CREATE VIEW v AS SELECT 1;", " (it holds other tables: v)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			db := rawDB(t, path)
			if _, err := db.Exec(tt.setup); err != nil {
				t.Fatal(err)
			}
			before := schemaOf(t, db)
			s, err := Open(context.Background(), dir)
			if err == nil {
				s.Close()
				t.Fatal("Open of a foreign database succeeded")
			}
			if want := "open state " + path + ": not a volctl state database" + tt.want + foreignAdvice; err.Error() != want {
				t.Errorf("err = %q, want %q", err, want)
			}
			if got := schemaOf(t, db); !reflect.DeepEqual(got, before) {
				t.Errorf("refused database's schema changed:\n got: %q\nwant: %q", got, before)
			}
		})
	}
}

// Another program may fill an empty file between Open's first look and the migration's write
// lock: the migration looks again under the lock, and refuses the file rather than adding
// volctl's tables next to the other program's.
func TestMigrateRechecksForeignTablesUnderLock(t *testing.T) {
	t.Parallel()
	// An empty, unmarked database: what Open's first look passes.
	s, err := open(context.Background(), t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := rawDB(t, s.Path())
	if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	err = s.migrate(context.Background(), SchemaVersion())
	if want := "open state " + s.Path() + ": not a volctl state database (it holds other tables: t)" + foreignAdvice; err == nil || err.Error() != want {
		t.Fatalf("migrate after another program wrote a table: err = %v, want %q", err, want)
	}
	if got := schemaOf(t, db); len(got) != 1 {
		t.Errorf("schema after the refused migration = %q, want only the other program's table", got)
	}
	var appID int
	if err := db.QueryRow("PRAGMA application_id").Scan(&appID); err != nil || appID != 0 {
		t.Errorf("application_id after the refused migration = %#x (%v), want 0", appID, err)
	}
}

// Opening an up-to-date database only reads: it succeeds while another process holds the write
// lock (its busy timeout is tiny, so a write would fail rather than wait).
func TestOpenUpToDateTakesNoWriteLock(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	release := holdWriteLock(t, s, nil)
	other, err := Open(context.Background(), filepath.Dir(s.Path()), WithBusyTimeout(10*time.Millisecond))
	if err != nil {
		t.Errorf("Open while another store writes: %v", err)
	} else {
		other.Close()
	}
	release()
}

// Not parallel: it swaps the package's migration list.
func TestFailedMigrationChangesNothing(t *testing.T) {
	s := newStore(t)
	s.Close()
	orig := migrations
	defer func() { migrations = orig }()
	migrations = append(append([]migration(nil), orig...),
		migration{version: len(orig) + 1, name: "9999_broken.sql", sql: "CREATE TABLE extra (a); INSERT INTO missing VALUES (1);"})

	_, err := Open(context.Background(), filepath.Dir(s.Path()))
	if err == nil || !strings.Contains(err.Error(), "migration 9999_broken.sql") {
		t.Fatalf("Open with a broken migration: err = %v, want it to name the migration", err)
	}
	db := rawDB(t, s.Path())
	if got := userVersion(t, db); got != len(orig) {
		t.Errorf("version after a failed migration = %d, want %d", got, len(orig))
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'extra'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the failed migration's table exists (%d, %v), want it rolled back", n, err)
	}
}

func TestMigrationFilesAreNumbered(t *testing.T) {
	t.Parallel()
	if SchemaVersion() < 2 {
		t.Fatalf("SchemaVersion() = %d, want at least the two shipped migrations", SchemaVersion())
	}
	for i, m := range migrations {
		if m.version != i+1 || !strings.HasPrefix(m.name, fmt.Sprintf("%04d_", i+1)) || !strings.HasSuffix(m.name, ".sql") {
			t.Errorf("migration %d is %q (version %d)", i, m.name, m.version)
		}
		if sql, err := m.source(); err != nil || strings.TrimSpace(sql) == "" {
			t.Errorf("migration %s: SQL %q, %v", m.name, sql, err)
		}
	}
}

// The migrations' SQL is read when a migration is applied, not when the package is
// initialised: every volctl process opens the store, few migrate it.
func TestMigrationSQLReadWhenApplied(t *testing.T) {
	t.Parallel()
	for _, m := range loadMigrations() {
		if m.sql != "" {
			t.Errorf("migration %s: its SQL (%d bytes) is read at start-up", m.name, len(m.sql))
		}
	}
}

// Migration 0011 records whether a claim's target was accepted. A claim recorded before it (a
// row at version 10) reads as unrecorded, NULL, so its release decides from its state as the
// volctl that recorded it did, not as "never accepted", which would leave a link put in place
// of a published target for the plugin to follow; a claim recorded after reads back as
// written, 0 distinct from NULL, in its row and in the history.
func TestClaimTargetAcceptanceMigratesAsUnrecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := open(context.Background(), dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, old.Path()).Exec(seedV1); err != nil {
		t.Fatalf("seed: %v", err)
	}
	old.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 10: %v", err)
	}
	defer s.Close()
	view(t, s, func(tx *Tx) error {
		c, err := tx.Claims().Find("db", "web-0")
		if err != nil {
			return err
		}
		if c.Target != TargetUnrecorded {
			t.Errorf("a claim recorded at version 10 reads target %d, want TargetUnrecorded (%d)", c.Target, TargetUnrecorded)
		}
		return nil
	})
	for _, want := range []TargetAcceptance{TargetNotAccepted, TargetAccepted} {
		alloc := fmt.Sprintf("new-%d", want)
		update(t, s, func(tx *Tx) error {
			return tx.Claims().Insert(&Claim{VolumeID: "db", Alloc: alloc, Mode: ClaimRead, AccessMode: spec.SingleNodeWriter,
				AttachmentMode: spec.FileSystem, State: ClaimTaken, Target: want})
		})
		var id int64
		view(t, s, func(tx *Tx) error {
			c, err := tx.Claims().Find("db", alloc)
			if err == nil && c.Target != want {
				t.Errorf("claim inserted with target %d reads %d", want, c.Target)
			}
			id = c.ID
			return err
		})
		update(t, s, func(tx *Tx) error { return tx.Claims().Free(id, OutcomeRolledBack) })
		view(t, s, func(tx *Tx) error {
			past, err := tx.History("db", 1)
			if err == nil && (len(past) != 1 || past[0].ID != id || past[0].Target != want) {
				t.Errorf("history of the claim inserted with target %d: %+v", want, past)
			}
			return err
		})
	}
	update(t, s, func(tx *Tx) error {
		c, err := tx.Claims().Find("db", "web-0")
		if err != nil {
			return err
		}
		c.Target = TargetAccepted
		return tx.Claims().Update(&c)
	})
	view(t, s, func(tx *Tx) error {
		c, err := tx.Claims().Find("db", "web-0")
		if err == nil && c.Target != TargetAccepted {
			t.Errorf("the old claim updated to accepted reads %d", c.Target)
		}
		return err
	})
}

// Migration 0014 records whether a claim's NodePublishVolume may have been sent
// (target_sent). Claims recorded at version 13 read: a taken or controller-published claim as
// unsent (NodePublishVolume is sent only after node-staged is committed: a controller-published
// claim read as maybe sent had a hand's link at its target followed by NodeUnpublishVolume once
// driven on), any other claim not yet accepted as maybe sent
// (the safe side: a link at its target is left to the plugin's NodeUnpublishVolume), an accepted
// one as accepted, and one recorded before version 11 as unrecorded still. TargetUnsent is a
// value of its own, in the row and in the history, distinct from TargetNotAccepted.
func TestClaimTargetSentMigratesOnTheSafeSide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := seedAtVersion(t, dir, 13, seedV1)
	for _, row := range []struct {
		alloc, state string
		accepted     any
	}{{"taken-0", "taken", 0}, {"staged-0", "node-staged", 0}, {"cp-0", "controller-published", 0}, {"unpub-0", "unpublishing", 0}, {"pub-1", "published", 1}, {"old-null", "node-staged", nil}} {
		if _, err := db.Exec(`INSERT INTO claims (volume_id, alloc, mode, access_mode, attachment_mode, state, target_path, target_accepted, created_at, updated_at)
			VALUES ('db', ?, 'read', 'single-node-writer', 'file-system', ?, '/t', ?, 1, 1)`, row.alloc, row.state, row.accepted); err != nil {
			t.Fatalf("seed %s: %v", row.alloc, err)
		}
	}
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 13: %v", err)
	}
	defer s.Close()
	want := map[string]TargetAcceptance{"taken-0": TargetUnsent, "staged-0": TargetNotAccepted, "cp-0": TargetUnsent, "unpub-0": TargetNotAccepted,
		"pub-1": TargetAccepted, "old-null": TargetUnrecorded}
	view(t, s, func(tx *Tx) error {
		for alloc, w := range want {
			c, err := tx.Claims().Find("db", alloc)
			if err != nil {
				return err
			}
			if c.Target != w {
				t.Errorf("claim %s recorded at version 13 reads target %d, want %d", alloc, c.Target, w)
			}
		}
		return nil
	})
	for _, w := range []TargetAcceptance{TargetUnsent, TargetNotAccepted} {
		var id int64
		update(t, s, func(tx *Tx) error {
			c, err := tx.Claims().Find("db", "taken-0")
			if err != nil {
				return err
			}
			c.Target, id = w, c.ID
			return tx.Claims().Update(&c)
		})
		view(t, s, func(tx *Tx) error {
			c, err := tx.Claims().Get(id)
			if err == nil && c.Target != w {
				t.Errorf("claim updated to target %d reads %d", w, c.Target)
			}
			return err
		})
	}
	update(t, s, func(tx *Tx) error {
		c, err := tx.Claims().Find("db", "taken-0")
		if err != nil {
			return err
		}
		c.Target = TargetUnsent
		if err := tx.Claims().Update(&c); err != nil {
			return err
		}
		return tx.Claims().Free(c.ID, OutcomeRolledBack)
	})
	view(t, s, func(tx *Tx) error {
		past, err := tx.History("db", 1)
		if err == nil && (len(past) != 1 || past[0].Target != TargetUnsent) {
			t.Errorf("history of a claim freed unsent: %+v; want target %d", past, TargetUnsent)
		}
		return err
	})
}
