package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
)

// The streamed `volume status --json` is byte for byte the document writeJSON prints for the
// whole list: the empty list, omitted modes, and strings encoding/json escapes (quotes,
// backslashes, control characters, HTML characters left as they are, U+2028, invalid UTF-8).
func TestVolumeListJSONStreamMatchesEncoder(t *testing.T) {
	t.Parallel()
	lists := [][]engine.VolumeSummary{
		{},
		{{ID: "db", Namespace: "default", Name: "db", PluginID: "hp", State: "ready", Schedulable: true,
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem, CapacityBytes: 1 << 30,
			ReadClaims: 2, WriteClaims: 1, Unsettled: 1, CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 351754920, time.UTC)}},
		{
			{ID: "a", State: "creating", CreatedAt: time.Date(1678, 1, 1, 0, 0, 0, 1, time.UTC)},
			{ID: `q"uo\te`, Name: "tab\there\nnl\x01\x1f", Namespace: "<b>&amp;</b>", PluginID: "ünï\u2028\u2029",
				State: "deleting", AccessMode: spec.MultiNodeReaderOnly, CapacityBytes: -1, ReadClaims: 1 << 40},
			{ID: "bad\xffutf8", Name: "\x7f", AttachmentMode: spec.BlockDevice, CreatedAt: time.Date(2262, 4, 11, 23, 47, 16, 0, time.UTC)},
			{ID: "c", CreatedAt: time.Date(2026, 12, 1, 9, 5, 3, 100, time.UTC)},
			{ID: "d", CreatedAt: time.Date(2026, 12, 1, 9, 5, 3, 999999999, time.FixedZone("", -90*60))},
			{ID: "e", CreatedAt: time.Date(999, 1, 2, 3, 4, 5, 120000000, time.UTC)},
			{ID: "f"},
		},
	}
	for _, vols := range lists {
		var want bytes.Buffer
		if err := writeJSON(&want, vols); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		w := bufio.NewWriter(&got)
		err := streamVolumeListJSON(w, func(fn func(*engine.VolumeSummary) error) error {
			for i := range vols {
				if err := fn(&vols[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("streamed:\n%s\nencoding/json:\n%s", got.String(), want.String())
		}
	}
}

// table.render prints what text/tabwriter prints with the same settings: ASCII and wide
// runes, empty cells, trailing spaces in the last column, and the tables it hands to
// tabwriter (a tab, newline, \v or \f in a cell; rows of unequal length).
func TestTableRenderMatchesTabwriter(t *testing.T) {
	t.Parallel()
	tables := [][][]string{
		{{"ID", "NAME", "CLAIMS"}, {"db", "the db", "1 write"}, {"a-much-longer-id", "x", "<none>"}},
		{{"ONE"}, {"a"}, {"bbbb"}},
		{{"ID", "NAME"}, {"ünïcödé", "日本語の名前"}, {"x", "trailing  "}, {"", ""}},
		{{"ID", "NAME"}, {"tab\tin", "cell"}, {"new\nline", "v\vf\f"}},
		{{"A", "B", "C"}, {"short"}, {"1", "2", "3", "4"}},
	}
	for _, rows := range tables {
		var want bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		tb := newTable(&got, rows[0]...)
		for _, r := range rows[1:] {
			tb.add(r)
		}
		if err := tb.render(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("render:\n%q\ntabwriter:\n%q", got.String(), want.String())
		}
	}
}
