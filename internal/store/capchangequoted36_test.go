package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// Migration 0019 backfills a plugin's last capability change from its events, found by their
// words, `plugin "ID" came back with other capabilities`, which the engine writes with the ID
// quoted as Go quotes it (%q). The query compared them with the ID between plain double quotes:
// a plugin ID with a double quote or a backslash in it (both taken by ValidateNewID, as Nomad
// takes them), written escaped in the event, never matched, and its change, which `plugin
// status` showed before the upgrade, was lost by it. Now the ID is escaped as %q escapes those.
// A plain ID still matches (TestCapabilityChangeMigratesFromTheEventLog).
func TestCapabilityChangeOfAQuotedPluginIDMigrates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := open(context.Background(), dir, 18)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, old.Path())
	ids := []string{`say "hi"`, `c:\hp`, `x\"y`}
	for i, id := range ids {
		if _, err := db.Exec(`INSERT INTO plugins (id, type, socket, created_at, updated_at) VALUES (?, 'monolith', ?, 1, 1)`, id, fmt.Sprintf("/run/p%d.sock", i)); err != nil {
			t.Fatal(err)
		}
		msg := fmt.Sprintf("plugin %q%s; lost: STAGE_UNSTAGE_VOLUME", id, CapabilityChangeWords)
		if _, err := db.Exec(`INSERT INTO events (at, kind, plugin_id, message) VALUES (?, 'plugin-capabilities', ?, ?)`, 10000+i, id, msg); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 18: %v", err)
	}
	defer s.Close()
	for i, id := range ids {
		var p Plugin
		view(t, s, func(tx *Tx) error {
			var err error
			p, err = tx.Plugins().Get(id)
			return err
		})
		want := &CapabilityChange{At: decTime(int64(10000 + i)), Lost: []string{"STAGE_UNSTAGE_VOLUME"}, Gained: []string{}}
		if !reflect.DeepEqual(p.CapabilityChange, want) {
			t.Errorf("plugin %q after the migration: capability change %+v; want %+v", id, p.CapabilityChange, want)
		}
	}
}
