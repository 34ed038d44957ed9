package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestPluginStatusWholeProbeLatencyIsAnIntegerToATemplate: docs/json.md promises that to a
// -t template "a `number` field that holds a whole one, as `probe_latency_ms` of 3, [is] an
// integer", so `{{eq .probe_latency_ms 0}}` and `{{printf "%d" .probe_latency_ms}}` work, as
// they do on `plugin probe`'s object. `plugin status` writes the field through
// engine.Duration's MarshalJSON with three decimals always ("0.000", "3.000"), which
// templateNumber reads as a float64: the health check `volctl plugin status mem -t '{{if eq
// .probe_latency_ms 0}}...'` of a plugin that is down (its latency 0: it never answered)
// fails with "incompatible types for comparison: float64 and int", exit 2, nothing printed,
// where the doc's exit is 1 with the template's output. Correct: a whole probe_latency_ms is
// an integer to the template, in `plugin status` (and `status`) as in `plugin probe`.
// Found by helper review74.
func TestPluginStatusWholeProbeLatencyIsAnIntegerToATemplate(t *testing.T) {
	const tmpl = `{{printf "%T %d" .probe_latency_ms .probe_latency_ms}}{{if eq .probe_latency_ms 0}} never answered{{end}}`
	var probe bytes.Buffer
	if err := (&exportFlags{Template: tmpl}).Write(context.Background(), &probe, pluginProbeResult{Provider: "p"}); err != nil || probe.String() != "int64 0 never answered" {
		t.Fatalf("precondition: plugin probe's probe_latency_ms of 0 through -t: %q, %v; want %q", probe.String(), err, "int64 0 never answered")
	}

	h := newCLIHarness(t)
	h.stop() // the plugin is down: its probe never answers, its latency is 0
	code, out, errOut := h.runReported("plugin", "status", "mem", "-t", tmpl)
	if code != ExitError || out != probe.String() {
		_, raw, _ := h.runReported("plugin", "status", "mem", "--jq", ".probe_latency_ms | tojson")
		t.Errorf("volctl plugin status mem -t '%s' of a plugin that is down: exit %d, stdout %q; want exit 1 (unhealthy) and %q, as plugin probe's "+
			"object gives (docs/json.md: a number field holding a whole one, as probe_latency_ms of 3, is an integer to a template); the JSON holds %s\nstderr: %s",
			tmpl, code, out, probe.String(), strings.TrimSpace(raw), strings.TrimSpace(errOut))
	}
}

// TestValidateJSONListsAFileThatIsNoSpec: `volctl validate --json` of a file found to be no
// spec at all (UTF-16 from a Windows editor, a NUL byte) exits 2, "invalid", but prints `[]`,
// which docs/json.md gives as the output "when every file is valid": a CI step that reads the
// array (`jq '.[] | select(.severity == "error")'`) to annotate a pull request finds no error
// and no file named, while the same file with one invalid Latin-1 byte gets its diagnostic in
// the array. The file is read (it is not a read failure, which the doc keeps out of the array
// with exit 1). Correct: the array holds an error diagnostic naming the file, as for every
// other invalid file, so the array and the exit status agree. Found by helper review74.
func TestValidateJSONListsAFileThatIsNoSpec(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []struct {
		what string
		name string
		src  []byte
	}{
		{"UTF-16", "utf16.hcl", []byte{0xff, 0xfe, 'i', 0, 'd', 0, ' ', 0, '=', 0, ' ', 0, '"', 0, 'd', 0, 'b', 0, '"', 0, '\n', 0}},
		{"a NUL byte", "nul.hcl", []byte("id = \"db\"\nname = \"a\x00\"\n")},
	} {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.src, 0o600); err != nil {
			t.Fatal(err)
		}
		ios, _, out, errOut := iostreams.Test()
		fac := NewFactory(ios)
		root := NewRootCmd(fac)
		root.SetArgs([]string{"--state-dir", filepath.Join(t.TempDir(), "state"), "validate", "--json", path})
		code := fac.Report(root.Execute())
		fac.Close()
		if code != ExitUsage {
			t.Fatalf("precondition: volctl validate --json on a file with %s: exit %d, want 2\nstderr: %s", f.what, code, errOut)
		}
		var diags []spec.JSONDiagnostic
		if err := json.Unmarshal(out.Bytes(), &diags); err != nil {
			t.Fatalf("volctl validate --json on a file with %s: stdout is not a JSON array: %v\n%s", f.what, err, out)
		}
		found := false
		for _, d := range diags {
			found = found || d.File == path && d.Severity == "error"
		}
		if !found {
			t.Errorf("volctl validate --json on a file with %s: exit 2, but the array holds no error for %s: %s "+
				"(what docs/json.md prints when every file is valid; the reason only on stderr: %s)",
				f.what, path, strings.TrimSpace(out.String()), strings.TrimSpace(errOut.String()))
		}
	}
}

