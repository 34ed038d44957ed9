package tui

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// How each view turns engine values into rows (the views themselves are in tabs.go). Cells are
// formatted here, once per refresh, and the table only cuts and pads them.

// none is what an empty cell shows, as in the command line's tables.
const none = display.None

func volumeColumns() []column {
	return []column{
		{title: "ID", min: 8, max: 40},
		{title: "NAME", min: 8, max: 30, drop: 1, hideBelow: 100},
		{title: "PLUGIN", min: 6, max: 20, drop: 3},
		{title: "CAPACITY", min: 8, max: 10, numeric: true, right: true, drop: 4},
		{title: "MODE", min: 12, max: 32, squeeze: 1, drop: 5}, // gives way to why a volume is not schedulable
		{title: "R/W", min: 3, max: 9, numeric: true, right: true, drop: 2},
		{title: "SCHEDULABLE", min: 11, max: 32}, // what the list is for: never drops
	}
}

func volumeRows(vs []engine.VolumeSummary, plugins []engine.PluginInfo) []row {
	byID := make(map[string]*engine.PluginInfo, len(plugins))
	for i := range plugins {
		byID[plugins[i].Key()] = &plugins[i]
	}
	return rowsOf(vs, func(i int, v engine.VolumeSummary) row {
		sched := v.Schedulability(byID[v.PluginKey()])
		rw := strconv.Itoa(v.ReadClaims) + "/" + strconv.Itoa(v.WriteClaims)
		r := newRow(v.Key(), i, []string{
			v.ID, v.Name, v.PluginID, display.Bytes(v.CapacityBytes), modeText(v.AccessMode, v.AttachmentMode), rw, sched.String(),
		})
		r.nums[3] = v.CapacityBytes
		r.nums[5] = int64(v.ReadClaims + v.WriteClaims)
		r.tone = badOrWarn(!sched.OK(), v.Unsettled > 0 || v.Leftover() || v.OwesExpansion())
		return r
	})
}

func claimColumns() []column {
	return []column{
		{title: "VOLUME", min: 12, max: 30},
		{title: "ALLOC", min: 8, max: 24},
		{title: "MODE", min: 5, max: 5, drop: 2},
		{title: "STATE", min: 16, max: 40, squeeze: 1}, // "node-staged (ne…" still says the state
		{title: "TARGET", min: 16, max: 160, midCut: true, squeeze: 2, drop: 3, hideBelow: 100},
		{title: "AGE", min: 4, max: 6, numeric: true, right: true, drop: 1},
		{title: "LAST ERROR", min: 10, max: 200, fill: true, last: true}, // gives way last
	}
}

func claimRows(cs []engine.ClaimInfo, now time.Time) []row {
	return rowsOf(cs, func(i int, c engine.ClaimInfo) row {
		r := newRow(strconv.FormatInt(c.ID, 10), i, []string{
			c.VolumeID, c.Alloc, c.Mode, c.Condition().String(), c.TargetPath, display.Age(now, c.CreatedAt), c.LastErrorText(),
		})
		// Ascending age is newest made first, by the claim's ID (the order claims are made in),
		// not its wall-clock stamp: a claim made after the clock stepped back sorts as the newest.
		r.nums[5] = -c.ID
		r.tone = badOrWarn(c.LastError != "" || c.Degraded || c.Covered != "", !c.AtRest())
		return r
	})
}

func pluginColumns() []column {
	return []column{
		{title: "ID", min: 6, max: 24},
		{title: "PROVIDER", min: 8, max: 32, drop: 3},
		{title: "VERSION", min: 7, max: 16, drop: 6, hideBelow: 100},
		{title: "TYPE", min: 4, max: 10, drop: 4},
		{title: "HEALTH", min: 9, max: 9},
		{title: "LATENCY", min: 7, max: 10, numeric: true, right: true, drop: 1},
		{title: "NODE", min: 6, max: 24, drop: 5, hideBelow: 100},
		{title: "CAPABILITIES", min: 12, max: 400, fill: true, drop: 2},
	}
}

func pluginRows(ps []engine.PluginInfo) []row {
	return rowsOf(ps, func(i int, p engine.PluginInfo) row {
		health := p.Health()
		r := newRow(p.Key(), i, []string{
			p.ID, p.Provider, p.Version, string(p.Type), health.String(), p.ProbeLatency.String(), p.NodeID, capSummary(p.Capabilities),
		})
		r.nums[5] = int64(p.ProbeLatency)
		r.tone = badOrWarn(health == engine.PluginUnhealthy, health == engine.PluginNotReady || health == engine.PluginUnknown)
		return r
	})
}

func eventColumns() []column {
	return []column{
		{title: "AGE", min: 4, max: 6, numeric: true, right: true},
		{title: "KIND", min: 8, max: 24},
		{title: "VOLUME", min: 6, max: 24, drop: 1},
		{title: "ALLOC", min: 5, max: 16, drop: 2, hideBelow: 100},
		{title: "PLUGIN", min: 6, max: 16, drop: 3, hideBelow: 100},
		{title: "MESSAGE", min: 16, max: 1000, fill: true},
	}
}

