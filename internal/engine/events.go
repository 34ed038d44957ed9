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
		if err == nil && len(evs) == 0 {
			// None: the volume or plugin may be one an older volctl stored in another normal
			// form (byStoredID); its events name it so.
			var again bool
			if f, again, err = storedFilter(tx, f); err == nil && again {
				evs, err = tx.Events().Recent(limit, f)
			}
		}
		for _, ev := range evs {
			out = append(out, eventInfo(ev))
		}
		return err
	})
	return out, err
}

// storedFilter turns a filter's volume and plugin IDs into the forms they are stored in
// (storedForm); changed says whether one differs.
func storedFilter(tx *store.Tx, f EventFilter) (_ EventFilter, changed bool, err error) {
	for _, x := range []struct {
		t  store.IDTable
		id *string
	}{{store.VolumeIDs, &f.VolumeID}, {store.PluginIDs, &f.PluginID}} {
		if *x.id == "" {
			continue
		}
		stored, err := storedForm(tx, x.t, *x.id)
		if err != nil {
			return f, false, err
		}
		if stored != "" {
			*x.id, changed = stored, true
		}
	}
	return f, changed, nil
}
