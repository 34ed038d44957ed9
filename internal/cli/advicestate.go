package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote"
)

// advisedVolctl begins each volctl command a message advises, written as the project writes
// advice: in backticks.
var advisedVolctl = []byte("`volctl ")

// stateDirAdvice is stderr for a command given --state-dir: each volctl command its errors,
// notes and warnings advise ("run `volctl reconcile`") is written with that --state-dir, so that
// what is pasted acts on the state the command acted on. Advised bare, the command pasted acted
// on the default state dir: `volctl volume detach db --force --yes` dropped the claims of
// another state's volume of the same ID, and a `volctl reconcile` reported nothing wrong of a
// state it never read (TestAdviceCarriesTheStateDirGiven); so after settings of its environment
// (`NOMAD_ADDR=... volctl nomad release db`: TestAdviceAfterAnEnvironmentPrefixCarriesTheStateDirGiven).
// Advice that names a state dir already (quickstart's) is left as it is. What goes to stdout,
// which scripts read as data, is not rewritten, nor are logs (logHandler).
type stateDirAdvice struct {
	w   io.Writer
	abs string // the state dir, absolute (as given, when refused: adviseStateDir)

	mu sync.Mutex
	// engine, once set, is the state's engine (redactWith), whose secrets the state dir is
	// scrubbed of as the rest of the line is: inserted after the scrub, it showed a secret value
	// in its path beside its own [REDACTED] (TestStateDirAdviceDoesNotUndoTheScrubOfASecretInItsPath).
	engine func() *engine.Engine
	last   func(string) string // the last scrub read (learn): for a write once the engine is closed
	with   []byte              // what is inserted, worked out at withAt
	withAt time.Time
}

// withStateDirAdvice wraps w for state dir dir (stateDirAdvice); w itself where dir cannot be
// made absolute.
func withStateDirAdvice(w io.Writer, dir string) io.Writer {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return w
	}
	return &stateDirAdvice{w: w, abs: abs}
}

// ownStateDir annotates a command that works in a state dir of its own (quickstart's
// temporary one): its advice is not rewritten with the state dir given, which it does not use.
const ownStateDir = "volctl/own-state-dir"

// adviseStateDir writes f's stderr through stateDirAdvice when --state-dir was given, once: from
// PersistentPreRunE, and from Report for a refusal cobra made before it (an argument check). A
// state dir refused (said by the command that resolves it, where one does) is inserted as given:
// left out, the advice of a refusal no command resolved it for acted, pasted, on the default state
// dir (`--state-dir=~/state`); given, it meets the same refusal.
func (f *Factory) adviseStateDir() {
	if f.stateDirFlag == "" || f.ownState {
		return
	}
	if _, done := f.IO.ErrOut.(*stateDirAdvice); done {
		return
	}
	if dir, err := f.StateDir(); err != nil {
		f.IO.ErrOut = &stateDirAdvice{w: f.IO.ErrOut, abs: f.stateDirFlag}
	} else {
		f.IO.ErrOut = withStateDirAdvice(f.IO.ErrOut, dir)
	}
	if a, ok := f.IO.ErrOut.(*stateDirAdvice); ok {
		f.advise = a.Advise // for what is drawn elsewhere: the dashboard
		a.adviseCrashes()
		a.redactWith(func() *engine.Engine { return f.engine })
	}
}

// redactWith has the state dir inserted scrubbed by the redactor of the engine engine returns,
// once it returns one.
func (s *stateDirAdvice) redactWith(engine func() *engine.Engine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.engine, s.with = engine, nil
}

// learn keeps redact, a scrub of the state's secrets read while its engine was open, for what
// is written after it is closed (main's final error).
func (s *stateDirAdvice) learn(redact func(string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.with = redact, nil
}

// adviceMemo is how long what insert worked out is used again: a dashboard or an agent runs for
// days, and a secret added meanwhile is scrubbed once it has been read.
const adviceMemo = 5 * time.Second

// insert is what goes in place of "`volctl ": the state dir scrubbed of the state's secrets,
// and escaped as an error is (a working directory holding a control character made the absolute
// path, which --state-dir's checks never saw, write it raw: TestStateDirAdviceEscapesWhatItInserts).
// The secrets are read from the engine while it is open, else the last read is used (learn);
// where an open engine's could not be read, STATE_DIR stands for the state dir; before any
// engine is open (a usage error, the dashboard's "needs a terminal"), it is shown as given, as
// the not-found advice does.
func (s *stateDirAdvice) insert() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.with != nil && time.Since(s.withAt) < adviceMemo {
		return s.with
	}
	redact, failed := s.last, false
	if s.engine != nil {
		if e := s.engine(); e != nil {
			r, err := e.Redactor(context.Background())
			if err == nil {
				redact, s.last = r, r
			}
			failed = err != nil
		}
	}
	shown := s.abs
	switch {
	case redact != nil:
		shown = redact(shown)
	case failed:
		// An engine whose secrets could not be read: not an error of a command that never
		// opened one, whose advice named the state dir given (the dashboard's "needs a terminal").
		shown = "STATE_DIR"
	}
	with := append(append([]byte{}, advisedVolctl...), "--state-dir "+escapeLines(shellquote.Arg(shown))+" "...)
	if redact != nil {
		s.with, s.withAt = with, time.Now()
	}
	return with
}

