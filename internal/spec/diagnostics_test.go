package spec

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

const typoSpec = `id = "db"
type = "csi"
plugin_id = "ebs"
capability {
  access_mode     = "single-node-writter"
  attachment_mode = "file-system"
}
`

func TestDiagnosticWriter(t *testing.T) {
	p := NewParser()
	_, diags := p.ParseVolume("vol.hcl", []byte(typoSpec), VerbAny)

	var plain strings.Builder
	if err := p.WriteDiagnostics(&plain, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	want := `Error: Invalid access mode

  on vol.hcl:5:21, in capability:
   5:   access_mode     = "single-node-writter"
                          ^^^^^^^^^^^^^^^^^^^^^

"single-node-writter" is not an access mode. Did you mean "single-node-writer"? Valid modes: single-node-reader-only, single-node-writer, multi-node-reader-only, multi-node-single-writer, multi-node-multi-writer.

`
	if plain.String() != want {
		t.Errorf("plain output:\n%s\nwant:\n%s", plain.String(), want)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("escape codes without colour")
	}

	var colour strings.Builder
	p.DiagnosticWriter(&colour, 40, true).WriteDiagnostics(diags)
	out := colour.String()
	for _, want := range []string{"\x1b[31mError\x1b[0m: Invalid access mode", "\x1b[1;4m\"single-node-writter\"\x1b[0m"} {
		if !strings.Contains(out, want) {
			t.Errorf("colour output lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "^^^") {
		t.Error("carets with colour: the underline marks the source")
	}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, " ") && len(line) > 40 && !strings.Contains(line, "\x1b") {
			t.Errorf("detail not wrapped at 40: %q", line)
		}
	}
}

func TestDiagnosticWriterWithoutSource(t *testing.T) {
	_, diags := ParseVolume("vol.hcl", []byte(typoSpec), VerbAny)
	var out strings.Builder
	newDiagnosticWriter(&out, nil, 0, false).WriteDiagnostics(diags)
	if !strings.Contains(out.String(), "on vol.hcl:5:21:\n  (source code not available)") {
		t.Errorf("got:\n%s", out.String())
	}
}

func TestJSONDiagnostics(t *testing.T) {
	_, diags := ParseVolume("vol.hcl", []byte(strings.Replace(typoSpec, "capability {", "capability {\n  access_mode = \"single-node-reader\"\n", 1)), VerbAny)
	b, err := json.Marshal(JSONDiagnostics("vol.hcl", diags))
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatalf("no diagnostics: %s", b)
	}
	first := got[0]
	for _, k := range []string{"file", "severity", "summary", "detail", "range"} {
		if _, ok := first[k]; !ok {
			t.Errorf("missing %q in %s", k, b)
		}
	}
	r := first["range"].(map[string]any)
	start := r["start"].(map[string]any)
	if r["filename"] != "vol.hcl" || start["line"] == nil || start["column"] == nil || start["byte"] == nil {
		t.Errorf("range = %v", r)
	}
	if b, _ := json.Marshal(JSONDiagnostics("x", nil)); string(b) != "[]" {
		t.Errorf("no diagnostics marshal as %s, want []", b)
	}
}

// TestDiagnosticSourceControlCharactersEscaped: a spec file is text from anywhere (a download,
// a colleague's repo), and its source lines are echoed under each diagnostic. A control
// character in them (an escape sequence in a string or a comment, a carriage return) must be
// shown as an escape, not sent to the terminal, and the carets must still sit under the
// offending value; tabs are kept as they are, for the carets' alignment.
func TestDiagnosticSourceControlCharactersEscaped(t *testing.T) {
	src := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\ncapability {\n" +
		"\taccess_mode = \"x\x1b]0;pwned\x07\" # \x1b[2J\u009b31m\rgone\n" +
		"\tattachment_mode = \"file-system\"\n}\n"
	p := NewParser()
	_, diags := p.ParseVolume("vol.hcl", []byte(src), VerbAny)
	if !diags.HasErrors() {
		t.Fatal("no diagnostics: the test tests nothing")
	}
	var plain strings.Builder
	if err := p.WriteDiagnostics(&plain, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	want := "   5: \taccess_mode = \"x\\x1b]0;pwned\\a\" # \\x1b[2J\\u009b31m\\rgone\n" +
		"      \t              ^^^^^^^^^^^^^^^^^\n"
	if !strings.Contains(plain.String(), want) {
		t.Errorf("plain output lacks\n%q\nin\n%q", want, plain.String())
	}
	var colour strings.Builder
	if err := p.WriteDiagnostics(&colour, diags, 0, true); err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"plain": plain.String(), "colour": colour.String()} {
		// volctl's own colours are the only escape sequences: SGR, ESC [ digits ; m.
		rest := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(out, "")
		if i := strings.IndexFunc(rest, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f }); i >= 0 {
			t.Errorf("%s output prints control character %q from the spec raw:\n%q", what, rest[i], out)
		}
	}
}

