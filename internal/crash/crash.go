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
)

// ExitCode is the exit status of a volctl that panicked: sysexits.h's EX_SOFTWARE, "internal
// software error", apart from the statuses commands return (docs/architecture.md, Command line).
const ExitCode = 70

// ErrPanicked marks an error that stands for a panic recovered by a library that ran the code
// (bubbletea recovers its program's panics, restores the terminal and returns one): main maps
// it to ExitCode too.
var ErrPanicked = errors.New("volctl panicked")

var (
	mu      sync.Mutex
	hooks   = map[int]func(){}
	nextID  int
	crashed bool
	stderr  io.Writer = os.Stderr
	exit              = os.Exit
)

// OnCrash registers fn to run before a panic ends the process (a terminal to restore); remove
// unregisters it. fn runs once, on the goroutine that panicked, while others may still run.
func OnCrash(fn func()) (remove func()) {
	mu.Lock()
	defer mu.Unlock()
	id := nextID
	nextID++
	hooks[id] = fn
	return func() {
		mu.Lock()
		defer mu.Unlock()
		delete(hooks, id)
	}
}

// Go runs fn in a new goroutine that ends the process as Recover does if fn panics.
func Go(fn func()) {
	go func() {
		defer Recover()
		fn()
	}()
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
	mu.Unlock()
	for _, fn := range fns {
		func() {
			defer func() { _ = recover() }() // a restore that fails must not hide the panic
			fn()
		}()
	}
	Report(stderr, r, stack)
	exit(ExitCode)
}

// Report writes what a crash prints: the panic's value and stack, as Go's runtime does, then
// what the exit status means and what to do.
func Report(w io.Writer, r any, stack []byte) {
	fmt.Fprintf(w, "panic: %v\n\n%s\n", r, stack)
	fmt.Fprintf(w, "volctl crashed (exit status %d): this is a bug in volctl, not in how it was run. What it committed before the panic stands; "+
		"`volctl reconcile` finishes what it left half-done. Please report it with the text above.\n", ExitCode)
}
