package spec

import (
	"strings"
	"testing"

	humanize "github.com/dustin/go-humanize"
	hcl1 "github.com/hashicorp/hcl"
	hcl1ast "github.com/hashicorp/hcl/hcl/ast"
	"github.com/hashicorp/hcl/v2"
)

// nomadCapacity is what `nomad volume register` makes of a spec's capacity_max: Nomad's
// parseCapacityBytes (command/volume_register_csi.go), which takes the literal's token text as
// written, trims its quotes, reads it with go-humanize's ParseBytes and converts the uint64 to
// int64. err is Nomad's refusal of the file (HCL1's or humanize's).
func nomadCapacity(t *testing.T, src string) (int64, error) {
	t.Helper()
	f, err := hcl1.ParseString(src)
	if err != nil {
		return 0, err
	}
	for _, o := range f.Node.(*hcl1ast.ObjectList).Filter("capacity_max").Elem().Items {
		lit, ok := o.Val.(*hcl1ast.LiteralType)
		if !ok {
			break
		}
		literal := strings.Trim(lit.Token.Text, `"`)
		if literal == "" {
			return 0, nil
		}
		b, err := humanize.ParseBytes(literal)
		return int64(b), err
	}
	return 0, nil
}

// TestJSONCapacityTextIsReadAsNomadReadsIt: docs/specs.md says a capacity Nomad cannot read
// as written (an escape, "1\u0030GiB"; a blank before the digits) is refused, as Nomad refuses
// the file. The check (volume.go, size: capacityText) ran for HCL only, so a JSON spec, which
// Nomad reads with the same parseCapacityBytes over the JSON token's raw text, was read by
// volctl as 1 GiB, silently, while `nomad volume register` refused it.
func TestJSONCapacityTextIsReadAsNomadReadsIt(t *testing.T) {
	const head = `{"id":"db","type":"csi","plugin_id":"ebs","capability":[{"access_mode":"single-node-writer","attachment_mode":"file-system"}],`
	for _, c := range []struct{ name, value string }{
		{"escape", `"1\u0047iB"`},
		{"escaped digit", `"\u0031GiB"`},
		{"leading blank", `" 1GiB"`},
		{"escaped newline", `"1GiB\n"`},
	} {
		src := head + `"capacity_max":` + c.value + "}"
		if _, err := nomadCapacity(t, src); err == nil {
			t.Fatalf("%s: Nomad's reading takes %s; the test's premise is wrong", c.name, c.value)
		}
		v, diags := ParseVolume("v.json", []byte(src), VerbAny)
		if v != nil {
			t.Errorf("%s: JSON capacity_max %s read as %d bytes, no error (%v); Nomad refuses the file (parseCapacityBytes reads the text as written), and volctl refuses the same value in HCL", c.name, c.value, v.CapacityMax, diags)
			continue
		}
		found := false
		for _, d := range diags {
			found = found || d.Summary == "Invalid capacity"
		}
		if !found {
			t.Errorf("%s: refused, but not as an invalid capacity: %v", c.name, diags)
		}
	}
}

// TestCapacityNomadWrapsIsRefused: docs/specs.md refuses "a capacity above 8 EiB
// (Nomad's CLI wraps it to a negative number)" and warns ("Capacity Nomad reads otherwise")
// wherever Nomad's float64 reading differs from volctl's exact one. Sizes just below 2^63
// bytes written with a fraction round up to 2^63 in a float64 (7.999999999999999999 is 8.0),
// which Nomad's parseCapacityBytes converts to int64 as -9223372036854775808:
// nomadSize (size.go) returned ok=false for them ("where ParseSize refuses the size", which it
// does not), so volctl took them with neither the error nor the warning; they are refused now.
func TestCapacityNomadWrapsIsRefused(t *testing.T) {
	// Fractions only: they go through go-humanize's float64 path in every version of it (a
	// whole number is read exactly by newer ones).
	for _, s := range []string{`"7.999999999999999999EiB"`, `"7.9999999999999999EiB"`, `"8191.9999999999999PiB"`} {
		src := baseVolume + "capacity_max = " + s + "\n"
		nomad, err := nomadCapacity(t, src)
		if err != nil || nomad >= 0 {
			t.Fatalf("%s: Nomad reads %d (%v); the test's premise (a negative, wrapped capacity) is wrong", s, nomad, err)
		}
		v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		if v == nil {
			continue // refused, as a capacity Nomad wraps is
		}
		warned := false
		for _, d := range diags {
			warned = warned || d.Summary == "Capacity Nomad reads otherwise"
		}
		if !warned {
			t.Errorf("capacity_max = %s: read as %d bytes with no error or warning (%v), but Nomad's CLI reads it as %d (2^63 in float64, wrapped to int64 negative); a capacity above 8 EiB that wraps so is refused, and this one says nothing",
				s, v.CapacityMax, diags, nomad)
		}
	}
}

