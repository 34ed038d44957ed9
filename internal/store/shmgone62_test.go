package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const shmChildDirEnv = "VOLCTL_TEST_SHM_CHILD_DIR"

// TestSHMRemovedChild is the long-running process (an agent) of
// TestSHMRemovedUnderALiveProcessIsRefused: it opens the state, commits "child-1", says READY,
// commits "child-2" once a line arrives on stdin, says DONE, and exits as a command does once
// stdin closes. Run directly it does nothing.
func TestSHMRemovedChild(t *testing.T) {
	dir := os.Getenv(shmChildDirEnv)
	if dir == "" {
		t.Skip("run as a child process by TestSHMRemovedUnderALiveProcessIsRefused")
	}
	ctx := context.Background()
	s, err := Open(ctx, dir)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	insert := func(id string) error {
		return s.Update(ctx, func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: id, PluginID: "p", State: VolumeReady})
		})
	}
	if err := insert("child-1"); err != nil {
		fmt.Println("update:", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err == nil {
		if err := insert("child-2"); err != nil {
			fmt.Println("update2:", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Println("DONE")
		}
	}
	io.Copy(io.Discard, in)
	if err := s.CloseAtExit(); err != nil {
		fmt.Println("close:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// volctl.db-shm removed (a cleanup of the state dir, `rm /var/lib/volctl/*shm*`) while the agent
// has the database open. The next command's SQLite makes a new -shm, so the two processes no
// longer share SQLite's WAL index nor its locks: each appends commits to the WAL over the
// other's, and what one committed is lost. The WAL's removal under a live process is refused
// naming that process (walgone.go); so is the -shm's now (checkSHMGone). Before, opened, and
// both processes' commits said done, the state then held the child's alone. Found by helper
// review62.
func TestSHMRemovedUnderALiveProcessIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSHMRemovedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), shmChildDirEnv+"="+dir)
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
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	out := bufio.NewReader(stdout)
	readLine := func() string {
		l, _ := out.ReadString('\n')
		return strings.TrimSpace(l)
	}
	if l := readLine(); l != "READY" {
		t.Fatalf("child: %q", l)
	}
	path := filepath.Join(dir, FileName)
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(ctx, dir)
	if err != nil {
		// Refused: it must name the -shm and the process that has the state open.
		for _, want := range []string{path + "-shm", strconv.Itoa(cmd.Process.Pid)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Open: %v\nwant it to say %q", err, want)
			}
		}
		return
	}
	if err := s.Update(ctx, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "parent", PluginID: "p", State: VolumeReady})
	}); err != nil {
		t.Fatalf("parent update: %v", err)
	}
	fmt.Fprintln(stdin)
	if l := readLine(); l != "DONE" {
		t.Logf("child's second commit: %q", l)
	}
	stdin.Close()
	cmd.Wait()
	if err := s.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	var got []string
	s2, err := Open(ctx, dir)
	if err != nil {
		t.Fatalf("Open after both exited: %v", err)
	}
	defer s2.Close()
	if err := s2.View(ctx, func(tx *Tx) error {
		vs, err := tx.Volumes().List(VolumeFilter{})
		for _, v := range vs {
			got = append(got, v.ID)
		}
		return err
	}); err != nil {
		t.Fatalf("view after both exited: %v", err)
	}
	sort.Strings(got)
	if want := "child-1,child-2,parent"; strings.Join(got, ",") != want {
		t.Errorf("-shm removed under a live process, then both committed: the state holds %v, want %s (commits reported done were lost, no error said why)", got, want)
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
