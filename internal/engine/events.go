package engine

import (
	"context"
	"errors"
	"fmt"
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
	err := e.store.View(ctx, func(tx *store.Tx) (err error) {
		out, err = readEvents(tx, limit, f)
		return err
	})
	return out, err
}

// EventsRedacted is Events with every string of the events scrubbed of the secrets the state
// holds, read in the same transaction (and those this process let go, as Redactor's), and of
// extra. Read apart, as Events and then Redactor, another process's delete between the two
// forgot a secret a plugin had echoed into an event already read (its commit scrubs the log and
// drops the secret at once), and the event was printed whole
// (TestEventsReadBeforeAnotherProcessDeletesTheVolumeShowNoSecret).
func (e *Engine) EventsRedacted(ctx context.Context, limit int, f EventFilter, extra ...string) ([]EventInfo, error) {
	return e.eventsRedacted(ctx, limit, f, nil, extra)
}

// EventsFollowed is an `events --follow` poll: EventsRedacted of every event after f.AfterID,
// with the newest event of all the read saw, whatever it matched (where the next poll goes on
// from: a filtered follow's events that did not match are read once), and how many of the
// events after AfterID the log dropped before this read. The log keeps the newest
// (store.DefaultEventLimit) and drops the oldest, and IDs are dense, so the oldest it holds
// past AfterID+1 says how many a follower that fell that far behind (its reader stopped) never
// read, of any kind. Before, the follow went on from the oldest kept, its output a whole log
// with a hole nothing marked (TestEventsFollowSaysEventsTheLogDroppedBeforeTheyWereShown).
func (e *Engine) EventsFollowed(ctx context.Context, f EventFilter) (FollowedEvents, error) {
	fe := FollowedEvents{Keeps: store.DefaultEventLimit}
	var err error
	fe.Events, err = e.eventsRedacted(ctx, 0, f, &fe, nil)
	return fe, err
}

// FollowedEvents is what an `events --follow` poll read (EventsFollowed).
type FollowedEvents struct {
	Events  []EventInfo // after the filter's AfterID, matching it, newest first
	Newest  int64       // the newest event's ID of all, matching or not; AfterID when none is newer
	Dropped int64       // how many after AfterID the log dropped unread, of any kind
	Keeps   int         // how many events the log keeps, the newest
}

// eventsRedacted is EventsRedacted, with EventsFollowed's bounds of the log when followed is not
// nil.
func (e *Engine) eventsRedacted(ctx context.Context, limit int, f EventFilter, followed *FollowedEvents, extra []string) ([]EventInfo, error) {
	var (
		out    []EventInfo
		values []string
	)
	err := e.store.View(ctx, func(tx *store.Tx) (err error) {
		if followed != nil {
			oldest, newest, err := tx.Events().Bounds()
			if err != nil {
				return err
			}
			followed.Newest, followed.Dropped = max(newest, f.AfterID), max(oldest-f.AfterID-1, 0)
		}
		if out, err = readEvents(tx, limit, f); err == nil && len(out) > 0 {
			values, err = tx.SecretValues()
		}
		return err
	})
	if err != nil || len(out) == 0 {
		return out, err
	}
	return out, redactWith(&out, e.scrubbers.get(append(e.andForgotten(values), extra...)))
}

// readEvents is Events' read, in tx.
func readEvents(tx *store.Tx, limit int, f EventFilter) ([]EventInfo, error) {
	evs, err := tx.Events().Recent(limit, f)
	if err == nil && len(evs) == 0 {
		// None: the volume, alloc or plugin may be one an older volctl stored in another
		// normal form (byStoredID); its events name it so, whether or not it still exists.
		var again bool
		if f, again, err = storedFilter(tx, f); err == nil && again {
			evs, err = tx.Events().Recent(limit, f)
		}
	}
	var out []EventInfo
	for _, ev := range evs {
		out = append(out, eventInfo(ev))
	}
	return out, err
}

