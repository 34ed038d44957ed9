package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// A volume's context (and parameters) are
// shown only in its detail, as "Key = value" lines whose value wraps under itself. A key wider
// than the key column (a CSI plugin's volume_context keys are often long:
// "storage.kubernetes.io/csiProvisionerIdentity"), or one of wide characters (padded by runes,
// not cells), pushed the value right while it was still wrapped as if the key fitted: the first
// line ran past the screen and was cut with "…", the cut part of the value drawn nowhere. Found
// by helper review63.
func TestDetailKeepsValuesUnderLongOrWideKeys(t *testing.T) {
	const (
		longKey, longVal = "storage.kubernetes.io/csiProvisionerIdentity", "1700000000000-8081-hostpath.csi.k8s.io-node-1"
		wideKey          = "数据库"
	)
	wideVal := strings.Repeat("x", 70) + "END"
	for _, width := range []int{80, 120} {
		f := fixture()
		v := f.volumes["mysql-0"]
		v.Context = map[string]string{longKey: longVal, wideKey: wideVal}
		f.volumes["mysql-0"] = v
		h := newHarness(t, f, Options{})
		h.send(tea.WindowSizeMsg{Width: width, Height: 40})
		h.keys("enter", "G") // the volume's detail, scrolled to its end: the Context section
		out := h.m.View()
		var flat strings.Builder
		for _, l := range strings.Split(ansi.Strip(out), "\n") {
			flat.WriteString(strings.ReplaceAll(l, " ", ""))
		}
		for _, want := range []struct{ key, val string }{{longKey, longVal}, {wideKey, wideVal}} {
			if !strings.Contains(flat.String(), want.key+"="+want.val) {
				t.Errorf("%d columns: the detail does not show context %q = %q whole:\n%s", width, want.key, want.val, ansi.Strip(out))
			}
		}
	}
}

// cellsPerCodepoint is a line's width on a terminal that gives each code point its own
// width (wcwidth: xterm, VTE, tmux, screen), not one per grapheme cluster.
func cellsPerCodepoint(s string) int {
	n := 0
	for _, r := range ansi.Strip(s) {
		n += ansi.StringWidth(string(r))
	}
	return n
}

// A hostile plugin's error made of a
// run of Hangul leading consonants (U+1100, each East Asian Wide) or of Thai SARA AM (U+0E33, a
// spacing character) after one letter is one grapheme cluster to the layout (ansi.StringWidth:
// 2 cells, 1 cell), which leaves it whole in the claims' LAST ERROR cell; a terminal that
// measures code points draws 2 (1) cells for each: the row ran hundreds of cells past the
// right edge and wrapped, moving every line under it. clean escapes the characters terminals
// disagree on (tags, invisibles), not these; the view now cuts a line where the wider count
// passes the edge (fitCodePoints). Found by helper review63.
func TestClustersMeasuredAsOneDoNotRunPastTheEdge(t *testing.T) {
	for _, run := range []string{strings.Repeat("\u1100", 100), "\u0e01" + strings.Repeat("\u0e33", 150)} {
		for _, width := range []int{80, 120} {
			f := fixture()
			// The claim of the first row (web[0]), its last error a plugin's words.
			f.data.Claims[0].LastRPC, f.data.Claims[0].LastCode = "NodePublishVolume", "Internal"
			f.data.Claims[0].LastError = "NodePublishVolume: Internal: " + run
			h := newHarness(t, f, Options{})
			h.send(tea.WindowSizeMsg{Width: width, Height: 24})
			for _, keys := range [][]string{{"2"}, {"2", "enter"}} {
				h.keys("esc")
				h.keys(keys...)
				for i, l := range strings.Split(h.m.View(), "\n") {
					if lw, cw := ansi.StringWidth(l), cellsPerCodepoint(l); lw > width || cw > width {
						t.Errorf("%q, %d columns, keys %v: line %d is %d cells by grapheme cluster but %d by code point, past the screen's %d",
							run[:6], width, keys, i+1, lw, cw, width)
					}
				}
			}
		}
	}
}

// The volume detail re-reads its volume after
// every refresh (engine.Volume, in a command of its own, not ordered by the read's sequence
// number). An older read that arrives after a newer one (the two run in goroutines of their
// own) was shown over it: the detail showed the claim released since as held (and kept it as
// the volume its action keys act on) until the next refresh. An older dashboard read arriving
// late is dropped (live.onData's seq); a detail's is now too (volumeMsg.seq). Found by helper
// review63.
func TestVolumeDetailDropsALateOlderRead(t *testing.T) {
	f := fixture()
	h := newHarness(t, f, Options{})
	h.keys("enter") // the detail of mysql-0, claimed by web[0]
	if out := h.m.View(); !strings.Contains(out, "web[0]") {
		t.Fatalf("the detail does not show the claim of web[0]: the test tests nothing\n%s", out)
	}
	// A refresh's re-read of the detail, read now, delivered late.
	stale := h.m.loadVolume("mysql-0")()
	// Another volctl releases the claim; the next refresh shows it gone, detail too.
	f.mu.Lock()
	f.data.Claims = f.data.Claims[1:]
	f.data.Volumes[0].WriteClaims = 0
	f.mu.Unlock()
	h.send(refreshTickMsg{})
	if out := h.m.View(); strings.Contains(out, "web[0]") {
		t.Fatalf("the refresh did not show the release:\n%s", out)
	}
	h.send(stale) // the older read arrives
	if out := h.m.View(); strings.Contains(out, "web[0]") {
		t.Errorf("an older read of the volume, arriving after a newer one, shows the claim released since:\n%s", out)
	}
	if v := h.m.detail.volume; v != nil && len(v.Claims) > 0 {
		t.Errorf("the detail's volume, which actions act on, has the claims %v released since", fmt.Sprint(v.Claims[0].Alloc))
	}
}
