package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
)

// flush writes out what out holds and keeps the first error: *err when set, else the flush's.
// Commands that buffer their output end with it, often deferred: defer flush(out, &err).
func flush(out *bufio.Writer, err *error) {
	if ferr := out.Flush(); *err == nil {
		*err = ferr
	}
}

// exportFlags are the --json and -t/--template flags every list and status command takes.
type exportFlags struct {
	JSON     bool
	Template string
	tmpl     *template.Template // Template, parsed when the flag was set
}

func addExportFlags(cmd *cobra.Command, e *exportFlags) {
	cmd.Flags().BoolVar(&e.JSON, "json", false, "print JSON (a stable contract, see docs/json.md)")
	cmd.Flags().VarP(templateValue{e}, "template", "t", "format output with a Go template over the JSON form")
}

// templateValue parses -t as the flag is set, so that a broken template is a usage error
// before the command does anything: a claim, a create or an expand must not run and then fail
// on how its result was to be printed.
type templateValue struct{ e *exportFlags }

func (v templateValue) String() string { return v.e.Template }
func (v templateValue) Type() string   { return "string" }

func (v templateValue) Set(s string) error {
	t, err := parseTemplate(s)
	if err != nil {
		return err
	}
	v.e.Template, v.e.tmpl = s, t
	return nil
}

func parseTemplate(s string) (*template.Template, error) {
	return template.New("output").Funcs(templateFuncs).Parse(s)
}

// Enabled reports whether machine output was asked for.
func (e *exportFlags) Enabled() bool { return e.JSON || e.Template != "" }

// Write prints v as indented JSON, or through the template. The template sees exactly the JSON
// form (field names as in --json), so the two contracts cannot drift apart.
func (e *exportFlags) Write(w io.Writer, v any) error {
	if e.Template == "" {
		return writeJSON(w, v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var data any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return err
	}
	tmpl := e.tmpl
	if tmpl == nil { // set without the flag, by a caller in this package
		if tmpl, err = parseTemplate(e.Template); err != nil {
			return usageError("--template: %v", err)
		}
	}
	if err := tmpl.Execute(w, data); err != nil {
		return usageError("--template: %v", err)
	}
	return nil
}

var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		err := enc.Encode(v)
		return strings.TrimSuffix(b.String(), "\n"), err
	},
	"join": func(sep string, v []any) string {
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, sep)
	},
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
}

// writeJSON prints v indented, with <, > and & as they are: the output is read by programs
// and people, never embedded in HTML.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// none is what an empty table cell shows.
const none = "<none>"

// table prints aligned columns with <none> in empty cells.
type table struct {
	out  io.Writer
	rows [][]string
}

func newTable(out io.Writer, headers ...string) *table {
	return &table{out: out, rows: [][]string{headers}}
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if strings.TrimSpace(c) == "" {
			cells[i] = none
		}
	}
	t.rows = append(t.rows, cells)
}

// render aligns the columns as text/tabwriter does with padding 2 (every column but the last
// padded with spaces to its widest cell, in runes, plus 2) in one pass over the cells, without
// tabwriter's per-cell bookkeeping: a volume list has 10,000 rows. A table tabwriter would read
// otherwise (a cell with a tab, a newline, \v or \f; rows of unequal length) goes through
// tabwriter itself (TestTableRenderMatchesTabwriter).
func (t *table) render() error {
	if !t.plain() {
		tw := tabwriter.NewWriter(t.out, 0, 0, 2, ' ', 0)
		for _, r := range t.rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	}
	cols := len(t.rows[0])
	widths := make([]int, cols)
	for _, r := range t.rows {
		for i, c := range r[:cols-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var line []byte
	for _, r := range t.rows {
		line = line[:0]
		for i, c := range r[:cols-1] {
			line = append(line, c...)
			for n := widths[i] + 2 - utf8.RuneCountInString(c); n > 0; n-- {
				line = append(line, ' ')
			}
		}
		line = append(append(line, r[cols-1]...), '\n')
		if _, err := t.out.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// plain reports whether every row has the same number of cells and no cell holds a character
// tabwriter treats as a cell or line boundary.
func (t *table) plain() bool {
	if len(t.rows) == 0 || len(t.rows[0]) == 0 {
		return false
	}
	for _, r := range t.rows {
		if len(r) != len(t.rows[0]) {
			return false
		}
		for _, c := range r {
			if strings.ContainsAny(c, "\t\n\v\f") {
				return false
			}
		}
	}
	return true
}

// keyValues prints "Key  = value" lines aligned, as `nomad volume status ID` does.
func keyValues(out io.Writer, pairs ...[2]string) error {
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	for _, p := range pairs {
		v := p[1]
		if strings.TrimSpace(v) == "" {
			v = none
		}
		fmt.Fprintf(tw, "%s\t= %s\n", p[0], v)
	}
	return tw.Flush()
}

// ago is age for a moment in a sentence-like detail row: "2 days ago", "just now".
func ago(now, t time.Time) string {
	switch a := age(now, t); a {
	case "":
		return ""
	case "now":
		return "just now"
	default:
		return a + " ago"
	}
}

// age renders how long ago t was, for tables.
func age(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strings.TrimSuffix(humanize.RelTime(t, now, "", ""), " ")
}

// bytesIEC renders a byte count as people read capacities ("10 GiB"); 0 is empty.
func bytesIEC(n int64) string {
	if n <= 0 {
		return ""
	}
	return humanize.IBytes(uint64(n))
}
