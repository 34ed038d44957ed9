package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/volctl/volctl/internal/display"
)

// Smallest screen the layout works in.
const minWidth, minHeight = 40, 10

// Largest screen the dashboard draws: past it, it draws in the top left corner. Every frame
// is padded to the screen's size, so its cost grows with width times height: a terminal set to
// the most TIOCGWINSZ reports (stty rows 65535 cols 65535) made each frame 4 billion cells,
// which took more than 12 GB before the first was drawn. The largest displays' terminals are
// well inside the bound.
const maxWidth, maxHeight = 2000, 1000

// View lays out the tab bar, the body (a table, a detail, or help, with a dialog over it), the
// status line and the key help. It formats nothing but what is on screen.
func (m *Model) View() string {
	c := m.c
	if !m.sized {
		return "" // before the first size: nothing sensible to draw
	}
	if c.Width < minWidth || c.Height < minHeight {
		// A terminal that does not know its size (a serial console, a pty nobody sized)
		// reports 0x0: said, with how to set it, rather than a blank screen.
		return tooSmall(c)
	}
	var body string
	switch {
	case m.showHelp:
		body = m.helpView()
	case m.detail != nil:
		body = m.detail.View()
	default:
		body = m.tabs[m.active].View()
	}
	body = fixHeight(body, bodyHeight(c))
	switch {
	case m.failure != nil:
		body = overlay(c, body, m.failure.View())
	case m.dialog != nil:
		body = overlay(c, body, m.dialog.View())
	}
	var status string
	if m.filtering {
		status = " " + m.filter.View()
	} else {
		status = m.status.View(m.stateText(false), m.stateText(true), m.staleText())
	}
	return strings.Join([]string{
		m.tabBar(),
		fitCodePoints(body, c.Width),
		fitCodePoints(fitLine(status, c.Width), c.Width),
		m.footer(),
	}, "\n")
}

