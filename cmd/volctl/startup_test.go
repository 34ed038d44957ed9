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
	finished   chan struct{} // closed once the process has been waited for
	waitErr    error         // what Wait returned; read only after finished is closed
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
	r := &ptyRun{cmd: cmd, controller: controller, finished: make(chan struct{})}
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
	go func() {
		r.waitErr = cmd.Wait()
		close(r.finished)
	}()
	t.Cleanup(func() {
		select {
		case <-r.finished:
		default:
			cmd.Process.Kill()
			<-r.finished
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
	case <-r.finished:
		return r.waitErr, true
	case <-time.After(deadline):
		return nil, false
	}
}

// The colour query (OSC 11) that bubbletea v1's init sends on every start, and that
// tui.NewRenderer sent with colour on.
const colourQuery = "\x1b]11;?"

// A terminal that never answers colour queries (this pty does not) must not delay anything:
// no volctl command asks it (termenv would wait 5 s for the answer), so `volctl version` prints
// without that wait, the dashboard's first frame comes without it, with or without NO_COLOR, and
// the first key typed is not eaten by a read waiting for the answer. The checks are what the
// terminal was sent and whether the process quit on the key, never a stopwatch: this machine
// may be loaded.
func TestStartNeverQueriesTheTerminal(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	const patience = 30 * time.Second // far past termenv's 5 s: only a hang or a lost key fails
	noQuery := func(t *testing.T, r *ptyRun, what string) {
		t.Helper()
		if out := r.output(); strings.Contains(out, colourQuery) {
			t.Errorf("%s asked the terminal for its background colour: %q", what, out)
		}
	}
	quits := func(t *testing.T, r *ptyRun, what string) {
		t.Helper()
		if err, ok := r.exited(patience); !ok {
			t.Fatalf("%s: one q did not quit the dashboard within %s; the screen shows %q", what, patience, r.output())
		} else if err != nil {
			t.Errorf("%s: volctl tui: %v; the screen shows %q", what, err, r.output())
		}
	}

	t.Run("version", func(t *testing.T) {
		r := startOnPTY(t, bin, []string{"TERM=xterm-256color"}, "version")
		if _, ok := r.exited(patience); !ok {
			t.Fatalf("volctl version did not exit within %s", patience)
		}
		noQuery(t, r, "volctl version")
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
			// The first frame comes, then a q quits it.
			r := startOnPTY(t, bin, tc.env, "--state-dir", t.TempDir(), "tui")
			r.waitFor(t, "Volumes", patience)
			if _, err := r.controller.Write([]byte("q")); err != nil {
				t.Fatal(err)
			}
			quits(t, r, "after the first frame")
			noQuery(t, r, "volctl tui")

			// A q typed at once, before any frame, is not lost: it quits the dashboard all
			// the same (whether or not a frame was drawn before it was read).
			r = startOnPTY(t, bin, tc.env, "--state-dir", t.TempDir(), "tui")
			if _, err := r.controller.Write([]byte("q")); err != nil {
				t.Fatal(err)
			}
			quits(t, r, "typed at start")
			noQuery(t, r, "volctl tui")
		})
	}
}
