package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// FuzzJQOutput fuzzes what --jq prints (exportFlags.Write), not only how a filter is parsed
// (FuzzJQParse): a filter over data holding arbitrary text, as a hostile plugin's context or
// node ID would. It must not panic and must end (the filter's bounds, or its context); a
// filter that fails prints nothing and is a usage error (exit 2), unless its context ended
// first; one that succeeds prints one line for each of gojq's results, a string bare and
// anything else as JSON that decodes to that result and holds no DEL, C1 control,
// U+2028/2029, bidi control or character that shows as nothing raw (escapeJSONControls).
func FuzzJQOutput(f *testing.F) {
	for _, s := range []struct{ filter, text string }{
		{".", "plain"},
		{".context", "\u009b31m\u007f\u0085\u2028\u2029end"},
		{".context.c", "\x1b[2J"},
		{"[.context.c]", "\u202edeliaf\u202c\u2066\u200b\u2060\ufeff\u00ad\u180e"},
		{"[.context[] | ascii_downcase]", "Ab\u0080"},
		{".claims | map(.alloc) | join(\",\")", "x"},
		{"tojson", "\xff\xfe invalid UTF-8"},
		{"{a: .id, b: (.context | keys)}", "\u2029"},
		{".id | explode | implode", "é\u009f"},
		{"[range(3)] | map(. * 1.5)", ""},
		{".capacity_bytes + 1e300", ""},
		{"error(\"x\")", ""},
		{"limit(3; repeat(.id))", "\u007f"},
		{"@base64d", "bad"},
		{".context | to_entries[] | \"\\(.key)=\\(.value)\"", "\u0085"},
		{"1e1000, -0, nan, infinite", ""},
	} {
		f.Add(s.filter, s.text)
	}
	f.Fuzz(func(t *testing.T, filter, text string) {
		if len(filter) > 512 || len(text) > 4096 {
			return
		}
		code, err := compileJQ(filter)
		if err != nil {
			return // FuzzJQParse's
		}
		for _, word := range []string{"now", "env", "ENV", "input", "debug", "stderr"} {
			if strings.Contains(filter, word) {
				return // a result that varies from run to run, or one slow enough to time out on one run and not the other
			}
		}
		data := map[string]any{
			"id": "db" + text, "capacity_bytes": 1 << 30,
			"context": map[string]string{"c": text, text: "v"},
			"claims":  []map[string]any{{"alloc": text, "read_only": true}, {"alloc": "a2", "mode": nil}},
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		got, ok := writeChecked(t, ctx, &exportFlags{JQ: filter, jq: code}, "--jq "+strconv.Quote(filter), data)
		if !ok || ctx.Err() != nil {
			return // failed, as checked; or the reference run below could time out where this one did not
		}

		// What gojq itself gives, over the data as Write gives it (its JSON form).
		v := jsonForm(t, data)
		var want []any
		iter := code.RunWithContext(ctx, v)
		for {
			x, ok := iter.Next()
			if !ok {
				break
			}
			if err, ok := x.(error); ok {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil && halt.ExitCode() == 0 { // halt, not halt_error
					break
				}
				return // gojq failed on this run and not on Write's: its context, a bound
			}
			want = append(want, x)
		}
		for i, x := range want {
			var line string
			if s, ok := x.(string); ok {
				if !strings.HasPrefix(got, s+"\n") {
					t.Fatalf("--jq %q: result %d, the string %q, is not printed bare on a line of its own: %q", filter, i, s, got)
				}
				got = got[len(s)+1:]
				continue
			}
			nl := strings.IndexByte(got, '\n')
			if nl < 0 {
				t.Fatalf("--jq %q: result %d (%v) missing from what is left: %q", filter, i, x, got)
			}
			line, got = got[:nl], got[nl+1:]
			if !utf8.ValidString(line) {
				t.Fatalf("--jq %q: result %d printed as JSON that is not UTF-8: %q", filter, i, line)
			}
			if j := strings.IndexFunc(line, func(r rune) bool {
				return r < 0x20 || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 || spec.IsBidiControl(r) || spec.IsInvisible(r)
			}); j >= 0 {
				t.Fatalf("--jq %q: result %d printed as JSON with %U raw: %q", filter, i, []rune(line[j:])[0], line)
			}
			wantJSON, err := gojq.Marshal(x)
			if err != nil {
				t.Fatalf("--jq %q: result %d (%v) printed though gojq cannot marshal it: %v", filter, i, x, err)
			}
			var a, b any
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("--jq %q: result %d printed as %q, not JSON: %v", filter, i, line, err)
			}
			if err := json.Unmarshal(wantJSON, &b); err != nil {
				continue // gojq's own text is not JSON encoding/json reads (a number past float64): the line is checked above
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("--jq %q: result %d printed as %q, which decodes otherwise than gojq's %q", filter, i, line, wantJSON)
			}
		}
		if got != "" {
			t.Fatalf("--jq %q: printed more than gojq's %d results: %q left", filter, len(want), got)
		}
	})
}

// templateMayLoop reports a -t template that may range over a large count ({{range 1000000}})
// or call itself from a range (a tree of calls, 2^100 within maxTemplateDepth): one that loops
// without writing runs until Write's bound of time (a minute) ends it, too long for one input
// of a fuzzer. That bound is TestExportFilterTimeIsBounded's, and the guard that ends such a
// template with its context TestTemplateLoopingWithoutWritingEndsWithItsContext's.
func templateMayLoop(s string) bool {
	if !strings.Contains(s, "range") {
		return false
	}
	return strings.Contains(s, "define") || strings.Contains(s, "block") || bigNumber.MatchString(s)
}