// fitCodePoints cuts each line of s that a terminal giving each code point its own width
// (wcwidth: xterm, VTE, tmux, screen) would draw wider than w cells. The layout measures
// grapheme clusters (display.Width), and a plugin's text can hold a cluster of any length that
// it counts as one character: a run of Hangul leading consonants (two cells each, to such a
// terminal), of Thai SARA AM after a letter (one cell each). Cut by clusters, such a row ran
// hundreds of cells past the right edge, and the terminal wrapped it over the lines below
// (TestClustersMeasuredAsOneDoNotRunPastTheEdge). Such text is not escaped: terminals do not
// agree on it, and Devanagari, emoji joined by ZWJ and decomposed Hangul are measured
// differently the same way; a line is cut only where the wider count passes the edge.
func fitCodePoints(s string, w int) string {
	if !hasMultiByte(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if codePointWidth(l) <= w {
			continue
		}
		// The most of the line, cut by clusters, that fits by code points: the cut's width
		// by clusters, searched (the wider count grows with it).
		lo, hi := 0, display.Width(l)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if codePointWidth(ansi.Truncate(l, mid, "…")) <= w {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		lines[i] = ansi.Truncate(l, lo, "…")
	}
	return strings.Join(lines, "\n")
}

// hasMultiByte reports whether s holds anything but ASCII.
func hasMultiByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// codePointWidth is l's width, its escape sequences stripped, with each code point measured by
// itself, as a terminal using wcwidth lays it out.
func codePointWidth(l string) int {
	if !hasMultiByte(l) {
		return display.Width(l)
	}
	n := 0
	var buf [utf8.UTFMax]byte
	for _, r := range ansi.Strip(l) {
		if r >= 0x1f1e6 && r <= 0x1f1ff {
			// A regional indicator, half a flag: ansi counts one alone two cells, wcwidth
			// one, so a flag is two cells either way; counted two each, a line holding a flag
			// that fits was cut (TestFlagLineThatFitsIsNotCut).
			n++
			continue
		}
		n += ansi.StringWidth(string(buf[:utf8.EncodeRune(buf[:], r)]))
	}
	return n
}

// tooSmall says what the dashboard needs and how to set the size, wrapped to the screen and cut
// to its height: a line wider than the screen is cut at its width by bubbletea's renderer, which
// left "volctl tui needs at least 40x1" of it on a 30x8 terminal. A size of 0 is one the
// terminal does not know, which the renderer cuts nothing to.
func tooSmall(c *Common) string {
	msg := fmt.Sprintf("volctl tui needs at least %dx%d; this terminal is %dx%d: make it larger, or set its size with stty rows %d cols %d",
		minWidth, minHeight, c.Width, c.Height, max(c.Height, 24), max(c.Width, 80))
	if c.Width > 0 {
		msg = ansi.Wrap(msg, c.Width, "")
	}
	if lines := strings.Split(msg, "\n"); c.Height > 0 && len(lines) > c.Height {
		msg = strings.Join(lines[:c.Height], "\n")
	}
	return msg
}

// tabBar names the tabs with their row counts; the active one is bracketed, which reads
// without colour too. When they do not fit, the other tabs shorten (no count, then their
// name's initial, then the brand goes, then their key alone), so the active tab, which says
// what the screen is showing, is never the part the screen's edge cuts off.
func (m *Model) tabBar() string {
	s := m.c.Styles
	var bar string
	for short := range 5 {
		parts := []string{}
		if short < 3 {
			parts = append(parts, s.Brand.Render("volctl"))
		}
		for i, v := range views {
			shown, total := m.tabs[i].count()
			n := strconv.Itoa(total)
			switch {
			case m.tabs[i].filter != "":
				n = strconv.Itoa(shown) + "/" + n
			case tabID(i) == tabEvents:
				n = strconv.Itoa(max(total, m.data.EventsLogged)) // the log's, not the newest the view keeps
			}
			key := strconv.Itoa(i + 1)
			if tabID(i) == m.active {
				parts = append(parts, s.ActiveTab.Render("["+key+" "+v.name+" "+n+"]"))
				continue
			}
			label := key + " " + v.name + " " + n
			switch short {
			case 1:
				label = key + " " + v.name
			case 2, 3:
				label = key + " " + v.name[:1]
			case 4:
				label = key
			}
			parts = append(parts, s.Tab.Render(" "+label+" "))
		}
		bar = " " + strings.Join(parts, " ")
		if lipgloss.Width(bar) <= m.c.Width {
			break
		}
	}
	if m.c.ReadOnly {
		badge := s.Badge.Render("read-only")
		if room := m.c.Width - lipgloss.Width(bar) - lipgloss.Width(badge) - 1; room > 0 {
			bar += strings.Repeat(" ", room) + badge
		}
	}
	return fitLine(bar, m.c.Width)
}

// stateText is the right end of the status line: the filter, the sort, and the data's age;
// brief leaves out the filter and sort, which the screen shows elsewhere.
func (m *Model) stateText(brief bool) string {
	var parts []string
	if t := m.tabs[m.active]; m.detail == nil && !m.showHelp && len(t.view) > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d", t.cursor+1, len(t.view))) // the row position
		if m.active == tabEvents && m.data.EventsLogged > len(t.rows) {
			parts = append(parts, fmt.Sprintf("newest %d of %d events", len(t.rows), m.data.EventsLogged))
		}
	}
	if m.detail == nil && !m.showHelp && !brief {
		t := m.tabs[m.active]
		if t.filter != "" {
			parts = append(parts, "filter "+strconv.Quote(t.filter))
		}
		dir := "↑"
		if t.desc {
			dir = "↓"
		}
		parts = append(parts, "sort "+strings.ToLower(t.cols[t.sortCol].title)+" "+dir)
	}
	switch {
	case m.live.err != nil:
		parts = append(parts, "read failed: "+clean(m.live.err.Error())) // its words may quote stored text
	case m.live.updated.IsZero():
		parts = append(parts, "loading…")
	default:
		parts = append(parts, "updated "+m.live.updated.Format("15:04:05"))
	}
	if slow := m.live.slow(); slow != "" {
		parts = append(parts, slow+"…") // the store busy: what is shown is that old
	}
	return strings.Join(parts, " · ")
}

// staleText is what the status line keeps of the state while an action runs: that reads fail,
// or how long the one out has taken; "" while what is shown is fresh.
func (m *Model) staleText() string {
	switch {
	case m.live.err != nil:
		return "read failed"
	case m.live.slow() != "":
		return m.live.slow() + "…"
	}
	return ""
}

// footerDrops is the order the footer leaves keys out in when they do not fit: ? (help, which
// lists them all) and q never go, so the footer always fits, uncut, down to 40 columns.
var footerDrops = []string{"R", "r", "tab", "S", "s", "F", "/", "↓/j", "enter", "esc"}

// footer is the key help for where the user is, as many keys as fit the width whole.
func (m *Model) footer() string {
	keys := m.shortKeys()
	h := m.help
	h.Width = 0 // measure whole: help's own cut leaves an ellipsis where keys were
	line := func() string { return " " + h.View(keys) }
	for _, drop := range footerDrops {
		if lipgloss.Width(line()) <= m.c.Width {
			break
		}
		keys.short = slices.DeleteFunc(keys.short, func(b key.Binding) bool { return b.Help().Key == drop })
	}
	return fitLine(line(), m.c.Width)
}

