package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// A named pipe in place of one of the agent's files in the state dir is refused, naming it, not
// waited on in open(2), where neither a signal nor the agent's context reaches: the agent's pid
// file (read by a second agent), a plugin's log and the log's rotation (trimLog's .log.1). A pid
// file is written beside its place and renamed there (TestAgentPidFileReplacesWhatWasThere).
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
	mnt := hostpathtest.Tmpfs(t, "size=64k")
	hostpathtest.Fill(t, filepath.Join(mnt, "fill"))
	err := writePidFile(mnt, "hp", &process{pid: os.Getpid()})
	if err == nil {
		t.Fatal("a pid file was written on a full file system")
	}
	for _, want := range []string{"pid file " + filepath.Join(mnt, "hp.pid"), "no space left on device", "the file system holding the state dir is full", "free space there"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to say %q", err, want)
		}
	}
	// Nothing half-written is left: the agent's pid file, once written in place, was left empty
	// (run/agent.pid naming no process for whoever reads it), and no temporary file either.
	if err := writeRunFile(filepath.Join(mnt, "agent.pid"), []byte("1234\n")); err == nil {
		t.Fatal("the agent's pid file was written on a full file system")
	}
	entries, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "fill" {
			t.Errorf("%s left behind by a write that failed", e.Name())
		}
	}
}

// A pid file is replaced whole (internal/atomicfile: written beside it, synced, renamed over
// it), never truncated and rewritten in place, where a reader (a second agent naming the first,
// a later agent adopting a plugin), or the disk after a power loss, could find it empty or
// half-written. What was at its place is replaced, not written through: a crashed agent's
// run/agent.pid hard-linked to another file keeps that file as it was (the agent's pid was
// written into it), and a named pipe at a plugin's pid file is replaced without waiting for a
// reader.
func TestAgentPidFileReplacesWhatWasThere(t *testing.T) {
	f := newFixture(t)
	run := filepath.Join(f.e.StateDir(), "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(f.e.StateDir(), "other")
	if err := os.WriteFile(other, []byte("999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(other, filepath.Join(run, "agent.pid")); err != nil {
		t.Fatal(err)
	}
	stop := f.startAgent(testSettings)
	want := strconv.Itoa(os.Getpid())
	waitFor(t, "the agent to write its pid file", func() bool { return readAgentPid(run) == want })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "999999\n" {
		t.Errorf("%s, hard-linked at run/agent.pid before the agent started, holds %q (%v), want it untouched: the pid file was written through it", other, b, err)
	}

	// In a directory of its own, which no agent's clean-up reads, and with a pid no process can
	// have (above the kernel's largest pid_max): a pid file is what an agent signals through.
	dir := t.TempDir()
	path := filepath.Join(dir, "p.pid")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	const noPid = 1<<22 + 1
	done := make(chan error, 1)
	go func() { done <- writePidFile(dir, "p", &process{pid: noPid, startTick: 1}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writePidFile over a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			f.Close()
		}
		t.Fatalf("writing %s over a named pipe hung", path)
	}
	if p := readPidFile(dir, "p"); p == nil || p.pid != noPid || p.startTick != 1 {
		t.Errorf("readPidFile after writePidFile over a named pipe = %+v, want pid %d start 1", p, noPid)
	}
}

// A pid file grown huge (a damaged file system, a tool writing through the run dir, a file
// truncated up to a sparse size) is refused after a few KiB, naming it, and read as no pid
// file: the plugin's is written anew when the agent starts the plugin, and a second agent's
// refusal names no pid. Before, each was read whole into memory, by the agent adopting its
// plugins at start and by a second agent naming the first: a 64 MiB file was read and its
// first line taken as a pid, a sparse one of a few TiB held the agent in read(2) until it ran
// out of memory.
func TestAgentPidFileGrownHugeIsRefused(t *testing.T) {
	const huge = 64 << 20
	for _, tt := range []struct {
		name, file string
		read       func(dir string) string // what the agent took from it, "" for nothing
	}{
		{"plugin pid", "p.pid", func(dir string) string {
			if p := readPidFile(dir, "p"); p != nil {
				return strconv.Itoa(p.pid)
			}
			return ""
		}},
		{"agent pid", "agent.pid", func(dir string) string { return readAgentPid(dir) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte("12345 1 - 0\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, huge); err != nil { // sparse
				t.Fatal(err)
			}
			if got := tt.read(dir); got != "" {
				t.Errorf("a %d-byte %s was read as a pid of %d bytes (%.40q...), want it refused", huge, tt.file, len(got), got)
			}
			_, err := readStateFile(path)
			if want := path + " is larger than"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "remove it") {
				t.Errorf("reading a %d-byte %s: %v, want it refused saying %q and to remove it", huge, tt.file, err, want)
			}
		})
	}
}

// What run/agent.pid holds is named in a second agent's refusal only as a pid: a file holding
// anything else (a terminal's escape sequences, a line of text) names none. Before, it was
// handed on as it was.
func TestAgentPidFileNotAPidNamesNone(t *testing.T) {
	for _, text := range []string{"\x1b]0;owned\x07\n", "12345 and more\n", "-1\n", "0\n", ""} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "agent.pid"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := readAgentPid(dir); got != "" {
			t.Errorf("agent.pid holding %q read as pid %q, want none", text, got)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.pid"), []byte("4321\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := readAgentPid(dir); got != "4321" {
		t.Errorf("agent.pid holding 4321 read as %q", got)
	}
}
