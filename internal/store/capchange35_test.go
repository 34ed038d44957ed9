package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// Migration 0019: a plugin's last change of capabilities, which `plugin status` read back from
// its plugin-capabilities events, is kept in its record. A database from before it gets each
// plugin's newest change its events in the log still hold (not a version-only event after it,
// not another plugin's, not a deregistered plugin's: the migration does not fail on those),
// so what `plugin status` showed before the upgrade it shows after; a plugin that never
// changed has none. SetCapabilityChange then replaces it, and the record outlives the log.
func TestCapabilityChangeMigratesFromTheEventLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := open(context.Background(), dir, 18)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, old.Path())
	if _, err := db.Exec(seedV1); err != nil {
		t.Fatalf("seed: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO plugins (id, type, socket, created_at, updated_at) VALUES ('steady', 'monolith', '/run/s.sock', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	changed := func(id, rest string) string { return fmt.Sprintf("plugin %q%s%s", id, CapabilityChangeWords, rest) }
	for i, ev := range []struct {
		plugin, msg string
	}{
		{"hp", changed("hp", "; lost: EXPAND_VOLUME")},
		{"hp", changed("hp", "; lost: STAGE_UNSTAGE_VOLUME, PUBLISH_UNPUBLISH_VOLUME; gained: GET_VOLUME_STATS; its vendor_version is now \"2\", was \"1\"")},
		{"hp", `plugin "hp" came back; its vendor_version is now "3; lost: NOTHING", was "2"`},
		{"gone", changed("gone", "; lost: STAGE_UNSTAGE_VOLUME")},
		{"steady", `plugin "steady" came back; its node ID is now node "b", was node "a"`},
	} {
		if _, err := db.Exec(`INSERT INTO events (at, kind, plugin_id, message) VALUES (?, 'plugin-capabilities', ?, ?)`, 10000+i, ev.plugin, ev.msg); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 18: %v", err)
	}
	defer s.Close()
	get := func(id string) *CapabilityChange {
		t.Helper()
		var p Plugin
		view(t, s, func(tx *Tx) error {
			var err error
			p, err = tx.Plugins().Get(id)
			return err
		})
		return p.CapabilityChange
	}
	want := &CapabilityChange{At: decTime(10001), Lost: []string{"STAGE_UNSTAGE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"}, Gained: []string{"GET_VOLUME_STATS"}}
	if got := get("hp"); !reflect.DeepEqual(got, want) {
		t.Fatalf("hp after the migration: %+v; want its newest change, %+v", got, want)
	}
	if got := get("steady"); got != nil {
		t.Errorf("a plugin that never changed capabilities: %+v; want none", got)
	}
	// The record outlives the log, and a later change replaces it.
	s.eventLimit = 1
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "claim", Message: "x"}) })
	if got := get("hp"); !reflect.DeepEqual(got, want) {
		t.Errorf("hp once the log dropped its events: %+v; want %+v", got, want)
	}
	update(t, s, func(tx *Tx) error {
		return tx.Plugins().SetCapabilityChange("hp", CapabilityChange{Gained: []string{"STAGE_UNSTAGE_VOLUME"}})
	})
	if got := get("hp"); got == nil || got.At.IsZero() || got.Lost == nil || len(got.Lost) != 0 || !reflect.DeepEqual(got.Gained, []string{"STAGE_UNSTAGE_VOLUME"}) {
		t.Errorf("hp after a later change: %+v; want it, stamped, nothing lost ([] in JSON)", got)
	}
}