// EventFilterNear says, for a filter that matched no event, which of its volume, alloc and
// plugin no event names, with the ones the log names that were likely meant: `events --volume
// dat` printed only "No events match.", as for a volume that has no events in the time asked
// (TestEventsFilterTypoNamesTheNearID). Empty when each names something, or nothing is near.
func (e *Engine) EventFilterNear(ctx context.Context, f EventFilter) (string, error) {
	var says []string
	for _, x := range []struct {
		t    store.IDTable
		what string
		id   string
	}{{store.EventVolumeIDs, "volume", f.VolumeID}, {store.EventAllocs, "alloc", f.Alloc}, {store.EventPluginIDs, "plugin", f.PluginID}} {
		if x.id == "" {
			continue
		}
		near, err := nearKeys(ctx, e, x.t, x.id)
		if err != nil {
			return "", err
		}
		if len(near) > 0 {
			says = append(says, fmt.Sprintf("no event names %s %q (did you mean %s?)", x.what, x.id, orList(near)))
		}
	}
	if len(says) == 0 {
		return "", nil
	}
	// The IDs the log holds, scrubbed as every ID printed is: a volume whose ID holds a secret
	// value was suggested whole (TestEventsFilterNearShowsNoSecretHeldByAVolumeID).
	redact, err := e.Redactor(ctx)
	if err != nil {
		return "", err
	}
	return redact(strings.Join(says, "; ")), nil
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
	"attachment-kept", "capability-lost", "claim", "claim-reattach", "nomad-attachment-kept", "nomad-handover",
	"nomad-release", "plugin-capabilities", "plugin-daemon", "plugin-deregister", "plugin-exit",
	"plugin-exposed", "plugin-handover", "plugin-health", "plugin-register", "plugin-restart", "plugin-restart-withheld",
	"plugin-start", "plugin-stop", "plugin-stop-failed", "release", "restore", "snapshot-create",
	"snapshot-delete", "snapshot-deregister", "target-link-removed", "volume-create", "volume-delete",
	"volume-deregister", "volume-expand", "volume-register",
}

// sameFailure reports whether a failure's message as the store kept it (cut to
// store.MaxStoredMessage) and a fresh one say the same thing: equal, the fresh one cut as the
// store cuts it, once what looks like an ID or a time is taken as one placeholder
// (failureWords). A plugin's message often carries what changes at every call and says nothing
// of the failure: a request ID, a timestamp, a trace number (an SDK's "RequestID: 5b1e…", "at
// 2026-12-01T14:07:00Z"), and volctl's own words do too (how long a slow attempt took).
// Compared byte for byte, such a failure was a new one at every reconcile pass, each an event:
// a plugin failing one volume so pushed the rest of the event log (10,000 rows) out within days
// (TestFailureWithAChangingRequestIDIsOneEvent). Any other number is the failure's own: an HTTP
// status, an errno, an exit status, an address, a host or device (`node-2`, `nvme1n1`) told
// apart from another by its number (TestFailureChangingOnlyItsStatusNumberIsRecorded).
func sameFailure(stored, fresh string) bool { return sameFailureOf(stored, fresh, "") }

// sameFailureOf is sameFailure for a failure whose message begins with own, the words volctl
// writes naming what failed (a snapshot's name, a node expansion's path and size): those must
// be stored as they are, whatever digits they hold, for the rest to be compared. Two snapshots
// named by their date are two objects, not one failure (TestAnotherSnapshotsCreateFailureIsRecorded).
func sameFailureOf(stored, fresh, own string) bool {
	fresh = spec.Cut(fresh, store.MaxStoredMessage)
	rest, ok := strings.CutPrefix(stored, own)
	freshRest, freshOK := strings.CutPrefix(fresh, own)
	return ok && freshOK && (rest == freshRest || failureWords(rest) == failureWords(freshRest))
}

// FailureWords is failureWords, for the agent's log of problems, which logs a problem again
// only when its words are not a repeat's.
func FailureWords(msg string) string { return failureWords(msg) }

