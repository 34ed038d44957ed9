package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/iostreams/ptytest"
)

// ptyRun starts volctl with a pty as its controlling terminal (stdin, stdout and stderr), the
// way a terminal emulator does, and collects everything it writes to the terminal.
type ptyRun struct {
	cmd        *exec.Cmd
	controller *os.File
	mu         sync.Mutex
	out        bytes.Buffer
	done       chan error
}

func startOnPTY(t *testing.T, bin string, env []string, args ...string) *ptyRun {
	t.Helper()
	controller, term, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal here (%v): the start-up checks need one", err)
	}
	cmd := exec.Command(bin, args...)
	// A clean environment: termenv skips its query under CI, tmux and screen, which would
	// hide what a user's terminal gets.
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term, term, term
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start volctl on a pty: %v", err)
	}
	term.Close()
	r := &ptyRun{cmd: cmd, controller: controller, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := controller.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return // EIO once the last process holding the terminal side is gone
			}
		}
	}()
	go func() { r.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-r.done
		}
		controller.Close()
	})
	return r
}

func (r *ptyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor polls the terminal's output for s until the deadline; it returns how long it took.
func (r *ptyRun) waitFor(t *testing.T, s string, deadline time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < deadline {
		if strings.Contains(r.output(), s) {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q on the terminal after %s; it shows %q", s, deadline, r.output())
	return 0
}

// exited waits up to deadline for the process to end.
func (r *ptyRun) exited(deadline time.Duration) (error, bool) {
	select {
	case err := <-r.done:
		return err, true
	case <-time.After(deadline):
		return nil, false
	}
}

// The colour query (OSC 11) that bubbletea v1's init sends on every start, and that
// tui.NewRenderer sent with colour on.
const colourQuery = "\x1b]11;?"

// A terminal that never answers colour queries (this pty does not) must not delay anything:
// no volctl command asks it, so `volctl version` prints at once, the dashboard's first frame
// appears at once with or without NO_COLOR, and the first key typed is not eaten by a read
// waiting for the answer.
func TestStartNeverQueriesTheTerminal(t *testing.T) {
	bin := buildVolctl(t)
	const fast = 3 * time.Second // termenv waits 5 s for an answer that never comes

	t.Run("version", func(t *testing.T) {
		start := time.Now()
		r := startOnPTY(t, bin, []string{"TERM=xterm-256color"}, "version")
		if _, ok := r.exited(30 * time.Second); !ok {
			t.Fatal("volctl version did not exit within 30s")
		}
		if took := time.Since(start); took > fast {
			t.Errorf("volctl version took %s on a terminal that does not answer queries, want under %s", took, fast)
		}
		if out := r.output(); strings.Contains(out, colourQuery) {
			t.Errorf("volctl version asked the terminal for its background colour: %q", out)
		}
	})
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"NO_COLOR", []string{"TERM=xterm-256color", "NO_COLOR=1"}},
		{"colour", []string{"TERM=xterm-256color"}},
		{"TERM=dumb", []string{"TERM=dumb"}},
	} {
		t.Run("tui/"+tc.name, func(t *testing.T) {
			start := time.Now()
			r := startOnPTY(t, bin, tc.env, "--state-dir", t.TempDir(), "tui")
			// Typed at once, before the first frame: it must quit the dashboard all the same.
			if _, err := r.controller.Write([]byte("q")); err != nil {
				t.Fatal(err)
			}
			r.waitFor(t, "Volumes", 30*time.Second)
			took := time.Since(start)
			if err, ok := r.exited(20 * time.Second); !ok {
				t.Fatalf("one q typed at start did not quit the dashboard within 20s; the screen shows %q", r.output())
			} else if err != nil {
				t.Errorf("volctl tui: %v; the screen shows %q", err, r.output())
			}
			if took > fast {
				t.Errorf("the first frame took %s, want under %s", took, fast)
			}
			if out := r.output(); strings.Contains(out, colourQuery) {
				t.Errorf("volctl tui asked the terminal for its background colour: %q", out)
			}
		})
	}
}
