package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestTableAlignsWideCharactersByCells: a volume named in CJK, or with an emoji, takes two
// terminal cells a character; padded by its count of runes, every column after it was out of
// line on that row (tabwriter's way, kept by render). Columns line up by cells.
func TestTableAlignsWideCharactersByCells(t *testing.T) {
	var out bytes.Buffer
	tb := newTable(&out, "ID", "NAME", "PLUGIN")
	tb.row("db", "数据库", "hostpath")
	tb.row("cache", "キャッシュ👩‍👩‍👧", "hostpath")
	tb.row("e\u0301t\u0301e\u0301", "plain", "hostpath") // combining accents take no cell
	tb.row("x", "a-much-longer-ascii", "hostpath")
	if err := tb.render(); err != nil {
		t.Fatal(err)
	}
	var at []int
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		i := strings.Index(l, "PLUGIN")
		if i < 0 {
			i = strings.Index(l, "hostpath")
		}
		at = append(at, ansi.StringWidth(l[:i]))
	}
	for _, c := range at[1:] {
		if c != at[0] {
			t.Errorf("the PLUGIN column starts at cells %v, not in one line:\n%s", at, out.String())
			break
		}
	}
}
