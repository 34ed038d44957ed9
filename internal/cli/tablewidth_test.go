package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
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

// aloneEnv set makes a test that counts allocations count them where it runs: in a test binary
// started to run it alone.
const aloneEnv = "VOLCTL_TEST_ALONE"

// A volume list of 10,000 rows is held until its widest cells are known: in a few chunks of
// bytes, not a slice of strings per row (each row its own allocation, and the slice of rows
// copied as it grows), because a process pays for each fresh page it touches (BENCHMARKS.md).
//
// Counted in a test binary that runs this test alone: AllocsPerRun counts every goroutine's
// allocations, and the goroutines an earlier test left to end (a plugin's server, a
// connection's) allocated 260 more while this ran, shuffled after them on a loaded machine.
func TestTableHoldsManyRowsInFewAllocations(t *testing.T) {
	if os.Getenv(aloneEnv) == "" {
		const name = "TestTableHoldsManyRowsInFewAllocations"
		cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), aloneEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
			t.Fatalf("%s, alone in a test binary: %v\n%s", name, err, out)
		}
		return
	}
	ids := make([]string, 10_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("vol-%05d", i)
	}
	var out bytes.Buffer
	allocs := testing.AllocsPerRun(1, func() {
		out.Reset()
		tb := newTable(&out, "ID", "NAME", "PLUGIN", "SCHEDULABLE", "ACCESS MODE", "CLAIMS")
		for _, id := range ids {
			tb.row(id, id, "hp", "yes", "", "1 write")
		}
		if err := tb.render(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 50 {
		t.Errorf("a table of 10,000 rows took %.0f allocations, want at most 50", allocs)
	}
	if want := "vol-09999  vol-09999  hp      yes          <none>       1 write\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("last row = %q, want %q", out.String()[max(0, out.Len()-80):], want)
	}
}

// Past 54 chunks, 512<<len(chunks) overflowed (0, then negative), so every row after took a
// chunk of its own: a list of 200,000 volumes (8 MB of cells) made an allocation a row, as
// the slice of rows it replaced did, and the chunk list grew by copying. The chunks stay at
// 64 KiB however many there are.
func TestTableChunksStayWholePastManyChunks(t *testing.T) {
	var out bytes.Buffer
	tb := newTable(&out, "ID", "NAME")
	cell := strings.Repeat("x", 40)
	for range 200_000 {
		tb.row(cell, cell)
	}
	if n := len(tb.chunks); n > 300 {
		t.Errorf("200,000 rows of 80 bytes took %d chunks, want at most 300 (64 KiB each)", n)
	}
}
