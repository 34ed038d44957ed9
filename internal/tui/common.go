package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// Common is the one value every component shares: the screen size, the styles, the key map and
// the clock. The root model owns it and changes the size; components only read it.
type Common struct {
	Width, Height int
	Styles        *Styles
	Keys          *KeyMap
	Now           func() time.Time
	ReadOnly      bool

	// after schedules msg in d: tea.Tick in a program, a recorder in tests, which must not
	// sleep through a timer to see what a command does.
	after func(d time.Duration, msg func() tea.Msg) tea.Cmd
}

func tick(d time.Duration, msg func() tea.Msg) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return msg() })
}