// TestDiagnosticLongLineCut: a JSON spec is often one line (a generator's output, `jq -c`), and
// a large one — a long context value, many parameters — is a line of a megabyte. Each
// diagnostic quotes its source line: whole, that is a megabyte per diagnostic on the user's
// terminal. The line is cut around the error with a visible marker, the carets still under
// the offending value; a long value is cut too, its start kept.
func TestDiagnosticLongLineCut(t *testing.T) {
	pad := strings.Repeat("p", 1<<19)
	long := strings.Repeat("L", 1<<19)
	src := `{"id":"v","name":"v","type":"csi","plugin_id":"p","parameters":{"a":"` + pad + `"},` +
		`"capability":[{"access_mode":"single-node-writter","attachment_mode":"file-system"},` +
		`{"access_mode":"` + long + `","attachment_mode":"file-system"}],"context":{"b":"` + pad + `"}}`
	p := NewParser()
	_, diags := p.ParseVolume("vol.json", []byte(src), VerbAny)
	if len(diags) < 2 {
		t.Fatalf("want diagnostics for the typo and the long access mode at least, got %v", diags)
	}
	for _, colour := range []bool{false, true} {
		var out strings.Builder
		if err := p.WriteDiagnostics(&out, diags, 0, colour); err != nil {
			t.Fatal(err)
		}
		if n := out.Len(); n > 1500*len(diags) {
			t.Fatalf("colour %v: %d bytes for %d diagnostics on a %d-byte line, want the line cut around each:\n%.600s...", colour, n, len(diags), len(src), out.String())
		}
		if colour {
			continue
		}
		lines := strings.Split(out.String(), "\n")
		for i, l := range lines {
			if !strings.HasPrefix(l, "   1: ") {
				continue
			}
			if !strings.Contains(l, "...") {
				t.Errorf("the cut line has no marker:\n%s", l)
			}
			carets := lines[i+1]
			at := strings.Index(carets, "^")
			if at < 0 || !strings.HasPrefix(l[at:], `"`) {
				t.Errorf("the carets are not under the value:\n%s\n%s", l, carets)
			}
			if strings.Contains(l[at:], "single-node-writter") && !strings.HasPrefix(l[at:], `"single-node-writter"`) {
				t.Errorf("the carets are not under the typo:\n%s\n%s", l, carets)
			}
		}
	}
}

// TestDiagnosticLongNameCut: HCL's own diagnostics quote what they refuse in their detail
// ("An argument named "…" is not expected here."), and a name can be as long as the file. A
// 512 KiB argument name, in JSON or HCL, must not put half a megabyte on the terminal (or in
// --json's detail) for one typo: the detail is cut as a long value is, its start kept.
func TestDiagnosticLongNameCut(t *testing.T) {
	long := strings.Repeat("k", 1<<19)
	for name, src := range map[string]string{
		"vol.json": `{"id":"v","name":"v","type":"csi","plugin_id":"p","` + long + `":"x",` +
			`"capability":[{"access_mode":"single-node-writer","attachment_mode":"file-system"}]}`,
		"vol.hcl": "id = \"v\"\nname = \"v\"\ntype = \"csi\"\nplugin_id = \"p\"\n" + long + " = \"x\"\n" +
			"capability {\naccess_mode = \"single-node-writer\"\nattachment_mode = \"file-system\"\n}\n",
	} {
		p := NewParser()
		_, diags := p.ParseVolume(name, []byte(src), VerbAny)
		if len(diags) == 0 {
			t.Fatalf("%s: want a diagnostic for the unknown argument", name)
		}
		for _, d := range diags {
			if len(d.Detail) > 4*detailWordMax {
				t.Errorf("%s: a %d-byte detail for a %d-byte name, want it cut: %.300s...", name, len(d.Detail), len(long), d.Detail)
			} else if !strings.Contains(d.Detail, `"kkkk`) || !strings.Contains(d.Detail, cutMark) {
				t.Errorf("%s: the cut detail lost the name's start or the mark: %s", name, d.Detail)
			}
		}
		var out strings.Builder
		if err := p.WriteDiagnostics(&out, diags, 80, false); err != nil {
			t.Fatal(err)
		}
		if n := out.Len(); n > 6*detailWordMax*len(diags) {
			t.Errorf("%s: %d bytes printed for %d diagnostics, want the name cut: %.300s...", name, n, len(diags), out.String())
		}
	}
}

