package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// manyItemSpecs are hostile files of about 1 MiB (the read limit) made of one-character
// items, each a kind HCL's scanners make a token of per item or two.
func manyItemSpecs() map[string]string {
	const size = 1 << 20
	r := func(s string) string { return strings.Repeat(s, size/len(s)) }
	return map[string]string{
		"blocks.hcl":      r("a {}\n"),
		"list.hcl":        "x = [" + r("1,") + "1]\n",
		"blank-lines.hcl": r("\n"),
		"names.hcl":       r("a "),
		"dotted.hcl":      "x = a" + r(".a"),
		"object.hcl":      "x = {" + r("a=1,") + "}\n",
		"semicolons.hcl":  r(";"),
		"comments.hcl":    r("#\n"),
		"non-ascii.hcl":   r("é\n"),
		"arrows.hcl":      "x = " + r("→"),
		"bad-utf8.hcl":    "x = " + r("\xff"),
		"list.json":       `{"x":[` + r("1,") + "1]}\n",
		"object.json":     `{"x":{` + r(`"a":1,`) + `"b":1}}`,
	}
}

// TestItemLimit: a file of more than MaxItems items is refused with one diagnostic, at the
// item past the limit and naming the file and the limit, before HCL's scanners make a token of
// any but the first MaxItems (those of a file with non-ASCII code, for the nesting check, and
// for the mask of its snippet): the refusal, shown, allocates under 64 MiB. Without the check each of these took
// 200 to 700 MB and seconds (`volctl validate blocks.hcl`: 34 s, 734 MB), for a screenful of
// diagnostics.
func TestItemLimit(t *testing.T) {
	for name, src := range manyItemSpecs() {
		t.Run(name, func(t *testing.T) {
			p := NewParser()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			v, diags := p.ParseVolume(name, []byte(src), VerbAny)
			var out strings.Builder // as volctl shows it, the snippet's secrets masked
			if err := p.WriteDiagnostics(&out, diags, 80, false); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if v != nil || len(diags) != 1 || diags[0].Summary != "Too many items" {
				out := renderPlain(p, diags)
				t.Fatalf("got volume %v and %d diagnostics, want one \"Too many items\" error:\n%.600s", v, len(diags), out)
			}
			d := diags[0]
			if d.Severity != hcl.DiagError || d.Subject == nil || d.Subject.Filename != name {
				t.Fatalf("got %v in %v, want an error in %s", d.Severity, d.Subject, name)
			}
			at := d.Subject.Start.Byte
			if itemLimitAt([]byte(src[:at]), MaxItems) >= 0 || itemLimitAt([]byte(src[:d.Subject.End.Byte]), MaxItems) < 0 {
				t.Errorf("diagnostic at byte %d, not at the item past %d", at, MaxItems)
			}
			if !strings.Contains(d.Detail, name) || !strings.Contains(d.Detail, strconv.Itoa(MaxItems)) {
				t.Errorf("detail does not name the file and the limit: %s", d.Detail)
			}
			if used := after.TotalAlloc - before.TotalAlloc; used > 64<<20 {
				t.Errorf("refusing it allocated %d MiB", used>>20)
			}
			if !strings.Contains(out.String(), fmt.Sprintf("on %s:%d:%d", name, d.Subject.Start.Line, d.Subject.Start.Column)) {
				t.Errorf("shown without its place:\n%.600s", out.String())
			}
		})
	}
}

// TestItemsAtLimit: exactly MaxItems items pass the check, one more do not.
func TestItemsAtLimit(t *testing.T) {
	at := strings.Repeat("a\n", MaxItems/2)
	if got := itemLimitAt([]byte(at), MaxItems); got >= 0 {
		t.Errorf("%d items refused at %d", MaxItems, got)
	}
	if got := itemLimitAt([]byte(at+"a"), MaxItems); got != len(at) {
		t.Errorf("%d items: refused at %d, want %d", MaxItems+1, got, len(at))
	}
	if d := newSource("x.hcl", []byte(at), false).checkItems(); d != nil {
		t.Errorf("%d items: %v", MaxItems, d)
	}
}

// TestItemsCountAtLeastHCLsTokens: itemLimitAt counts at least as many items as hclsyntax
// makes tokens (its EOF aside), so no file passes the limit that HCL would lex into more
// tokens than it allows. The fuzz target checks the same on every input.
func TestItemsCountAtLeastHCLsTokens(t *testing.T) {
	srcs := []string{
		"a = \"   ${b}   ${c}   \"\n",
		"a = <<EOT\n   \n  \nx\nEOT\n",
		"a = 1.5e+10 # c\n/* c */ b = -1\r\n",
		"a = \"\\n\\t\\\"\" // x\n",
		"\xff\xfe\x80 = é → \"\xc3\"",
		"a = [for x in y : x if x != \"\"]\n",
		"a = \"%{ if x ~}y%{ else }z%{ endif }\"",
		"a { b { c = {d = [1, 2]} } }",
		`{"a": [1, 2, {"b": "c d e"}], "f": null}`,
		// A number and a name in one run of letters and digits are two tokens (the fuzzer's
		// find): counted as one, a file of "0a" lines held half again the tokens MaxItems allows.
		"a = 0A000000000\nb = 1e5x\nc = 0_0\n" + strings.Repeat("0a\n", 100),
	}
	for _, kind := range Kinds {
		src, _ := Example(kind)
		srcs = append(srcs, string(src))
	}
	for _, dir := range []string{filepath.Join("..", "..", "fixtures", "valid"), filepath.Join("..", "..", "fixtures", "invalid"), "examples"} {
		for _, path := range specFiles(t, dir) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, string(src))
		}
	}
	for _, src := range srcs {
		checkItemsCountTokens(t, []byte(src))
	}
}

// checkItemsCountTokens fails when itemLimitAt counts fewer items in src than hclsyntax
// makes tokens of it.
func checkItemsCountTokens(t *testing.T, src []byte) {
	t.Helper()
	toks := len(newSource("", src, false).tokens()) - 1 // its EOF
	if toks > 0 && itemLimitAt(src, toks-1) < 0 {
		t.Fatalf("itemLimitAt counts fewer than the %d tokens of %.80q", toks, src)
	}
}

// TestRealSpecsAreFarUnderTheItemLimit: the specs volctl writes and Nomad's own hold a small
// part of MaxItems.
func TestRealSpecsAreFarUnderTheItemLimit(t *testing.T) {
	limit := MaxItems / 8
	check := func(name string, src []byte) {
		if at := itemLimitAt(src, limit); at >= 0 {
			t.Errorf("%s holds more than %d items", name, limit)
		}
	}
	for _, kind := range Kinds {
		src, _ := Example(kind)
		check(string(kind)+" example", src)
	}
	corpus := nomadCorpus(t)
	for _, e := range readSources(t, corpus) {
		src, err := os.ReadFile(filepath.Join(corpus, e.file))
		if err != nil {
			t.Fatal(err)
		}
		check(e.file, src)
	}
}