// shortKeys are the footer's keys for where the user is.
func (m *Model) shortKeys() bindings {
	k := m.c.Keys
	switch {
	case m.failure != nil:
		return bindings{short: []key.Binding{key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter/esc", "close"))}}
	case m.dialog != nil:
		return bindings{short: []key.Binding{k.FocusNext, k.Choose, k.Cancel}}
	case m.filtering:
		return bindings{short: []key.Binding{k.ApplyFilter, k.ClearFilter}}
	case m.showHelp:
		close := key.NewBinding(key.WithKeys("?"), key.WithHelp("?/esc", "close help"))
		return bindings{short: []key.Binding{close, k.Quit}}
	case m.detail != nil:
		out := []key.Binding{k.Back, k.Down}
		switch {
		case m.detail.claim != nil:
			out = append(out, k.Release)
		case m.detail.tab == tabVolumes:
			out = append(out, m.volumeKeys(true)...)
		}
		return bindings{short: append(out, k.Help, k.Quit, k.Refresh, k.Reconcile)}
	}
	out := []key.Binding{k.Open, k.Filter, k.Sort}
	if keys := views[m.active].keys; keys != nil {
		out = append(out, keys(m)...)
	}
	return bindings{short: append(out, k.Help, k.Quit, k.NextTab, k.Refresh, k.Reconcile)}
}

// hasClaims says whether volume key (as read: engine.VolumeSummary.Key) has live claims on
// this host. Each frame asks it of the claims all, by index: a claim is some 300 bytes.
func (m *Model) hasClaims(key string) bool {
	for i := range m.data.Claims {
		if m.data.Claims[i].VolumeKey() == key {
			return true
		}
	}
	return false
}

// volumeKeys are the actions the selected volume takes: detach only when it has claims on
// this host, or records a staging or attachment no claim holds (VolumeSummary.Leftover), and
// delete only when it can be deleted (pressing d or D otherwise says why),
// forced detach in its detail.
func (m *Model) volumeKeys(detail bool) []key.Binding {
	k := m.c.Keys
	v := m.selectedVolume()
	if v == nil {
		return nil
	}
	var out []key.Binding
	if m.hasClaims(v.Key()) || v.Leftover() {
		out = append(out, k.Detach)
	}
	if detail {
		out = append(out, k.ForceDetach)
	}
	if m.cannotDelete(*v) == "" {
		out = append(out, k.Delete)
	}
	return out
}

// helpView is the `?` screen: the key groups as titled columns, wrapped to the width.
func (m *Model) helpView() string {
	s := m.c.Styles
	var blocks []string
	for _, g := range m.c.Keys.fullHelp() {
		col := m.help.FullHelpView([][]key.Binding{g.keys})
		if col == "" {
			continue // a group whose keys are all off, like Act when read-only
		}
		blocks = append(blocks, lipgloss.JoinVertical(lipgloss.Left, s.Section.Render(g.title), col))
	}
	var rows []string
	var line []string
	width := 1
	for _, b := range blocks {
		w := lipgloss.Width(b) + 4
		if len(line) > 0 && width+w > m.c.Width-4 { // the padding: 2 each side
			rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, line...))
			line, width = nil, 1
		}
		line = append(line, lipgloss.NewStyle().PaddingRight(4).Render(b))
		width += w
	}
	rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, line...))
	out := s.Title.Render("Keys") + "\n\n" + strings.Join(rows, "\n\n")
	if m.c.ReadOnly {
		out += "\n\n" + s.Dim.Render("Read-only (--readonly): actions are off.")
	}
	return lipgloss.NewStyle().Padding(1, 2).Render(out)
}

// fixHeight pads or cuts s to exactly h lines.
func fixHeight(s string, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// overlay centres box over body, which is dimmed to plain text so the dialog is what reads.
func overlay(c *Common, body, box string) string {
	lines := strings.Split(body, "\n")
	boxLines := strings.Split(box, "\n")
	bw := lipgloss.Width(box)
	top := max(0, (len(lines)-len(boxLines))/2)
	left := max(0, (c.Width-bw)/2)
	for i, l := range lines {
		plain := pad(ansi.Strip(l), c.Width)
		j := i - top
		if j < 0 || j >= len(boxLines) {
			lines[i] = c.Styles.Dim.Render(plain)
			continue
		}
		// A wide character the box's edge falls inside of is left out whole, and its cell
		// blanked: cut through, the line was a cell short on the left (the box's border out of
		// line) or a cell too wide on the right (wrapped by the terminal).
		before := pad(ansi.Truncate(plain, left, ""), left)
		rest := max(0, c.Width-left-bw)
		after := fit(lastCells(plain, rest), rest, true, false)
		lines[i] = c.Styles.Dim.Render(before) + pad(boxLines[j], bw) + c.Styles.Dim.Render(after)
	}
	return strings.Join(lines, "\n")
}
