package tui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
)

// KeyMap is every key the dashboard answers, with the help text `?` and the footer show.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Back                              key.Binding

	Tabs             []key.Binding // one per view: 1, 2, ... in views' order
	NextTab, PrevTab key.Binding

	Filter, ClearFilter, ApplyFilter key.Binding
	Sort, Reverse                    key.Binding

	Release, Detach, Delete key.Binding
	ForceDetach, Reconcile  key.Binding
	FocusNext, FocusPrev    key.Binding // in the confirmation dialog
	Choose, Cancel          key.Binding

	Refresh, Help, Quit key.Binding
}

// DefaultKeyMap returns the bindings; readOnly leaves the action keys out.
func DefaultKeyMap(readOnly bool) *KeyMap {
	b := func(keys []string, helpKey, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(helpKey, desc))
	}
	k := &KeyMap{
		Up:       b([]string{"up", "k"}, "↑/k", "up"),
		Down:     b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:   b([]string{"pgup", "ctrl+u"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown", "ctrl+d", " "}, "pgdn", "page down"),
		Top:      b([]string{"home", "g"}, "g/home", "first row"),
		Bottom:   b([]string{"end", "G"}, "G/end", "last row"),
		Open:     b([]string{"enter"}, "enter", "details"),
		Back:     b([]string{"esc", "backspace"}, "esc", "back"),

		NextTab: b([]string{"tab", "right", "l"}, "tab", "next view"),
		PrevTab: b([]string{"shift+tab", "left", "h"}, "shift+tab", "previous view"),

		Filter:      b([]string{"/"}, "/", "filter"),
		ClearFilter: b([]string{"esc"}, "esc", "clear filter"),
		ApplyFilter: b([]string{"enter"}, "enter", "keep filter"),
		Sort:        b([]string{"s"}, "s", "sort"),
		Reverse:     b([]string{"S"}, "S", "reverse"),

		Release: b([]string{"x"}, "x", "release"),
		Detach:  b([]string{"d"}, "d", "detach"),
		Delete:  b([]string{"D"}, "D", "delete"),

		ForceDetach: b([]string{"F"}, "F", "force detach"),
		Reconcile:   b([]string{"R"}, "R", "reconcile"),

		FocusNext: b([]string{"tab", "right", "l"}, "←/→", "move"),
		FocusPrev: b([]string{"shift+tab", "left", "h"}, "←/→", "move"),
		Choose:    b([]string{"enter"}, "enter", "choose"),
		Cancel:    b([]string{"esc", "n", "q"}, "esc", "cancel"),

		Refresh: b([]string{"r"}, "r", "refresh"),
		Help:    b([]string{"?"}, "?", "help"),
		Quit:    b([]string{"q", "ctrl+c"}, "q", "quit"),
	}
	for i, v := range views {
		n := strconv.Itoa(i + 1)
		k.Tabs = append(k.Tabs, b([]string{n}, n, strings.ToLower(v.name)))
	}
	if readOnly {
		for _, a := range k.actions() {
			a.SetEnabled(false)
		}
	}
	return k
}

// actions are the keys that change something; --readonly switches them off.
func (k *KeyMap) actions() []*key.Binding {
	return []*key.Binding{&k.Release, &k.Detach, &k.Delete, &k.ForceDetach, &k.Reconcile}
}

// isAction reports whether msg is one of the action keys, switched off or not: a read-only
// dashboard says why nothing happens.
func (k *KeyMap) isAction(msg string) bool {
	for _, a := range k.actions() {
		for _, name := range a.Keys() {
			if name == msg {
				return true
			}
		}
	}
	return false
}

// bindings is a help.KeyMap made of whatever applies where the user is.
type bindings struct {
	short []key.Binding
	full  [][]key.Binding
}

func (b bindings) ShortHelp() []key.Binding  { return b.short }
func (b bindings) FullHelp() [][]key.Binding { return b.full }

// fullHelp is the `?` screen: the keys grouped by what they do.
func (k *KeyMap) fullHelp() []helpGroup {
	return []helpGroup{
		{"Move", []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Open, k.Back}},
		{"Views", append(slices.Clone(k.Tabs), k.NextTab, k.PrevTab)},
		{"Find", []key.Binding{k.Filter, k.ClearFilter, k.Sort, k.Reverse}},
		{"Act", []key.Binding{k.Release, k.Detach, k.ForceDetach, k.Delete, k.Reconcile}},
		{"General", []key.Binding{k.Refresh, k.Help, k.Quit}},
	}
}

// helpGroup is one titled column of the help screen.
type helpGroup struct {
	title string
	keys  []key.Binding
}
