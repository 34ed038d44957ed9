// Package iostreams is volctl's one place for terminal policy: which streams data and diagnostics
// go to, whether they are terminals, whether colour is on (NO_COLOR, piping), and the width.
// Tests build an IOStreams with Test and read what a command wrote.
package iostreams

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/mattn/go-isatty"
	"golang.org/x/term"
)

// IOStreams carries a command's standard streams and what is known about them.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer // data: tables, JSON, paths
	ErrOut io.Writer // diagnostics, progress, warnings

	stdinTTY, stdoutTTY, stderrTTY bool
	colorEnabled                   bool
	width                          int
}

// System returns streams bound to the process's stdin, stdout and stderr.
func System() *IOStreams {
	s := &IOStreams{
		In:        os.Stdin,
		Out:       &stdout{f: os.Stdout},
		ErrOut:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
		stderrTTY: isTerminal(os.Stderr),
	}
	s.colorEnabled = s.stdoutTTY && colorAllowed(os.Getenv)
	return s
}

// stdout is the process's standard output, remembering the first write that failed. Most of
// what volctl prints has its error looked at, but not all (cobra's help, a line among many):
// main asks OutError at the end, so that output that never arrived (a file on a full disk)
// fails the command whatever printed it. It is a file still (Fd, Read), for what asks whether
// stdout is a terminal and how wide (the dashboard, lipgloss's colour profile).
type stdout struct {
	f   *os.File
	mu  sync.Mutex
	err error
}

func (s *stdout) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	if err != nil {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	}
	return n, err
}

func (s *stdout) Read(p []byte) (int, error) { return s.f.Read(p) }
func (s *stdout) Close() error               { return s.f.Close() }
func (s *stdout) Fd() uintptr                { return s.f.Fd() }

// OutError is the first write to the process's standard output that failed, nil when none
// did (or Out is not the process's: Test's buffers).
func (s *IOStreams) OutError() error {
	o, ok := s.Out.(*stdout)
	if !ok {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Test returns streams backed by buffers, none of them a terminal, colour off.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// colorAllowed applies https://no-color.org and TERM=dumb.
func colorAllowed(getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	if getenv("TERM") == "dumb" {
		return false
	}
	return true
}

// SetTTY overrides terminal detection; tests use it to act as a terminal.
func (s *IOStreams) SetTTY(stdin, stdout, stderr bool) {
	s.stdinTTY, s.stdoutTTY, s.stderrTTY = stdin, stdout, stderr
}

// SetColorEnabled overrides the colour decision.
func (s *IOStreams) SetColorEnabled(on bool) { s.colorEnabled = on }

// SetWidth fixes the terminal width (tests).
func (s *IOStreams) SetWidth(w int) { s.width = w }

// IsStdinTTY reports whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether standard error is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// ColorEnabled reports whether output may carry ANSI colour.
func (s *IOStreams) ColorEnabled() bool { return s.colorEnabled }

// CanPrompt reports whether the user can be asked a question (both stdin and stderr are terminals).
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stderrTTY }

// TerminalWidth returns the width of the terminal on stdout, COLUMNS, or 80.
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	if f, ok := s.Out.(interface{ Fd() uintptr }); ok && s.stdoutTTY {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if w, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && w > 0 {
		return w
	}
	return 80
}
