// Package crash makes a panic in volctl end the process with an exit code of its own
// (ExitCode), the panic's text and stack kept on stderr, rather than Go's exit status 2, which
// volctl's exit-code table gives to usage errors: a script would read a crash as its own
// mistake. The main goroutine defers Recover; every goroutine volctl starts is started by Go,
// since a panic in a goroutine ends the process before anything on the main goroutine can
// recover it. Functions registered with OnCrash (the TUI's terminal restore) run first.
package crash

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// ExitCode is the exit status of a volctl that panicked: sysexits.h's EX_SOFTWARE, "internal
// software error", apart from the statuses commands return (docs/architecture.md, Command line).
const ExitCode = 70

// ErrPanicked marks an error that stands for a panic recovered by a library that ran the code:
// main maps it to ExitCode too. (The dashboard does not let bubbletea recover its panics, which
// it printed unscrubbed: they reach Recover, tui.guarded.)
var ErrPanicked = errors.New("volctl panicked")

var (
	mu        sync.Mutex
	hooks     = map[int]func(){}
	redactors = map[int]func(string) (string, error){}
	advisers  = map[int]func(string) string{}
	nextID    int
	crashed   bool
	stderr    io.Writer = os.Stderr
	exit                = os.Exit
)

// redactTimeout bounds the scrubbing of a report (Redact's functions, which may read the state):
// a crash must end the process, not wait on what the panic left locked.
var redactTimeout = 5 * time.Second

// OnCrash registers fn to run before a panic ends the process (a terminal to restore); remove
// unregisters it. fn runs once, on the goroutine that panicked, while others may still run.
func OnCrash(fn func()) (remove func()) { return add(hooks, fn) }

// add puts fn in m (hooks, redactors) under mu, and returns what takes it out.
func add[F any](m map[int]F, fn F) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	id := nextID
	nextID++
	m[id] = fn
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(m, id)
	}
}

// Redact registers fn to scrub a crash report of the secrets the process knows (the state's
// secret values and mount flags: engine.Redactor) before it is printed; remove unregisters it.
// The panic's value may be anything: an error wrapping what a plugin echoed, a request printed
// whole. fn gets the report's text and returns it scrubbed, or an error when it could not
// scrub it; then, or when fn panics or takes longer than redactTimeout, the panic's value is
// withheld and the stack (function names and argument words, no strings) printed alone.
func Redact(fn func(string) (string, error)) (remove func()) { return add(redactors, fn) }

// Advise registers fn to rewrite the volctl command the report advises (`volctl reconcile`): the
// command line's, to carry the --state-dir it was given (cli's stateDirAdvice), where a crash
// under it advised the reconcile of the default state dir; remove unregisters it.
func Advise(fn func(string) string) (remove func()) { return add(advisers, fn) }

// Go runs fn in a new goroutine that ends the process as Recover does if fn panics.
func Go(fn func()) {
	go func() {
		defer Recover()
		fn()
	}()
}

// GoGroup is Go for one of wg's goroutines: wg.Add(1) now, wg.Done when fn returns, and not
// when it panics. A `defer wg.Done()` inside fn would run as the panic unwinds, before Recover
// ends the process, and whoever waits on wg would go on meanwhile: print a report of work the
// crash cut short ("nothing to do"), close the state the crash report reads to scrub the
// panic's value of secrets (which it then withholds).
func GoGroup(wg *sync.WaitGroup, fn func()) {
	wg.Add(1)
	Go(func() {
		fn()
		wg.Done()
	})
}

// Recover, deferred (directly: `defer crash.Recover()`), ends the process with ExitCode when
// the function it was deferred in panics, after the OnCrash functions, with the panic's value
// and stack, and what to do, on stderr. Nothing else on that goroutine runs past it, and only
// the first of two panics at once reports.
func Recover() {
	r := recover()
	if r == nil {
		return
	}
	stack := debug.Stack()
	mu.Lock()
	if crashed { // another goroutine is reporting its own: let it finish and exit
		mu.Unlock()
		select {}
	}
	crashed = true
	fns := make([]func(), 0, len(hooks))
	for _, fn := range hooks {
		fns = append(fns, fn)
	}
	scrubs := make([]func(string) (string, error), 0, len(redactors))
	for _, fn := range redactors {
		scrubs = append(scrubs, fn)
	}
	var advise func(string) string
	for _, fn := range advisers {
		advise = fn
	}
	mu.Unlock()
	for _, fn := range fns {
		func() {
			defer func() { _ = recover() }() // a restore that fails must not hide the panic
			fn()
		}()
	}
	report(stderr, r, stack, advise, scrubs...)
	exit(ExitCode)
}

// report writes what a crash prints: the panic's value and stack, as Go's runtime does, passed
// through scrubs (Redact) and escaped, then what the exit status means and what to do, its
// advice rewritten by advise (Advise; nil: as it is).
func report(w io.Writer, r any, stack []byte, advise func(string) string, scrubs ...func(string) (string, error)) {
	if advise == nil {
		advise = func(s string) string { return s }
	}
	text, err := scrubbed(fmt.Sprintf("panic: %v\n\n%s\n", r, stack), scrubs)
	if err != nil {
		text = fmt.Sprintf("panic: [the panic's value is withheld: scrubbing it of secrets failed: %v]\n\n%s\n", err, stack)
	}
	// The value may wrap what a plugin said: its control characters are shown as escapes, as
	// an error's are (spec.EscapeLines keeps the lines and the stack's indenting tabs).
	fmt.Fprint(w, spec.EscapeLines(text))
	fmt.Fprint(w, advise(fmt.Sprintf("volctl crashed (exit status %d): this is a bug in volctl, not in how it was run. What it committed before the panic stands; "+
		"`volctl reconcile` finishes what it left half-done. Please report it with the text above.\n", ExitCode)))
}

// scrubbed is text passed through every scrub, within redactTimeout in all.
func scrubbed(text string, scrubs []func(string) (string, error)) (string, error) {
	if len(scrubs) == 0 {
		return text, nil
	}
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if recover() != nil {
				done <- result{err: errors.New("the scrubbing panicked")} // its value may hold the text
			}
		}()
		out := text
		for _, scrub := range scrubs {
			var err error
			if out, err = scrub(out); err != nil {
				done <- result{err: err}
				return
			}
		}
		done <- result{text: out}
	}()
	t := time.NewTimer(redactTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.text, r.err
	case <-t.C:
		return "", fmt.Errorf("it took longer than %s", redactTimeout)
	}
}
