package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// A named pipe in place of one of the agent's files in the state dir is refused, naming it, not
// waited on in open(2), where neither a signal nor the agent's context reaches: the agent's pid
// file (read by a second agent, written by the first), a plugin's pid file, its log and the log's
// rotation (trimLog's .log.1).
func TestAgentStateFileThatIsANamedPipeIsRefused(t *testing.T) {
	tests := []struct {
		name string
		file string // under the dir
		use  func(dir string) error
	}{
		{"agent pid, read", "agent.pid", func(dir string) error {
			if pid := readAgentPid(dir); pid != "" {
				return nil
			}
			_, err := readStateFile(filepath.Join(dir, "agent.pid"))
			return err
		}},
		{"plugin pid, written", "p.pid.tmp", func(dir string) error {
			return writePidFile(dir, "p", &process{pid: 1, startTick: 1})
		}},
		{"plugin log's rotation", "p.log.1", func(dir string) error {
			log := filepath.Join(dir, "p.log")
			if err := os.WriteFile(log, nil, 0o600); err != nil {
				return err
			}
			if err := os.Truncate(log, maxLogSize+1); err != nil { // sparse
				return err
			}
			return trimLog(log)
		}},
		{"plugin log", "p.log", func(dir string) error {
			p, err := startProcess(spec.Plugin{ID: "p", Socket: filepath.Join(dir, "p.sock"),
				Exec: &spec.Exec{Command: "/bin/true"}}, dir, dir)
			if err == nil {
				_ = p.stop(time.Second)
			}
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- tt.use(dir) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				// Let the stuck open return, so the test can end: open the other end.
				if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
					f.Close()
				}
				t.Fatalf("using %s hung", path)
			}
			if want := path + " is a named pipe, not a regular file"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v, want it to say %q", err, want)
			}
		})
	}
}

// The state dir's file system full when the agent starts a plugin: its pid file cannot be
// written, and the plugin is not started (a later agent could neither adopt nor stop it). In a
// chaos run the agent logged only "pid file: write .../run/hp.pid.tmp: no space left on
// device" while every command said "is the plugin running?": the error now says the state dir's
// file system is full and what to do, as the store's own errors on a full disk do.
func TestPidFileOnAFullDiskSaysWhatToDo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs to fill")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	// Everything but the pid file's page is taken.
	if err := os.WriteFile(filepath.Join(mnt, "fill"), make([]byte, 128<<10), 0o600); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v, want ENOSPC", mnt, err)
	}
	err := writePidFile(mnt, "hp", &process{pid: os.Getpid()})
	if err == nil {
		t.Fatal("a pid file was written on a full file system")
	}
	for _, want := range []string{filepath.Join(mnt, "hp.pid.tmp"), "no space left on device", "the file system holding the state dir is full", "free space there"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to say %q", err, want)
		}
	}
	// Nothing half-written is left: the agent's pid file, written in place, was left empty
	// (run/agent.pid naming no process for whoever reads it), and the plugin's temporary one too.
	if err := writeStateFile(filepath.Join(mnt, "agent.pid"), []byte("1234\n")); err == nil {
		t.Fatal("the agent's pid file was written on a full file system")
	}
	for _, left := range []string{"hp.pid.tmp", "hp.pid", "agent.pid"} {
		if _, err := os.Lstat(filepath.Join(mnt, left)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left behind by a write that failed: %v", left, err)
		}
	}
}
