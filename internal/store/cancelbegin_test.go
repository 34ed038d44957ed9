package store

import (
	"context"
	"testing"
	"time"
)

// A transaction whose context ends while it begins leaves no transaction open on the
// connection it goes back to: the next one on that connection begins.
func TestCancelledBeginLeavesNoTransactionOpen(t *testing.T) {
	s := newStore(t)
	for i := 0; i < 3000; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Duration(i%50) * time.Microsecond); cancel() }()
		_ = s.View(ctx, func(tx *Tx) error { return nil })
		_ = s.UpdateProgress(ctx, func(tx *Tx) error { return nil })
		cancel()
		if err := s.View(context.Background(), func(tx *Tx) error { return nil }); err != nil {
			t.Fatalf("view after a cancelled begin (round %d): %v", i, err)
		}
		if err := s.UpdateProgress(context.Background(), func(tx *Tx) error { return nil }); err != nil {
			t.Fatalf("update after a cancelled begin (round %d): %v", i, err)
		}
	}
}
