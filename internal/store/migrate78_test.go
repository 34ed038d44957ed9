package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMigrationBehindAStoppedOlderVolctlSaysHowToResumeIt: an older volctl (an agent, a
// dashboard) stopped by a signal (^Z, SIGSTOP) holds the open lock shared, and a newer volctl
// that must migrate the state waits for it. It waits the whole busy timeout (a stopped holder
// never lets go), then refuses naming the holder as "stopped" and advising "stop them (an
// agent, a dashboard) and run this again". A process stopped by a signal is already stopped,
// and `kill PID` does not end a stopped Go process that handles SIGTERM (the signal stays
// pending until it is resumed): followed, the advice leaves the lock held and the same
// refusal comes back. Every other lock wait of volctl's (the write lock: StuckHolders,
// TestWriteLockHeldByAStoppedProcessIsNamedAndNotWaitedFor) says how to resume it
// (`kill -CONT PID`, `fg`) or end it. The migration's refusal must say so too. Found by helper
// review78 (migrate).
func TestMigrationBehindAStoppedOlderVolctlSaysHowToResumeIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pid, finish, err := openBehindAStoppedOlderVolctl(t, dir)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("Open behind a stopped older volctl: %v; want ErrInUse naming pid %d as stopped", err, pid)
	}
	if want := fmt.Sprintf("kill -CONT %d", pid); !strings.Contains(err.Error(), want) {
		t.Errorf("Open behind an older volctl stopped by a signal: %v\nwant it to say how to resume it (%q) or end it, as every other wait for a stopped holder does; "+
			"\"stop them\" is no advice for a process that is stopped", err, want)
	}
	resumedThenMigrated(t, dir, pid, finish)
}

// resumedThenMigrated follows the advice of a refusal behind an older volctl (pid, its end
// finish) stopped by a signal: resumed, it closes the state and exits, and the open of the
// state at dir migrates.
func resumedThenMigrated(t *testing.T, dir string, pid int, finish func()) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	finish()
	s, err := Open(context.Background(), dir, WithBusyTimeout(time.Second))
	if err != nil {
		t.Fatalf("Open once the older volctl was resumed and closed: %v", err)
	}
	s.Close()
}

// TestOpenBehindAStoppedMigrationSaysHowToResumeIt: a volctl stopped by a signal (^Z,
// SIGSTOP) while it held the open lock exclusive to migrate keeps it until it is resumed or
// ended. A writing command of this volctl (not ForReading, which reads the last committed
// state at once: TestReaderDoesNotWaitForAMigration) waits in lockShared the whole busy
// timeout, 30 s, then fails with "database is busy (another volctl (pid N: ..., stopped) has
// been migrating its schema for 30s)": it says the holder is migrating when it is stopped,
// and says nothing of what to do. The write lock's wait gives up once every holder has been
// stopped for the stopped wait and says how to resume (`kill -CONT PID`) or end it
// (StuckHolders); the open lock's wait must say so too. Found by helper review78 (migrate).
func TestOpenBehindAStoppedMigrationSaysHowToResumeIt(t *testing.T) {
	t.Parallel()
	dir := stateWithPluginP(t)
	lock := filepath.Join(dir, FileName) + lockSuffix
	// flock(1) holds the lock exclusive, as a volctl migrating the state does, in a process
	// group of its own so that the test stops and ends it and its child together.
	pid, exited := startStoppedHolder(t, exec.Command("flock", "-x", lock, "sh", "-c", "echo held; exec sleep 600"), lock)

	s, err := Open(context.Background(), dir, WithBusyTimeout(time.Second))
	if err == nil {
		s.Close()
		t.Fatalf("Open while pid %d held the open lock exclusive succeeded", pid)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) {
		t.Fatalf("Open behind a stopped migration: %v; want it to name pid %d", err, pid)
	}
	if want := fmt.Sprintf("kill -CONT %d", pid); !strings.Contains(err.Error(), want) {
		t.Errorf("Open behind a volctl stopped by a signal while it held the open lock to migrate: %v\nwant it to say how to resume it (%q) or end it, "+
			"as the write lock's wait for a stopped holder does, not that it \"has been migrating its schema\"", err, want)
	}
	// The advice followed: the holder ended, the open goes.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	<-exited
	s, err = Open(context.Background(), dir, WithBusyTimeout(time.Second))
	if err != nil {
		t.Fatalf("Open once the stopped holder was ended: %v", err)
	}
	s.Close()
}

// openBehindAStoppedOlderVolctl starts an older volctl on dir that keeps the state open, stops
// it (SIGSTOP), and opens the state, which must migrate it, behind it: the open's error (it must
// fail), the older process's pid, and finish, which ends it once resumed.
func openBehindAStoppedOlderVolctl(t *testing.T, dir string) (pid int, finish func(), err error) {
	t.Helper()
	older, finish := startOlderProcess(t, dir)
	pid = older.Process.Pid
	// Registered after startOlderProcess's cleanup, so it runs first: resumed, the older
	// process can read its stdin's end and exit.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pid)
	s, err := Open(context.Background(), dir, WithBusyTimeout(time.Second))
	if err == nil {
		s.Close()
		t.Fatalf("Open migrated the state while an older volctl (pid %d, stopped) had it open", pid)
	}
	return pid, finish, err
}

// startStoppedHolder starts holder, a process that takes a lock on lock and then prints "held",
// in a process group of its own, waits for that line, and stops the group (SIGSTOP): its pid,
// and a channel closed once it has exited. It is killed when t ends.
func startStoppedHolder(t *testing.T, holder *exec.Cmd, lock string) (pid int, exited <-chan struct{}) {
	t.Helper()
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatalf("start %s: %v", holder.Path, err)
	}
	pid = holder.Process.Pid
	done := make(chan struct{})
	go func() { _ = holder.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(-pid, syscall.SIGCONT)
		<-done
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("%s holding %s: %q, %v", holder.Path, lock, line, err)
	}
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(t, pid)
	return pid, done
}

// waitStopped waits until /proc says pid is stopped (state T), so the open that follows finds
// it so.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !holderOf(pid).Stopped {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not seen stopped after SIGSTOP", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