// TestInvalidUTF8InACommentIsRefused: docs/specs.md: "A file that is not UTF-8, JSON
// too, is refused at its first byte that is not ("Invalid character encoding"), as Nomad
// refuses it." A byte that was not UTF-8 in a comment passed: HCL2's native parser checks the
// encoding of the tokens it reads but not of a comment's text, and load (parse.go) applied
// invalidUTF8 to JSON files only. Nomad's HCL1 scanner refuses the file ("illegal UTF-8
// encoding"), so `nomad volume register` refused a file `volctl validate` called valid.
func TestInvalidUTF8InACommentIsRefused(t *testing.T) {
	for _, c := range []struct{ name, comment string }{
		{"hash comment", "# caf\xe9 (Latin-1)\n"},
		{"slash comment", "// caf\xe9 (Latin-1)\n"},
		{"block comment", "/* caf\xe9 (Latin-1) */\n"},
	} {
		src := baseVolume + c.comment
		if _, err := hcl1.Parse(src); err == nil || !strings.Contains(err.Error(), "illegal UTF-8") {
			t.Fatalf("%s: HCL1 reads it (%v); the test's premise is wrong", c.name, err)
		}
		v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		if v != nil {
			t.Errorf("%s: a file holding the byte 0xE9 (not UTF-8) is read as valid (%v); docs/specs.md says it is refused at that byte, as Nomad refuses it (HCL1: illegal UTF-8 encoding)", c.name, diags)
			continue
		}
		line := strings.Count(baseVolume, "\n") + 1
		diagAt(t, c.name, diags, "Invalid character encoding", line, strings.Index(c.comment, "\xe9")+1)
	}
}

// TestOneLineItemsWithoutCommasAreRead: HCL1, which Nomad reads volume specs with,
// takes a one-line body whose items stand side by side with no comma (`capability {
// access_mode = "..." attachment_mode = "..." }`), and so does Nomad. volctl's HCL1 rewrite
// handled quoted names, one-line blocks and commas, but not items separated by blanks, and
// refused the file ("Missing newline after argument"). That is the very form volctl's own
// "Missing capability" error tells the user to write (volume.go: `e.g. capability {
// access_mode = "single-node-writer" attachment_mode = "file-system" }`): pasted in, it was
// refused. The first source below is that suggestion, pasted.
func TestOneLineItemsWithoutCommasAreRead(t *testing.T) {
	head := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n"
	_, diags := ParseVolume("v.hcl", []byte(head), VerbAny)
	var example string
	for _, d := range diags {
		if d.Summary == "Missing capability" {
			if i := strings.Index(d.Detail, "e.g. "); i >= 0 {
				example = strings.TrimSuffix(d.Detail[i+len("e.g. "):], ".")
			}
		}
	}
	if !strings.HasPrefix(example, "capability {") {
		t.Fatalf("no example in the Missing capability error: %v", diags)
	}
	for _, src := range []string{
		head + example + "\n",
		head + "capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n" +
			"secrets { user = \"admin-user\" pass = \"hunter2-secret\" }\n",
	} {
		var m map[string]any
		if err := hcl1.Decode(&m, src); err != nil {
			t.Fatalf("HCL1 refuses %q: %v; the test's premise is wrong", src, err)
		}
		v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		if v == nil {
			t.Errorf("refused, though Nomad's HCL1 reads it (and the first is the example volctl's own \"Missing capability\" error gives): %v\n%s", diags, src)
		}
	}
}

