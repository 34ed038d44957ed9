package spec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// A control character other than a line break written raw in a JSON string (a tab pasted into
// a name, a parameter) is read as the character it is, as Nomad's HCL1 JSON reader reads it
// and as volctl reads it in the native form, where the same rules then apply to the value
// (rawControlEdits). Before, hcl/json ended the string at it: "Invalid JSON string", then a
// false "Missing attribute seperator comma" at the rest of the string, or "Unclosed object" at
// the file's first brace when the string was in a map; a tab in a key was also an "Invalid
// object property name".
func TestJSONStringWithARawTabIsReadAsNomadReadsIt(t *testing.T) {
	for _, c := range []struct{ name, json, hcl string }{
		{"name", `"name": "x	y"`, `name = "x	y"`},
		{"parameter value", `"parameters": {"a": "x	y", "b": "c"}`, `parameters = { a = "x	y", b = "c" }`},
		{"parameter key", `"parameters": {"a	b": "c"}`, `parameters = { "a	b" = "c" }`},
		{"secret", `"secrets": {"k": "hunter	2"}`, `secrets = { k = "hunter	2" }`},
		{"control character", "\"name\": \"x\x01y\"", "name = \"x\x01y\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			jv, jd := ParseVolume("v.json", []byte(jsonVolume60("  "+c.json)), VerbAny)
			hv, hd := ParseVolume("v.hcl", []byte(baseVolume+c.hcl+"\n"), VerbAny)
			if jd.HasErrors() != hd.HasErrors() {
				t.Fatalf("JSON read with errors %v, the native form with %v", jd, hd)
			}
			if hd.HasErrors() {
				if jd[0].Summary != hd[0].Summary {
					t.Fatalf("JSON's error %q, the native form's %q", jd[0].Summary, hd[0].Summary)
				}
				return
			}
			for _, f := range []string{"Name", "Parameters", "Secrets"} {
				got, want := reflect.ValueOf(*jv).FieldByName(f).Interface(), reflect.ValueOf(*hv).FieldByName(f).Interface()
				if f != "Name" && reflect.ValueOf(want).Len() == 0 {
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s read from JSON differs from the native form's", f) // values may be secrets
				}
			}
		})
	}
}

// A raw control character is refused by the rules the native form applies to its value, at
// the value: the name's "Invalid character" covers the string as written, and an error after
// a tab on the same line is placed at its column in the file, not one past it per tab.
func TestJSONRawTabKeepsTheFilesPositions(t *testing.T) {
	src := jsonVolume60("  \"name\": \"x\x01y\",\n  \"parameters\": {\"a\": \"x\t\ty\"}, \"bogus\": 1")
	_, diags := ParseVolume("v.json", []byte(src), VerbAny)
	lines := strings.Split(src, "\n")
	for _, c := range []struct {
		summary  string
		line     int
		from, to string // the subject's text starts with from, ends with to
	}{
		{"Invalid character", 6, `"x`, `y"`},
		{"Unsupported argument", 7, `"bogus"`, `"bogus"`},
	} {
		ds := diagsNamed(diags, c.summary)
		if len(ds) != 1 || ds[0].Subject == nil {
			t.Errorf("want one %q error, got %v", c.summary, diags)
			continue
		}
		r := ds[0].Subject
		text := src[r.Start.Byte:r.End.Byte]
		if r.Start.Line != c.line || !strings.HasPrefix(text, c.from) || !strings.HasSuffix(text, c.to) {
			t.Errorf("%q at %d:%d covers %q, want line %d from %s to %s", c.summary, r.Start.Line, r.Start.Column, text, c.line, c.from, c.to)
		}
		if col := strings.Index(lines[c.line-1], c.from) + 1; r.Start.Column != col {
			t.Errorf("%q at column %d, want %d (a tab is one column)", c.summary, r.Start.Column, col)
		}
	}
}

// A JSON string cut short, by a line break (its closing quote left out, or a line break written
// raw), a carriage return (refused raw, as in the native form) or a control character after a
// backslash, is one error at the cut, saying which
// (cutStringEchoes). Before, hcl/json's "There is a syntax error in the given JSON string" came
// with errors of its reading out of step after it: a comma missing at the next line, an object
// unclosed at the file's first brace.
func TestACutJSONStringIsOneError(t *testing.T) {
	for _, c := range []struct {
		name, src, summary string
		line               int
	}{
		{"line break in a value", jsonVolume60("  \"name\": \"x\ny\""), "Unterminated string", 6},
		{"line break in a map's value", jsonVolume60("  \"parameters\": {\"a\": \"x\ny\", \"b\": \"c\"}"), "Unterminated string", 6},
		{"quote left out, CRLF", strings.ReplaceAll(jsonVolume60("  \"name\": \"xy,\n  \"external_id\": \"e\""), "\n", "\r\n"), "Unterminated string", 6},
		{"backslash before a tab", jsonVolume60("  \"name\": \"xy\\\t\""), "Invalid escape sequence", 6},
		{"carriage return", jsonVolume60("  \"name\": \"x\ry\""), "Invalid JSON string", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := ParseVolume("v.json", []byte(c.src), VerbAny)
			var errs hcl.Diagnostics
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					errs = append(errs, d)
				}
			}
			if len(errs) != 1 || errs[0].Summary != c.summary || errs[0].Subject == nil || errs[0].Subject.Start.Line != c.line {
				t.Fatalf("want one error %q at line %d, got %d: %v", c.summary, c.line, len(errs), errs)
			}
		})
	}
}

// A range a diagnostic quotes in its words ("The argument "name" was already set at
// v.json:6,3-16") is mapped back onto the file after the raw-tab rewrite as the diagnostic's
// own range is: a tab written raw in a JSON string is one byte and one column, as a space is,
// so the detail is the space's. Before (earlier in round 61), the JSON path's offsetMap had no
// rewritten bytes (m.rw), and mapRangeText placed every quoted range at 1,1-1. Found by helper
// review61.
func TestQuotedRangeAfterARawTabIsTheFilesPlace(t *testing.T) {
	detail := func(sep string) string {
		src := jsonVolume60("  \"name\": \"x" + sep + "y\", \"name\": \"z\"")
		_, diags := ParseVolume("v.json", []byte(src), VerbAny)
		ds := diagsNamed(diags, "Duplicate argument")
		if len(ds) != 1 {
			t.Fatalf("want one Duplicate argument, got %v", diags)
		}
		return ds[0].Detail
	}
	if got, want := detail("\t"), detail(" "); got != want {
		t.Errorf("with a raw tab in the first name:\n  %s\nwant, as with a space there:\n  %s", got, want)
	}
}
