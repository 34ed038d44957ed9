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
			// None: the volume, alloc or plugin may be one an older volctl stored in another
			// normal form (byStoredID); its events name it so, whether or not it still exists.
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

// storedFilter turns a filter's volume ID, alloc and plugin ID into the forms the event log
// holds them in (storedForm of its columns: a deleted volume's events still name it, and an
// alloc is in no table but claims'); changed says whether one differs. It runs only when the
// filter as given matched nothing, and reads nothing for an ID that no other form can have.
// With AfterID (events --follow asking what is new, every poll) it reads the events after it
// only, as the filter's own query does: a poll's cost is the new rows', not the log's
// (TestFollowedEventsFilterReadsOnlyNewRows).
func storedFilter(tx *store.Tx, f EventFilter) (_ EventFilter, changed bool, err error) {
	for _, x := range []struct {
		t  store.IDTable
		id *string
	}{{store.EventVolumeIDs, &f.VolumeID}, {store.EventAllocs, &f.Alloc}, {store.EventPluginIDs, &f.PluginID}} {
		if *x.id == "" {
			continue
		}
		stored, err := storedFormAfter(tx, x.t, *x.id, f.AfterID)
		if err != nil {
			return f, false, err
		}
		if stored != "" {
			*x.id, changed = stored, true
		}
	}
	return f, changed, nil
}

// EventKinds is every kind of event volctl records, sorted: what `volctl events --kind` takes.
// A test holds it to the kinds the engine's and the agent's code record.
var EventKinds = []string{
	"capability-lost", "claim", "claim-reattach", "nomad-attachment-kept", "nomad-handover",
	"nomad-release", "plugin-capabilities", "plugin-daemon", "plugin-deregister", "plugin-exit",
	"plugin-exposed", "plugin-handover", "plugin-health", "plugin-register", "plugin-restart", "plugin-restart-withheld",
	"plugin-start", "plugin-stop", "plugin-stop-failed", "release", "restore", "snapshot-create",
	"snapshot-delete", "snapshot-deregister", "target-link-removed", "volume-create", "volume-delete",
	"volume-deregister", "volume-expand", "volume-register",
}
