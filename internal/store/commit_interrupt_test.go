package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCommitInterruptedSaysNothingWasWritten: a command interrupted (^C) after its transaction's
// writes and before its COMMIT. The driver does not run the COMMIT for a context that ended,
// and the transaction is rolled back. Before, the error read "state PATH: commit: context
// canceled", which leaves the user to guess whether anything was recorded. It says it was
// interrupted and that nothing was written, and nothing was.
func TestCommitInterruptedSaysNothingWasWritten(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.Events().Append(&Event{Kind: "interrupted-write"}); err != nil {
			return err
		}
		cancel()
		return nil
	})
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted before it committed, nothing written") {
		t.Fatalf("Update interrupted before COMMIT: %v", err)
	}
	noInterruptedWrite(t, s)
}

// TestBeginInterruptedSaysNothingWasWritten: a transaction whose context ended before it began
// (a command's ^C while it waited for the write connection, or before its first statement)
// says it was interrupted and that nothing was written, rather than "context canceled" alone
// (seen as `release "v2" for alloc "g[1]": state .../volctl.db: context canceled` from a
// `group stop` sent SIGTERM).
func TestBeginInterruptedSaysNothingWasWritten(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, run := range map[string]func() error{
		"Update": func() error { return s.Update(ctx, func(*Tx) error { return nil }) },
		"View":   func() error { return s.View(ctx, func(*Tx) error { return nil }) },
	} {
		err := run()
		if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted before the transaction began, nothing written") {
			t.Errorf("%s with its context ended: %v; want it to say it was interrupted before it began and nothing was written", name, err)
		}
	}
}

// TestStatementInterruptedSaysNothingWasWritten: a transaction whose context ends while one of
// its statements runs (a claim's admission sent SIGTERM) says it was interrupted and nothing was
// written, rather than "claim on volume ... for alloc ...: context canceled" alone (seen from
// `volume claim` in a chaos run).
func TestStatementInterruptedSaysNothingWasWritten(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.Events().Append(&Event{Kind: "interrupted-write"}); err != nil {
			return err
		}
		cancel()
		_, err := tx.Claims().Find("v", "a")
		return err
	})
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted before the transaction committed, nothing written") {
		t.Fatalf("Update interrupted in a statement: %v; want it to say it was interrupted and nothing was written", err)
	}
	noInterruptedWrite(t, s)
}

// noInterruptedWrite fails t when the event an interrupted transaction appended was committed.
func noInterruptedWrite(t *testing.T, s *Store) {
	t.Helper()
	view(t, s, func(tx *Tx) error {
		evs, err := tx.Events().Recent(0, EventFilter{Kind: "interrupted-write"})
		if err != nil {
			return err
		}
		if len(evs) != 0 {
			t.Errorf("the interrupted transaction's write is in the store: %+v", evs)
		}
		return nil
	})
}
