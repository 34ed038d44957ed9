package cli

import (
	"context"
	"errors"
	"strings"
)

// StopSignal is the cause main ends a command's context with when SIGINT, SIGTERM or SIGHUP
// arrives (context.WithCancelCause): "SIGTERM received".
type StopSignal struct {
	Name string // "SIGINT", "SIGTERM", "SIGHUP"
}

func (s StopSignal) Error() string { return s.Name + " received" }

// SaySignal is err, a command's error, saying which signal stopped it when one did (ctx's
// cause is a StopSignal): the errors of RPCs, waits and reads cut short by the command's
// context end in Go's "context canceled", which says neither that volctl was stopped nor by
// what, and a script's log of `timeout 60 volctl volume claim ...` or a service manager's
// SIGTERM read like a bug. Each "context canceled" in its text is the signal's "SIGTERM
// received" (the rest, what the command did and what is left, says the same); an error that
// is the stop but names neither gets the signal added. Its kind, and so its exit status (1),
// stay err's (TestInterruptedCommandSaysWhichSignal).
func SaySignal(ctx context.Context, err error) error {
	var sig StopSignal
	if err == nil || !errors.As(context.Cause(ctx), &sig) {
		return err
	}
	msg, canceled := err.Error(), context.Canceled.Error()
	switch {
	case strings.Contains(msg, canceled):
		// Even where the signal is named already: an interrupted `group run` names it in its
		// last line, and its first, the claim's RPC, said "context canceled" beside it.
		return &redactedError{err: err, msg: strings.ReplaceAll(msg, canceled, sig.Error())}
	case strings.Contains(msg, sig.Error()):
		return err // said already (a filter's, validate's, group run's words)
	case errors.Is(err, context.Canceled):
		return &redactedError{err: err, msg: msg + " (" + sig.Error() + ")"}
	}
	return err
}
