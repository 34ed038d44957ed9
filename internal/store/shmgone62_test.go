package store

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// volctl.db-shm removed (a cleanup of the state dir, `rm /var/lib/volctl/*shm*`) while the agent
// has the database open. The next command's SQLite made a new -shm, so the two processes no
// longer shared SQLite's WAL index nor its locks: each appended commits to the WAL over the
// other's, and what one committed, said done, was lost. The WAL's removal under a live process
// is refused naming that process (walgone.go); so is the -shm's now (checkSHMGone), and once
// the process exited the state holds every commit. Found by helper review62.
func TestSHMRemovedUnderALiveProcessIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	cmd, stdin := startWALRemovedChild(t, dir, "live")
	path := filepath.Join(dir, FileName)
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err == nil {
		s.Close()
		t.Fatal("Open beside a live process whose -shm was removed succeeded: their commits would overwrite each other's")
	}
	for _, want := range []string{path + "-shm", "pid " + strconv.Itoa(cmd.Process.Pid), "stop that process"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open: %v\nwant it to say %q", err, want)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the live process: %v", err)
	}
	if got := volumeIDs(t, dir); strings.Join(got, ",") != "after-checkpoint,db" {
		t.Errorf("volumes once the process exited: %v, want after-checkpoint,db", got)
	}
}

// A state whose last command closed cleanly (the WAL checkpointed and removed, and with it the
// -shm) on a file system that then filled up: the next command, even one that only reads
// (`volume status`), must make the -shm and the WAL again. Its failure must say the disk is
// full and to free space, as a write's does (TestDiskFullRecordsNothingAndRecovers), not send
// the user to check a disk that has not failed. Before, SQLite's IOERR_SHMSIZE was taken for a
// failed disk (isFull). Found by helper review62.
func TestDiskFullAtTheNextCommandsOpenSaysSo(t *testing.T) {
	mnt := smallTmpfs(t)
	dir := filepath.Join(mnt, "state")
	ctx := context.Background()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "before", PluginID: "p", State: VolumeReady})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Skipf("%s left after a clean close", path+suffix)
		}
	}
	fill := fillUp(t, mnt)
	var ids []string
	s, err = Open(ctx, dir, ForReading())
	if err == nil {
		err = s.View(ctx, func(tx *Tx) error {
			vs, err := tx.Volumes().List(VolumeFilter{})
			for _, v := range vs {
				ids = append(ids, v.ID)
			}
			return err
		})
		s.Close()
	}
	if err == nil {
		t.Logf("read on the full disk: %v", ids)
	} else {
		if !strings.Contains(err.Error(), "free space") || !strings.Contains(err.Error(), "full") {
			t.Errorf("read of the state on a full disk: %v\nwant it to say the disk is full and to free space", err)
		}
		if strings.Contains(err.Error(), "check that disk") {
			t.Errorf("read of the state on a full disk: %v\nsends the user to check a disk that did not fail", err)
		}
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
}