// TestManyDiagnosticsRenderInLinearTime: a spec within the 1 MiB read limit may hold a
// diagnostic per line (140,000 unknown arguments) or 90,000 on one line of JSON. Rendering
// each must not look at the whole file, nor columns be counted from the line's start each
// time: that made `volctl validate` of a 14 KB file take a minute and of a 1 MiB one hours.
// The work is counted (bytes looked at), not timed.
func TestManyDiagnosticsRenderInLinearTime(t *testing.T) {
	var hclSrc, jsonSrc strings.Builder
	hclSrc.WriteString("id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n")
	jsonSrc.WriteString(`{"id": "db", "type": "csi", "plugin_id": "ebs"`)
	for i := range 3000 {
		fmt.Fprintf(&hclSrc, "a%d = 1\n", i)
		fmt.Fprintf(&jsonSrc, `, "a%d": 1`, i)
	}
	jsonSrc.WriteString("}")
	for _, c := range []struct{ name, src string }{{"v.hcl", hclSrc.String()}, {"v.json", jsonSrc.String()}} {
		p := NewParser()
		_, diags := p.ParseVolume(c.name, []byte(c.src), VerbAny)
		if len(diags) < 3000 {
			t.Fatalf("%s: %d diagnostics, want one per unknown argument", c.name, len(diags))
		}
		dw := newDiagnosticWriter(io.Discard, p.files, 0, false)
		if err := dw.WriteDiagnostics(diags); err != nil {
			t.Fatal(err)
		}
		// Each looks at its own stretch and a few KiB past it at most, not the file (24 KB of
		// HCL here) nor the line (39 KB of JSON).
		if bound := len(diags) * (4*snippetMaxLine + 64); dw.visited > bound {
			t.Errorf("%s: rendering %d diagnostics looked at %d bytes of a %d-byte file, want at most %d", c.name, len(diags), dw.visited, len(c.src), bound)
		}
	}
	// Columns on one long line, asked for in order, are counted on from the last one.
	src := []byte(jsonSrc.String())
	m := &offsetMap{src: src, lineStarts: lineStarts(src)}
	for off := 0; off < len(src); off += 7 {
		m.pos(off)
	}
	if m.scanned > 2*len(src) {
		t.Errorf("columns of %d positions on a %d-byte line segmented %d bytes", len(src)/7, len(src), m.scanned)
	}
}

// TestSuggestSkipsWhatCannotBeNear: a suggestion is a candidate within the edit distance limit,
// and an edit distance is at least the difference in length, so a 512 KB name or value (a spec
// may hold one) is not compared with each candidate rune by rune (millions of steps, and the
// whole string as runes, per candidate: most of the time `volctl validate` took on such a
// file). It costs no allocation at all; near misses are still found.
func TestSuggestSkipsWhatCannotBeNear(t *testing.T) {
	long := strings.Repeat("k", 1<<19)
	candidates := []string{"access_mode", "attachment_mode", "mount_options", "plugin_id"}
	if allocs := testing.AllocsPerRun(3, func() { suggest(long, candidates) }); allocs != 0 {
		t.Errorf("suggest of a %d-byte name: %.0f allocations, want none (no candidate is within reach of it)", len(long), allocs)
	}
	for given, want := range map[string]string{"plugin": "plugin_id", "acess_mode": "access_mode", "mount_optoins": "mount_options", "zz": "", "": ""} {
		if got := suggest(given, candidates); got != want {
			t.Errorf("suggest(%q) = %q, want %q", given, got, want)
		}
	}
}

