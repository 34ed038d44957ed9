package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestCapabilityIndexServesTheEventsFilter: events_plugin_capabilities (migration 0016) was
// to be dropped once 0019 kept each plugin's last change of capabilities with its record, its
// one reader by name (PluginCapabilityChanges) being 0019's Go step. It is not the only one:
// SQLite plans Recent's statement through it when the kind bound is 'plugin-capabilities' and a
// plugin is named, which is `volctl events --kind plugin-capabilities --plugin ID`, the command
// `plugin status` advises (without it, that read walks the log from its newest row down, up to
// DefaultEventLimit rows, for a plugin with few such events). So it stays; this test says who
// reads it, among every statement the store runs on events: Recent's for each filter
// (recentQuery), the log's key lists (keysQuery, eventKeysAfterQuery), the count and the tail's
// delete. A drop that this would not see changes no plan.
func TestCapabilityIndexServesTheEventsFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	if err := s.Update(ctx, func(tx *Tx) error {
		for _, ev := range []Event{{Kind: "plugin-capabilities", PluginID: "p", Message: `plugin "p"` + CapabilityChangeWords + "; lost: x"}, {Kind: "claim", PluginID: "p", VolumeID: "v", Alloc: "a"}} {
			if err := tx.Events().Append(&ev); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, s.Path())
	type stmt struct {
		query string
		args  []any
	}
	var stmts []stmt
	const kind = "plugin-capabilities"
	for _, f := range []EventFilter{{}, {Kind: kind}, {Kind: kind, PluginID: "p"}, {PluginID: "p"}, {Kind: kind, VolumeID: "v"},
		{Kind: kind, Alloc: "a"}, {Kind: "plugin-health", PluginID: "p"}, {Kind: kind, VolumeID: "v", Alloc: "a", PluginID: "p", AfterID: 1}} {
		for _, limit := range []int{0, 1, 20} {
			q, args := recentQuery(limit, f)
			stmts = append(stmts, stmt{q, args})
		}
	}
	for _, q := range keysQuery {
		stmts = append(stmts, stmt{q, nil})
	}
	for _, q := range eventKeysAfterQuery {
		stmts = append(stmts, stmt{q, []any{0}})
	}
	stmts = append(stmts, stmt{`SELECT count(*) FROM events`, nil}, stmt{`DELETE FROM events WHERE id <= ?`, []any{1}})
	var indexed int // statements planned through some index: the plans are read, not empty
	var readers []string
	for _, st := range stmts {
		text := queryPlan(t, db, st.query, st.args...)
		if strings.Contains(text, "INDEX") {
			indexed++
		}
		if strings.Contains(text, "events_plugin_capabilities") {
			readers = append(readers, fmt.Sprint(st.query, st.args))
			if !strings.Contains(st.query, "kind = ? AND") || !strings.Contains(st.query, "plugin_id = ?") || st.args[1] != kind {
				t.Errorf("%s %v is planned through events_plugin_capabilities, not a filter of its kind and a plugin: %s", st.query, st.args, text)
			}
		}
	}
	if indexed == 0 {
		t.Fatal("no statement's plan names an index: the plans were not read")
	}
	q, args := recentQuery(20, EventFilter{Kind: kind, PluginID: "p"})
	if !slices.Contains(readers, fmt.Sprint(q, args)) {
		t.Errorf("volctl events --kind plugin-capabilities --plugin p (%s %v) is not planned through events_plugin_capabilities; read by: %q", q, args, readers)
	}
}