// TestStringValuesNotInNFCAreWarnedOf: HCL2's parsers (native and JSON) normalise every
// string to Unicode NFC, and volctl reads a volume spec's values through them as they are:
// a secret, a mount flag, a parameter or the external_id written decomposed ("e" U+0301) is
// silently changed to another byte string (U+00E9). Nomad's HCL1 keeps the bytes written and
// sends them to the plugin; volctl sent other bytes, with no warning: a password typed or
// generated in NFD no longer matches, an external_id naming storage in NFD names other
// storage. volctl cannot keep the bytes through HCL2, so it warns, naming each value
// (normalForm); docs/specs.md says so.
func TestStringValuesNotInNFCAreWarnedOf(t *testing.T) {
	const dec = "cafe\u0301" // as written in the file
	src := baseVolume + "external_id = \"vol-" + dec + "\"\n" +
		"parameters {\n  p = \"" + dec + "\"\n}\n" +
		"secrets {\n  s = \"pw-" + dec + "\"\n}\n" +
		"mount_options {\n  mount_flags = [\"opt=" + dec + "\"]\n}\n"
	var m map[string]any
	if err := hcl1.Decode(&m, src); err != nil || m["external_id"] != "vol-"+dec {
		t.Fatalf("HCL1 reads external_id %+q (%v); the test's premise is wrong", m["external_id"], err)
	}
	for _, json := range []bool{false, true} {
		name, in := "v.hcl", src
		if json {
			name = "v.json"
			in = `{"id":"db","type":"csi","plugin_id":"ebs","capability":[{"access_mode":"single-node-writer","attachment_mode":"file-system"}],` +
				`"external_id":"vol-` + dec + `","parameters":{"p":"` + dec + `"},"secrets":{"s":"pw-` + dec + `"},"mount_options":{"mount_flags":["opt=` + dec + `"]}}`
		}
		v, diags := ParseVolume(name, []byte(in), VerbRegister)
		if v == nil {
			t.Fatalf("%s: refused: %v", name, diags)
		}
		got := map[string]string{"external_id": v.ExternalID, "parameters.p": v.Parameters["p"], "secrets.s": v.Secrets["s"]}
		if v.MountOptions != nil && len(v.MountOptions.MountFlags) == 1 {
			got["mount_flags[0]"] = v.MountOptions.MountFlags[0]
		}
		want := map[string]string{"external_id": "vol-" + dec, "parameters.p": dec, "secrets.s": "pw-" + dec, "mount_flags[0]": "opt=" + dec}
		for k, w := range want {
			if got[k] != w && !warnedOfNormalForm(diags) {
				t.Errorf("%s: %s is %+q, written (and sent by Nomad) as %+q: the value is silently changed to NFC", name, k, got[k], w)
			}
		}
		// Each value is named, and none is quoted: a secret's text is never shown.
		for _, named := range []string{"external_id", "parameters.p", "secrets.s", "mount_flags[0]"} {
			found := false
			for _, d := range diags {
				found = found || d.Severity == hcl.DiagWarning && strings.Contains(d.Detail, named)
			}
			if !found {
				t.Errorf("%s: no warning names %s: %v", name, named, diags)
			}
		}
		if strings.Contains(diags.Error(), "pw-") {
			t.Errorf("%s: a diagnostic quotes the secret: %v", name, diags)
		}
	}
}

// warnedOfNormalForm reports whether diags hold a warning of Unicode normalisation.
func warnedOfNormalForm(diags hcl.Diagnostics) bool {
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning && strings.Contains(strings.ToLower(d.Summary+d.Detail), "normal") {
			return true
		}
	}
	return false
}

// TestSyntaxErrorInSecretsKeepsHCLsWords: a typo in a secrets block (`bad key = "x"`,
// a key with a space) gets HCL's "Missing key/value separator", but hideMasked (redact.go)
// replaced every occurrence of the masked text under the subject ("key", a word of the
// typo'd key, which the masker took for a value) in the summary too: the user read "Missing
// [REDACTED]/value separator". Nothing secret is in that summary; the word is HCL's own.
func TestSyntaxErrorInSecretsKeepsHCLsWords(t *testing.T) {
	src := baseVolume + "secrets {\n  bad key = \"x\"\n}\n"
	_, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
	for _, d := range diags {
		if strings.Contains(d.Summary, Redacted) {
			t.Errorf("summary %q: HCL's own words are scrubbed as if secret (want \"Missing key/value separator\")", d.Summary)
		}
	}
	if !diags.HasErrors() {
		t.Fatalf("read: %v", diags)
	}
	// The words are kept, the secret still never shown.
	p := NewParser()
	_, diags = p.ParseVolume("v.hcl", []byte(baseVolume+"secrets {\n  bad key = \"hunter2-secret\"\n}\n"), VerbAny)
	if out := renderPlain(p, diags); strings.Contains(out, "hunter2") || !diags.HasErrors() {
		t.Errorf("want the file refused, and no secret shown:\n%s", out)
	}
}
