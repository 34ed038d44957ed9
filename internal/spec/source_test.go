package spec

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestOneLexPerParse: a spec file is lexed once and masked once, however many passes read its
// tokens (the nesting check of non-ASCII code, the HCL1 rewrite, the mask) and however many
// diagnostics quote what the mask hides or show a snippet. Each pass lexed it anew (Nomad's
// template three times, its parse 1.03-1.09 ms against 0.76-0.82), and each number HCL1
// refuses masked the whole file again: 4,000 of them, a 55 KB file, took 2m23s to parse.
func TestOneLexPerParse(t *testing.T) {
	template, err := os.ReadFile(filepath.Join(nomadCorpus(t), "command__asset__volume.csi.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var numbers strings.Builder
	numbers.WriteString("id = \"a\"\nparameters {\n")
	for i := range 2000 {
		fmt.Fprintf(&numbers, "  k%d = 1_0\n", i)
	}
	numbers.WriteString("}\nsecrets { \"k\" = 0b1 }\n")
	for _, c := range []struct {
		name, src string
		diags     int // at least
	}{
		{"Nomad's template (HCL1, a warning)", string(template), 1},
		{"non-ASCII code (the nesting check's tokens), HCL1, a secret quoted", "id = \"a\"\ndonnées = 1\nsecrets { \"k\" = \"%{hunter2}\" }\n", 1},
		{"numbers HCL1 refuses", numbers.String(), 2001},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser()
			_, diags := p.ParseVolume("v.hcl", []byte(c.src), VerbAny)
			if len(diags) < c.diags {
				t.Fatalf("%d diagnostics, want at least %d:\n%s", len(diags), c.diags, renderPlain(p, diags))
			}
			out := renderPlain(p, diags)
			if strings.Contains(out, "hunter2") {
				t.Errorf("a secret is shown:\n%s", out)
			}
			s := p.sources["v.hcl"]
			if s.lexes != 1 || s.maskings != 1 {
				t.Errorf("the file was lexed %d times and masked %d times for its parse and %d diagnostics, want once each", s.lexes, s.maskings, len(diags))
			}
		})
	}
}

