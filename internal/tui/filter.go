package tui

import (
	"strings"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
)

// filterInput is the one-line filter editor. bubbles/textinput would pull a clipboard
// package into the module for a feature a filter does not need; typing, pasting (bracketed
// paste arrives as runes), backspace, ctrl+w and ctrl+u are all a filter needs.
type filterInput struct {
	c     *Common
	value []rune
}

// Update edits the value; it reports whether the value changed.
func (f *filterInput) Update(msg tea.KeyMsg) bool {
	switch msg.Type {
	case tea.KeySpace:
		f.value = append(f.value, ' ')
	case tea.KeyRunes:
		for _, r := range msg.Runes {
			if unicode.IsPrint(r) {
				f.value = append(f.value, r)
			}
		}
	case tea.KeyBackspace:
		if len(f.value) > 0 {
			f.value = f.value[:len(f.value)-1]
		}
	case tea.KeyCtrlW:
		v := strings.TrimRight(string(f.value), " ")
		f.value = []rune(v[:strings.LastIndex(v, " ")+1])
	case tea.KeyCtrlU:
		f.value = f.value[:0]
	default:
		return false
	}
	return true
}

func (f *filterInput) Value() string     { return string(f.value) }
func (f *filterInput) SetValue(s string) { f.value = []rune(s) }

// View draws the prompt, the value and a cursor: a reverse-video block, or an underscore
// without colour.
func (f *filterInput) View() string {
	s := f.c.Styles
	cur := s.Cursor.Render(" ")
	if s.Plain {
		cur = "_"
	}
	out := s.FilterText.Render("/ ") + string(f.value) + cur
	if len(f.value) == 0 {
		out += s.Dim.Render(" type to filter; enter keeps it, esc clears it")
	}
	return out
}
