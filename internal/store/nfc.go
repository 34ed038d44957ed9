package store

import (
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// IDTable names a table whose keys people type: volume and plugin IDs, group names; or a
// column of the event log that records such a key as it was stored when the event was
// appended (an event outlives its volume, and names an alloc no table may hold any more).
type IDTable int

const (
	VolumeIDs IDTable = iota
	PluginIDs
	GroupNames
	EventVolumeIDs
	EventAllocs
	EventPluginIDs
)

// SameInNFC lists, ordered, the stored keys of a table whose Unicode NFC form is id's: id itself
// when it is stored, and any key an older volctl stored in another normal form (it stored IDs
// as typed, and a terminal may send "é" decomposed). It reads every key, so it is for the path
// where a lookup by the key as given found nothing, never the common one. For an event log
// column (EventVolumeIDs, EventAllocs, EventPluginIDs) it reads the events after afterID only
// (0: all), so a follower asking again for what is new reads the new rows, not the log (events
// --follow polls so); other tables ignore afterID.
func (tx *Tx) SameInNFC(t IDTable, id string, afterID int64) ([]string, error) {
	q := map[IDTable]string{
		VolumeIDs:      keysQuery[VolumeIDs],
		PluginIDs:      keysQuery[PluginIDs],
		GroupNames:     keysQuery[GroupNames],
		EventVolumeIDs: eventKeysAfterQuery[EventVolumeIDs],
		EventAllocs:    eventKeysAfterQuery[EventAllocs],
		EventPluginIDs: eventKeysAfterQuery[EventPluginIDs],
	}[t]
	var args []any
	if t == EventVolumeIDs || t == EventAllocs || t == EventPluginIDs {
		args = append(args, afterID)
	}
	keys, err := tx.keys(fmt.Sprintf("keys like %q", id), q, args...)
	if err != nil {
		return nil, err
	}
	want := norm.NFC.String(id)
	var out []string
	for _, k := range keys {
		if k == id || norm.NFC.String(k) == want {
			out = append(out, k)
		}
	}
	return out, nil
}

// eventKeysAfterQuery reads the keys of an event log column in the events after an ID. The log
// is bounded (DefaultEventLimit rows); events_volume indexes volume_id; id is the rowid, so
// "id > ?" reads only the rows after it.
var eventKeysAfterQuery = map[IDTable]string{
	EventVolumeIDs: `SELECT DISTINCT volume_id FROM events WHERE id > ? ORDER BY volume_id`,
	EventAllocs:    `SELECT DISTINCT alloc FROM events WHERE id > ? ORDER BY alloc`,
	EventPluginIDs: `SELECT DISTINCT plugin_id FROM events WHERE id > ? ORDER BY plugin_id`,
}

// keysQuery reads every key of a table, ordered.
var keysQuery = map[IDTable]string{
	VolumeIDs:  `SELECT id FROM volumes ORDER BY id`,
	PluginIDs:  `SELECT id FROM plugins ORDER BY id`,
	GroupNames: `SELECT name FROM groups ORDER BY name`,
	// The IDs the event log names (a deleted volume's too), for an events filter that matched
	// nothing.
	EventVolumeIDs: `SELECT DISTINCT volume_id FROM events WHERE volume_id != '' ORDER BY volume_id`,
	EventAllocs:    `SELECT DISTINCT alloc FROM events WHERE alloc != '' ORDER BY alloc`,
	EventPluginIDs: `SELECT DISTINCT plugin_id FROM events WHERE plugin_id != '' ORDER BY plugin_id`,
}

// Keys lists, ordered, every stored key of a table (or every ID the event log names): for the
// path where a key typed was not found and volctl looks for the one meant (engine's
// nearStoredID), never the common one.
func (tx *Tx) Keys(t IDTable) ([]string, error) {
	q, ok := keysQuery[t]
	if !ok {
		return nil, fmt.Errorf("store: no keys to list of table %d", t)
	}
	return tx.keys("keys", q)
}

func (tx *Tx) keys(what, q string, args ...any) ([]string, error) {
	return listAll(tx, what, func(sc scanner) (string, error) {
		var k string
		return k, sc.Scan(&k)
	}, q, args...)
}