// failureWords is msg with each timestamp, time of day, duration and ID written "#": an ID is
// a run of hex digits (dashes between them allowed: a UUID) of 8 or more holding a digit, or of
// 6 decimal digits or more. Short numbers, and words of letters and digits (`node-2`,
// `nvme1n1`), stay as they are. Each is a whole word: neither letter, digit nor '_' touches it.
// It is one pass, no regular expression: retry words every failed attempt.
func failureWords(msg string) string {
	var b strings.Builder
	b.Grow(len(msg))
	for i := 0; i < len(msg); {
		if !wordByte(msg[i]) {
			b.WriteByte(msg[i])
			i++
			continue
		}
		if n := maskedLen(msg[i:]); n > 0 {
			b.WriteByte('#')
			i += n
			continue
		}
		j := i
		for j < len(msg) && wordByte(msg[j]) {
			j++
		}
		b.WriteString(msg[i:j])
		i = j
	}
	return b.String()
}

// maskedLen is the length of the timestamp, duration or ID, a whole word, that begins s, or 0.
func maskedLen(s string) int {
	if !isHex(s[0]) {
		return 0 // each begins with a digit, or an ID with a hex letter
	}
	for _, n := range [...]int{stampLen(s), durationLen(s), idLen(s)} {
		if n > 0 && (n == len(s) || !wordByte(s[n])) {
			return n
		}
	}
	return 0
}

