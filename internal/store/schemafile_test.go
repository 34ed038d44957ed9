package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// rawWithSQL is a new database file, outside Open, with the given SQL run on it in order.
func rawWithSQL(t *testing.T, sources ...string) *sql.DB {
	t.Helper()
	db := rawDB(t, filepath.Join(t.TempDir(), FileName))
	for i, src := range sources {
		if _, err := db.Exec(src); err != nil {
			t.Fatalf("source %d: %v", i, err)
		}
	}
	return db
}

// migrationSources is the SQL of the first n migrations.
func migrationSources(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for _, m := range migrations[:n] {
		src, err := m.source()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, src)
	}
	return out
}

// schemaText is a schema file for db: its header at version, then every statement SQLite
// stored for it, in the order it made them (its own tables, e.g. sqlite_sequence, left out:
// SQLite makes those itself).
func schemaText(t *testing.T, db *sql.DB, version int) string {
	t.Helper()
	rows, err := db.Query(`SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d\n", schemaHeader, version)
	b.WriteString("-- Written by `VOLCTL_WRITE_SCHEMA=1 go test ./internal/store -run TestSchemaFileIsTheMigrationsApplied`\n")
	b.WriteString("-- from the migrations in migrations/, which stay the record of how the schema came to be: a new\n")
	b.WriteString("-- database gets this in one step (migrate.go, schemaFile). Do not edit it by hand.\n")
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n" + q + ";\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSchemaFileIsTheMigrationsApplied: schema.sql makes exactly the schema its migrations make,
// statement for statement as SQLite records it, and is at the newest migration (a file behind
// would be correct, only slower: the rest is replayed). VOLCTL_WRITE_SCHEMA=1 writes it again.
func TestSchemaFileIsTheMigrationsApplied(t *testing.T) {
	t.Parallel()
	migrated := rawWithSQL(t, migrationSources(t, len(migrations))...)
	if os.Getenv("VOLCTL_WRITE_SCHEMA") == "1" {
		if err := os.WriteFile("schema.sql", []byte(schemaText(t, migrated, len(migrations))), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("schema.sql written; run the tests again without VOLCTL_WRITE_SCHEMA")
		return
	}
	const again = "write it again: VOLCTL_WRITE_SCHEMA=1 go test ./internal/store -run TestSchemaFileIsTheMigrationsApplied"
	at, err := schemaVersionOf(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if at != len(migrations) {
		t.Fatalf("schema.sql is at version %d, the migrations at %d: %s", at, len(migrations), again)
	}
	if got, want := schemaOf(t, rawWithSQL(t, schemaFile)), schemaOf(t, migrated); !reflect.DeepEqual(got, want) {
		t.Fatalf("schema.sql makes\n%s\nthe migrations make\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), again)
	}
}

// TestNewDatabaseGetsTheSchemaFileThenLaterMigrations: Open gives a new database the schema file
// (a table only the file has shows it was run, not the migrations), applies the migrations
// after the file's version on top, and records the newest version; an existing database is
// migrated from its own version, the file never run on it. Not parallel: it swaps the file.
func TestNewDatabaseGetsTheSchemaFileThenLaterMigrations(t *testing.T) {
	orig := schemaFile
	defer func() { schemaFile = orig }()
	ctx := context.Background()
	behind := len(migrations) - 1
	// A database at the version before, made as that version's volctl made it (the file, at the
	// newest version, is not run for an older target).
	old, err := open(ctx, filepath.Join(t.TempDir(), "old"), behind)
	if err != nil {
		t.Fatal(err)
	}
	oldPath := old.Path()
	old.Close()
	schemaFile = schemaText(t, rawWithSQL(t, migrationSources(t, behind)...), behind) + "CREATE TABLE only_in_the_file (a TEXT) STRICT;\n"

	s, err := Open(ctx, filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	s.Close()
	got := schemaOf(t, rawDB(t, path))
	want := schemaOf(t, rawWithSQL(t, append(migrationSources(t, behind), "CREATE TABLE only_in_the_file (a TEXT) STRICT", migrationSources(t, len(migrations))[behind])...))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("a new database has\n%s\nwant the file's schema with the last migration on top\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v := userVersion(t, rawDB(t, path)); v != len(migrations) {
		t.Errorf("version %d, want %d", v, len(migrations))
	}

	schemaFile = orig + "CREATE TABLE only_in_the_file (a TEXT) STRICT;\n"
	if s, err = Open(ctx, filepath.Dir(oldPath)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got, want := schemaOf(t, rawDB(t, oldPath)), schemaOf(t, rawWithSQL(t, migrationSources(t, len(migrations))...)); !reflect.DeepEqual(got, want) {
		t.Errorf("a database at version %d migrated to\n%s\nwant the migrations' schema\n%s", behind, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
