package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// diagAt returns the one diagnostic of summary in diags, failing unless there is exactly one
// and it starts at line:col.
func diagAt(t *testing.T, what string, diags hcl.Diagnostics, summary string, line, col int) *hcl.Diagnostic {
	t.Helper()
	var found []*hcl.Diagnostic
	for _, d := range diags {
		if d.Summary == summary {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		t.Errorf("%s: %d %q diagnostics, want 1: %v", what, len(found), summary, diags)
		return nil
	}
	if r := found[0].Subject; r == nil || r.Start.Line != line || r.Start.Column != col {
		t.Errorf("%s: %q at %v, want %d:%d", what, summary, found[0].Subject, line, col)
	}
	return found[0]
}

// TestVolumeSpecValuesAreHCL1Values: Nomad reads a volume spec with HCL1, which has values
// only; `nomad volume register` refuses a file with an HCL2 expression in it (checked with
// Nomad v2.0.6-dev: "illegal char" at the * of 2*1024, at the ( of (1024), at the : of a: "x").
// volctl refuses each, where Nomad does, with what to write instead, in HCL and after the
// HCL1 rewrite alike; a group spec, which Nomad reads as a job (HCL2), keeps its expressions.
func TestVolumeSpecValuesAreHCL1Values(t *testing.T) {
	head := baseVolume + "\n"
	line := strings.Count(head, "\n") + 1
	for _, c := range []struct{ name, src, at, what string }{
		{"product", "capacity_min = 2*1024", "2*", "(here *)"},
		{"sum in a parameter block", "parameters {\n  x = 1 + 1\n}", "1 +", "(here +)"},
		{"product in a parameter map", "parameters = {\n  x = 2 * 3\n}", "2 *", "(here *)"},
		{"comparison", "parameters {\n  x = 1 == 1\n}", "1 ==", "(here ==)"},
		{"conditional", "parameters {\n  x = true ? \"a\" : \"b\"\n}", "true", "conditionals"},
		{"not", "parameters {\n  x = !true\n}", "!", "(here !)"},
		{"negated parentheses", "capacity_min = -(5)", "-(", "- on a value"},
		{"parentheses", "capacity_min = (1024)", "(", "parentheses"},
		{"for", "mount_options {\n  mount_flags = [for s in [\"a\"] : s]\n}", "[for", "for expressions"},
		{"index", "parameters {\n  x = [\"a\", \"b\"][0]\n}", "[\"a\"", "indexes"},
		{"splat", "mount_options {\n  mount_flags = [\"a\"][*]\n}", "[\"a\"", "splats"},
		{"colon in a block", "parameters {\n  a: \"x\"\n}", ":", `":" between a key and its value`},
		{"colon in a map", "parameters = {\n  a: \"x\"\n}", ":", `":" between a key and its value`},
		{"colon in an HCL1 one-line block", "\"parameters\" { a: \"x\" }", ":", `":" between a key and its value`},
		{"in a secret", "secrets {\n  pin = 1234*1\n}", "1234", "(here *)"},
		{"number as a key", "parameters {\n  1 = \"x\"\n}", "1 =", "keys that are numbers or bools"},
		{"bool as a key", "parameters {\n  true = \"x\"\n}", "true", "keys that are numbers or bools"},
		{"bool as a map key", "parameters = {\n  false = \"x\"\n}", "false", "keys that are numbers or bools"},
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
		d := diagAt(t, c.name, diags, "Not a value Nomad reads", l, col)
		if d == nil {
			continue
		}
		if !strings.Contains(d.Detail, c.what) || !strings.Contains(d.Detail, "Write the value itself") {
			t.Errorf("%s: %q, want it to name %s and say what to write", c.name, d.Detail, c.what)
		}
		if strings.Contains(d.Detail, "1234") {
			t.Errorf("%s: the detail quotes a secret: %q", c.name, d.Detail)
		}
	}
	// What HCL1 reads stays read: signed numbers, lists, maps, quoted and bare keys.
	ok := "capacity_min = 1\nparameters {\n  a = -5\n  \"b.c\" = \"x\"\n}\n"
	if _, diags := ParseVolume("v.hcl", []byte(head+ok+"mount_options {\n  mount_flags = [\"a\", \"b\"]\n}\n"), VerbAny); diags.HasErrors() {
		t.Errorf("values HCL1 reads: %v", diags)
	}
	group := "group \"g\" {\n  count = 1 + 1\n  volume \"v\" {\n    type = \"csi\"\n    source = \"db\"\n    per_alloc = true\n" +
		"    access_mode = \"single-node-writer\"\n    attachment_mode = \"file-system\"\n  }\n}\n"
	if g, diags := NewParser().ParseGroup("g.hcl", []byte(group)); g == nil || g.Count != 2 {
		t.Errorf("group: %v, a group is read as HCL2, as Nomad reads a job", diags)
	}
}

// TestCapacityTextAsNomadReadsIt: Nomad parses a capacity's token text as written, quotes
// trimmed, as a size that starts with its digits (Nomad v2.0.6-dev refuses each of these with
// "invalid capacity_min: could not parse value as bytes"); volctl, which read the value,
// accepted them.
func TestCapacityTextAsNomadReadsIt(t *testing.T) {
	line := strings.Count(baseVolume, "\n") + 2
	for _, c := range []struct{ name, src, detail string }{
		{"heredoc", "capacity_min = <<EOF\n1GiB\nEOF", "heredoc"},
		{"escape", `capacity_min = "1\u0030GiB"`, `Write the size without escapes: "10GiB"`},
		{"leading blank", `capacity_max = " 10GiB "`, `starts with a blank. Write "10GiB"`},
	} {
		_, diags := ParseVolume("v.hcl", []byte(baseVolume+"\n"+c.src+"\n"), VerbAny)
		if d := diagAt(t, c.name, diags, "Invalid capacity", line, 16); d != nil && !strings.Contains(d.Detail, c.detail) {
			t.Errorf("%s: %q, want %q", c.name, d.Detail, c.detail)
		}
	}
	for _, ok := range []string{`capacity_max = "10GiB "`, `capacity_max = "10 GiB"`, `capacity_max = 1024`, `capacity_max = ""`} {
		if _, diags := ParseVolume("v.hcl", []byte(baseVolume+"\n"+ok+"\n"), VerbAny); diags.HasErrors() {
			t.Errorf("%s: %v, want it read, as Nomad reads it", ok, diags)
		}
	}
}

// TestCapacityEscapeAdviceIsNotTheEscape: a capacity whose escape stands for a character
// only an escape writes (a tab, a newline, a quote, a backslash) was refused with the advice
// "Write the size without escapes:" followed by the same escape ("1\tGiB"), which the user
// had written: the advice is a size Nomad reads, or says what to leave out.
func TestCapacityEscapeAdviceIsNotTheEscape(t *testing.T) {
	line := strings.Count(baseVolume, "\n") + 2
	for _, c := range []struct{ name, src, detail string }{
		{"tab", `capacity_min = "1\tGiB"`, `Write the size without escapes: "1GiB"`},
		{"newline", `capacity_min = "10\nGB"`, `Write the size without escapes: "10GB"`},
		{"quote", `capacity_min = "1GiB\""`, `Write the size without escapes: "1GiB"`},
		{"backslash", `capacity_min = "1\\GiB"`, `Write the size without escapes: "1GiB"`},
		{"control", `capacity_min = "1\u001bGiB"`, `Write the size without escapes: "1GiB"`},
		{"no size left", `capacity_min = "\tGiB"`, `Its text holds "\t", which only an escape writes; write the size as digits and a unit ("10GiB")`},
	} {
		_, diags := ParseVolume("v.hcl", []byte(baseVolume+"\n"+c.src+"\n"), VerbAny)
		d := diagAt(t, c.name, diags, "Invalid capacity", line, 16)
		if d == nil {
			continue
		}
		if !strings.Contains(d.Detail, c.detail) {
			t.Errorf("%s: %q, want %q", c.name, d.Detail, c.detail)
		}
		if raw := c.src[len("capacity_min = "):]; strings.Contains(d.Detail, "escapes: "+raw) {
			t.Errorf("%s: %q advises writing what was written", c.name, d.Detail)
		}
	}
}

// TestEscapedTemplateIsWarnedOf: "$${" is read as "${" by volctl, but Nomad v2.0.6-dev sends
// `x = "$${pvc.name}"` as "$${pvc.name}": a warning says the file is read otherwise there,
// at the escape, without the value (it may be a secret). A JSON spec, where neither reads a
// template, gets none.
func TestEscapedTemplateIsWarnedOf(t *testing.T) {
	line := strings.Count(baseVolume, "\n") + 3
	for _, c := range []struct{ name, src, esc string }{
		{"dollar", "parameters {\n  x = \"a$${pvc.name}\"\n}", "$${"},
		{"percent", "secrets {\n  x = \"s3cr%%{et}\"\n}", "%%{"},
		{"heredoc", "parameters {\n  x = <<EOT\n$${y}\nEOT\n}", "$${"},
	} {
		v, diags := ParseVolume("v.hcl", []byte(baseVolume+"\n"+c.src+"\n"), VerbAny)
		if v == nil {
			t.Errorf("%s: refused: %v", c.name, diags)
			continue
		}
		at := strings.Index(c.src, "x = ") + 4 // the value: where in a secret the escape is is not shown
		l := line - 1 + strings.Count(c.src[:at], "\n")
		d := diagAt(t, c.name, diags, "Read otherwise by Nomad", l, at-strings.LastIndex(c.src[:at], "\n"))
		if d != nil && (d.Severity != hcl.DiagWarning || !strings.Contains(d.Detail, c.esc+" and all") || strings.Contains(d.Detail, "s3cr")) {
			t.Errorf("%s: %v %q", c.name, d.Severity, d.Detail)
		}
	}
	json := `{"id": "db", "type": "csi", "plugin_id": "p", "parameters": {"x": "$${y}"}, "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}`
	if v, diags := ParseVolume("v.json", []byte(json), VerbAny); v == nil || len(diags) != 0 || v.Parameters["x"] != "$${y}" {
		t.Errorf("JSON: %v %v, want $${y} as written, as Nomad reads it, and no warning", v, diags)
	}
}

// TestByteOrderMarkIsRefused: Nomad v2.0.6-dev refuses a volume spec starting with a byte
// order mark ("illegal char" at 1:1), HCL and JSON alike; so does volctl, at 1:1, saying what
// the invisible mark is and what to do, so that a volume spec volctl reads is one Nomad reads
// (it accepted the file with a warning). A plugin spec, which Nomad does not read, keeps it.
func TestByteOrderMarkIsRefused(t *testing.T) {
	for name, src := range map[string]string{
		"v.hcl":  baseVolume,
		"v.json": `{"id": "db", "type": "csi", "plugin_id": "p", "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}`,
	} {
		v, diags := ParseVolume(name, []byte("\ufeff"+src), VerbAny)
		if v != nil {
			t.Errorf("%s: read, which Nomad refuses: %v", name, diags)
		}
		if d := diagAt(t, name, diags, "Byte order mark", 1, 1); d != nil && (d.Severity != hcl.DiagError ||
			!strings.Contains(d.Detail, "EF BB BF") || !strings.Contains(d.Detail, "without a byte order mark")) {
			t.Errorf("%s: %v", name, d)
		}
		if _, diags := ParseVolume(name, []byte(src), VerbAny); len(diags) != 0 {
			t.Errorf("%s without the mark: %v", name, diags)
		}
	}
	plugin := "\ufeffplugin \"p\" {\n  type = \"monolith\"\n  socket = \"/run/p.sock\"\n}\n"
	if _, diags := NewParser().ParsePlugins("p.hcl", []byte(plugin)); len(diags) != 0 {
		t.Errorf("plugin spec, which Nomad does not read: %v", diags)
	}
}

// TestCRLFHeredocAsNomadReadsIt: in a file with CRLF line ends, Nomad v2.0.6-dev sends a
// heredoc's lines ended by LF alone ("l1\n"); volctl, reading HCL2, sent "l1\r\n" to the plugin.
// In a map, in a string field, and in an HCL1 file (rewritten) alike.
func TestCRLFHeredocAsNomadReadsIt(t *testing.T) {
	for name, extra := range map[string]string{
		"HCL2": "name = <<EOF\nl1\n  l2\nEOF\nparameters {\n  x = <<-EOF\n    l1\n    l2\n    EOF\n}\n",
		"HCL1": "name = <<EOF\nl1\n  l2\nEOF\n\"parameters\" {\n  x = <<-EOF\n    l1\n    l2\n    EOF\n}\n",
	} {
		src := strings.ReplaceAll(baseVolume+"\n"+extra, "\n", "\r\n")
		v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		if v == nil {
			t.Fatalf("%s: %v", name, diags)
		}
		if v.Name != "l1\n  l2\n" || v.Parameters["x"] != "l1\nl2\n" {
			t.Errorf("%s: name %q, parameter %q; want \"l1\\n  l2\\n\" and \"l1\\nl2\\n\", as Nomad reads them", name, v.Name, v.Parameters["x"])
		}
	}
	// A CR written as an escape in a quoted string is the file's text, not a line end.
	v, _ := ParseVolume("v.hcl", []byte(strings.ReplaceAll(baseVolume, "\n", "\r\n")+"\r\nname = \"a\\r\\nb\"\r\n"), VerbAny)
	if v == nil || v.Name != "a\r\nb" {
		t.Errorf("quoted: %+v", v)
	}
}

// TestJSONTopologyAsNomadReadsIt: in a JSON spec, Nomad v2.0.6-dev drops a topology_request's
// required (or preferred) written as one object and sends no topology; as a list of objects it
// reads it. volctl read both, and so would send a topology Nomad does not: it refuses the
// object form, at the name, saying to write a list.
func TestJSONTopologyAsNomadReadsIt(t *testing.T) {
	head := `{"id": "db", "name": "db", "type": "csi", "plugin_id": "p", "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],` + "\n"
	for _, c := range []struct {
		name, topo string
		ok         bool
	}{
		{"required object", `"topology_request": {"required": {"topology": [{"segments": {"rack": "R1"}}]}}`, false},
		{"all objects", `"topology_request": {"required": {"topology": {"segments": {"rack": "R1"}}}}`, false},
		{"preferred object", `"topology_request": {"preferred": {"topology": [{"segments": {"rack": "R1"}}]}}`, false},
		{"request list, required object", `"topology_request": [{"required": {"topology": [{"segments": {"rack": "R1"}}]}}]`, false},
		{"required list", `"topology_request": {"required": [{"topology": [{"segments": {"rack": "R1"}}]}]}`, true},
		{"required list, topology object", `"topology_request": {"required": [{"topology": {"segments": {"rack": "R1"}}}]}`, true},
	} {
		v, diags := ParseVolume("v.json", []byte(head+c.topo+"}"), VerbCreate)
		if c.ok {
			if v == nil || v.TopologyRequest == nil || len(v.TopologyRequest.Required) != 1 {
				t.Errorf("%s: %v, want it read", c.name, diags)
			}
			continue
		}
		word := "required"
		if strings.Contains(c.topo, "preferred") {
			word = "preferred"
		}
		at := strings.Index(c.topo, `"`+word+`"`) + 1
		if d := diagAt(t, c.name, diags, "Topology Nomad drops", 2, at); d != nil && !strings.Contains(d.Detail, `Write it as a list: "`+word+`": [{`) {
			t.Errorf("%s: %q", c.name, d.Detail)
		}
	}
}

// TestHeredocsAsNomadReadsThem: HCL1 and HCL2 part on heredocs, and volctl read HCL2's value
// where Nomad v2.0.6-dev sends HCL1's: <<- strips the closing marker's blanks (when every line
// has them), not the least indentation; << keeps an indented marker's blanks; a marker with
// something after it does not end the heredoc, and Nomad refuses the file.
func TestHeredocsAsNomadReadsThem(t *testing.T) {
	for _, c := range []struct{ name, heredoc, want string }{
		{"marker less indented", "<<-EOF\n    l1\n      l2\n  EOF\n", "  l1\n    l2\n"},
		{"marker more indented", "<<-EOF\n    l1\n  l2\n    EOF\n", "    l1\n  l2\n"},
		{"tabs", "<<-EOF\n\t\tx\n\tEOF\n", "\tx\n"},
		{"blank line", "<<-EOF\n    l1\n\n    l2\n    EOF\n", "    l1\n\n    l2\n"},
		{"marker as indented as the lines", "<<-EOF\n    l1\n      l2\n    EOF\n", "l1\n  l2\n"},
		{"plain, indented marker", "<<EOF\nl1\n  EOF\n", "l1\n  "},
		{"empty", "<<-EOF\n  EOF\n", ""},
		{"escape", "<<EOF\n$${x}\nEOF\n", "${x}\n"},
	} {
		src := baseVolume + "\nparameters {\n  x = " + c.heredoc + "}\n"
		v, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
		if v == nil {
			t.Errorf("%s: %v", c.name, diags)
			continue
		}
		if got := v.Parameters["x"]; got != c.want {
			t.Errorf("%s: %q, want %q, as Nomad reads it", c.name, got, c.want)
		}
	}
	// In a list, as in mount_flags: each heredoc as HCL1 makes it.
	src := baseVolume + "mount_options {\n  mount_flags = [<<-EOF\n    ro\n      noatime\n  EOF\n  , <<-EOT\n  x\n    EOT\n  , \"y\"]\n}\n"
	if v, diags := ParseVolume("v.hcl", []byte(src), VerbAny); v == nil {
		t.Errorf("heredocs in a list: %v", diags)
	} else if got, want := []string(v.MountOptions.MountFlags), []string{"  ro\n    noatime\n", "  x\n", "y"}; !slices.Equal(got, want) {
		t.Errorf("heredocs in a list: %q, want %q, as Nomad reads them", got, want)
	}
	src = baseVolume + "\nparameters {\n  x = <<EOF\nl1\nEOF \n}\n"
	_, diags := ParseVolume("v.hcl", []byte(src), VerbAny)
	line := strings.Count(baseVolume, "\n") + 5
	if d := diagAt(t, "marker with a blank after it", diags, "Heredoc Nomad does not end", line, 1); d != nil && !strings.Contains(d.Detail, "Remove what follows EOF") {
		t.Errorf("%q", d.Detail)
	}
}