func (s *stateDirAdvice) Write(p []byte) (int, error) {
	if !bytes.Contains(p, advisedVolctl[1:len(advisedVolctl)-1]) {
		return s.w.Write(p)
	}
	if _, err := s.w.Write(s.rewrite(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Advise is rewrite of a text drawn elsewhere than on stderr (the dashboard's: tui.Options.Advice).
func (s *stateDirAdvice) Advise(text string) string {
	if !strings.Contains(text, "volctl") {
		return text
	}
	return string(s.rewrite([]byte(text)))
}

// adviseCrashes has a crash's report, which the crash package writes to the process's stderr
// itself, advise as s does, when s is that stderr (not a test's).
func (s *stateDirAdvice) adviseCrashes() {
	if f, ok := s.w.(*os.File); ok && f == os.Stderr {
		// The state's secrets read for it within a bound (what the panic left locked may hang
		// the read, as crash.Redact bounds its own): past it, STATE_DIR in the state dir's place.
		crash.Advise(func(text string) string {
			got := make(chan []byte, 1)
			crash.Go(func() { got <- s.insert() })
			var with []byte
			select {
			case with = <-got:
			case <-time.After(2 * time.Second):
				with = append(append([]byte{}, advisedVolctl...), "--state-dir STATE_DIR "...)
			}
			return string(s.rewriteWith([]byte(text), with))
		})
	}
}

// rewrite is p with each volctl command it advises carrying the state dir.
func (s *stateDirAdvice) rewrite(p []byte) []byte { return s.rewriteWith(p, nil) }

// rewriteWith is rewrite with what is inserted given (nil: insert's).
func (s *stateDirAdvice) rewriteWith(p, with []byte) []byte {
	out := make([]byte, 0, len(p)+len(s.abs)+len(advisedVolctl)+16)
	rest := p
	for {
		i := bytes.IndexByte(rest, '`')
		if i < 0 {
			out = append(out, rest...)
			break
		}
		out = append(out, rest[:i+1]...)
		rest = rest[i+1:]
		// The command may begin with settings of its environment (`NOMAD_ADDR=... volctl ...`,
		// as a take-back's advice names the cluster): the state dir goes after its volctl.
		// A line break after volctl is the space a wrap to the terminal's width replaced (a
		// spec's diagnostic: TestWrappedDiagnosticAdviceCarriesTheStateDirGiven): kept, after
		// the state dir.
		at := envPrefix(rest)
		if cmd := rest[at:]; advisedAt(cmd) && !bytes.HasPrefix(cmd[len(advisedVolctl)-1:], []byte("--state-dir")) {
			if with == nil {
				with = s.insert()
			}
			out = append(out, rest[:at]...)
			out = append(out, with[1:len(with)-1]...)
			out = append(out, cmd[len(advisedVolctl)-2])
			rest = cmd[len(advisedVolctl)-1:]
		}
	}
	return out
}

// advisedAt reports whether cmd, what follows an advice's backtick (and its settings of the
// environment), is a volctl command: "volctl" and a space, or the line break a wrap put there.
func advisedAt(cmd []byte) bool {
	name := advisedVolctl[1 : len(advisedVolctl)-1]
	return len(cmd) > len(name) && bytes.HasPrefix(cmd, name) && (cmd[len(name)] == ' ' || cmd[len(name)] == '\n')
}

// envPrefix is the length of the settings of the environment that begin cmd ("NAME=VALUE ",
// each value bare or in single quotes, a quote in it written as shellquote writes it: the
// quotes closed, a backslash and the quote, the quotes opened again), 0 for none.
func envPrefix(cmd []byte) int {
	n := 0
	for {
		eq := bytes.IndexByte(cmd[n:], '=')
		if eq <= 0 || !isEnvName(cmd[n:n+eq]) {
			return n
		}
		v := n + eq + 1
		for v < len(cmd) && cmd[v] != ' ' && cmd[v] != '`' {
			if cmd[v] == '\\' { // outside quotes, the next byte as it is (shellquote's escaped quote)
				v += 2
				continue
			}
			if cmd[v] == '\'' {
				end := bytes.IndexByte(cmd[v+1:], '\'')
				if end < 0 {
					return n
				}
				v += end + 1
			}
			v++
		}
		if v >= len(cmd) || cmd[v] != ' ' {
			return n
		}
		n = v + 1
	}
}

// isEnvName says whether b is the name of an environment variable as a shell sets one.
func isEnvName(b []byte) bool {
	for i, c := range b {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return len(b) > 0
}

// Fd is the file descriptor of the stream written to, for the terminal's width
// (iostreams.TerminalWidth); an invalid one when it has none.
func (s *stateDirAdvice) Fd() uintptr {
	if f, ok := s.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
