package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// dbEBSWriter is dbEBS with the capability every volume needs: the start of these tests' specs.
const dbEBSWriter = dbEBS + "capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"

// TestScalarsAsNomadSendsThem: a bool or number written in parameters, secrets, context or
// mount_options is sent as the string `nomad volume register` sends for the same file, in every
// form volctl reads (HCL2 blocks and attributes, HCL1 that needs the rewrite, JSON). The
// expected strings are what Nomad (the snapshot's CLI, reading with HCL1 and
// mapstructure.WeakDecode) put in its register request for these values.
func TestScalarsAsNomadSendsThem(t *testing.T) {
	wantMap := map[string]string{
		"on": "1", "off": "0", "uid": "1000", "neg": "-7", "f": "1.5", "exp": "1000",
		"big": "9223372036854775807", "bigf": "12345678901234567000", "small": "0.000001", "s": "x",
	}
	const values = `on = true
  off = false
  uid = 1000
  neg = -7
  f = 1.50
  exp = 1e3
  big = 9223372036854775807
  bigf = 12345678901234567890.5
  small = 0.000001
  s = "x"`
	head := dbEBSWriter
	block := func(name string) string { return name + " {\n  " + values + "\n}\n" }
	attr := func(name string) string { return name + " = {\n  " + values + "\n}\n" }
	mo := "mount_options {\n  fs_type = 1.50\n  mount_flags = [1.50, -2, 1e3, true]\n}\n"
	jsonValues := `{"on": true, "off": false, "uid": 1000, "neg": -7, "f": 1.50, "exp": 1e3,
  "big": 9223372036854775807, "bigf": 12345678901234567890.5, "small": 0.000001, "s": "x"}`
	for _, c := range []struct{ name, src string }{
		{"hcl2 blocks", head + block("parameters") + block("secrets") + block("context") + mo},
		{"hcl2 attributes", head + attr("parameters") + attr("secrets") + attr("context") + mo},
		// A quoted argument name is HCL1 only: the file goes through the rewrite.
		{"hcl1", head + "\"name\" = \"n\"\n" + block("parameters") + block("secrets") + block("context") + mo},
		{"json", `{"id": "db", "type": "csi", "plugin_id": "ebs",
  "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],
  "parameters": ` + jsonValues + `, "secrets": ` + jsonValues + `, "context": ` + jsonValues + `,
  "mount_options": {"fs_type": 1.50, "mount_flags": [1.50, -2, 1e3, "true"]}}`},
	} {
		name := "v.hcl"
		if c.name == "json" {
			name = "v.json"
		}
		v, diags := ParseVolume(name, []byte(c.src), VerbAny)
		if diags.HasErrors() || v == nil {
			t.Errorf("%s: %v", c.name, diags)
			continue
		}
		for _, m := range []struct {
			what string
			got  map[string]string
		}{{"parameters", v.Parameters}, {"secrets", v.Secrets.Plain()}, {"context", v.Context}} {
			if !reflect.DeepEqual(m.got, wantMap) {
				t.Errorf("%s: %s %q\nwant %q", c.name, m.what, m.got, wantMap)
			}
		}
		if v.MountOptions == nil || v.MountOptions.FSType != "1.50" ||
			!reflect.DeepEqual([]string(v.MountOptions.MountFlags.Plain()), []string{"1.50", "-2", "1e3", "true"}) {
			t.Errorf("%s: mount_options %q %q, want fs_type \"1.50\" and flags [\"1.50\" \"-2\" \"1e3\" \"true\"], numbers as written",
				c.name, v.MountOptions.FSType, v.MountOptions.MountFlags.Plain())
		}
	}
}

// A whole number beyond int64 in parameters makes Nomad refuse the file ("value out of range"):
// volctl refuses it too, saying how to write it, rather than send a string Nomad never would.
func TestWholeNumberBeyondInt64IsRefused(t *testing.T) {
	for _, src := range []string{
		"id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nparameters {\n  big = 12345678901234567890\n}\n",
		"id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nparameters {\n  big = -12345678901234567890\n}\n",
	} {
		_, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		if !hasDiag(diags, hcl.DiagInvalid, "write it as a string") {
			t.Errorf("%s: %v, want an error saying to quote it", src, diags)
		}
	}
}

