package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenWhileTheLastProcessClosesIsNotRefused: the last process to close the database removes
// the -shm and then the WAL (SQLite's close), its open lock held until it is done. A command
// opening the state in that moment found the WAL there without its -shm beside a lock holder
// and was refused with "volctl.db-shm ... was removed while pid N has the state database open
// ... stop that process", of a process that was stopping cleanly: two volctl commands, one
// ending as the other began (TestMultiProcessWriters failed so under load). Here the live
// process's -shm is removed as its close would, and it closes a moment later, while Open runs:
// Open waits for that close and opens the state with every commit of the closed process.
func TestOpenWhileTheLastProcessClosesIsNotRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	cmd, stdin := startWALRemovedChild(t, dir, "live")
	path := filepath.Join(dir, FileName)
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		stdin.Close() // the live process closes the database and exits
		closed <- cmd.Wait()
	}()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open while the last process closed the database: %v", err)
	}
	s.Close()
	if err := <-closed; err != nil {
		t.Fatalf("the closing process: %v", err)
	}
	if got := volumeIDs(t, dir); strings.Join(got, ",") != "after-checkpoint,db" {
		t.Errorf("volumes once the process closed: %v, want after-checkpoint,db", got)
	}
}
