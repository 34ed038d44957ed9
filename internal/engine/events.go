package engine

import (
	"context"

	"github.com/volctl/volctl/internal/store"
)

// EventFilter narrows Events; empty fields match everything. It is the store's filter, passed
// through as it is.
type EventFilter = store.EventFilter

// Events returns up to limit recent events matching f, newest first (limit <= 0: all kept).
func (e *Engine) Events(ctx context.Context, limit int, f EventFilter) ([]EventInfo, error) {
	var out []EventInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		evs, err := tx.Events().Recent(limit, f)
		for _, ev := range evs {
			out = append(out, eventInfo(ev))
		}
		return err
	})
	return out, err
}