// TestWriteDiagnosticsShowsTheFirst: the writer volume create and register, plugin register,
// group run and the agent's config render through shows a file's first MaxShownDiagnostics
// and one counting the rest, as validate does (TestValidateShowsAFilesFirstDiagnostics).
func TestWriteDiagnosticsShowsTheFirst(t *testing.T) {
	var src strings.Builder
	src.WriteString("id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n")
	for i := range MaxShownDiagnostics + 20 {
		fmt.Fprintf(&src, "a%d = 1\n", i)
	}
	p := NewParser()
	_, diags := p.ParseVolume("v.hcl", []byte(src.String()), VerbAny)
	var out strings.Builder
	if err := p.WriteDiagnostics(&out, diags, 0, false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "Error: "); got != MaxShownDiagnostics+1 || len(diags) <= MaxShownDiagnostics+1 {
		t.Errorf("%d of %d diagnostics written, want %d", got, len(diags), MaxShownDiagnostics+1)
	}
	if want := fmt.Sprintf("This file has %d more errors", len(diags)-MaxShownDiagnostics); !strings.Contains(out.String(), want) {
		t.Errorf("no %q:\n%s", want, out.String()[max(0, out.Len()-400):])
	}
}

// TestDiagnosticListCountsWhatItLeavesOut: past MaxListedDiagnostics over all files, the list
// ends with one diagnostic counting the rest, a warning when only warnings were left out, an
// error when any error was, at the first left out; files of no diagnostics are not counted.
func TestDiagnosticListCountsWhatItLeavesOut(t *testing.T) {
	diags := func(sev hcl.DiagnosticSeverity, n int) hcl.Diagnostics {
		var out hcl.Diagnostics
		for i := range n {
			out = append(out, &hcl.Diagnostic{Severity: sev, Summary: "s", Subject: &hcl.Range{Start: hcl.Pos{Line: i + 1, Column: 1}}})
		}
		return out
	}
	var l DiagnosticList
	for range MaxListedDiagnostics / 50 {
		l.Add("full.hcl", diags(hcl.DiagError, 50))
	}
	l.Add("valid.hcl", nil)
	l.Add("warned.hcl", diags(hcl.DiagWarning, 3))
	got := l.List()
	last := got[len(got)-1]
	if len(got) != MaxListedDiagnostics+1 || last.Severity != "warning" || last.File != "warned.hcl" ||
		last.Range == nil || last.Range.Start.Line != 1 || !strings.Contains(last.Detail, "3 more warnings in 1 file ") {
		t.Errorf("%d listed, the last %+v; want %d and a warning counting 3 warnings in 1 file", len(got), last, MaxListedDiagnostics+1)
	}
	l.Add("bad.hcl", diags(hcl.DiagError, 1))
	if last := l.List()[MaxListedDiagnostics]; last.Severity != "error" || !strings.Contains(last.Detail, "1 more error and 3 more warnings in 2 files") {
		t.Errorf("after an error left out: %+v", last)
	}
	var none DiagnosticList
	none.Add("valid.hcl", nil)
	if got := none.List(); got == nil || len(got) != 0 {
		t.Errorf("no diagnostics: %#v, want an empty list (JSON [])", got)
	}
}

// EscapeControl escapes what ShowsAsNothing reports, save the joiners and bidi marks that shape
// text: COMBINING GRAPHEME JOINER, VARIATION SELECTOR-16 and -17, HANGUL FILLER and a tag were
// printed raw (strconv.QuoteRune takes the marks and the filler for printable), and "db" and
// "db\u034f" read alike (review32a).
func TestEscapeControlEscapesEveryIgnorable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"db\u034f", `db\u034f`},
		{"db\ufe0f", `db\ufe0f`},
		{"db\U000e0100", `db\U000e0100`},
		{"db\u3164", `db\u3164`},
		{"db\U000e0041", `db\U000e0041`},
		{"db\u200b", `db\u200b`},
		{"👩\u200d👩 \u200c \u200e é 日本", "👩\u200d👩 \u200c \u200e é 日本"},
	} {
		if got := EscapeControl(c.in); got != c.want {
			t.Errorf("EscapeControl(%+q) = %+q; want %+q", c.in, got, c.want)
		}
	}
}
