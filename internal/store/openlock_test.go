package store

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// olderChildEnv makes this test binary a volctl one schema version older than it is, holding
// the state dir open until its stdin closes (TestOlderProcessChild).
const olderChildEnv = "VOLCTL_STORE_OLDER_CHILD"

// olderAlsoEnv names another state dir whose database the older child holds open raw beside its
// own.
const olderAlsoEnv = "VOLCTL_STORE_OLDER_ALSO"

// startOlderProcess runs a process that opened dir as a volctl one schema version older would,
// (with env added to its environment), and returns it and the function that makes it write one
// event and close the store.
func startOlderProcess(t *testing.T, dir string, env ...string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOlderProcessChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), olderChildEnv+"="+dir), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The process is waited for once: by finish, or at cleanup when the test ended without it.
	var wait sync.Once
	var waitErr error
	waitOnce := func() error {
		wait.Do(func() { stdin.Close(); waitErr = cmd.Wait() })
		return waitErr
	}
	t.Cleanup(func() { waitOnce() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "OPEN\n" {
		t.Fatalf("older process: %q, %v", line, err)
	}
	return cmd, func() {
		if err := waitOnce(); err != nil {
			t.Errorf("older process: %v", err)
		}
	}
}

// TestOlderProcessChild is the older volctl of TestMigrationWaitsForOlderProcesses; run
// directly it does nothing.
func TestOlderProcessChild(t *testing.T) {
	dir := os.Getenv(olderChildEnv)
	if dir == "" {
		t.Skip("run as a child process by TestMigrationWaitsForOlderProcesses")
	}
	s, err := open(context.Background(), dir, SchemaVersion()-1)
	if err != nil {
		t.Fatal(err)
	}
	if also := os.Getenv(olderAlsoEnv); also != "" {
		// Another state's database open too, raw, as a tool with two states open has it: its
		// -shm's locks held (TestMigrationIsNotRefusedForAnotherStateDirsRemovedLockFile).
		db := rawDB(t, filepath.Join(also, FileName))
		if _, err := db.Exec(`SELECT count(*) FROM sqlite_master`); err != nil {
			t.Fatal(err)
		}
	}
	os.Stdout.WriteString("OPEN\n")
	io.Copy(io.Discard, os.Stdin)
	if err := s.Update(context.Background(), func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "older"}) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A newer volctl does not migrate a database an older one has open (a running agent or
// dashboard): the older would go on writing with its statements into the new schema. It waits
// up to the busy timeout, then refuses, naming the older process, and the database stays at its
// version; once the older process has closed it, the migration runs.
func TestMigrationWaitsForOlderProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process; skipped in -short")
	}
	t.Parallel()
	dir := t.TempDir()
	older, finish := startOlderProcess(t, dir)
	db := rawDB(t, dir+"/"+FileName)

	s, err := Open(context.Background(), dir, WithBusyTimeout(300*time.Millisecond))
	if err == nil {
		s.Close()
		t.Fatalf("Open migrated the database to version %d while an older volctl (pid %d) had it open at version %d",
			userVersion(t, db), older.Process.Pid, SchemaVersion()-1)
	}
	t.Logf("Open under an older process: %v", err)
	if pid := "pid " + strconv.Itoa(older.Process.Pid); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), pid) ||
		!strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "stop them") {
		t.Errorf("Open under an older process: err = %v, want ErrInUse naming the database, %s and what to do", err, pid)
	}
	if got := userVersion(t, db); got != SchemaVersion()-1 {
		t.Errorf("version after the refused migration = %d, want %d", got, SchemaVersion()-1)
	}

	// The older process writes and exits while the newer waits.
	timer := time.AfterFunc(200*time.Millisecond, finish)
	defer timer.Stop()
	s, err = Open(context.Background(), dir, WithBusyTimeout(time.Minute))
	if err != nil {
		t.Fatalf("Open after the older process closed the database: %v", err)
	}
	defer s.Close()
	if got := userVersion(t, db); got != SchemaVersion() {
		t.Errorf("version after the older process closed it = %d, want %d", got, SchemaVersion())
	}
	if evs := allEvents(t, s); len(evs) != 1 || evs[0].Kind != "older" {
		t.Errorf("events = %+v, want the older process's one", evs)
	}
}

// Stores of one version open the database side by side: the open lock is shared by all but a
// migration, so neither waits for the other, and the first to close leaves the second working.
func TestStoresOfOneVersionShareTheOpenLock(t *testing.T) {
	t.Parallel()
	a := newStore(t)
	dir := a.Path()[:len(a.Path())-len(FileName)-1]
	b, err := Open(context.Background(), dir, WithBusyTimeout(10*time.Millisecond))
	if err != nil {
		t.Fatalf("second Open beside an open store: %v", err)
	}
	a.Close()
	update(t, b, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "b"}) })
	b.Close()
}

// On a file system whose flock is a no-op (stood in for by flockFile answering every request
// yes), Open refuses, naming the state database and why: volctl's locks between processes would
// not hold there. Not parallel: it swaps flockFile.
func TestOpenRefusesAFileSystemWhoseFlockDoesNotLock(t *testing.T) {
	dir := t.TempDir()
	orig := flockFile
	defer func() { flockFile = orig }()
	flockFile = func(*os.File, int) (bool, error) { return true, nil }
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a file system whose flock does not lock")
	}
	if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "flock does not lock") {
		t.Errorf("Open where flock does not lock: %v, want it to name the state database and why", err)
	}
}
