// Package display words the quantities volctl shows — sizes, ages, latencies, topologies — the
// same way on the command line and in the dashboard. It is pure (no I/O, no state) and imports
// nothing of volctl's but the spec vocabulary, so the engine's own facts (engine/facts.go) word
// themselves with it too. Like cli/cli's pkg/cmd/pr/shared/display.go, it is the one place a
// quantity is worded: a face styles these strings (colour, cutting), it never rewords them.
package display

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/volctl/volctl/internal/spec"
)

// None is what an empty cell or value shows.
const None = "<none>"

// Bytes renders a size as people read capacities ("10 GiB", "1.5 MiB", "999 B"): under 10 of
// its unit with one decimal, else none; 0 or less is empty. The size is rounded before its unit
// is chosen: one a byte under 1 MiB is "1.0 MiB", not humanize.IBytes's "1024 KiB", and one
// that rounds to 10 KiB is "10 KiB", not "10.0 KiB".
func Bytes(n int64) string {
	if n <= 0 {
		return ""
	}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1024, 0
	for unit < len(iecUnits)-1 && shownSize(v) >= 1024 {
		v, unit = v/1024, unit+1
	}
	if shownSize(v) < 10 {
		return fmt.Sprintf("%.1f %s", v, iecUnits[unit])
	}
	return fmt.Sprintf("%.0f %s", v, iecUnits[unit])
}

var iecUnits = []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// BytesExactly is Bytes(n), with n in bytes beside it where the figure is rounded: a size
// that fell 4 KiB short of 2 GiB read "2.0 GiB". The command line's views and the dashboard's
// show a volume's sizes so (TestDashboardVolumeDetailShowsASizeShortOfItsUnitExactly).
func BytesExactly(n int64) string {
	s := Bytes(n)
	if s == "" || BytesExact(n) {
		return s
	}
	return fmt.Sprintf("%s (%d bytes)", s, n)
}

// BytesExact says whether Bytes(n) shows n exactly: the figure it prints, times its unit, is n.
func BytesExact(n int64) bool {
	if n < 1024 {
		return true
	}
	v, unit := float64(n)/1024, 0
	for unit < len(iecUnits)-1 && shownSize(v) >= 1024 {
		v, unit = v/1024, unit+1
	}
	shown := shownSize(v)
	scale := new(big.Int).Lsh(big.NewInt(1), uint(10*(unit+1)))
	// shown has at most one decimal: shown*10 is a whole number, exact in a float64.
	tenths := new(big.Int).Mul(big.NewInt(int64(math.Round(shown*10))), scale)
	return tenths.Cmp(new(big.Int).Mul(big.NewInt(n), big.NewInt(10))) == 0
}

// shownSize is v as Bytes prints it: to one decimal under 10, to a whole number from there.
func shownSize(v float64) float64 {
	if r := math.Round(v*10) / 10; r < 10 {
		return r
	}
	return math.Round(v)
}

// Age renders how long ago t was in its largest whole unit: "45s", "2m", "5h", "3d"; empty for
// a zero t. A moment in the future (clocks differ) is "0s".
func Age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// Ago is Age in a sentence: "2m ago", or "just now" under a second; empty for a zero t.
func Ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if now.Sub(t) < time.Second {
		return "just now"
	}
	return Age(now, t) + " ago"
}

// Stamp is a moment in full with its age: "2026-03-14 09:00:00 UTC (3h ago)".
func Stamp(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05 MST") + " (" + Ago(now, t) + ")"
}

// Latency renders a duration with two significant digits at most, in the unit that reads:
// "800µs", "1.2ms", "12ms", "5.0s", "1m30s", and "450ns" under a microsecond; 0 is empty. It
// is rounded before its unit is chosen: 999.5µs is "1.0ms", not "1000µs", 9.96ms "10ms", not
// "10.0ms", 59.97s "1m0s", not "60.0s".
func Latency(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d.Round(time.Microsecond) == 0:
		return fmt.Sprintf("%dns", d)
	case d.Round(time.Microsecond) < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Round(time.Microsecond)/time.Microsecond)
	case d.Round(100*time.Microsecond) < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d.Round(100*time.Microsecond))/float64(time.Millisecond))
	case d.Round(time.Millisecond) < time.Second:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond)/time.Millisecond)
	case d.Round(100*time.Millisecond) < time.Minute:
		return fmt.Sprintf("%.1fs", d.Round(100*time.Millisecond).Seconds())
	}
	return d.Round(time.Second).String()
}

// Segments renders topology segments sorted by key: "node=n1, zone=a".
func Segments(segments map[string]string) string {
	parts := make([]string, 0, len(segments))
	for _, k := range slices.Sorted(maps.Keys(segments)) {
		parts = append(parts, k+"="+segments[k])
	}
	return strings.Join(parts, ", ")
}

// Topologies renders a list of topologies, each in braces: "{rack=r2, zone=a} {zone=b}".
func Topologies(ts []spec.Topology) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		parts = append(parts, "{"+Segments(t.Segments)+"}")
	}
	return strings.Join(parts, " ")
}

// YesNo is a flag in a detail line.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// MaxVolumes is a node plugin's max_volumes_per_node as shown: 0 (the field unset) is
// "unlimited"; a negative one, which CSI does not allow and volctl refuses when it
// fingerprints (one an older volctl recorded), is shown as what it is, never as no limit.
func MaxVolumes(n int64) string {
	switch {
	case n == 0:
		return "unlimited"
	case n < 0:
		return fmt.Sprintf("%d (invalid: CSI requires 0 or more)", n)
	}
	return strconv.FormatInt(n, 10)
}

// Plural is "1 claim", "2 claims".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Escape makes text from outside volctl — a plugin's version, node ID, topology or context, a
// name in a spec file — fit to print on a terminal: each control character (C0, newline and tab
// included, DEL, C1), bidi override or isolate, character that shows as nothing (a zero width
// space) and byte that is not UTF-8 is written as strconv.Quote writes it ("\x1b", "\n",
// "\u009b", "\u200b", "\xff"), the rest (non-ASCII letters, backslashes) as it is. An
// escape sequence in a plugin's answer then reads as text, not as an order to recolour the
// screen, retitle the window or move the cursor; a newline cannot start a line of its own; "n1"
// and "n1\u200b" read as two. The dashboard blanks the controls instead (tui's clean): it draws
// cells, not text; it writes the invisible ones as this does. It is
// spec.EscapeControl, which the spec diagnostics' source lines go through too.
func Escape(s string) string { return spec.EscapeControl(s) }

// Width is how many terminal cells text takes: a wide character (CJK, most emoji) two, a
// combining mark none, an ANSI escape sequence (a face's styling) none, as the terminal lays
// them out. Columns are padded by it, not by a count of runes, or a CJK name puts every column
// after it out of line. Printable ASCII, most of what a table holds, is counted by bytes,
// without ansi's parser.
func Width(text string) int {
	for i := 0; i < len(text); i++ {
		if text[i] >= 0x80 || text[i] < 0x20 {
			return ansi.StringWidth(text)
		}
	}
	return len(text)
}

// Truncate cuts text to at most w cells (Width), ending it with tail when it cut; a wide
// character the cut would fall inside of is left out whole.
func Truncate(text string, w int, tail string) string {
	if Width(text) <= w {
		return text
	}
	return ansi.Truncate(text, w, tail)
}