// Nomad reads a whole number written with a leading 0 as octal (HCL1 parses it with
// strconv.ParseInt base 0): `mode = 0755` reaches the plugin as "493" through Nomad, and `08`
// makes Nomad refuse the file. volctl sends what Nomad sends, warning that the digits are not
// sent as written and how to send them, and refuses what Nomad refuses, rather than send "755"
// or "8", which no Nomad would. Neither message shows the value: it may be a secret's.
func TestLeadingZeroIsOctalAsNomadReadsIt(t *testing.T) {
	head := dbEBSWriter
	for _, form := range []struct{ name, extra string }{{"hcl2", ""}, {"hcl1", "\"name\" = \"n\"\n"}} {
		src := head + form.extra + "parameters {\n  mode = 0644\n  neg = -010\n  zero = 00\n  dec = 10\n}\n"
		v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		if diags.HasErrors() || v == nil {
			t.Fatalf("%s: %v", form.name, diags)
		}
		want := map[string]string{"mode": "420", "neg": "-8", "zero": "0", "dec": "10"}
		if !reflect.DeepEqual(v.Parameters, want) {
			t.Errorf("%s: parameters %q, want %q (as Nomad sends them)", form.name, v.Parameters, want)
		}
		warned := false
		for _, d := range diags {
			warned = warned || d.Severity == hcl.DiagWarning && strings.Contains(d.Detail, "octal") && strings.Contains(d.Detail, "in quotes")
			if strings.Contains(d.Detail, "0644") || strings.Contains(d.Detail, "420") {
				t.Errorf("%s: a diagnostic shows the value: %s", form.name, d.Detail)
			}
		}
		if !warned {
			t.Errorf("%s: no warning that 0644 is sent as 420 and how to send the digits: %v", form.name, diags)
		}

		src = head + form.extra + "parameters {\n  mode = 0789\n}\n"
		_, diags = ParseVolume("v.hcl", []byte(src), VerbAny)
		if !hasDiag(diags, hcl.DiagError, "octal", "in quotes") {
			t.Errorf("%s: 0789 (not octal: Nomad refuses the file): %v; want it refused, saying why and how to write it", form.name, diags)
		}
	}
}

// A number in secrets that Nomad would refuse (beyond int64, beyond float64) is refused naming
// the key, never showing the value: the source snippet masks it, and the detail must not print
// it beside the mask.
func TestRefusedSecretNumberIsNotShown(t *testing.T) {
	head := dbEBSWriter
	for _, val := range []string{"98765432109876543210", "-98765432109876543210", "7e400"} {
		_, diags := ParseVolume("v.hcl", []byte(head+"secrets {\n  token = "+val+"\n}\n"), VerbAny)
		refused := false
		for _, d := range diags {
			refused = refused || d.Severity == hcl.DiagError && strings.Contains(d.Detail, "secrets.token") && strings.Contains(d.Detail, "in quotes")
			if strings.Contains(d.Detail, strings.TrimPrefix(val, "-")) || strings.Contains(d.Summary, strings.TrimPrefix(val, "-")) {
				t.Errorf("secret %s shown in a diagnostic: %s: %s", val, d.Summary, d.Detail)
			}
		}
		if !refused {
			t.Errorf("secret %s: %v; want it refused naming secrets.token and saying to quote it", val, diags)
		}
	}
}