func wordByte(c byte) bool { return alnum(c) || c == '_' }

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// digitsLen is how many digits begin s.
func digitsLen(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// stampLen is the length of the RFC 3339 timestamp ("2026-12-01T14:07:00.123Z") or the time of
// day ("14:07:00") that begins s, or 0.
func stampLen(s string) int {
	n := 0
	if len(s) >= 11 && digitsLen(s) == 4 && s[4] == '-' && digitsLen(s[5:]) == 2 && s[7] == '-' && digitsLen(s[8:]) == 2 && (s[10] == 'T' || s[10] == ' ') {
		n = 11
	}
	d := digitsLen(s[n:])
	if d < 1 || d > 2 || n > 0 && d != 2 {
		if n > 0 {
			return 10 // a date alone
		}
		return 0
	}
	t := n + d
	for range 2 {
		if t+3 > len(s) || s[t] != ':' || digitsLen(s[t+1:]) != 2 {
			if n > 0 {
				return 10
			}
			return 0
		}
		t += 3
	}
	if t+1 < len(s) && s[t] == '.' && isDigit(s[t+1]) {
		t += 1 + digitsLen(s[t+1:])
	}
	if n == 0 {
		return t
	}
	switch {
	case t < len(s) && s[t] == 'Z':
		t++
	case t+3 <= len(s) && (s[t] == '+' || s[t] == '-') && digitsLen(s[t+1:]) == 2:
		t += 3
		if t+3 <= len(s) && s[t] == ':' && digitsLen(s[t+1:]) == 2 {
			t += 3
		} else if digitsLen(s[t:]) == 2 {
			t += 2
		}
	}
	return t
}

// durationLen is the length of the Go duration ("1.5s", "3m20s", "250µs") that begins s, or 0.
func durationLen(s string) int {
	t := 0
	for {
		d := digitsLen(s[t:])
		if d == 0 {
			return t
		}
		u := t + d
		if u+1 < len(s) && s[u] == '.' && isDigit(s[u+1]) {
			u += 1 + digitsLen(s[u+1:])
		}
		n := 0
		for _, unit := range []string{"ns", "us", "µs", "ms", "s", "m", "h"} {
			if strings.HasPrefix(s[u:], unit) {
				n = len(unit)
				break
			}
		}
		if n == 0 {
			return t
		}
		t = u + n
	}
}

// idLen is the length of the ID that begins s, or 0: a run of hex digits, dashes between them,
// of 8 or more holding a digit, or of 6 decimal digits or more.
func idLen(s string) int {
	t, hex, decimal := 0, 0, 0
	for t < len(s) {
		if isHex(s[t]) {
			hex++
			if isDigit(s[t]) {
				decimal++
			}
			t++
			continue
		}
		if s[t] == '-' && t > 0 && t+1 < len(s) && isHex(s[t+1]) {
			t++
			continue
		}
		break
	}
	if decimal >= 6 && decimal == hex || hex >= 8 && decimal > 0 {
		return t
	}
	return 0
}

// failureLookback is how many of a volume's newest events appendFailure compares a failure
// with: a plugin alternating between two or three failures (busy at one pass, an operation
// pending at the next) is still an event per failure, not one per pass
// (TestDeleteAlternatingTwoFailuresIsBounded). It bounds the read too: a volume whose own
// events fill the log is read for these few rows only, through events_volume.
const failureLookback = 4

// deleteRefusedKept begins the event of a delete the plugin refused for the volume's own state
// (keepRefusedDelete): the volume is kept, ready, a change appendFailure's walk stops at.
const deleteRefusedKept = "delete refused, volume kept: "

// appendFailure appends ev, a failure that a reconcile pass (or a command run again) meets
// again until the plugin changes its mind, unless it is already recorded: one of the
// volume's failureLookback newest events, of any kind, before any of another kind or plugin,
// is the same failure (sameFailureOf, own the words volctl wrote naming its object, of the
// same RPC and code). A deleting volume whose plugin keeps failing its DeleteVolume, or keeps
// listing it, is one event, not one per pass, as a claim left for reconcile is
// (recordFailure). Anything else recorded on the volume in between (the delete refused, a
// snapshot taken, the volume deregistered and created again under its ID) makes the next
// failure an event again (TestNewCreateOfAReusedIDIsRecorded). A failure of no volume (a
// snapshot whose source volctl never knew) is compared with its plugin's events of its kind.
func appendFailure(tx *store.Tx, ev *store.Event, own string) error {
	f := store.EventFilter{VolumeID: ev.VolumeID}
	if ev.VolumeID == "" {
		f = store.EventFilter{Kind: ev.Kind, PluginID: ev.PluginID}
	}
	recent, err := tx.Events().Recent(failureLookback, f)
	if err != nil {
		return err
	}
	for _, r := range recent {
		if r.Kind != ev.Kind || r.PluginID != ev.PluginID || strings.HasPrefix(r.Message, deleteRefusedKept) {
			// A refused delete is of the kind but no failure of it: the volume was put back
			// to ready, and a delete failing after it, as one before it did, was no event,
			// the log's newest saying the volume kept while it was deleting
			// (TestDeleteFailureAfterARefusalIsRecorded).
			break
		}
		if r.RPC == ev.RPC && r.Code == ev.Code && sameFailureOf(r.Message, ev.Message, own) {
			return nil
		}
	}
	return tx.Events().Append(ev)
}

// failureEvent is appendFailure in its own transaction, logging (not returning) a failure to
// write it, as event does. own begins ev.Message: volctl's words naming what failed.
func (e *Engine) failureEvent(ctx context.Context, ev *store.Event, own string) {
	ev.Message = stopWords(ctx, ev.Message)
	if err := e.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error { return appendFailure(tx, ev, own) }); err != nil {
		e.log.Warn("writing the event log", "err", err)
	}
}

// stopWords is msg, the record of a failure of an operation under ctx, with Go's "context
// canceled" in it said as what ended ctx when that was a cause of its own (context.Cause):
// main's "SIGINT received", "SIGTERM received" when a signal stopped the command. The command's
// error says the signal (cli.SaySignal); what it left recorded, a claim's last error and the
// event log, said "NodeStageVolume: context canceled" to whoever read them later, in words
// that name neither that volctl was stopped nor by what
// (TestInterruptedOperationsRecordTheSignal).
func stopWords(ctx context.Context, msg string) string {
	cause := context.Cause(ctx)
	if !errors.Is(ctx.Err(), context.Canceled) || cause == nil || errors.Is(cause, context.Canceled) {
		return msg
	}
	return strings.ReplaceAll(msg, context.Canceled.Error(), cause.Error())
}
