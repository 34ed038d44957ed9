package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// walRemovedDirEnv names the state dir TestWALRemovedChild writes in; walRemovedModeEnv, when
// set, has it checkpoint and commit again ("live": and wait for its stdin to close before it
// exits, the database open), commit once and wait so ("live-fresh"), or only read and wait so
// ("reader").
const (
	walRemovedDirEnv  = "VOLCTL_TEST_WAL_REMOVED_DIR"
	walRemovedModeEnv = "VOLCTL_TEST_WAL_REMOVED_MODE"
)

// TestWALRemovedChild is the command of TestWALRemovedBetweenCommands: it opens the state dir,
// commits a volume, and exits as a volctl command does (CloseAtExit: the WAL left to the next
// process, not checkpointed). Run directly it does nothing.
func TestWALRemovedChild(t *testing.T) {
	dir := os.Getenv(walRemovedDirEnv)
	if dir == "" {
		t.Skip("run as a child process by TestWALRemovedBetweenCommands")
	}
	ctx := context.Background()
	s, err := Open(ctx, dir)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	insert := func(id string) {
		if err := s.Update(ctx, func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: id, PluginID: "p", State: VolumeReady})
		}); err != nil {
			fmt.Println("update:", err)
			os.Exit(1)
		}
	}
	mode := os.Getenv(walRemovedModeEnv)
	switch mode {
	case "reader":
		// A process that only reads (an idle agent, the dashboard), the state's latest
		// commits in the WAL another command left.
		if err := s.View(ctx, func(tx *Tx) error { _, err := tx.Volumes().List(VolumeFilter{}); return err }); err != nil {
			fmt.Println("view:", err)
			os.Exit(1)
		}
	case "live-fresh":
		// A new state dir, nothing checkpointed: the file holds SQLite's first page only, its
		// tables in the WAL with the rest.
		insert("db")
	case "":
		insert("db")
	default:
		// The state in the file as of a checkpoint, a commit since in the WAL only.
		insert("db")
		s.checkpointNow()
		insert("after-checkpoint")
	}
	if mode == "reader" || mode == "live-fresh" || mode == "live" {
		fmt.Println("READY")
		io.Copy(io.Discard, os.Stdin) // the parent closes our stdin once it looked
	}
	if err := s.CloseAtExit(); err != nil {
		fmt.Println("close:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// A command commits to a new state dir and exits, its commits in the WAL (CloseAtExit), the
// database file holding only the first page SQLite wrote, with no schema; then a cleanup script
// removes volctl.db-wal. The next command took the file for one a volctl stopped before its
// first migration left, and made a new, empty state over it: every volume, claim and staging
// forgotten, without a word. It is refused as a lost database is, naming the WAL and what to do.
func TestWALRemovedBetweenCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runWALRemovedChild(t, dir, "")
	path := filepath.Join(dir, FileName)
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() <= walHeaderSize {
		t.Skipf("the first command left no WAL with commits (%v): nothing to remove", err)
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatalf("Open started a new, empty state (volumes %v) over a database whose WAL, holding its state, was removed", volumeIDs(t, dir))
	}
	record := filepath.Join(dir, PathFileName)
	for _, want := range []string{path, "holds no state", path + "-wal", record, "restore " + FileName, "remove " + record} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
}

// runWALRemovedChild runs TestWALRemovedChild as a command of its own on the state dir dir,
// in mode ("" or "checkpointed"): it exits leaving its commits in the WAL, as a command does.
func runWALRemovedChild(t *testing.T, dir, mode string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALRemovedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), walRemovedDirEnv+"="+dir)
	if mode != "" {
		cmd.Env = append(cmd.Env, walRemovedModeEnv+"="+mode)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the first command: %v\n%s", err, out)
	}
}

