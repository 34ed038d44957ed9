package store

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// MaxStoredMessage is how much of a message the store keeps, in bytes: an event's, and a
// claim's or a plugin's last error. A plugin's own message is cut to 4 KiB before anyone sees it
// (csi.MaxPluginMessage), but volctl's words around the plugin's data (its IDs, names,
// topologies, tokens: as large as gRPC's 4 MiB) are not, and the event log keeps 10,000.
const MaxStoredMessage = 16 << 10

// Event is one entry of the event log: something the engine did or saw.
type Event struct {
	ID       int64     // assigned by Append; increases with every event
	At       time.Time // stamped by Append when zero
	Kind     string    // e.g. "claim", "release", "plugin-health"
	VolumeID string
	Alloc    string
	PluginID string
	RPC      string
	Code     string // gRPC code name, "" for none
	Message  string
}

// EventFilter narrows Recent; empty fields match everything.
type EventFilter struct {
	Kind     string
	VolumeID string
	Alloc    string
	PluginID string
	AfterID  int64 // only events newer than this one, for following the log
}

// EventStore appends to and reads the event log, which keeps the newest events up to a limit
// (DefaultEventLimit; tests set less with WithEventLimit).
type EventStore interface {
	// Append adds an event, sets its ID (and At if zero), and drops the oldest past the limit.
	Append(e *Event) error
	// Recent returns up to limit events matching f, newest first (limit <= 0: all).
	Recent(limit int, f EventFilter) ([]Event, error)
	// Logged returns how many events the log holds.
	Logged() (int, error)
	// Bounds returns the IDs of the oldest and the newest event the log holds, 0 and 0 when it
	// holds none.
	Bounds() (oldest, newest int64, err error)
	// PluginCapabilityChanges returns up to limit plugin-capabilities events of each plugin (of
	// plugin alone when it is not "") whose message begins as the engine words a change of
	// capabilities, `plugin "ID" came back with other capabilities`, newest first, in one
	// statement by their own index (events_plugin_capabilities): Recent with that filter walks
	// the whole log for a plugin that has none, and a plugin restarted with another version
	// alone, however often, leaves its last change in reach. Since 0019 keeps each plugin's last
	// change with its record, only that migration's Go step reads it; the index stays for
	// `volctl events --kind plugin-capabilities --plugin ID`, which `plugin status` advises and
	// SQLite plans through it (TestCapabilityIndexServesTheEventsFilter).
	PluginCapabilityChanges(plugin string, limit int) ([]Event, error)
}

// Events is the event-log API inside this transaction.
func (tx *Tx) Events() EventStore { return events{tx} }

type events struct{ tx *Tx }

const eventColumns = `id, at, kind, volume_id, alloc, plugin_id, rpc, code, message`

func scanEvent(sc scanner) (Event, error) {
	var (
		e  Event
		at int64
	)
	if err := sc.Scan(&e.ID, &at, &e.Kind, &e.VolumeID, &e.Alloc, &e.PluginID, &e.RPC, &e.Code, &e.Message); err != nil {
		return Event{}, err
	}
	e.At = decTime(at)
	return e, nil
}

