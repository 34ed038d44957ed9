package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/store"
)

// TestCtrlCWhileASpecIsRead: Ctrl-C (SIGINT) while volctl waits for a spec from a named pipe
// nobody writes ends it with exit 1 and "nothing was done", through main's signal handling
// and the command's context. The signal is sent once the read is under way: the test holds the
// pipe's write end open only after volctl has opened its read end, so the read then blocks.
func TestCtrlCWhileASpecIsRead(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.hcl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	cmd := exec.Command(bin, "--state-dir", filepath.Join(dir, "state"), "validate", fifo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Opening the write end without blocking succeeds only once volctl has the read end open.
	var w *os.File
	for deadline := time.Now().Add(30 * time.Second); w == nil; {
		f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		switch {
		case err == nil:
			w = f
		case !errors.Is(err, syscall.ENXIO):
			t.Fatal(err)
		case time.Now().After(deadline):
			cmd.Process.Kill()
			t.Fatal("volctl validate never opened the named pipe")
		default:
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer w.Close()
	err := interrupt(t, cmd, &stderr, 30*time.Second, "volctl validate")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "nothing was done") {
		t.Fatalf("volctl validate after Ctrl-C: %v, stderr:\n%s\nwant exit 1 saying nothing was done", err, stderr.String())
	}
}

// interrupt sends cmd SIGINT (Ctrl-C) and returns how it ended; the test fails, naming what,
// when it is still running after within.
func interrupt(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer, within time.Duration, what string) error {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		cmd.Process.Kill()
		t.Fatalf("%s still running %v after Ctrl-C; stderr:\n%s", what, within, stderr.String())
		return nil
	}
}

// TestCtrlCWhileQueuedBehindAnotherWriter: a command waiting for the state database's write
// lock, which another volctl holds, ends on Ctrl-C, saying it was waiting and wrote nothing,
// instead of sleeping in SQLite's busy handler until the lock is free or 30 s have passed.
func TestCtrlCWhileQueuedBehindAnotherWriter(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	state := filepath.Join(t.TempDir(), "state")
	other, err := store.Open(context.Background(), state)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	locked, unblock, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		held <- other.Update(context.Background(), func(*store.Tx) error { close(locked); <-unblock; return nil })
	}()
	<-locked
	defer func() { close(unblock); <-held }()

	cmd := exec.Command(bin, "--state-dir", state, "volume", "claim", "web", "--alloc", "a1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once volctl has the database's WAL open it is at (or about to be at) its BEGIN.
	wal := filepath.Join(state, "volctl.db-wal")
	for deadline := time.Now().Add(30 * time.Second); !hasOpen(cmd.Process.Pid, wal); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("volctl never opened %s; stderr:\n%s", wal, stderr.String())
		}
	}
	// The WAL open is at the store's open; the claim then reads before its write BEGIN, and on a
	// loaded machine that took more than the 300 ms once slept here (a ^C that landed before the
	// wait: "interrupted before the transaction began"). Queued, it sleeps in the busy handler.
	if err := waitQuiet(cmd.Process.Pid, 500*time.Millisecond, 30*time.Second); err != nil {
		cmd.Process.Kill()
		t.Fatalf("volctl volume claim, queued for the write lock: %v; stderr:\n%s", err, stderr.String())
	}
	err = interrupt(t, cmd, &stderr, 15*time.Second, "volctl volume claim, queued for the write lock,")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(stderr.String(), "interrupted while waiting for another volctl") ||
		!strings.Contains(stderr.String(), "nothing written") {
		t.Fatalf("volctl volume claim after Ctrl-C while queued: %v, stderr:\n%s\nwant a failure saying it was waiting and wrote nothing", err, stderr.String())
	}
}

// waitQuiet waits until every thread of process pid has been asleep (state S), with no CPU time
// added, for quiet in a row, as a process waiting for a lock is and one still working (or
// runnable, waiting for a CPU on a loaded machine) is not. It fails after within.
func waitQuiet(pid int, quiet, within time.Duration) error {
	const every = 25 * time.Millisecond
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	lastCPU, since := "", time.Time{}
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(every) {
		f, err := procfs.StatFields(filepath.Join(proc, "stat"))
		if err != nil || len(f) < 13 {
			return fmt.Errorf("reading process %d's stat: %v", pid, err)
		}
		cpu := f[11] + "+" + f[12] // utime+stime, fields 14 and 15, of every thread
		asleep := true
		tasks, _ := filepath.Glob(filepath.Join(proc, "task", "*", "stat"))
		for _, task := range tasks {
			if tf, err := procfs.StatFields(task); err == nil && len(tf) > 0 && tf[0] != "S" {
				asleep = false
			}
		}
		switch {
		case !asleep || cpu != lastCPU:
			lastCPU, since = cpu, time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= quiet:
			return nil
		}
	}
	return fmt.Errorf("process %d was never asleep with no CPU time added for %v within %v", pid, quiet, within)
}

// hasOpen says whether process pid has path open.
func hasOpen(pid int, path string) bool {
	fds, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "fd", "*"))
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			return true
		}
	}
	return false
}

// TestStopLeavesTheSignalsToTheExit: the stop function run defers ends the command's context
// and hands no signal back to the runtime: signal.Stop is a round trip per signal to the
// runtime's signal thread, which every process would pay at its exit for nothing (run's caller
// exits right after stop). Shown in a child process (this test binary run again), where a
// SIGTERM sent after stop still goes to stopContext's channel; handed back, its default action
// would have killed the child.
func TestStopLeavesTheSignalsToTheExit(t *testing.T) {
	if os.Getenv("VOLCTL_TEST_STOP_CHILD") == "1" {
		_, stop := stopContext(context.Background())
		stop()
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the signal delivered meanwhile, to a thread of ours
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopLeavesTheSignalsToTheExit$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VOLCTL_TEST_STOP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestStopLeavesTheSignalsToTheExit") {
		t.Fatalf("a SIGTERM after stopContext's stop: %v, want the child to live and pass (the signal still "+
			"routed to stopContext's channel, not handed back to its default action); output:\n%s", err, out)
	}
}