// TestNumbersAsHCL1ReadsThem: numbers HCL1 reads as one word and HCL2 does not (0x1F, 0XaB,
// -0x10, 1., .5, 1.e+3) are read, and sent as `nomad volume register` (v2.0.6-dev, HCL1 and
// mapstructure.WeakDecode) sent them for this very file: weakly decoded fields get the number's
// decimal, mount_options the text as written.
func TestNumbersAsHCL1ReadsThem(t *testing.T) {
	src := `id = "db"
type = "csi"
plugin_id = "ebs"
name = 0x1F
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
mount_options {
  fs_type = 0XaB
  mount_flags = [0x1F, -0x10, 1., .5, 1.e+3, 0xE]
}
parameters {
  h = 0x1F
  H = 0XaB
  n = -0x10
  e = 0xE
  big = 0x7FFFFFFFFFFFFFFF
  min = -0x8000000000000000
  p = 1.
  q = .5
  r = 1.e+3
}
secrets {
  h = 0x1F
  q = .5
}
context {
  h = 0xff
}
`
	v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
	if diags.HasErrors() || v == nil {
		t.Fatalf("%v", diags)
	}
	for _, d := range diags {
		if strings.Contains(d.Detail, "octal") {
			t.Errorf("a hexadecimal number taken for octal: %s", d.Detail)
		}
	}
	if v.Name != "31" {
		t.Errorf("name %q, want \"31\"", v.Name)
	}
	if got, want := v.MountOptions.FSType, "0XaB"; got != want {
		t.Errorf("fs_type %q, want %q", got, want)
	}
	if got, want := []string(v.MountOptions.MountFlags.Plain()), []string{"0x1F", "-0x10", "1.", ".5", "1.e+3", "0xE"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mount_flags %q, want %q", got, want)
	}
	wantParams := map[string]string{"H": "171", "big": "9223372036854775807", "e": "14", "h": "31",
		"min": "-9223372036854775808", "n": "-16", "p": "1", "q": "0.5", "r": "1000"}
	if !reflect.DeepEqual(v.Parameters, wantParams) {
		t.Errorf("parameters %q, want %q", v.Parameters, wantParams)
	}
	if got, want := v.Secrets.Plain(), map[string]string{"h": "31", "q": "0.5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("secrets %q, want %q", got, want)
	}
	if got, want := v.Context, map[string]string{"h": "255"}; !reflect.DeepEqual(got, want) {
		t.Errorf("context %q, want %q", got, want)
	}

	// Beyond int64, Nomad refuses it ("value out of range"); the error points at the number
	// as written, whole.
	_, diags = ParseVolume("v.hcl", []byte("id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nparameters {\n  p = 0x8000000000000000\n}\n"+
		"capability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"), VerbAny)
	if !diags.HasErrors() || diags[0].Subject == nil || diags[0].Subject.Start.Column != 7 || diags[0].Subject.End.Column != 25 ||
		!strings.Contains(diags[0].Detail, "write it as a string") {
		t.Errorf("0x8000000000000000: %v, want an error at 5:7-25 saying to quote it", diags)
	}
}

// TestNumbersHCL1RefusesAreRefused: what Nomad's HCL1 does not read as a number (it refused
// each of these files) is refused with an error at the value, naming it and saying what to
// write, not HCL2's "Missing newline after argument"; a secret's value is not shown.
func TestNumbersHCL1RefusesAreRefused(t *testing.T) {
	head := "id = \"db\"\ntype = \"csi\"\nplugin_id = \"ebs\"\nparameters {\n  p = "
	for _, c := range []struct{ word, want string }{
		{"1_000", "(1000)"},
		{"0x", "hexadecimal digits"},
		{"0x1g", "hexadecimal digits"},
		{"0X_1", "digit separators"},
		{"0b101", "no binary"},
		{"0o17", "0o octal"},
		{"1e", "exponent needs digits"},
		{"1.5e", "exponent needs digits"},
		{"-.5", "(-0.5)"},
	} {
		_, diags := ParseVolume("v.hcl", []byte(head+c.word+"\n}\n"), VerbAny)
		if len(diags) != 1 || diags[0].Summary != "Invalid number" {
			t.Errorf("%s: %v, want one \"Invalid number\" error", c.word, diags)
			continue
		}
		d := diags[0]
		if r := d.Subject; r == nil || r.Start.Line != 5 || r.Start.Column != 7 || r.End.Column != 7+len(c.word) {
			t.Errorf("%s: at %v, want 5:7 to 5:%d", c.word, d.Subject, 7+len(c.word))
		}
		if !strings.Contains(d.Detail, `"`+c.word+`"`) || !strings.Contains(d.Detail, c.want) || !strings.Contains(d.Detail, "in quotes") {
			t.Errorf("%s: %q, want the value, %q and how to quote it", c.word, d.Detail, c.want)
		}
		_, diags = ParseVolume("v.hcl", []byte(strings.Replace(head, "parameters", "secrets", 1)+c.word+"\n}\n"), VerbAny)
		if len(diags) == 0 || strings.Contains(diags[0].Detail, `"`+c.word+`"`) || strings.Contains(diags[0].Detail, "(1000)") || strings.Contains(diags[0].Detail, "0.5") {
			t.Errorf("secrets %s: %v, want an error not showing the value", c.word, diags)
		}
	}
}

