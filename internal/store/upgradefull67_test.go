package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// seedBulkAtVersion29 makes a state dir at schema version 29 (the last an upgrade to 0030
// migrates from) holding n volumes, each with its own secret and a secret mount flag, enough
// that 0030's CREATE INDEX sorts more than SQLite keeps in memory.
func seedBulkAtVersion29(t *testing.T, dir string, n int) string {
	t.Helper()
	old, err := open(context.Background(), dir, 29)
	if err != nil {
		t.Fatal(err)
	}
	path := old.Path()
	old.Close()
	db := rawDB(t, path)
	if _, err := db.Exec(fmt.Sprintf(`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < %d)
INSERT INTO volumes (id, plugin_id, state, secrets, mount_options, created_at, updated_at)
SELECT 'bulk-' || n, 'hostpath', 'ready', json_object('password', 'pw-' || hex(randomblob(24))),
       json_object('fs_type', '', 'mount_flags', json_array('noatime', 'password=f' || hex(randomblob(16)))), 1, 1 FROM c`, n)); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return path
}

const (
	tempFullStateEnv = "VOLCTL_TEST_TEMPFULL_STATE_DIR"
	tempFullOutEnv   = "VOLCTL_TEST_TEMPFULL_OUT"
)

// Migration 0030 builds four indexes over every volume and claim; on a large state SQLite's
// sorter spills the index's keys to temporary files, which it makes in its temporary directory
// (SQLITE_TMPDIR, TMPDIR, /var/tmp, /tmp), not in the state dir. When that directory is full
// (a small /tmp tmpfs, a full root file system with the state on its own volume) the migration
// fails with SQLITE_FULL, and volctl said "the file system holding the state dir is full: free
// space there, then run the command again" for a state dir on a file system with gigabytes
// free: the user freed space where there was no shortage, and met the same error every time;
// nothing named the directory that is full. It is named now (fullWhere). Found by helper
// review67.
func TestMigrationWithTempDirFullIsNotBlamedOnTheStateDir(t *testing.T) {
	if dir := os.Getenv(tempFullStateEnv); dir != "" {
		// The child: SQLite read SQLITE_TMPDIR at its start.
		_, err := Open(context.Background(), dir)
		msg := "OPENED"
		if err != nil {
			msg = err.Error()
		}
		if werr := os.WriteFile(os.Getenv(tempFullOutEnv), []byte(msg), 0o600); werr != nil {
			t.Fatal(werr)
		}
		return
	}
	full := smallTmpfs(t)
	fillUp(t, full)
	dir := filepath.Join(t.TempDir(), "state")
	path := seedBulkAtVersion29(t, dir, 60000)
	if fsFull(path) {
		t.Skip("the state dir's own file system has no room: the test needs it roomy")
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMigrationWithTempDirFullIsNotBlamedOnTheStateDir$", "-test.count=1")
	cmd.Env = append(os.Environ(), tempFullStateEnv+"="+dir, tempFullOutEnv+"="+out, "SQLITE_TMPDIR="+full, "TMPDIR="+full)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, log.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("child wrote nothing: %v\n%s", err, log.String())
	}
	msg := string(b)
	if msg == "OPENED" {
		t.Skip("the migration's sorts fit in memory: SQLite wrote nothing to its temporary directory, which the test needs it to")
	}
	// Nothing lost: the database is at its old version, whole.
	if got := userVersion(t, rawDB(t, path)); got != 29 {
		t.Errorf("after the failed migration the database is at version %d, want 29", got)
	}
	if strings.Contains(msg, "holding the state dir is full") {
		t.Errorf("migration with SQLite's temporary directory (%s) full and the state dir's file system roomy: %q\n"+
			"it blames the state dir's file system, which has room, and names nothing that is full", full, msg)
	}
	if !strings.Contains(msg, full) {
		t.Errorf("migration failed for want of room in SQLite's temporary directory %s, and the error does not name it: %q", full, msg)
	}
}

// The state dir's file system fills up during the migration (0030's indexes written to the
// WAL): Open says the disk is full, and said what to do twice over: the migration's
// transaction (Store.explain) and Open (openFailed) each appended their own advice, the second
// not looking whether the first was there ("... (the file system holding the state dir is full,
// and this change was not recorded: free space there, then run the command again; ...) (the
// file system holding the state dir is full: free space there, then run the command again)").
// The claim and release paths say it once (TestDiskFullClaimSaysItOnce). After space is freed
// the migration runs whole. Found by helper review67.
func TestDiskFullDuringMigrationSaysItOnce(t *testing.T) {
	t.Parallel()
	mnt := smallTmpfs(t)
	dir := filepath.Join(mnt, "state")
	path := seedBulkAtVersion29(t, dir, 1500)
	fill := fillUp(t, mnt)
	// Leave room for the -shm and a little of the WAL, not for the indexes.
	fi, err := os.Stat(fill)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(fill, max(fi.Size()-128<<10, 0)); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("the migration found room on a full file system: the test fills too little")
	}
	msg := err.Error()
	if !strings.Contains(msg, "migrate schema") {
		t.Logf("the open failed before the migration: %q", msg)
	}
	if !strings.Contains(msg, path) || !strings.Contains(msg, "free space there") {
		t.Errorf("disk full during the migration: %q, want it to name %s and say to free space", msg, path)
	}
	if n := strings.Count(msg, "free space there"); n > 1 {
		t.Errorf("disk full during the migration says what to do %d times over: %q", n, msg)
	}
	if got := userVersion(t, rawDB(t, path)); got != 29 {
		t.Errorf("after the failed migration the database is at version %d, want 29", got)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("open once space is freed: %v", err)
	}
	defer s.Close()
	var n int
	view(t, s, func(tx *Tx) error { return tx.queryRow(`SELECT count(*) FROM volumes`).Scan(&n) })
	if n != 1500 {
		t.Errorf("volumes after the migration = %d, want 1500", n)
	}
}