// TestTemplateComparesNumbersByValue: a -t template gets a JSON number as an int64 when whole
// and a float64 otherwise (templateNumbers), and text/template's comparisons refuse an int64
// beside a float64: `{{if gt .probe_latency_ms 100.0}}` failed for a whole latency (0: a plugin
// that never answered), `{{eq .probe_latency_ms 0}}` for a fraction, the same check passing or
// failing, exit 2, on the value measured. Numbers compare by value now; the rest as before.
// Found by helper review74 (the own review of the change that made whole numbers integers).
func TestTemplateComparesNumbersByValue(t *testing.T) {
	write := func(tmpl string, data any) (string, error) {
		var out bytes.Buffer
		err := (&exportFlags{Template: tmpl}).Write(context.Background(), &out, data)
		return out.String(), err
	}
	for _, c := range []struct {
		tmpl string
		data any
		want string
	}{
		{`{{if gt .x 100.0}}slow{{else}}fast{{end}}`, map[string]any{"x": json.Number("0.000")}, "fast"},
		{`{{if gt .x 100.0}}slow{{else}}fast{{end}}`, map[string]any{"x": json.Number("3")}, "fast"},
		{`{{if gt .x 100}}slow{{else}}fast{{end}}`, map[string]any{"x": json.Number("100.5")}, "slow"},
		{`{{if eq .x 0}}zero{{end}}`, map[string]any{"x": json.Number("0.412")}, ""},
		{`{{if eq .x 0}}zero{{end}}`, map[string]any{"x": json.Number("0.000")}, "zero"},
		{`{{if eq .x 0.0}}zero{{end}}`, map[string]any{"x": json.Number("0")}, "zero"},
		{`{{if le .x 1.5}}le{{end}}`, map[string]any{"x": json.Number("1")}, "le"},
		{`{{if ne .x 3}}ne{{else}}same{{end}}`, map[string]any{"x": json.Number("3.000")}, "same"},
		{`{{if eq .x 1 2 3}}in{{end}}`, map[string]any{"x": json.Number("2.0")}, "in"},
		{`{{if gt .big 1.5}}big{{end}}`, map[string]any{"big": uint64(math.MaxUint64)}, "big"},
		{`{{if lt .s "b"}}a{{end}}`, map[string]any{"s": "a"}, "a"},
		{`{{if eq .s "ready"}}ok{{end}}`, map[string]any{"s": "ready"}, "ok"},
		{`{{if eq .b true}}yes{{end}}`, map[string]any{"b": true}, "yes"},
	} {
		got, err := write(c.tmpl, c.data)
		if err != nil || got != c.want {
			t.Errorf("%s over %v: %q, %v; want %q", c.tmpl, c.data, got, err, c.want)
		}
	}
	for _, tmpl := range []string{`{{eq .s 1}}`, `{{lt .b true}}`, `{{eq .m .m}}`} {
		if _, err := write(tmpl, map[string]any{"s": "x", "b": true, "m": map[string]any{}}); err == nil {
			t.Errorf("%s: no error; want the comparison refused as text/template refuses it", tmpl)
		}
	}
}

// A field left out, read through index, is nil: eq and ne compare it as text/template's
// builtins do, equal to nil alone, beside a number too. The numeric comparisons took nil
// beside a number for incompatible kinds, exit 2, where the builtin said false.
// Found by helper review74 (the own review of TestTemplateComparesNumbersByValue's change).
func TestTemplateComparesNilAsTheBuiltinDoes(t *testing.T) {
	for tmpl, want := range map[string]string{
		`{{if ne (index . "expansion_pending") 0}}pending{{end}}`: "pending",
		`{{if eq .error 0}}zero{{else}}other{{end}}`:              "other",
		`{{if eq .i .n 3}}in{{end}}`:                              "in",
		`{{if eq .n .n}}nil{{end}}`:                               "nil",
	} {
		var out bytes.Buffer
		err := (&exportFlags{Template: tmpl}).Write(context.Background(), &out, map[string]any{"error": nil, "n": nil, "i": json.Number("3")})
		if err != nil || out.String() != want {
			t.Errorf("%s: %q, %v; want %q", tmpl, out.String(), err, want)
		}
	}
}