// TestMountOptionNumbersNomadRefusesAreRefused: Nomad decodes the whole file into untyped
// values first (ParseInt base 0 for a whole number), so a mount option number it cannot read
// makes it refuse the file ("value out of range", "invalid syntax"), though it then sends
// mount options as written; and it reads capacity_min's text as a size, which has no 0x
// ("unhandled size name: x10"). The real CLI refused each of these files; volctl must too.
func TestMountOptionNumbersNomadRefusesAreRefused(t *testing.T) {
	head := dbEBSWriter
	for _, c := range []struct{ extra, want string }{
		{"mount_options {\n  mount_flags = [99999999999999999999]\n}\n", "write it as a string"},
		{"mount_options {\n  fs_type = 0x8000000000000000\n}\n", "write it as a string"},
		{"mount_options {\n  fs_type = 08\n}\n", "write it as a string"},
		{"capacity_min = 0x10\n", `write 16 (bytes)`},
	} {
		_, diags := ParseVolume("v.hcl", []byte(head+c.extra), VerbAny)
		if !hasDiag(diags, hcl.DiagError, c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.extra, diags, c.want)
		}
	}
}

// TestSpacedSignIsRefused: Nomad reads a volume spec with HCL1, whose scanner takes a - as a
// number's sign only directly before a digit: `- 5` is a SUB token its parser refuses (the
// real CLI: "At 5:16: Unknown token: 5:16 SUB -"), in a file HCL2 reads as it is and in one
// that needs the HCL1 rewrite, in any value. volctl refused nothing (HCL2 reads it as the
// expression -5 and sent "-5"): one error at the sign, saying what to write, never the value
// (it may be a secret's). A group spec is not Nomad's HCL1 (a job is HCL2 there): not refused.
func TestSpacedSignIsRefused(t *testing.T) {
	head := dbEBSWriter
	for _, c := range []struct{ name, extra string }{
		{"parameters", "parameters {\n  p = - 5\n}\n"},
		{"secrets", "secrets {\n  p = -  7\n}\n"},
		{"hcl1 parameters", "\"parameters\" = { p = - 5 }\n"},
		{"hcl1 block", "parameters { p = - 5, q = 1 }\n"},
		{"comment", "parameters {\n  p = -/* */5\n}\n"},
		{"mount_flags", "mount_options {\n  mount_flags = [- 5]\n}\n"},
		{"capacity", "capacity_min = - 5\n"},
		{"name", "name = - 5\n"},
	} {
		_, diags := ParseVolume("v.hcl", []byte(head+c.extra), VerbAny)
		var signs hcl.Diagnostics
		for _, d := range diags {
			if d.Summary == "Invalid number" {
				signs = append(signs, d)
			}
		}
		if len(signs) != 1 || !diags.HasErrors() {
			t.Errorf("%s: %v, want one \"Invalid number\" error", c.name, diags)
			continue
		}
		d := signs[0]
		line := strings.Count(head, "\n") + 1 + strings.Count(c.extra[:strings.Index(c.extra, "-")], "\n")
		col := strings.Index(c.extra, "-") - strings.LastIndex(c.extra[:strings.Index(c.extra, "-")], "\n")
		if r := d.Subject; r == nil || r.Start.Line != line || r.Start.Column != col {
			t.Errorf("%s: at %v, want %d:%d, the sign", c.name, d.Subject, line, col)
		}
		if !strings.Contains(d.Detail, "-5, not - 5") || strings.Contains(d.Detail, "7") {
			t.Errorf("%s: %q, want what to write (-5, not - 5), and not the value", c.name, d.Detail)
		}
	}
	// 2 - 1 is an expression, which Nomad's HCL1 refuses too, for what it is
	// (TestVolumeSpecValuesAreHCL1Values), not for a sign.
	if _, diags := ParseVolume("v.hcl", []byte(head+"parameters {\n  q = 2 - 1\n}\n"), VerbAny); len(diags) != 1 || diags[0].Summary != "Not a value Nomad reads" {
		t.Errorf("2 - 1: %v, want it refused as an expression", diags)
	}
	for _, ok := range []string{"parameters {\n  p = -5\n}\n", "name = \"- 5\"\n"} {
		if _, diags := ParseVolume("v.hcl", []byte(head+ok), VerbAny); diags.HasErrors() {
			t.Errorf("%q: %v, want it read", ok, diags)
		}
	}
	group := "group \"g\" {\n  count = - 2\n  volume \"v\" {\n    type = \"csi\"\n    source = \"db\"\n" +
		"    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n"
	_, diags := NewParser().ParseGroup("g.hcl", []byte(group))
	for _, d := range diags {
		if d.Summary == "Invalid number" {
			t.Errorf("group: %v, a group is not read as HCL1", d)
		}
	}
}

