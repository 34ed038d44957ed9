package store

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// migrateKillEnv tells a child of TestMigrationKilledHalfwayIsRedone which state dir to migrate.
const migrateKillEnv = "VOLCTL_STORE_MIGRATE_KILL_DIR"

// A volctl killed (SIGKILL) in the middle of migrating an older database, after some of the
// migrations ran in the transaction and while another writes page after page: the next open
// finds the database at its old version, every row as it was, and migrates it whole. The child
// (this test binary again) migrates a version-1 database with every migration and then one more
// that writes for far longer than the parent waits: the parent kills it once the transaction has
// spilled pages into the WAL, so the kill lands inside the migration whatever the machine's load.
func TestMigrationKilledHalfwayIsRedone(t *testing.T) {
	if dir := os.Getenv(migrateKillEnv); dir != "" {
		migrations = append(append([]migration(nil), migrations...), migration{version: len(migrations) + 1, name: "9999_slow.sql",
			sql: "CREATE TABLE slow (n INTEGER, pad TEXT); WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100000000) " +
				"INSERT INTO slow SELECT n, hex(randomblob(64)) FROM c;"})
		_, err := Open(context.Background(), dir)
		t.Fatalf("the slow migration ended (%v): the parent was to kill it first", err)
	}
	t.Parallel()
	dir := t.TempDir()
	old, err := open(context.Background(), dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, old.Path()).Exec(seedV1); err != nil {
		t.Fatalf("seed: %v", err)
	}
	path := old.Path()
	old.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestMigrationKilledHalfwayIsRedone$", "-test.count=1")
	cmd.Env = append(os.Environ(), migrateKillEnv+"="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The migration's transaction spills its pages into the WAL as it goes: once the WAL is
	// well past what the open itself writes, the kill comes inside the migration.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 8<<20 {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the child migrating the database exited before it was killed: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the child's migration wrote no more than 8 MiB to the WAL in 2 minutes\n%s", out.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	db := rawDB(t, path)
	if got := userVersion(t, db); got != 1 {
		t.Fatalf("after a migration killed halfway the database is at version %d, want 1 (the old one, whole)", got)
	}
	// A volctl of the old version opens it as it left it (its rows are checked once migrated:
	// this version's queries read the columns added since).
	older, err := open(context.Background(), dir, 1)
	if err != nil {
		t.Fatalf("an older volctl's open after a migration killed halfway: %v", err)
	}
	older.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("open after a migration killed halfway: %v", err)
	}
	defer s.Close()
	if got := userVersion(t, db); got != SchemaVersion() {
		t.Fatalf("version after migrating again = %d, want %d", got, SchemaVersion())
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'slow'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the killed migration's table is there (%d, %v), want it rolled back", n, err)
	}
	checkSeed(t, s)
}