func (es events) Append(e *Event) error {
	if e.At.IsZero() {
		e.At = es.tx.now()
	}
	// Both as they will read back.
	e.At = decTime(encTime(e.At))
	e.Message = spec.Cut(e.Message, MaxStoredMessage)
	what := fmt.Sprintf("append %s event", e.Kind)
	err := es.tx.queryRow(`
		INSERT INTO events (at, kind, volume_id, alloc, plugin_id, rpc, code, message)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		encTime(e.At), e.Kind, e.VolumeID, e.Alloc, e.PluginID, e.RPC, e.Code, e.Message).Scan(&e.ID)
	if err != nil {
		return wrap(err, what, "")
	}
	// Ids are dense (AUTOINCREMENT, and rows only leave from the old end), so everything at or
	// below newest-limit is exactly the overflow: a primary-key range delete, O(log n) per append,
	// and no statement at all until the log first fills.
	if over := e.ID - int64(es.tx.s.eventLimit); over > 0 {
		_, err = es.tx.exec(`DELETE FROM events WHERE id <= ?`, over)
	}
	return wrap(err, what, "")
}

func (es events) Recent(limit int, f EventFilter) ([]Event, error) {
	query, args := recentQuery(limit, f)
	return listAll(es.tx, "recent events", scanEvent, query, args...)
}

// recentQuery is Recent's statement and its arguments.
func recentQuery(limit int, f EventFilter) (string, []any) {
	where := []string{"id > ?"}
	args := []any{f.AfterID}
	for _, c := range []struct{ col, val string }{
		{"kind", f.Kind}, {"volume_id", f.VolumeID}, {"alloc", f.Alloc}, {"plugin_id", f.PluginID},
	} {
		if c.val != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	return `SELECT ` + eventColumns + ` FROM events WHERE ` + strings.Join(where, " AND ") + ` ORDER BY id DESC LIMIT ?`, append(args, limit)
}

// CapabilityChangeWords is how the engine's plugin-capabilities event of a change of
// capabilities goes on after `plugin "ID"` (PluginCapabilityChanges), and the marks before
// what it lost and gained, in that order, right after them.
const (
	CapabilityChangeWords  = " came back with other capabilities"
	CapabilitiesLostMark   = "; lost: "
	CapabilitiesGainedMark = "; gained: "
)

// CapabilityEventsRead bounds the plugin-capabilities events of each plugin migration 0019
// reads for its last change of capabilities (backfillCapabilityChanges), as `plugin status`
// read them before the change was kept in the plugin's record: a plugin restarted often with
// another version alone records one each time.
const CapabilityEventsRead = 16

// CapabilityChangeOf reads what the engine's plugin-capabilities message of plugin id says it
// lost and gained, from where it says them alone: right after `plugin "ID" came back with other
// capabilities`, lost first. Not wherever the marks appear: the plugin's words quoted after them
// (its vendor_version, its node ID) may hold "; lost: ...", which said, before, that a plugin
// restarted with another version alone had lost a capability it has
// (TestCapabilityChangeIsNotForgedByAVersion). ok is false for a message not so worded.
func CapabilityChangeOf(id, msg string) (lost, gained []string, ok bool) {
	rest, ok := strings.CutPrefix(msg, fmt.Sprintf("plugin %q", id)+CapabilityChangeWords)
	if !ok {
		return nil, nil, false
	}
	list := func(mark string) []string {
		after, found := strings.CutPrefix(rest, mark)
		if !found {
			return []string{}
		}
		names, tail, _ := strings.Cut(after, "; ")
		rest = "; " + tail
		return strings.Split(names, ", ")
	}
	lost = list(CapabilitiesLostMark)
	gained = list(CapabilitiesGainedMark)
	return lost, gained, true
}

// backfillCapabilityChanges is migration 0019's Go step: each plugin's last change of
// capabilities its plugin-capabilities events still in the log record (the newest that lost or
// gained any: one for its version or node ID alone is not), into its record, as `plugin status`
// read it before. A plugin whose events the log dropped has none to keep.
func backfillCapabilityChanges(tx *Tx) error {
	evs, err := tx.Events().PluginCapabilityChanges("", CapabilityEventsRead)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	for _, ev := range evs { // newest first
		if done[ev.PluginID] {
			continue
		}
		lost, gained, ok := CapabilityChangeOf(ev.PluginID, ev.Message)
		if !ok || len(lost) == 0 && len(gained) == 0 {
			continue
		}
		done[ev.PluginID] = true
		err := tx.Plugins().SetCapabilityChange(ev.PluginID, CapabilityChange{At: ev.At, Lost: lost, Gained: gained})
		if err != nil && !errors.Is(err, ErrNotFound) { // the events of a plugin deregistered since stay
			return err
		}
	}
	return nil
}

// The kind is written into the statement, not bound: SQLite uses a partial index only for a
// WHERE it can prove implies the index's, and a bound parameter proves nothing. The message
// begins with the plugin's ID as the engine writes it, quoted by Go's %q: a backslash and a
// double quote in it escaped (ValidateID refuses the control characters %q escapes too); before,
// the ID was compared unescaped, and a plugin ID with either had no change found
// (TestCapabilityChangeOfAQuotedPluginIDMigrates).
func (es events) PluginCapabilityChanges(plugin string, limit int) ([]Event, error) {
	const quoted = `'plugin "' || replace(replace(plugin_id, '\', '\\'), '"', '\"') || '"' || ?`
	return listAll(es.tx, "plugin capability changes", scanEvent, `SELECT `+eventColumns+` FROM (
		SELECT `+eventColumns+`, row_number() OVER (PARTITION BY plugin_id ORDER BY id DESC) AS n
		FROM events INDEXED BY events_plugin_capabilities
		WHERE kind = 'plugin-capabilities' AND (? = '' OR plugin_id = ?)
		AND substr(message, 1, length(`+quoted+`)) = `+quoted+`)
		WHERE n <= ? ORDER BY id DESC`, plugin, plugin, CapabilityChangeWords, CapabilityChangeWords, limit)
}

func (es events) Bounds() (oldest, newest int64, err error) {
	err = es.tx.queryRow(`SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM events`).Scan(&oldest, &newest)
	return oldest, newest, wrap(err, "read the event log's bounds", "")
}

func (es events) Logged() (int, error) {
	var n int
	err := es.tx.queryRow(`SELECT count(*) FROM events`).Scan(&n)
	return n, wrap(err, "count events", "")
}