// TestNumberFieldsAsNomadReadsThem: outside the maps and mount_options, a number in a volume
// spec is read as `nomad volume register` reads it (the real CLI sent, or refused, each of these
// files). Nomad decodes the whole file untyped first, so a number it cannot read anywhere (08,
// beyond int64 or float64) refuses the file; the string fields (id, namespace, plugin_id, name,
// external_id, snapshot_id, clone_id) are then decoded weakly, as the maps are (0755 -> "493",
// true -> "1", 1e21 -> its digits); a capacity is the number's text as written read as a size
// (humanize.ParseBytes): no exponent ("unhandled size name: e3"), a fraction of a byte dropped,
// so .5 is 0, unset, which gets a warning. A group's count (Nomad's int) is a whole number in
// range: 1e30 is no fraction, and 2147483648 is past the bound.
func TestNumberFieldsAsNomadReadsThem(t *testing.T) {
	head := dbEBSWriter
	for _, c := range []struct {
		line string
		want string // the error's or warning's detail holds it; "" for none
		warn bool
		get  func(*Volume) any
		val  any
	}{
		{line: "capacity_min = 1e3", want: "no exponent"},
		{line: "capacity_min = 1E3", want: "no exponent"},
		{line: "capacity_max = 1.5e3", want: "no exponent"},
		{line: "capacity_min = 08", want: "octal"},
		{line: "capacity_min = 99999999999999999999", want: `size "99999999999999999999" is too large`}, // in quotes too (TestValueProblemsSayWhatToWrite)
		{line: "capacity_max = .5", want: "unset", warn: true, get: func(v *Volume) any { return v.CapacityMax }, val: int64(0)},
		{line: "capacity_min = 0.9", want: "unset", warn: true, get: func(v *Volume) any { return v.CapacityMin }, val: int64(0)},
		{line: "capacity_min = 1.", get: func(v *Volume) any { return v.CapacityMin }, val: int64(1)},
		{line: "capacity_min = 1.5", get: func(v *Volume) any { return v.CapacityMin }, val: int64(1)},
		{line: "capacity_min = 010", get: func(v *Volume) any { return v.CapacityMin }, val: int64(10)},
		{line: "capacity_max = 0", get: func(v *Volume) any { return v.CapacityMax }, val: int64(0)},
		{line: "name = 0755", want: "octal", warn: true, get: func(v *Volume) any { return v.Name }, val: "493"},
		{line: "name = 1e21", get: func(v *Volume) any { return v.Name }, val: "1000000000000000000000"},
		{line: "name = 1.50", get: func(v *Volume) any { return v.Name }, val: "1.5"},
		{line: "name = true", get: func(v *Volume) any { return v.Name }, val: "1"},
		{line: "external_id = 0x1F", get: func(v *Volume) any { return v.ExternalID }, val: "31"},
		{line: "name = 08", want: "octal"},
		{line: "name = 99999999999999999999", want: "beyond the whole numbers"},
		{line: "name = 1e400", want: "beyond"},
		{line: "snapshot_id = -9223372036854775809", want: "beyond the whole numbers"},
		{line: "namespace = 09", want: "octal"},
		{line: "capability {\n  access_mode = 08\n  attachment_mode = \"file-system\"\n}", want: "octal"},
	} {
		v, diags := ParseVolume("v.hcl", []byte(head+c.line+"\n"), VerbAny)
		var found *hcl.Diagnostic
		for _, d := range diags {
			if c.want != "" && strings.Contains(d.Detail, c.want) {
				found = d
			}
		}
		switch {
		case c.want == "" && len(diags) > 0:
			t.Errorf("%s: %v, want no diagnostic", c.line, diags)
		case c.want != "" && found == nil:
			t.Errorf("%s: %v, want a diagnostic saying %q", c.line, diags, c.want)
		case found != nil && (found.Severity == hcl.DiagWarning) != c.warn:
			t.Errorf("%s: %v, want warning=%v", c.line, found, c.warn)
		case c.get != nil && v == nil:
			t.Errorf("%s: %v, want it read", c.line, diags)
		case c.get != nil && c.get(v) != c.val:
			t.Errorf("%s: read as %#v, want %#v (as Nomad sends it)", c.line, c.get(v), c.val)
		}
	}
	group := func(count string) string {
		return "group \"g\" {\n  count = " + count + "\n  volume \"v\" {\n    type = \"csi\"\n    source = \"db\"\n" +
			"    per_alloc = true\n    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n"
	}
	for _, c := range []struct{ count, want string }{
		{"1.5", "whole number"}, {"1e30", "at most"}, {"2147483648", "at most"}, {"-2147483649", "at least 1"},
	} {
		_, diags := NewParser().ParseGroup("g.hcl", []byte(group(c.count)))
		if !diags.HasErrors() || !strings.Contains(diags.Error(), c.want) || c.want != "whole number" && strings.Contains(diags.Error(), "whole number") {
			t.Errorf("count = %s: %v, want an error saying %q", c.count, diags, c.want)
		}
	}
}

