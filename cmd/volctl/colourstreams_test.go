package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams/ptytest"
)

// TestDiagnosticsColourFollowsStderrsTerminal: `volctl validate` writes its diagnostics on
// stderr, coloured on a terminal. Their colour followed stdout's terminal: with stdout piped
// or redirected (`volctl validate f.hcl | cat`, `> out.txt`) and stderr on the terminal they
// came without colour. Each stream's colour follows its own terminal, and NO_COLOR and
// TERM=dumb turn it off on both.
func TestDiagnosticsColourFollowsStderrsTerminal(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("id = \"db\"\ntype = \"csi\"\nplugin_id = \"hp\"\nexternal_id = \"x\"\ncapability {\n  access_mode = \"single-node-writr\"\n  attachment_mode = \"file-system\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const red = "\x1b[31m"

	// run starts `volctl validate bad.hcl` with stdout and stderr each on a terminal of its
	// own, or on a file when its pty is false, and returns what each got.
	run := func(t *testing.T, env []string, stdoutPTY, stderrPTY bool) (stdout, stderr string) {
		t.Helper()
		type sink struct {
			f    *os.File
			read func() string
		}
		open := func(pty bool, name string) sink {
			if !pty {
				f, err := os.Create(filepath.Join(t.TempDir(), name))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				return sink{f, func() string {
					b, _ := os.ReadFile(f.Name())
					return string(b)
				}}
			}
			controller, term, err := ptytest.Open(100, 24)
			if err != nil {
				t.Skipf("no pseudo-terminal here (%v): the colour checks need one", err)
			}
			var buf bytes.Buffer
			done := make(chan struct{})
			go func() {
				io.Copy(&buf, controller) // until EIO, once volctl and this test closed the terminal side
				close(done)
			}()
			t.Cleanup(func() { controller.Close() })
			return sink{term, func() string {
				term.Close()
				<-done
				return buf.String()
			}}
		}
		o, e := open(stdoutPTY, "stdout"), open(stderrPTY, "stderr")
		cmd := exec.Command(bin, "validate", bad)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "VOLCTL_STATE_DIR=" + t.TempDir()}, env...)
		cmd.Stdout, cmd.Stderr = o.f, e.f
		if err := cmd.Run(); err == nil {
			t.Fatal("volctl validate of an invalid spec exited 0")
		}
		return o.read(), e.read()
	}

	t.Run("stdout a file, stderr a terminal", func(t *testing.T) {
		t.Parallel()
		_, stderr := run(t, []string{"TERM=xterm-256color"}, false, true)
		if !strings.Contains(stderr, red) || !strings.Contains(stderr, "Invalid access mode") {
			t.Errorf("diagnostics on stderr's terminal, stdout redirected, came without colour: %q", stderr)
		}
	})
	t.Run("stdout a terminal, stderr a file", func(t *testing.T) {
		t.Parallel()
		_, stderr := run(t, []string{"TERM=xterm-256color"}, true, false)
		if strings.Contains(stderr, "\x1b[") || !strings.Contains(stderr, "Invalid access mode") {
			t.Errorf("diagnostics written to a file (2>err.txt) carry colour: %q", stderr)
		}
	})
	for _, env := range []string{"NO_COLOR=1", "TERM=dumb"} {
		t.Run(env, func(t *testing.T) {
			t.Parallel()
			_, stderr := run(t, []string{"TERM=xterm-256color", env}, false, true)
			if strings.Contains(stderr, "\x1b[") || !strings.Contains(stderr, "Invalid access mode") {
				t.Errorf("%s: diagnostics on a terminal carry colour: %q", env, stderr)
			}
		})
	}
}