func eventRows(es []engine.EventInfo, now time.Time) []row {
	return rowsOf(es, func(i int, e engine.EventInfo) row {
		r := newRow(strconv.FormatInt(e.ID, 10), i, []string{
			display.Age(now, e.At), e.Kind, e.VolumeID, e.Alloc, e.PluginID, e.Message,
		})
		// AGE sorts by the log's order, the events' IDs, not their times: those are the wall
		// clock's, and one stepped back between two events stamps the newer one earlier, which
		// sorted it below the older ones (TestEventsNewestFirstAfterTheClockSteppedBack).
		r.nums[0] = -e.ID
		r.tone = badOrWarn(e.Code != "", false)
		return r
	})
}

// rowsOf makes one row per value, in order; mk gets the value's index, the row's ref.
func rowsOf[T any](xs []T, mk func(i int, x T) row) []row {
	rows := make([]row, len(xs))
	for i, x := range xs {
		rows[i] = mk(i, x)
	}
	return rows
}

// badOrWarn is a row's tone: bad, else warn (wants a look), else normal.
func badOrWarn(bad, warn bool) tone {
	switch {
	case bad:
		return toneBad
	case warn:
		return toneWarn
	}
	return toneNormal
}

// newRow cleans the cells (no control characters from a plugin's strings reach the terminal),
// fills empty ones with <none>, and precomputes what the filter matches.
func newRow(key string, ref int, cells []string) row {
	for i, c := range cells {
		c = clean(c)
		if strings.TrimSpace(c) == "" {
			c = none
		}
		cells[i] = c
	}
	return row{key: key, ref: ref, cells: cells, nums: make([]int64, len(cells)),
		search: strings.ToLower(strings.Join(cells, "\x00"))}
}

// clean replaces control characters, escape sequences' ESC included, LINE and PARAGRAPH
// SEPARATOR (line breaks too) and bidi embeddings, overrides and isolates (which would reorder
// the rest of the row) with spaces; writes a character that shows as nothing (spec.IsInvisible)
// or any other format character, save the joiners and bidi marks that shape text (keptFormat),
// as the command line writes the invisibles, "\u200b": blanked, "n1\u200b" would still read as
// "n1", and terminals do not agree on the width of most of them (Unicode's tags, say), which
// the layout must know; and writes a byte that is not UTF-8 as U+FFFD, never raw (a lone 0x9b
// is C1's CSI to a terminal that takes 8-bit controls).
func clean(s string) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) || utf8.ValidString(s[i:]) && !strings.ContainsFunc(s[i:], unclean) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteRune(r)
		case spec.IsInvisible(r), escapedFormat(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		case unclean(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unclean is what clean changes: a C0 or C1 control, DEL, a line or paragraph separator, a bidi
// control, an invisible, another format character it does not keep.
func unclean(r rune) bool {
	return r < 0x20 || r >= 0x7f && r < 0xa0 || r == '\u2028' || r == '\u2029' || spec.IsBidiControl(r) ||
		spec.IsInvisible(r) || escapedFormat(r)
}

// escapedFormat is a format character (Cf) clean writes as an escape: any but the bidi controls
// (blanked) and those kept.
func escapedFormat(r rune) bool {
	return r >= 0xa0 && unicode.Is(unicode.Cf, r) && !spec.IsBidiControl(r) && !keptFormat(r)
}

// keptFormat is a format character that shapes the text beside it and is drawn as it is: ZERO
// WIDTH NON-JOINER and JOINER (emoji sequences, the scripts written with them) and the bidi
// marks LRM, RLM and ALM, which act only on the characters beside them.
func keptFormat(r rune) bool {
	switch r {
	case 0x200c, 0x200d, 0x200e, 0x200f, 0x061c:
		return true
	}
	return false
}

func modeText(a spec.AccessMode, m spec.AttachmentMode) string {
	if a == "" {
		return ""
	}
	if m == spec.BlockDevice {
		return string(a) + " (block)"
	}
	return string(a)
}

// capSummary lists a plugin's capabilities short enough for one cell; the detail view has
// the CSI names.
func capSummary(c engine.CapabilityNames) string {
	short := func(names []string) string {
		out := make([]string, len(names))
		for i, n := range names {
			n = strings.ToLower(n)
			n = strings.TrimSuffix(n, "_volume")
			out[i] = strings.ReplaceAll(n, "_", "-")
		}
		return strings.Join(out, " ")
	}
	var parts []string
	if len(c.Controller) > 0 {
		parts = append(parts, "controller: "+short(c.Controller))
	}
	if len(c.Node) > 0 {
		parts = append(parts, "node: "+short(c.Node))
	}
	return strings.Join(parts, "; ")
}