// TestSegmentNumbersAsWritten: Nomad decodes topology segments straight into strings, which
// keeps a number as written (the real CLI sent rack = 0x1F as "0x1F", zone = 01 as "01") and a
// bool as written ("true"), as in mount_options; volctl sent "31", "1" and "true", so a volume
// whose segment is 01 was not accessible from the node whose segment is "01". One Nomad cannot
// read (08) refuses the file.
func TestSegmentNumbersAsWritten(t *testing.T) {
	head := dbEBSWriter
	seg := func(s string) string {
		return head + "topology_request {\n  required {\n    topology {\n      segments {\n" + s + "\n      }\n    }\n  }\n}\n"
	}
	v, diags := ParseVolume("v.hcl", []byte(seg("rack = 0x1F\nzone = 01\nrow = 1.50\non = true")), VerbAny)
	if diags.HasErrors() || v == nil {
		t.Fatalf("%v", diags)
	}
	want := map[string]string{"rack": "0x1F", "zone": "01", "row": "1.50", "on": "true"}
	if got := v.TopologyRequest.Required[0].Segments; !reflect.DeepEqual(got, want) {
		t.Errorf("segments %q, want %q (as written, as Nomad sends them)", got, want)
	}
	_, diags = ParseVolume("v.hcl", []byte(seg("zone = 08")), VerbAny)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "octal") {
		t.Errorf("zone = 08: %v, want it refused", diags)
	}
}

// TestVolumeTypeInAnyCase: Nomad lower-cases a volume spec's type before it dispatches on it
// (`nomad volume register` registered type = "CSI"); volctl refused "CSI" as "not a volume type
// volctl handles", and took type = "Host" for an unknown type rather than a host volume.
func TestVolumeTypeInAnyCase(t *testing.T) {
	v, diags := ParseVolume("v.hcl", []byte(strings.Replace(dbEBSWriter, `"csi"`, `"CSI"`, 1)), VerbAny)
	if diags.HasErrors() || v == nil || v.Type != "csi" {
		t.Errorf("type = \"CSI\": %v, %+v; want the volume, of type csi", diags, v)
	}
	_, diags = ParseVolume("v.hcl", []byte(strings.Replace(dbEBSWriter, `"csi"`, `"Host"`, 1)), VerbAny)
	if len(diags) != 1 || diags[0].Summary != "Host volumes are not supported" {
		t.Errorf("type = \"Host\": %v, want the one host volume error", diags)
	}
	// Lower-cased, not case-folded: the long s folds to s, and Nomad refuses "cſi".
	if _, diags = ParseVolume("v.hcl", []byte(strings.Replace(dbEBSWriter, `"csi"`, `"cſi"`, 1)), VerbAny); !diags.HasErrors() {
		t.Errorf("type = \"cſi\" read")
	}
}

// hasDiag reports whether diags hold one of severity sev (hcl.DiagInvalid: any) whose detail
// says every one of words.
func hasDiag(diags hcl.Diagnostics, sev hcl.DiagnosticSeverity, words ...string) bool {
	for _, d := range diags {
		if sev != hcl.DiagInvalid && d.Severity != sev {
			continue
		}
		all := true
		for _, w := range words {
			all = all && strings.Contains(d.Detail, w)
		}
		if all {
			return true
		}
	}
	return false
}
