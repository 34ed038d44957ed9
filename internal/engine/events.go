package engine

import (
	"context"
	"strings"

	"github.com/volctl/volctl/internal/spec"
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

// sameFailure reports whether a failure's message as the store kept it (cut to
// store.MaxStoredMessage) and a fresh one say the same thing: equal, the fresh one cut as the
// store cuts it, once every word holding a digit is taken as one placeholder. A plugin's
// message often carries what changes at every call and says nothing of the failure: a request
// ID, a timestamp, an attempt or trace number (an SDK's "RequestID: 5b1e…", "at
// 2026-12-01T14:07:00Z"), and volctl's own words do too (how long a slow attempt took).
// Compared byte for byte, such a failure was a new one at every reconcile pass, each an event:
// a plugin failing one volume so pushed the rest of the event log (10,000 rows) out within days
// (TestFailureWithAChangingRequestIDIsOneEvent). Two failures told apart only by a number
// ("95% full", "99% full") are taken as one; the command's or pass's report, and a claim's last
// error, still show the newest words.
func sameFailure(stored, fresh string) bool {
	fresh = spec.Cut(fresh, store.MaxStoredMessage)
	return stored == fresh || failureWords(stored) == failureWords(fresh)
}

// failureWords is msg with each word that holds a digit written "#": a word is a run of ASCII
// letters and digits, a '.' or ':' between two of them joining it ("1.5s", "14:07:00.123").
func failureWords(msg string) string {
	var b strings.Builder
	b.Grow(len(msg))
	for i := 0; i < len(msg); {
		if !alnum(msg[i]) {
			b.WriteByte(msg[i])
			i++
			continue
		}
		j, digit := i, false
		for ; j < len(msg) && (alnum(msg[j]) || joins(msg, j)); j++ {
			digit = digit || msg[j] >= '0' && msg[j] <= '9'
		}
		if digit {
			b.WriteByte('#')
		} else {
			b.WriteString(msg[i:j])
		}
		i = j
	}
	return b.String()
}

// joins reports whether msg[j] is a '.' or ':' between two letters or digits.
func joins(msg string, j int) bool {
	return (msg[j] == '.' || msg[j] == ':') && j > 0 && j+1 < len(msg) && alnum(msg[j-1]) && alnum(msg[j+1])
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// appendFailure appends ev, a failure that a reconcile pass (or a command run again) meets
// again until the plugin changes its mind, unless the newest event of its kind on its volume
// and plugin is the same failure (sameFailure, of the same RPC and code): a deleting volume
// whose plugin keeps failing its DeleteVolume, or keeps listing it, is one event, not one per
// pass, as a claim left for reconcile is (recordFailure). Anything else recorded in between of
// that kind (the delete refused, a snapshot taken) makes the next failure an event again.
func appendFailure(tx *store.Tx, ev *store.Event) error {
	last, err := tx.Events().Recent(1, store.EventFilter{Kind: ev.Kind, VolumeID: ev.VolumeID, PluginID: ev.PluginID})
	if err != nil {
		return err
	}
	if len(last) == 1 && last[0].RPC == ev.RPC && last[0].Code == ev.Code && sameFailure(last[0].Message, ev.Message) {
		return nil
	}
	return tx.Events().Append(ev)
}

// failureEvent is appendFailure in its own transaction, logging (not returning) a failure to
// write it, as event does.
func (e *Engine) failureEvent(ctx context.Context, ev *store.Event) {
	if err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error { return appendFailure(tx, ev) }); err != nil {
		e.log.Warn("writing the event log", "err", err)
	}
}
