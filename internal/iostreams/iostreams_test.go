package iostreams

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/volctl/volctl/internal/iostreams/ptytest"
)

func TestColorAllowed(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true},
		{map[string]string{"NO_COLOR": "1"}, false},
		{map[string]string{"NO_COLOR": ""}, true}, // https://no-color.org: present and not empty
		{map[string]string{"TERM": "dumb"}, false},
	}
	for _, tt := range tests {
		if got := colorAllowed(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("colorAllowed(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}

func TestTestStreamsAreNotTerminals(t *testing.T) {
	t.Setenv("COLUMNS", "") // the fallback is 80 unless COLUMNS says otherwise
	s, _, _, _ := Test()
	if s.IsStdoutTTY() || s.CanPrompt() || s.ColorEnabled() || s.TerminalWidth() != 80 {
		t.Fatalf("test streams: tty %v prompt %v color %v width %d", s.IsStdoutTTY(), s.CanPrompt(), s.ColorEnabled(), s.TerminalWidth())
	}
	s.SetTTY(true, true, true)
	s.SetWidth(120)
	if !s.CanPrompt() || s.TerminalWidth() != 120 {
		t.Fatal("SetTTY/SetWidth did not take")
	}
}

// TestTerminalWidthIsStderrs: the width is asked for the progress line and diagnostics, both
// on stderr; with stdout redirected to a file and stderr on a terminal of 40 columns it was 80
// (stdout is no terminal, so COLUMNS or 80), and the progress line wrapped.
func TestTerminalWidthIsStderrs(t *testing.T) {
	t.Setenv("COLUMNS", "")
	controller, term, err := ptytest.Open(40, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to stand for stderr's terminal: %v", err)
	}
	defer controller.Close()
	defer term.Close()
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	s := &IOStreams{Out: &Stdout{File: out}, ErrOut: term}
	s.SetTTY(false, false, true)
	if got := s.TerminalWidth(); got != 40 {
		t.Errorf("stdout a file, stderr a terminal of 40 columns: width %d, want 40", got)
	}
}

// TestEachStreamsColourFollowsItsOwnTerminal: stderr's colour (diagnostics) followed stdout's
// terminal, so `volctl validate f.hcl | cat` lost it on the terminal; each stream now has its
// own, and the environment's NO_COLOR turns off both.
func TestEachStreamsColourFollowsItsOwnTerminal(t *testing.T) {
	controller, term, err := ptytest.Open(80, 24)
	if err != nil {
		t.Skipf("no pseudo-terminal to stand for a terminal: %v", err)
	}
	defer controller.Close()
	defer term.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tt := range []struct {
		name                string
		stdout, stderr      *os.File
		env                 map[string]string
		wantOut, wantStderr bool
	}{
		{"both terminals", term, term, nil, true, true},
		{"stdout piped", file, term, nil, false, true},
		{"stderr redirected", term, file, nil, true, false},
		{"neither", file, file, nil, false, false},
		{"NO_COLOR", term, term, map[string]string{"NO_COLOR": "1"}, false, false},
	} {
		s := system(file, tt.stdout, tt.stderr, env(tt.env))
		if s.ColorEnabled() != tt.wantOut || s.StderrColorEnabled() != tt.wantStderr {
			t.Errorf("%s: stdout colour %v, stderr colour %v; want %v, %v", tt.name, s.ColorEnabled(), s.StderrColorEnabled(), tt.wantOut, tt.wantStderr)
		}
	}
}
