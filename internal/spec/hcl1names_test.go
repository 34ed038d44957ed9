package spec

import (
	"strings"
	"testing"
	"unicode/utf8"

	hcl1 "github.com/hashicorp/hcl"
	hcl1scanner "github.com/hashicorp/hcl/hcl/scanner"
	hcl1token "github.com/hashicorp/hcl/hcl/token"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestVolumeSpecNamesAreHCL1Names: HCL2, which volctl reads a volume spec with, takes
// Unicode's identifier characters in a name; HCL1, which `nomad volume register` reads it
// with, takes letters, digits, "_", "-" and "." only, and stops at any other with "illegal
// char" (checked with Nomad v2.0.5: `parameters { नाम = "0" }`, `a·b`, `a‿b`, `Ⅻ`, `Aۗ`). volctl
// read those files, and the spec broke at its handover. A name written bare that HCL1 does not
// read is refused at the name, saying to quote it; quoted, both read it.
func TestVolumeSpecNamesAreHCL1Names(t *testing.T) {
	head := baseVolume + "\n"
	line := strings.Count(head, "\n") + 1
	for _, c := range []struct{ name, src, at string }{
		{"Devanagari vowel sign (a combining mark)", "parameters {\n  नाम = \"0\"\n}", "नाम"},
		{"Arabic mark after a letter", "parameters {\n  Aۗ = \"0\"\n}", "Aۗ"},
		{"middle dot", "parameters {\n  a·b = \"0\"\n}", "a·b"},
		{"connector punctuation", "parameters {\n  a‿b = \"0\"\n}", "a‿b"},
		{"letter number", "context {\n  Ⅻ = \"0\"\n}", "Ⅻ"},
		{"in a map", "parameters = {\n  Aۗ = \"0\"\n}", "Aۗ"},
		{"in an HCL1 one-line block", "\"parameters\" { नाम = \"0\" }", "नाम"},
	} {
		p := NewParser()
		v, diags := p.ParseVolume("v.hcl", []byte(head+c.src+"\n"), VerbAny)
		if v != nil {
			t.Errorf("%s: read, want it refused as Nomad refuses it", c.name)
			continue
		}
		at := strings.Index(c.src, c.at)
		l := line + strings.Count(c.src[:at], "\n")
		col := at - strings.LastIndex(c.src[:at], "\n")
		d := diagAt(t, c.name, diags, "Name Nomad does not read", l, col)
		if d == nil {
			continue
		}
		if !strings.Contains(d.Detail, "Quote it: \""+c.at+"\"") || !strings.Contains(d.Detail, "illegal char") {
			t.Errorf("%s: %q, want it to say Nomad's error and how to write the name", c.name, d.Detail)
		}
		// Quoted, volctl and HCL1 read it.
		quoted := strings.Replace(c.src, c.at, `"`+c.at+`"`, 1)
		if _, diags := NewParser().ParseVolume("v.hcl", []byte(head+quoted+"\n"), VerbAny); diags.HasErrors() {
			t.Errorf("%s: quoted, refused: %v", c.name, diags)
		}
		if _, err := hcl1.Parse(head + quoted + "\n"); err != nil {
			t.Errorf("%s: quoted, HCL1 refuses it: %v", c.name, err)
		}
		if _, err := hcl1.Parse(head + c.src + "\n"); err == nil {
			t.Errorf("%s: HCL1 reads it unquoted: the refusal is wrong", c.name)
		}
	}
	// Names of letters and digits of any script are Nomad's too.
	for _, name := range []string{"données", "Ωmega_Ж9", "a٣", "ключ-1.x", "_a", "नगर"} {
		src := head + "parameters {\n  " + name + " = \"0\"\n}\n"
		if _, diags := NewParser().ParseVolume("v.hcl", []byte(src), VerbAny); diags.HasErrors() {
			t.Errorf("%s: refused: %v", name, diags)
		}
		if _, err := hcl1.Parse(src); err != nil {
			t.Errorf("%s: HCL1 refuses it, so should volctl: %v", name, err)
		}
	}
}

// TestHCL1NameIsHCL1sScanner: for every character HCL2 takes in a name, first and after a
// letter, HCL1Name says what HCL1's own scanner (github.com/hashicorp/hcl, Nomad's) does: it
// reads the whole name as one identifier, or it does not.
func TestHCL1NameIsHCL1sScanner(t *testing.T) {
	// Planes 0 to 3 and 14 (tags, variation selectors): the others hold no character yet.
	for r := rune(0x21); r <= 0xe0fff; r++ {
		if r >= 0xd800 && r <= 0xdfff || r == 0x40000 {
			if r == 0x40000 {
				r = 0xdffff
			}
			continue
		}
		for _, name := range []string{string(r), "a" + string(r)} {
			if !hclsyntax.ValidIdentifier(name) {
				continue
			}
			_, ok := HCL1Name(name)
			s := hcl1scanner.New([]byte(name + " "))
			s.Error = func(hcl1token.Pos, string) {}
			tok := s.Scan()
			if read := tok.Type == hcl1token.IDENT && tok.Text == name; ok != read {
				t.Fatalf("%q (%U): HCL1Name says %v, HCL1's scanner reads %s %q", name, r, ok, tok.Type, tok.Text)
			}
		}
	}
}

// TestHeredocMarkersAreHCL1Markers: HCL1's scanner takes letters, digits and "_" in a heredoc
// marker and refuses the file at any other ("invalid characters in heredoc anchor"; checked
// with Nomad v2.0.5), where HCL2 takes a name's characters: `<<END-X`, ASCII, and `<<नाम`
// (a combining mark), `<<A·B`. volctl read those specs, and they broke at their handover. Such a
// marker is refused at it, with one Nomad reads to write instead, wherever the heredoc is.
func TestHeredocMarkersAreHCL1Markers(t *testing.T) {
	head := baseVolume + "\n"
	line := strings.Count(head, "\n") + 1
	for _, c := range []struct{ name, src, marker, fixed string }{
		{"hyphen (ASCII)", "parameters {\n  a = <<END-X\nx\nEND-X\n}", "END-X", "END_X"},
		{"hyphen after <<-", "parameters {\n  a = <<-END-X\n  x\n  END-X\n}", "END-X", "END_X"},
		{"combining mark, in a list", "mount_options {\n  mount_flags = [\"ro\", <<नाम\nx\nनाम\n  ]\n}", "नाम", "न_म"},
		{"middle dot, in a map", "parameters = {\n  a = <<A·B\nx\nA·B\n}", "A·B", "A_B"},
		{"letter number", "context {\n  a = <<Ⅻ\nx\nⅫ\n}", "Ⅻ", "_"},
		{"in an HCL1 one-line block", "\"parameters\" { a = <<END-X\nx\nEND-X\n}", "END-X", "END_X"},
	} {
		src := head + c.src + "\n"
		if _, err := hcl1.Parse(src); err == nil || !strings.Contains(err.Error(), "heredoc anchor") && !strings.Contains(err.Error(), "illegal char") {
			t.Errorf("%s: HCL1 says %v, want the marker refused: the refusal is wrong", c.name, err)
		}
		v, diags := NewParser().ParseVolume("v.hcl", []byte(src), VerbAny)
		if v != nil {
			t.Errorf("%s: read, want it refused as Nomad refuses it", c.name)
			continue
		}
		at := strings.Index(c.src, "<<") + 2 // the marker, after << or <<-
		if c.src[at] == '-' {
			at++
		}
		l := line + strings.Count(c.src[:at], "\n")
		col := utf8.RuneCountInString(c.src[strings.LastIndex(c.src[:at], "\n")+1:at]) + 1
		d := diagAt(t, c.name, diags, "Heredoc marker Nomad does not read", l, col)
		if d == nil {
			continue
		}
		if !strings.Contains(d.Detail, "invalid characters in heredoc anchor") || !strings.HasSuffix(d.Detail, ": "+c.fixed+".") {
			t.Errorf("%s: %q, want it to say Nomad's error and the marker %s", c.name, d.Detail, c.fixed)
		}
		// The marker it names, both read.
		fixed := head + strings.ReplaceAll(c.src, c.marker, c.fixed) + "\n"
		if _, diags := NewParser().ParseVolume("v.hcl", []byte(fixed), VerbAny); diags.HasErrors() {
			t.Errorf("%s: with the marker %s, refused: %v", c.name, c.fixed, diags)
		}
		if _, err := hcl1.Parse(fixed); err != nil {
			t.Errorf("%s: with the marker %s, HCL1 refuses it: %v", c.name, c.fixed, err)
		}
	}
	// A quoted string holding << is no heredoc (FuzzVolumeFileReadsBack wrote one).
	src := head + "mount_options {\n  mount_flags = [\"<<END-X\\nx\\nEND-X\", \"ro\"]\n}\n"
	if v, diags := NewParser().ParseVolume("v.hcl", []byte(src), VerbAny); diags.HasErrors() || v.MountOptions.MountFlags[0] != "<<END-X\nx\nEND-X" {
		t.Errorf("a quoted string holding <<: %v %v", diags, v)
	}
	// Markers of letters, digits and "_" of any script are Nomad's too.
	for _, m := range []string{"EOT", "END_X", "नगर", "données9", "_x"} {
		src := head + "parameters {\n  a = <<" + m + "\nx\n" + m + "\n}\n"
		if _, diags := NewParser().ParseVolume("v.hcl", []byte(src), VerbAny); diags.HasErrors() {
			t.Errorf("%s: refused: %v", m, diags)
		}
		if _, err := hcl1.Parse(src); err != nil {
			t.Errorf("%s: HCL1 refuses it, so should volctl: %v", m, err)
		}
	}
}

// TestHCL1NameAdviceIsAMapKeys: a name HCL1 does not read that is no map key (an argument or
// block a volume spec does not take, a variable) has its own error at it, and quoting it would
// not mend it: it gets that error alone, not "Name Nomad does not read" saying "Quote it" too.
func TestHCL1NameAdviceIsAMapKeys(t *testing.T) {
	head := baseVolume + "\n"
	line := strings.Count(head, "\n") + 1
	for _, c := range []struct{ name, src, summary string }{
		{"top-level argument", "नाम = \"x\"", "Unsupported argument"},
		{"argument of a block", "mount_options {\n  नाम = \"x\"\n}", "Unsupported argument"},
		{"block", "नाम {\n}", "Unsupported block type"},
		{"variable", "parameters {\n  a = नाम\n}", "Variables not allowed"},
	} {
		v, diags := NewParser().ParseVolume("v.hcl", []byte(head+c.src+"\n"), VerbAny)
		if v != nil {
			t.Errorf("%s: read", c.name)
			continue
		}
		at := strings.Index(c.src, "नाम")
		l := line + strings.Count(c.src[:at], "\n")
		col := utf8.RuneCountInString(c.src[strings.LastIndex(c.src[:at], "\n")+1:at]) + 1
		diagAt(t, c.name, diags, c.summary, l, col)
		for _, d := range diags {
			if d.Summary == "Name Nomad does not read" || strings.Contains(d.Detail, "Quote it") {
				t.Errorf("%s: %q: %q, want the one error at the name, which quoting does not mend", c.name, d.Summary, d.Detail)
			}
		}
	}
}
