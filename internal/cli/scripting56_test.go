package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestTemplateIntegersAreIntegers: docs/json.md types write_claims, capacity_bytes and the
// other counts as integers, and -t is "a Go template over the same object". Write decoded the
// object with UseNumber and gave the template that, so every number reached it as json.Number,
// a string: `{{if .write_claims}}` was true for 0 (a non-empty string), `eq .write_claims 0`
// failed exit 2 ("incompatible types for comparison: json.Number and int"), and `printf "%d"`
// printed `%!d(json.Number=0)` with exit 0. A CI script listing volumes in use listed every
// volume.
func TestTemplateIntegersAreIntegers(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "idle", spec.SingleNodeWriter) // no claims: write_claims is 0

	for _, c := range []struct{ tmpl, want string }{
		// a truth test of an integer field: 0 is false in a Go template
		{`{{range .}}{{if .write_claims}}{{.id}} in use{{end}}{{end}}`, ""},
		{`{{range .}}{{if not .read_claims}}{{.id}} unread{{end}}{{end}}`, "idle unread"},
		// comparing an integer field with an integer
		{`{{range .}}{{if eq .write_claims 0}}{{.id}} free{{end}}{{end}}`, "idle free"},
		{`{{range .}}{{if lt .write_claims 1}}{{.id}} free{{end}}{{end}}`, "idle free"},
		// formatting an integer field as one
		{`{{range .}}{{printf "%d" .write_claims}}{{end}}`, "0"},
		// and as it was printed before: its digits
		{`{{range .}}{{.write_claims}}{{end}}`, "0"},
	} {
		code, out, errOut := h.runReported("volume", "ls", "-t", c.tmpl)
		if code != ExitOK || out != c.want {
			t.Errorf("volctl volume ls -t '%s' on a volume with no claims: exit %d, stdout %q, want exit 0 and %q "+
				"(an integer of the JSON form does not act as an integer in the template)\nstderr: %s",
				c.tmpl, code, out, c.want, strings.TrimSpace(errOut))
		}
	}
}

// TestTemplateAndJQNumbersStayExact: the numbers a template gets are exact, not float64's
// (which rounds MaxInt64 to 9223372036854775808): int64 where an integer fits, uint64 or a
// big integer past it, float64 for the rest; and --jq, which reads the JSON form's numbers
// itself (gojq), gets them as exactly as it did.
func TestTemplateAndJQNumbersStayExact(t *testing.T) {
	data := map[string]any{
		"max":  int64(math.MaxInt64),
		"min":  int64(math.MinInt64),
		"big":  uint64(math.MaxUint64),
		"huge": json.Number("123456789012345678901234567890"),
		"half": 1.5,
		"neg":  -3,
		"list": []any{map[string]any{"n": 0}},
	}
	write := func(e *exportFlags) string {
		t.Helper()
		var out bytes.Buffer
		if err := e.Write(context.Background(), &out, data); err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		return out.String()
	}

	tmpl := `{{.max}} {{.min}} {{.big}} {{.huge}} {{.half}} {{printf "%d %d %d %d" .max .min .big .huge}}` +
		` {{printf "%T %T %T %T %T" .max .big .huge .half .neg}} {{if eq .neg -3}}neg{{end}}` +
		` {{range .list}}{{if .n}}set{{else}}zero{{end}}{{end}} {{json .}}`
	want := "9223372036854775807 -9223372036854775808 18446744073709551615 123456789012345678901234567890 1.5 " +
		"9223372036854775807 -9223372036854775808 18446744073709551615 123456789012345678901234567890 " +
		"int64 uint64 *big.Int float64 int64 neg zero " +
		`{"big":18446744073709551615,"half":1.5,"huge":123456789012345678901234567890,"list":[{"n":0}],` +
		`"max":9223372036854775807,"min":-9223372036854775808,"neg":-3}`
	if got := write(&exportFlags{Template: tmpl}); got != want {
		t.Errorf("-t over exact numbers:\n got %s\nwant %s", got, want)
	}

	const jq = `.max, .min, .big, .huge, .half, .neg, (.max | . - 1), (.list[0].n == 0), (.huge | type)`
	wantJQ := "9223372036854775807\n-9223372036854775808\n18446744073709551615\n123456789012345678901234567890\n" +
		"1.5\n-3\n9223372036854775806\ntrue\nnumber\n"
	if got := write(&exportFlags{JQ: jq}); got != wantJQ {
		t.Errorf("--jq '%s' over exact numbers:\n got %q\nwant %q", jq, got, wantJQ)
	}
}

// TestJQHaltErrorOnNullFails: writeJQ read every gojq HaltError whose value is nil as `halt`
// (stop, success), but `halt_error` on null is one too, with exit code 5: jq and gojq exit 5
// for `null | halt_error`, and volctl exits 2 for halt_error on any other input
// (`"x" | halt_error`, `{} | halt_error`). So a check such as
// `--jq '.[0].access_mode | halt_error'` failed, or passed exit 0 printing nothing, on whether
// the field happened to be absent: a script's deliberate abort was read as success. `halt`
// still stops with success, printing what came before it.
func TestJQHaltErrorOnNullFails(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "idle", spec.SingleNodeWriter)
	for _, q := range []string{`null | halt_error`, `.[0].access_mode | halt_error(3)`, `.[0].id, (null | halt_error)`, `"x" | halt_error`, `{} | halt_error(1)`} {
		code, out, errOut := h.runReported("volume", "ls", "--jq", q)
		if code != ExitUsage || out != "" {
			t.Errorf("volctl volume ls --jq '%s': exit %d, stdout %q, stderr %q; want exit 2 and nothing printed, as halt_error on any other input (jq and gojq exit 5)",
				q, code, out, errOut)
		}
		if !strings.Contains(errOut, "halt error") {
			t.Errorf("volctl volume ls --jq '%s': stderr does not say the filter halted with an error: %q", q, errOut)
		}
	}
	for _, c := range []struct{ q, want string }{{`halt`, ""}, {`.[0].id, halt, "after"`, "idle\n"}, {`.[] | .id, halt`, "idle\n"}} {
		code, out, errOut := h.runReported("volume", "ls", "--jq", c.q)
		if code != ExitOK || out != c.want {
			t.Errorf("volctl volume ls --jq '%s': exit %d, stdout %q, stderr %q; want exit 0 and %q (halt stops with success)",
				c.q, code, out, errOut, c.want)
		}
	}
}
