// Package iostreams is volctl's one place for terminal policy: which streams data and diagnostics
// go to, whether they are terminals, whether colour is on (NO_COLOR, piping), and the width.
// Tests build an IOStreams with Test and read what a command wrote.
package iostreams

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
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
	// colorAllowed is the environment's word (NO_COLOR, TERM=dumb): each stream is coloured
	// when it is a terminal and this allows it, stdout's and stderr's apart.
	colorAllowed bool
	width        int
}

// System returns streams bound to the process's stdin, stdout and stderr.
func System() *IOStreams {
	return system(os.Stdin, os.Stdout, os.Stderr, os.Getenv)
}

func system(stdin, stdout, stderr *os.File, getenv func(string) string) *IOStreams {
	return &IOStreams{
		In:           stdin,
		Out:          &Stdout{File: stdout},
		ErrOut:       stderr,
		stdinTTY:     isTerminal(stdin),
		stdoutTTY:    isTerminal(stdout),
		stderrTTY:    isTerminal(stderr),
		colorAllowed: colorAllowed(getenv),
	}
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

// SetColorEnabled overrides what the environment allows: each stream is then coloured when it
// is a terminal (SetTTY).
func (s *IOStreams) SetColorEnabled(on bool) { s.colorAllowed = on }

// SetWidth fixes the terminal width (tests).
func (s *IOStreams) SetWidth(w int) { s.width = w }

// IsStdinTTY reports whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether standard error is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// ColorEnabled reports whether standard output may carry ANSI colour: it is a terminal and
// NO_COLOR or TERM=dumb do not say otherwise.
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && s.colorAllowed }

// StderrColorEnabled reports whether standard error may carry ANSI colour (diagnostics): it is
// a terminal and NO_COLOR or TERM=dumb do not say otherwise. It follows stderr's own terminal,
// not stdout's: `volctl validate f.hcl | jq` on a terminal keeps its coloured diagnostics,
// and `volctl validate f.hcl 2>err.txt` writes none into the file
// (TestDiagnosticsColourFollowsStderrsTerminal).
func (s *IOStreams) StderrColorEnabled() bool { return s.stderrTTY && s.colorAllowed }

// CanPrompt reports whether the user can be asked a question (both stdin and stderr are terminals).
func (s *IOStreams) CanPrompt() bool { return s.stdinTTY && s.stderrTTY }

// TerminalWidth returns the width of the terminal on stderr, COLUMNS, or 80: what it is
// asked for is laid out on stderr (the progress line, diagnostics), and stdout is often
// redirected while stderr stays on the terminal (`volctl claim ... > path.txt`), where the
// width of stdout's terminal was no width, and a progress line cut to 80 columns wrapped on a
// narrower terminal, each redraw leaving a line behind (TestTerminalWidthIsStderrs).
func (s *IOStreams) TerminalWidth() int {
	if s.width > 0 {
		return s.width
	}
	if f, ok := s.ErrOut.(interface{ Fd() uintptr }); ok && s.stderrTTY {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if w, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && w > 0 {
		return w
	}
	return 80
}

// Stdout is the process's standard output, which remembers the first write that failed: a
// command's output lost (a full disk behind `> file`, a closed pipe once SIGPIPE no longer
// kills volctl) must not end in exit status 0, and not every writer checks what Write
// returned (cobra's help, a result line printed after the work was done). It is the *os.File
// still (embedded) for what asks for its descriptor: terminal checks, the dashboard.
type Stdout struct {
	*os.File
	mu  sync.Mutex
	err error
}

func (o *Stdout) Write(p []byte) (int, error) {
	n, err := o.File.Write(p)
	return n, o.note(err)
}

func (o *Stdout) WriteString(s string) (int, error) {
	n, err := o.File.WriteString(s)
	return n, o.note(err)
}

// note keeps the first write error, and returns err as a StdoutError.
func (o *Stdout) note(err error) error {
	if err == nil {
		return nil
	}
	err = &StdoutError{Err: err}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil {
		o.err = err
	}
	return err
}

// StdoutError is a write to standard output that failed (a full disk behind `> file`,
// /dev/full, a reader gone once SIGPIPE no longer ends volctl), in one wording whichever
// command met it and wherever: "writing to standard output: no space left on device; what
// volctl printed there is incomplete". Before, a command's own write said "write
// /dev/stdout: no space left on device" and the same write noticed at the end (cobra's help)
// "writing to standard output: write /dev/stdout: ...". It unwraps to the *os.PathError (its
// errno: EPIPE, a reader gone, is told apart by errors.Is).
type StdoutError struct{ Err error }

func (e *StdoutError) Error() string {
	cause := e.Err
	var pe *fs.PathError
	if errors.As(cause, &pe) {
		cause = pe.Err // "write /dev/stdout: " says again what this error says
	}
	return "writing to standard output: " + cause.Error() + "; what volctl printed there is incomplete"
}

func (e *StdoutError) Unwrap() error { return e.Err }

// Err is the first write error, or nil.
func (o *Stdout) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// OutError is the first error writing to standard output, when Out is the process's (System);
// nil otherwise (Test's buffers).
func (s *IOStreams) OutError() error {
	if o, ok := s.Out.(*Stdout); ok {
		return o.Err()
	}
	return nil
}
