package tui

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Styles are every style the dashboard draws with, all built from one renderer whose colour
// profile and background were fixed before the program took the terminal.
type Styles struct {
	Plain bool // no colour or attributes: text cues must carry everything

	App       lipgloss.Style
	Brand     lipgloss.Style
	Tab       lipgloss.Style
	ActiveTab lipgloss.Style
	Badge     lipgloss.Style

	Header     lipgloss.Style
	Selected   lipgloss.Style
	Warn       lipgloss.Style // a row that needs attention: unsettled claims, not ready
	Bad        lipgloss.Style // a row in trouble: unhealthy plugin, claim with an error
	Dim        lipgloss.Style
	Empty      lipgloss.Style
	FilterText lipgloss.Style
	Cursor     lipgloss.Style

	StatusOK  lipgloss.Style
	StatusErr lipgloss.Style
	Spinner   lipgloss.Style

	Title   lipgloss.Style
	Section lipgloss.Style
	Key     lipgloss.Style

	Dialog        lipgloss.Style
	DialogTitle   lipgloss.Style
	Button        lipgloss.Style
	ButtonFocused lipgloss.Style

	Help help.Styles

	// advise rewrites the volctl commands the dashboard writes itself (Options.Advice); nil
	// leaves them (advised).
	advise func(string) string
}

// NewRenderer decides the colour profile and the background once, before the program starts:
// no colour (the Ascii profile) when colour is off, else the profile termenv reads from the
// environment. The terminal is never asked about its background (an OSC 11 query): one that
// does not answer would hold the first frame for termenv's 5 s timeout, and the read waiting
// for the answer would swallow the user's first key. The background is dark unless
// $COLORFGBG, which terminals that can be light set, says otherwise.
func NewRenderer(out io.Writer, color bool) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(out)
	if !color {
		r.SetColorProfile(termenv.Ascii)
		r.SetHasDarkBackground(true) // unused without colour; set so nothing ever queries
		return r
	}
	r.SetColorProfile(r.ColorProfile())
	r.SetHasDarkBackground(darkBackground(os.Getenv("COLORFGBG")))
	return r
}

// darkBackground reads $COLORFGBG ("15;0": foreground;background, as rxvt and Konsole set
// it): ANSI background colours 7 and 9-15 are light. Unset or unreadable is dark.
func darkBackground(colorfgbg string) bool {
	i := strings.LastIndexByte(colorfgbg, ';')
	if i < 0 {
		return true
	}
	bg, err := strconv.Atoi(colorfgbg[i+1:])
	if err != nil {
		return true
	}
	return !(bg == 7 || bg >= 9 && bg <= 15)
}

// NewStyles builds the dashboard's styles on r.
func NewStyles(r *lipgloss.Renderer) *Styles {
	var (
		accent = lipgloss.AdaptiveColor{Light: "#5A3FC0", Dark: "#9F8CFF"}
		subtle = lipgloss.AdaptiveColor{Light: "#8A8A8A", Dark: "#6C6C6C"}
		faint  = lipgloss.AdaptiveColor{Light: "#B8B8B8", Dark: "#4A4A4A"}
		green  = lipgloss.AdaptiveColor{Light: "#1E7B34", Dark: "#5FD787"}
		yellow = lipgloss.AdaptiveColor{Light: "#8A6100", Dark: "#E5C07B"}
		red    = lipgloss.AdaptiveColor{Light: "#B3261E", Dark: "#FF6B6B"}
		selBg  = lipgloss.AdaptiveColor{Light: "#E4DEFF", Dark: "#3B3363"}
		fg     = lipgloss.AdaptiveColor{Light: "#1A1A1A", Dark: "#EEEEEE"}
	)
	s := &Styles{Plain: r.ColorProfile() == termenv.Ascii}
	s.App = r.NewStyle()
	s.Brand = r.NewStyle().Bold(true).Foreground(accent)
	s.Tab = r.NewStyle().Foreground(subtle)
	s.ActiveTab = r.NewStyle().Bold(true).Foreground(fg)
	s.Badge = r.NewStyle().Foreground(yellow).Bold(true)

	s.Header = r.NewStyle().Bold(true).Foreground(subtle)
	s.Selected = r.NewStyle().Bold(true).Foreground(fg).Background(selBg)
	s.Warn = r.NewStyle().Foreground(yellow)
	s.Bad = r.NewStyle().Foreground(red)
	s.Dim = r.NewStyle().Foreground(subtle)
	s.Empty = r.NewStyle().Foreground(subtle).Italic(true)
	s.FilterText = r.NewStyle().Foreground(accent)
	s.Cursor = r.NewStyle().Reverse(true)

	s.StatusOK = r.NewStyle().Foreground(green)
	s.StatusErr = r.NewStyle().Foreground(red)
	s.Spinner = r.NewStyle().Foreground(accent)

	s.Title = r.NewStyle().Bold(true).Foreground(accent)
	s.Section = r.NewStyle().Bold(true).Foreground(fg)
	s.Key = r.NewStyle().Foreground(subtle)

	s.Dialog = r.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 2)
	s.DialogTitle = r.NewStyle().Bold(true).Foreground(accent)
	s.Button = r.NewStyle().Foreground(subtle)
	s.ButtonFocused = r.NewStyle().Bold(true).Foreground(fg).Background(selBg)

	s.Help = help.Styles{
		Ellipsis:       r.NewStyle().Foreground(faint),
		ShortKey:       r.NewStyle().Foreground(subtle),
		ShortDesc:      r.NewStyle().Foreground(faint),
		ShortSeparator: r.NewStyle().Foreground(faint),
		FullKey:        r.NewStyle().Foreground(accent),
		FullDesc:       r.NewStyle().Foreground(subtle),
		FullSeparator:  r.NewStyle().Foreground(faint),
	}
	return s
}
