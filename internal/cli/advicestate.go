package cli

import (
	"bytes"
	"io"
	"path/filepath"

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
// state it never read (TestAdviceCarriesTheStateDirGiven). Advice that names a state dir
// already (quickstart's) is left as it is. What goes to stdout, which scripts read as data, is
// not rewritten.
type stateDirAdvice struct {
	w    io.Writer
	with []byte
}

// withStateDirAdvice wraps w for state dir dir (stateDirAdvice); w itself where dir cannot be
// made absolute.
func withStateDirAdvice(w io.Writer, dir string) io.Writer {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return w
	}
	return &stateDirAdvice{w: w, with: append(append([]byte{}, advisedVolctl...), "--state-dir "+shellquote.Arg(abs)+" "...)}
}

func (s *stateDirAdvice) Write(p []byte) (int, error) {
	if !bytes.Contains(p, advisedVolctl) {
		return s.w.Write(p)
	}
	var out []byte
	rest := p
	for {
		i := bytes.Index(rest, advisedVolctl)
		if i < 0 {
			out = append(out, rest...)
			break
		}
		out = append(out, rest[:i]...)
		after := rest[i+len(advisedVolctl):]
		if bytes.HasPrefix(after, []byte("--state-dir")) {
			out = append(out, advisedVolctl...)
		} else {
			out = append(out, s.with...)
		}
		rest = after
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Fd is the file descriptor of the stream written to, for the terminal's width
// (iostreams.TerminalWidth); an invalid one when it has none.
func (s *stateDirAdvice) Fd() uintptr {
	if f, ok := s.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
