package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// readerPaysDirEnv names the state dir TestReaderPaysChild works in, readerPaysModeEnv what
// it does there: "delete" commits a secret volume and its delete while a reader of its own
// holds an older snapshot (so the delete's wipe of the WAL stops short, recorded owed), then
// dies by SIGKILL before anything tries again; "read" is `volume status`: opened ForReading,
// one read, CloseAtExit.
const (
	readerPaysDirEnv  = "VOLCTL_TEST_READER_PAYS_DIR"
	readerPaysModeEnv = "VOLCTL_TEST_READER_PAYS_MODE"
	readerPaysSecret  = "Zq9-volctl-distinctive-secret-reader-pays"
)

// TestReaderPaysChild is the command of TestAWipeOfTheWALOwedIsPaidByAReader. Run directly it
// does nothing.
func TestReaderPaysChild(t *testing.T) {
	dir := os.Getenv(readerPaysDirEnv)
	if dir == "" {
		t.Skip("run as a child process by TestAWipeOfTheWALOwedIsPaidByAReader")
	}
	ctx := context.Background()
	fail := func(what string, err error) {
		fmt.Println(what+":", err)
		os.Exit(1)
	}
	switch os.Getenv(readerPaysModeEnv) {
	case "delete":
		s, err := Open(ctx, dir, forgetNothing)
		if err != nil {
			fail("open", err)
		}
		held, err := Open(ctx, dir)
		if err != nil {
			fail("open the reader", err)
		}
		if err := s.Update(ctx, func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"password": readerPaysSecret}})
		}); err != nil {
			fail("insert", err)
		}
		reading, release := make(chan struct{}), make(chan struct{})
		go held.View(ctx, func(tx *Tx) error {
			_, err := tx.Volumes().List(VolumeFilter{})
			close(reading)
			<-release
			return err
		})
		<-reading
		if err := s.Update(ctx, func(tx *Tx) error { return tx.Volumes().Delete("db") }); err != nil {
			fail("delete", err)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL) // before the reader lets go, or any Close tries again
		select {}
	case "scan":
		// fileHolds in a process of its own: closing a file descriptor of volctl.db or its -shm
		// drops every POSIX lock the process holds on it, the open store's too.
		fmt.Print(fileHolds(t, dir, readerPaysSecret))
	case "read":
		s, err := Open(ctx, dir, ForReading())
		if err != nil {
			fail("open", err)
		}
		if err := s.View(ctx, func(tx *Tx) error { _, err := tx.Volumes().List(VolumeFilter{}); return err }); err != nil {
			fail("view", err)
		}
		if err := s.CloseAtExit(); err != nil {
			fail("close", err)
		}
	}
	os.Exit(0)
}

// runReaderPaysChild runs TestReaderPaysChild in mode on dir, as a command of its own, and
// returns its error and output.
func runReaderPaysChild(t *testing.T, dir, mode string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReaderPaysChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), readerPaysDirEnv+"="+dir, readerPaysModeEnv+"="+mode)
	return cmd.CombinedOutput()
}

// holding names the file of dir holding the secret, "" if none does, read by another process
// (mode "scan"): this one holds the state open, and reading its files here would close the
// descriptors that hold its locks.
func holding(t *testing.T, dir string) string {
	t.Helper()
	out, err := runReaderPaysChild(t, dir, "scan")
	if err != nil {
		t.Fatalf("scan %s: %v\n%s", dir, err, out)
	}
	return string(out)
}

// TestAWipeOfTheWALOwedIsPaidByAReader: a command deleted a volume with secrets and was killed
// between its COMMIT and the WAL's truncation (here: the truncation stopped short by a reader,
// then the command killed before its Close tried again), the wipe recorded owed in the state.
// Only commits read the debt back: on a host where only `volume status` and the dashboard ran
// after, the secret stayed in volctl.db-wal for good. Now a process that opens the state pays
// the wipe owed, when no writer or older reader is in the way (the write connection waits for
// none: a command opening while the agent writes is not held up, the debt left to the next).
func TestAWipeOfTheWALOwedIsPaidByAReader(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	// The agent, idle: open before the command, so that its Open pays nothing, and never
	// closed before the end, since the last connection's close checkpoints the WAL away.
	w, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	out, err := runReaderPaysChild(t, dir, "delete")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the deleting command: %v (want it killed)\n%s", err, out)
	}
	if holding(t, dir) == "" {
		t.Fatalf("the killed command left the secret in no file of %s: the test shows nothing", dir)
	}

	// The agent holds the write lock (in a commit that writes nothing, so pays nothing): the
	// reader does not wait for it, and the debt stays for later.
	locked, release, written := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		written <- w.Update(context.Background(), func(tx *Tx) error {
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	readDone := make(chan error, 1)
	var readOut []byte
	go func() {
		var err error
		readOut, err = runReaderPaysChild(t, dir, "read")
		readDone <- err
	}()
	select {
	case err := <-readDone:
		if err != nil {
			t.Errorf("volume status while a writer holds the lock: %v\n%s", err, readOut)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("volume status still runs after 20 s: it waits for the writer to pay the wipe owed")
		<-readDone
	}
	close(release)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if name := holding(t, dir); name == "" {
		t.Errorf("the secret left the files while the writer held the lock: the test shows nothing of the reader after")
	}

	// Nothing in the way: the next `volume status` pays it.
	if out, err := runReaderPaysChild(t, dir, "read"); err != nil {
		t.Fatalf("volume status: %v\n%s", err, out)
	}
	if name := holding(t, dir); name != "" {
		t.Errorf("the deleted volume's secret is still in %s after a process that only reads opened the state: the wipe its command owed was never paid", name)
	}
	var owed int64
	view(t, w, func(tx *Tx) error { return tx.queryRow("SELECT wal_secrets FROM state_mark").Scan(&owed) })
	if owed != 0 {
		t.Errorf("after the reader's Open, the state still records a wipe owed (commit %d)", owed)
	}
}