// volumeIDs lists the volumes the state in dir holds.
func volumeIDs(t *testing.T, dir string) []string {
	t.Helper()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	if err := s.View(context.Background(), func(tx *Tx) error {
		vs, err := tx.Volumes().List(VolumeFilter{})
		for _, v := range vs {
			ids = append(ids, v.ID)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// A state dir whose database has its tables (a checkpoint copied them in) and whose latest
// commit is in the WAL only, as a command leaves it; then a cleanup removes volctl.db-wal. The
// next command went on with the state as of the checkpoint, the commit since (a claim, a
// staging) forgotten without a word. It is refused, saying the WAL's commits were lost (the
// -shm, SQLite's index of the WAL, says it held them), and what to do; doing the second thing
// it says (remove the -shm) opens the older state.
func TestWALRemovedAfterACheckpointIsNotOpenedAsIfWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runWALRemovedChild(t, dir, "checkpointed")
	path := filepath.Join(dir, FileName)
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatalf("Open went on with the state as of the last checkpoint (volumes %v), the WAL's commit since lost without a word", volumeIDs(t, dir))
	}
	for _, want := range []string{path + "-wal is gone or empty", path + "-shm", "not yet in " + FileName, "restore " + FileName, "remove " + path + "-shm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	if got := volumeIDs(t, dir); strings.Join(got, ",") != "db" {
		t.Errorf("volumes once the -shm is removed, as the error says: %v, want the checkpoint's [db]", got)
	}
}

// The WAL removed while a process (the agent) has the database open: every other command's
// open failed with a "disk I/O error" that sent the reader to the disk. It is refused naming
// that process, which holds the commits, and saying to stop it; stopped (as a command exits,
// CloseAtExit), it writes them into the database, and the next open has them.
func TestWALRemovedUnderALiveProcessNamesIt(t *testing.T) {
	liveHolderIsNamed(t, "live", "after-checkpoint,db")
}

// The same on a new state dir, nothing checkpointed yet: the file holds no table, and the open
// was refused as a lost database (restore a backup, or start empty), where the process that
// has the commits was there to be stopped. It names it.
func TestWALRemovedUnderALiveProcessOnANewStateDirNamesIt(t *testing.T) {
	liveHolderIsNamed(t, "live-fresh", "db")
}

// liveHolderIsNamed runs TestWALRemovedChild in mode, a process that commits and keeps the
// database open, removes the WAL, and checks that the next open names that process and says to
// stop it, and that once it exited the state holds the volumes want (comma-separated).
func liveHolderIsNamed(t *testing.T, mode, want string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	cmd, stdin := startWALRemovedChild(t, dir, mode)
	path := filepath.Join(dir, FileName)
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("Open beside a live process whose WAL was removed succeeded")
	}
	for _, want := range []string{path + "-wal was removed or emptied while process " + fmt.Sprint(cmd.Process.Pid), "stop that process"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the live process: %v", err)
	}
	if got := volumeIDs(t, dir); strings.Join(got, ",") != want {
		t.Errorf("volumes once the process exited: %v, want %s, the WAL's commits kept", got, want)
	}
}

// startWALRemovedChild starts TestWALRemovedChild in mode, one that keeps the database open
// until its stdin closes, and returns once it said READY; the test's end closes its stdin
// and waits for it, if the test did not.
func startWALRemovedChild(t *testing.T, dir, mode string) (*exec.Cmd, io.Closer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALRemovedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), walRemovedDirEnv+"="+dir, walRemovedModeEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "READY\n" {
		t.Fatalf("the %s process: %q, %v", mode, line, err)
	}
	return cmd, stdin
}

// The same on a read-only file system (a backup or snapshot of a state dir mounted read-only,
// its WAL left out): the state was opened immutable and shown as of its last checkpoint, the
// commit since missing without a word. It is refused as the writable open refuses it.
func TestWALRemovedOnAReadOnlyFileSystemIsNotShownAsIfWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runWALRemovedChild(t, dir, "checkpointed")
	if err := os.Remove(filepath.Join(dir, FileName+"-wal")); err != nil {
		t.Fatal(err)
	}
	ro := readOnlyView(t, dir)
	s, err := Open(context.Background(), ro)
	if err == nil {
		s.Close()
		t.Fatalf("Open on a read-only file system showed the state as of the last checkpoint (volumes %v), the WAL's commit since lost without a word", volumeIDs(t, ro))
	}
	path := filepath.Join(ro, FileName)
	for _, want := range []string{path + "-wal is gone or empty", path + "-shm", "not yet in " + FileName} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
}

// The WAL removed under a process that wrote nothing itself (an idle agent, the dashboard): the
// refusal names it and says its clean exit writes the WAL's commits into the database; it exited
// without a checkpoint, having written nothing, and they were lost. Its exit checkpoints them.
func TestWALRemovedUnderAReaderIsKeptByItsExit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	runWALRemovedChild(t, dir, "checkpointed")
	cmd, stdin := startWALRemovedChild(t, dir, "reader")
	if err := os.Remove(filepath.Join(dir, FileName+"-wal")); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the reader: %v", err)
	}
	if got := volumeIDs(t, dir); strings.Join(got, ",") != "after-checkpoint,db" {
		t.Errorf("volumes once the reader exited: %v, want both, the WAL's commit kept", got)
	}
}