var bigNumber = regexp.MustCompile(`[0-9]{4}|0[xXbBoO_]|[0-9][eEpP_]|'`)

// FuzzTemplateOutput fuzzes what -t prints (exportFlags.Write), not only how a template is
// parsed (FuzzTemplateParse): a template over data holding arbitrary text, as a hostile
// plugin's version, node ID or context would. It must not panic and must end; a template that
// fails prints nothing and is a usage error (exit 2), unless its context ended first. One
// that succeeds prints, when stdout is not a terminal, exactly what text/template makes of the
// JSON form (a script reads the data as it is); when stdout is a terminal, nothing a terminal
// acts on rather than shows (a control character but newline and tab, a bidi control, a
// character that shows as nothing, a byte that is not UTF-8), and, where text/template's
// output holds none of those, exactly that output.
func FuzzTemplateOutput(f *testing.F) {
	for _, s := range []struct{ tmpl, text string }{
		{"{{.id}}", "plain"},
		{"{{.id}}\t{{index .context \"c\"}}\n", versionWithEscapes},
		{"{{range $k, $v := .context}}{{$k}}={{$v}}\n{{end}}", "\x1b]52;c;cm0gLXJmIH4=\x07"},
		{"{{printf \"%q|%s|%x\" .id .id .id}}", "\u009b31m\u202e\u200b"},
		{"{{json .}}", "\u2028\u2029\u0085\u007f"},
		{"{{range .claims}}{{.alloc}} {{.read_only}}{{end}}", "\r\x1b[1A"},
		{"{{upper .id}}{{lower .id}}", "ǅ\u0130ﬃ"},
		{"{{join (index .claims 0 | printf \"%v\" | printf \"%s\" | print | println | html | js | urlquery) \",\"}}", "x"},
		{"{{join .list \"\\x1b\"}}", "\xff\xfe"},
		{"{{index .context .id}}", "c"},
		{"\x1b[31m{{.id}}\x1b[0m", "red"},
		{"{{with index . \"missing\"}}{{.}}{{else}}none{{end}}", ""},
		{"{{.nosuch}}", ""},
		{"{{index .list 5}}", ""},
		{"{{len .id}} {{slice .id 1}} {{eq .id \"db\"}}", "é"},
		{"{{.capacity_bytes}} {{printf \"%d\" .capacity_bytes}}", ""},
		{"{{call .id}}", ""},
		{"{{define \"x\"}}{{.}}{{end}}{{template \"x\" .id}}", "\x00"},
	} {
		f.Add(s.tmpl, s.text, false)
		f.Add(s.tmpl, s.text, true)
	}
	f.Fuzz(func(t *testing.T, tmplText, text string, terminal bool) {
		if len(tmplText) > 512 || len(text) > 4096 || templateMayLoop(tmplText) {
			return
		}
		tmpl, err := parseTemplate(tmplText)
		if err != nil {
			return // FuzzTemplateParse's
		}
		data := map[string]any{
			"id": "db" + text, "capacity_bytes": 1 << 30,
			"context": map[string]string{"c": text, text: "v"},
			"list":    []string{text, "b"},
			"claims":  []map[string]any{{"alloc": text, "read_only": true}, {"alloc": "a2", "mode": nil}},
		}
		ios, _, _, _ := iostreams.Test()
		ios.SetTTY(false, terminal, false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		got, ok := writeChecked(t, ctx, &exportFlags{Template: tmplText, tmpl: tmpl, ios: ios}, "-t "+strconv.Quote(tmplText), data)
		if !ok {
			return
		}

		// What text/template itself makes of the data as Write gives it (its JSON form, its
		// numbers as numbers).
		var want bytes.Buffer
		if err := tmpl.Execute(&want, templateNumbers(jsonForm(t, data))); err != nil {
			t.Fatalf("-t %q printed %q, but fails when text/template runs it: %v", tmplText, got, err)
		}
		if !terminal {
			if got != want.String() {
				t.Fatalf("-t %q piped printed %+q, not text/template's %+q", tmplText, got, want.String())
			}
			return
		}
		if what, ok := actsOnTerminal(got); ok {
			t.Fatalf("-t %q printed to a terminal %+q raw: %+q", tmplText, what, got)
		}
		if _, ok := actsOnTerminal(want.String()); !ok && got != want.String() {
			t.Fatalf("-t %q printed to a terminal %+q, where text/template's %+q needs no escape", tmplText, got, want.String())
		}
	})
}

// writeChecked runs e.Write over data until ctx ends, as the output fuzzers do, and returns
// what it printed, ok false when it failed. It fails t when Write runs far past ctx's end, or
// fails and prints anything, or fails with other than a usage error (exit 2) while ctx lasts.
func writeChecked(t *testing.T, ctx context.Context, e *exportFlags, what string, data any) (string, bool) {
	t.Helper()
	var out bytes.Buffer
	start := time.Now()
	err := e.Write(ctx, &out, data)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("%s ran %s, far past its context", what, took)
	}
	if err != nil {
		if out.Len() > 0 {
			t.Fatalf("%s failed (%v) and printed %q", what, err, out.String())
		}
		if ExitCode(err) != ExitUsage && ctx.Err() == nil {
			t.Fatalf("%s: %v, exit %d, not a usage error", what, err, ExitCode(err))
		}
		return "", false
	}
	return out.String(), true
}

// jsonForm is data as Write gives it to a filter: its JSON form, numbers as json.Number (a
// template gets it through templateNumbers).
func jsonForm(t *testing.T, data any) any {
	t.Helper()
	raw, _ := json.Marshal(data)
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
