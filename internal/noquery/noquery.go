// Package noquery keeps volctl from asking the terminal about its colours when the process
// starts. bubbletea v1 does so in its package init (tea_init.go: lipgloss.HasDarkBackground on
// os.Stdout): on a terminal that never answers the OSC 11 query that costs termenv's 5 s
// timeout before any command runs — `volctl version` as much as `volctl tui` — and the read
// that waits for the answer eats what the user types meanwhile, so the dashboard's first key
// is lost.
//
// Importing this package (cmd/volctl/main.go does, blank) hides os.Stdout from every package
// initialised after it: Go initialises packages in import-path order among those whose imports
// are ready, and this one imports only os, so it runs before bubbletea, whose imports include
// packages (os/signal, golang.org/x/sys/unix) that sort after it. lipgloss's default renderer,
// made at its init, then sees no terminal and never queries it. main calls Restore first
// thing; the dashboard decides its colours itself (tui.NewRenderer), without a query.
package noquery

import "os"

var stdout = os.Stdout

func init() { os.Stdout = nil }

// Restore puts os.Stdout back. main calls it before anything else.
func Restore() {
	if os.Stdout == nil {
		os.Stdout = stdout
	}
}