// TestRefusedNumbersCostLinearMemory: a file of numbers HCL1 refuses costs memory in
// proportion to its size, not to its size times the numbers in it (each masked the whole file
// again: 2,000 of them allocated gigabytes). Memory, not time, so the machine's load does not
// matter.
func TestRefusedNumbersCostLinearMemory(t *testing.T) {
	alloc := func(n int) uint64 {
		var b strings.Builder
		b.WriteString("id = \"a\"\nparameters {\n")
		for i := range n {
			fmt.Fprintf(&b, "  k%d = 1_0\n", i)
		}
		b.WriteString("}\n")
		src := []byte(b.String())
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, diags := ParseVolume("v.hcl", src, VerbAny); len(diags) != n {
			t.Fatalf("%d diagnostics for %d numbers HCL1 refuses", len(diags), n)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(500), alloc(2000)
	t.Logf("500 numbers: %d bytes; 2000: %d", small, large)
	if large > 8*small {
		t.Errorf("4 times the numbers HCL1 refuses allocated %d times the memory (%d against %d bytes), want about 4", large/small, large, small)
	}
}

// TestUnclosedSecretIsMasked: a secret whose string, heredoc, template sequence or comment the
// file never closes is masked to the end of the file, its last token too. The mask stopped
// before the last token, and a snippet showed `secrets = { a = "hunter2` as written.
func TestUnclosedSecretIsMasked(t *testing.T) {
	head := "id = \"a\"\n"
	for _, c := range []struct{ src, secret string }{
		{`secrets = { a = "hunter2`, "hunter2"},
		{"secrets = { a = <<EOT\nhunter2\n", "hunter2"},
		{"secrets = { a = <<EOT\nhunter1\nhunter2", "hunter2"},
		{`secrets = "${hunter2`, "hunter2"},
		{`secrets = { a = "x${"hunter2`, "hunter2"},
		{`mount_options { mount_flags = ["hunter2`, "hunter2"},
		{"secrets = { a = 1 /* p@ss-w0rd!", "p@ss-w0rd!"},
		{"secrets {\n  a = \"x\" /* p@ss\n-w0rd! }\n", "p@ss\n-w0rd! }"},
	} {
		src := head + c.src
		at := strings.Index(src, c.secret)
		masked := redactSource([]byte(src), false)
		if got := string(masked[at : at+len(c.secret)]); strings.Trim(got, "*\n") != "" {
			t.Errorf("%q: masked as %q", c.src, masked)
		}
		p := NewParser()
		_, diags := p.ParseVolume("v.hcl", []byte(src), VerbAny)
		out := renderPlain(p, diags)
		for _, word := range strings.Fields(c.secret) {
			if strings.Contains(out, word) {
				t.Errorf("%q: %q is shown:\n%s", c.src, word, out)
			}
		}
	}
}

// maskSources are files whose secrets a mask of a part of them could cut: strings, heredocs,
// template sequences and comments in sensitive values, over several lines, quoted names and
// keys, JSON.
var maskSources = []struct{ name, src string }{
	{"v.hcl", "id = \"a\"\nsecrets {\n  a = \"hunter2\"\n  \"b\" = <<EOT\n  hunter3\n  ${x} %{if y}hunter4%{endif}\n  EOT\n  c = \"x${\"hunter5\"}y\" /* hun@ter6\n  hunter7! */ d = 1.5e+10 # hunter8\n}\n" +
		"\"mount_flags\" = [\"hunter9\", <<-X\n    hunter10\n    X\n]\nenv { K = `hunter11` }\npassword = hunter12 // x\n# secrets = \"shown\"\n/* secrets\n= \"shown\" */\n"},
	{"v.json", `{"id": "a", "secrets": {"a": "hunter2", "b": [1, hunter3, "hun\"ter4"]},` + "\n" + `"mount_options": {"mount_flags": ["hunter5",` + "\n" + `"hunter6"]}, "env": {"k": "x"}, "password": hunter7}`},
}

// TestMaskedPartMasksAsTheWholeFile: a mask of a file's first bytes (source.redactedTo, which
// lexes no further than a snippet looks) masks every byte before the cut that the whole file's
// mask masks, wherever the cut falls: in a name, a string, a heredoc, a template sequence, a
// comment, the line after a secret's. Bytes up to a character's width before the cut may
// differ (a character cut in two); redactedTo lexes maskMargin further than it shows.
func TestMaskedPartMasksAsTheWholeFile(t *testing.T) {
	for _, f := range maskSources {
		src := []byte(f.src)
		json := isJSON(f.name, src)
		whole := redactSource(src, json)
		for cut := range len(src) + 1 {
			part := redactTokens(src[:cut], json, func() hclsyntax.Tokens {
				toks, _ := hclsyntax.LexConfig(src[:cut], f.name, hcl.InitialPos)
				return toks
			})
			for i := range max(0, cut-utf8.UTFMax) {
				if whole[i] == '*' && part[i] != '*' {
					t.Fatalf("%s cut at %d: byte %d (%q) is masked in the whole file, not in the part:\n%s\nwhole:\n%s", f.name, cut, i, src[i], part, whole)
				}
			}
		}
	}
}

// TestLargeFileIsMaskedAsFarAsShown: a diagnostic near the top of a large file masks (and
// lexes) the file as far as its snippet looks and maskMargin more, not the whole; what it
// masks, a secret on the line shown, on the line after it, and one over lines the cut falls in
// (a heredoc), is masked as the whole file's mask masks it, and the snippet shows none of them.
func TestLargeFileIsMaskedAsFarAsShown(t *testing.T) {
	src := "id = \"a\"\ntype = \"csi\"\nplugin_id = \"p\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
		"db_password = \"hunter2\"\nsecret_token = \"hunter3\"\nsecrets {\n  a = <<EOT\n" +
		strings.Repeat("hunter4 hunter4 hunter4 hunter4 hunter4\n", 200) + "EOT\n}\n"
	p := NewParser()
	_, diags := p.ParseVolume("v.hcl", []byte(src), VerbAny)
	out := renderPlain(p, diags)
	if !strings.Contains(out, "on v.hcl:8:1") || !strings.Contains(out, `db_password = "*******"`) {
		t.Fatalf("want the unknown db_password on line 8 shown masked:\n%s", out)
	}
	for _, secret := range []string{"hunter2", "hunter3", "hunter4"} {
		if strings.Contains(out, secret) {
			t.Errorf("%s is shown:\n%s", secret, out)
		}
	}
	s := p.sources["v.hcl"]
	if s.maskedTo >= len(src) || s.lexes != 1 || s.maskings != 1 {
		t.Fatalf("masked to byte %d of %d, lexed %d times, masked %d times: want the file masked once, in part", s.maskedTo, len(src), s.lexes, s.maskings)
	}
	if heredoc := strings.Index(src, "hunter4"); s.maskedTo <= heredoc {
		t.Fatalf("masked to byte %d: want the cut in the heredoc at %d", s.maskedTo, heredoc)
	}
	whole := redactSource([]byte(src), false)
	if i := firstDifference(s.masked[:s.maskedTo], whole[:s.maskedTo]); i >= 0 {
		t.Errorf("the part masked differs from the whole file's mask at byte %d:\n%s", i, s.masked[:i+1])
	}
	if n := bytes.Count(s.masked, []byte("\n")); n != strings.Count(src, "\n") || len(s.masked) != len(src) {
		t.Errorf("masked bytes: %d bytes, %d lines; the file: %d, %d", len(s.masked), n, len(src), strings.Count(src, "\n"))
	}
}

// firstDifference is the index of a's first byte that differs from b's, or -1.
func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
