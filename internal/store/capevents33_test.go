package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestPluginCapabilitiesReadsEachPluginsNewest: plugin-capabilities events of several plugins
// among others: PluginCapabilityChanges gives each plugin's newest changes of capabilities up to
// the limit (one plugin's alone when named), newest first, and nothing of other kinds nor a
// plugin-capabilities event of another change (a version alone). Its statement names the partial
// index (INDEXED BY): were the index missing or unusable, the read fails here rather than
// walking the whole log once more for every plugin list.
func TestPluginCapabilitiesReadsEachPluginsNewest(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error {
		for i := range 12 {
			for _, ev := range []Event{
				{Kind: "plugin-capabilities", PluginID: fmt.Sprintf("p%d", i%3), Message: fmt.Sprintf("plugin %q%s; lost: %d", fmt.Sprintf("p%d", i%3), CapabilityChangeWords, i)},
				{Kind: "plugin-capabilities", PluginID: fmt.Sprintf("p%d", i%3), Message: fmt.Sprintf("plugin %q came back with version %d", fmt.Sprintf("p%d", i%3), i)},
				{Kind: "claim", PluginID: fmt.Sprintf("p%d", i%3), Message: "claim"},
			} {
				if err := tx.Events().Append(&ev); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	read := func(plugin string, limit int) (got []string) {
		t.Helper()
		if err := s.View(ctx, func(tx *Tx) error {
			evs, err := tx.Events().PluginCapabilityChanges(plugin, limit)
			for _, ev := range evs {
				_, n, _ := strings.Cut(ev.Message, "lost: ")
				got = append(got, ev.PluginID+":"+ev.Kind+":"+n)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := fmt.Sprint(read("", 2)), "[p2:plugin-capabilities:11 p1:plugin-capabilities:10 p0:plugin-capabilities:9 p2:plugin-capabilities:8 p1:plugin-capabilities:7 p0:plugin-capabilities:6]"; got != want {
		t.Errorf("every plugin's two newest: %s; want %s", got, want)
	}
	if got, want := fmt.Sprint(read("p1", 3)), "[p1:plugin-capabilities:10 p1:plugin-capabilities:7 p1:plugin-capabilities:4]"; got != want {
		t.Errorf("p1's three newest: %s; want %s", got, want)
	}
	if got := read("nope", 3); len(got) != 0 {
		t.Errorf("a plugin without any: %v", got)
	}
}
