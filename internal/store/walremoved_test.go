package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// walRemovedDirEnv names the state dir TestWALRemovedChild writes in.
const walRemovedDirEnv = "VOLCTL_TEST_WAL_REMOVED_DIR"

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
	if err := s.Update(ctx, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady})
	}); err != nil {
		fmt.Println("update:", err)
		os.Exit(1)
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
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALRemovedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), walRemovedDirEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the first command: %v\n%s", err, out)
	}
	path := filepath.Join(dir, FileName)
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() <= walHeaderSize {
		t.Skipf("the first command left no WAL with commits (%v): nothing to remove", err)
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err == nil {
		var n int
		_ = s.View(context.Background(), func(tx *Tx) error {
			vs, err := tx.Volumes().List(VolumeFilter{})
			n = len(vs)
			return err
		})
		s.Close()
		t.Fatalf("Open started a new, empty state (%d volumes) over a database whose WAL, holding its state, was removed", n)
	}
	record := filepath.Join(dir, PathFileName)
	for _, want := range []string{path, "holds no state", path + "-wal", record, "restore " + FileName, "remove " + record} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
}
