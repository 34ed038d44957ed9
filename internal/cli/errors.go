package cli

import (
	"errors"
	"fmt"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
)

// Exit codes, as docs/architecture.md (Command line) fixes them.
const (
	ExitOK       = 0
	ExitError    = 1              // runtime error
	ExitUsage    = 2              // usage error or invalid spec
	ExitDeclined = 3              // the user said no
	ExitConflict = 4              // claim refused, volume in use
	ExitCrash    = crash.ExitCode // volctl panicked: a bug (internal/crash)
)

// exitError carries the exit code a command wants. When silent, its message has already been
// shown (diagnostics, a table of conflicts) and main prints nothing more.
type exitError struct {
	code   int
	err    error
	silent bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is a bad flag or argument: exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// withCode attaches an exit code to err.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// silentExit ends the command with code, having printed everything already.
func silentExit(code int) error {
	return &exitError{code: code, err: fmt.Errorf("exit status %d", code), silent: true}
}

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	switch {
	case errors.Is(err, crash.ErrPanicked):
		return ExitCrash
	case errors.Is(err, engine.ErrConflict), csi.InUse(err):
		return ExitConflict
	case errors.Is(err, engine.ErrInvalid):
		return ExitUsage
	}
	if isFlagError(err) { // flags, arguments and unknown subcommands (rejectUnknownSubcommands)
		return ExitUsage
	}
	return ExitError
}

// isSilent reports whether the error's message has been shown already.
func isSilent(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.silent
}

// flagError marks errors from cobra's argument and flag parsing.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe)
}
