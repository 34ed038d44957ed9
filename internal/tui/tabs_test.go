package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// A groups view, as k9s and lazygit users expect one: a row per group with its allocs, claims,
// volumes and the error that kept an alloc from its volumes; Enter shows its allocs.
func TestGroupsView(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	h.send(tea.WindowSizeMsg{Width: 200, Height: 30})
	h.keys("5")
	if h.m.active != tabGroups {
		t.Fatalf("5 shows %s, want the groups view", tabNames[h.m.active])
	}
	out := h.m.View()
	for _, want := range []string{"[5 Groups 2]", "GROUP", "web", "mysql-0, mysql-1", "nightly", `nightly[0]: claim "pg-data"`} {
		if !strings.Contains(out, want) {
			t.Errorf("groups view lacks %q:\n%s", want, out)
		}
	}
	h.keys("end", "enter")
	out = h.m.View()
	for _, want := range []string{"Group web", "web[0]", "mysql-0 (write, published)", "web[1]"} {
		if !strings.Contains(out, want) {
			t.Errorf("group detail lacks %q:\n%s", want, out)
		}
	}
}

// Every view comes from the registry: its key, its tab, its table, its help line.
func TestViewsComeFromOneRegistry(t *testing.T) {
	h := newHarness(t, fixture(), Options{})
	if len(h.m.tabs) != len(views) || len(h.m.c.Keys.Tabs) != len(views) {
		t.Fatalf("%d tables and %d keys for %d views", len(h.m.tabs), len(h.m.c.Keys.Tabs), len(views))
	}
	h.send(tea.WindowSizeMsg{Width: 200, Height: 50})
	bar := strings.Split(h.m.View(), "\n")[0]
	h.keys("?")
	helpScreen := h.m.View()
	for i, v := range views {
		if !strings.Contains(bar, v.name) {
			t.Errorf("tab bar lacks %s: %q", v.name, bar)
		}
		if !strings.Contains(helpScreen, strings.ToLower(v.name)) {
			t.Errorf("help lacks the key of %s:\n%s", v.name, helpScreen)
		}
		if v.rows == nil || v.open == nil || v.refresh == nil || v.empty == "" || len(v.columns) == 0 {
			t.Errorf("view %d (%s) lacks a part", i, v.name)
		}
	}
}
