package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestTemplateIndexOfAMissingKeyFails: docs/json.md promises that a field the object lacks
// is an error, exit 2, not "<no value>". Read through index ({{index .params "skuname"}} of a
// volume without that parameter, {{index . "nmae"}}), it printed "<no value>" and exited 0,
// and a script took "<no value>" for the value. index printed or kept fails on a key the map
// lacks; in the condition of with, if or range it still reads as nothing, as docs/json.md
// tells to read a field that may be absent.
func TestTemplateIndexOfAMissingKeyFails(t *testing.T) {
	sample := []map[string]any{
		{"id": "db", "params": map[string]any{"skuname": "Premium"}, "claims": []any{"web-0"}},
		{"id": "logs", "params": map[string]any{}, "claims": []any{}},
	}
	for _, tmpl := range []string{
		`{{range .}}{{.id}}={{index .params "skuname"}},{{end}}`,
		`{{range .}}{{index . "nmae"}}{{end}}`,
		`{{range .}}{{index .params "skuname" | upper}},{{end}}`,
		`{{range .}}{{printf "%s;" (index .params "skuname")}}{{end}}`,
		`{{range .}}{{$s := index .params "skuname"}}{{$s}}{{end}}`,
		`{{define "p"}}{{index . "skuname"}}{{end}}{{range .}}{{template "p" .params}}{{end}}`,
		`{{range .}}{{if .id}}{{index .params "skuname"}}{{end}}{{end}}`,
	} {
		var out bytes.Buffer
		err := runCmd(t, exportCmd(sample, &out), "-t", tmpl)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `map has no entry for key`) {
			t.Errorf("%s: err = %v (exit %d), output %q; want a missing key refused, exit 2", tmpl, err, ExitCode(err), out.String())
		}
		if out.Len() > 0 {
			t.Errorf("%s: printed %q before failing", tmpl, out.String())
		}
	}
	for tmpl, want := range map[string]string{
		`{{range .}}{{with index .params "skuname"}}{{.}}{{else}}-{{end}},{{end}}`:        "Premium,-,",
		`{{range .}}{{if index .params "skuname"}}y{{else}}n{{end}}{{end}}`:               "yn",
		`{{range .}}{{if and .id (not (index .params "skuname"))}}{{.id}}{{end}}{{end}}`:  "logs",
		`{{range .}}{{range index .params "nope"}}x{{else}}{{len .claims}}{{end}}{{end}}`: "10",
		`{{range .}}{{with $s := index .params "skuname"}}{{$s}}{{end}}{{end}}`:           "Premium",
		`{{index . 0 "params" "skuname"}} {{index (index . 0) "id"}} {{index "ab" 1}}`:    "Premium db 98",
	} {
		var out bytes.Buffer
		if err := runCmd(t, exportCmd(sample, &out), "-t", tmpl); err != nil || out.String() != want {
			t.Errorf("%s: %q, %v; want %q", tmpl, out.String(), err, want)
		}
	}
	for tmpl, want := range map[string]string{
		`{{index . 5}}`:           "index out of range: 5",
		`{{index . "a"}}`:         "cannot index slice/array with type string",
		`{{index (index . 0) 1}}`: "value has type int; should be string",
		// In a condition index is lenientIndex underneath: its errors still name index, the
		// function the template's author wrote.
		`{{if index (index . 0) 1}}x{{end}}`: "error calling index: value has type int; should be string",
		`{{with index . 5}}x{{end}}`:         "error calling index: index out of range: 5",
	} {
		var out bytes.Buffer
		err := runCmd(t, exportCmd(sample, &out), "-t", tmpl)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), lenientIndex) || ExitCode(err) != ExitUsage {
			t.Errorf("%s: %v (exit %d), want %q, exit 2", tmpl, err, ExitCode(err), want)
		}
	}
}
