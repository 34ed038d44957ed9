package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// nested is a JSON object n levels deep: {"next": {"next": ... {"name": "leaf"}}}.
func nested(n int) any {
	var v any = map[string]any{"name": "leaf"}
	for range n - 1 {
		v = map[string]any{"next": v}
	}
	return v
}

// walkNested is a template calling itself once a level of nested, printing a dot a level.
const walkNested = `{{define "walk"}}.{{with index . "next"}}{{template "walk" .}}{{end}}{{end}}{{template "walk" .}}`

// A template calling itself without end was stopped by text/template only 100,000 calls deep,
// and the error unwound through every {{range}} on the way, in time growing as the square of
// the depth: a recursion writing a byte a call ran for minutes of CPU past its bound, and
// internal/cli's tests spent two thirds of their CPU (114 s of 158) there, in templates their
// commands had long given up on (CI at eeb5dd2f took 679 s). Past maxTemplateDepth calls it
// is a usage error naming the template, at once; a walk of an object that nests that deep is
// not refused.
func TestTemplateCallingItselfIsStoppedAtItsDepthBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text string }{
		{"writing a byte a call", `{{define "x"}}.{{template "x" .}}{{end}}{{template "x" .}}`},
		{"from a range, writing", `{{define "x"}}{{range $}}.{{template "x" $}}{{end}}{{end}}{{template "x" .}}`},
		{"from a range, writing nothing", `{{define "x"}}{{range $}}{{template "x" $}}{{end}}{{end}}{{template "x" .}}`},
		{"through a block and another template", `{{define "y"}}{{template "x" .}}{{end}}{{block "x" .}}{{range .}}{{template "y" $}}{{end}}{{end}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeoutCause(context.Background(), 20*time.Second, errors.New("the test's backstop, 20s"))
			defer cancel()
			var out bytes.Buffer
			start := time.Now()
			e := templateFlags(t, tc.text)
			err := e.Write(ctx, &out, exportSample)
			took := time.Since(start)
			want := fmt.Sprintf("it called templates more than %d deep", maxTemplateDepth)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), want) ||
				!(strings.Contains(err.Error(), `template "x"`) || strings.Contains(err.Error(), `template "y"`)) ||
				strings.Contains(err.Error(), "volctlEnter") || strings.Contains(err.Error(), "guard") {
				t.Errorf("%s: %v (exit %d, after %s), want a usage error naming the template called too deep and saying %q, not the guard's own names", tc.text, err, ExitCode(err), took, want)
			}
			if !errors.Is(err, errTemplateDepth) {
				t.Errorf("%s: %v is not errTemplateDepth", tc.text, err)
			}
			if out.Len() > 0 {
				t.Errorf("%s printed %d bytes", tc.text, out.Len())
			}
		})
	}
	// A walk of maxTemplateDepth calls (the first, the text's own, and one a level) runs, one of
	// a call more is stopped.
	for _, depth := range []int{maxTemplateDepth - 2, maxTemplateDepth - 1} {
		var out bytes.Buffer
		e := templateFlags(t, walkNested)
		err := e.Write(context.Background(), &out, nested(depth))
		if err != nil || out.String() != strings.Repeat(".", depth) {
			t.Errorf("a walk of an object %d deep (%d calls with the first): %v, printed %d dots", depth, depth+1, err, out.Len())
		}
	}
	var out bytes.Buffer
	e := templateFlags(t, walkNested)
	err := e.Write(context.Background(), &out, nested(maxTemplateDepth))
	if !errors.Is(err, errTemplateDepth) || out.Len() > 0 {
		t.Errorf("a walk of an object %d deep: %v, printed %d bytes; want errTemplateDepth, nothing printed", maxTemplateDepth, err, out.Len())
	}
}

// The guard's depth is one run's: a command printing twice through one -t (or two runs side
// by side) starts each at the top, and a run stopped at the bound leaves the next one whole.
func TestTemplateDepthIsEachRunsOwn(t *testing.T) {
	t.Parallel()
	e := templateFlags(t, walkNested)
	if err := e.Write(context.Background(), &bytes.Buffer{}, nested(maxTemplateDepth+5)); !errors.Is(err, errTemplateDepth) {
		t.Fatalf("too deep: %v", err)
	}
	for range 3 {
		var out bytes.Buffer
		if err := e.Write(context.Background(), &out, nested(maxTemplateDepth-1)); err != nil || out.Len() != maxTemplateDepth-1 {
			t.Fatalf("a run after another: %v, printed %d bytes", err, out.Len())
		}
	}
}

// The guard's functions are added once the text is parsed: a template naming one fails to
// parse, so none can leave more calls than it entered and recurse past the bound, nor call
// the step itself.
func TestTemplateCannotCallItsGuard(t *testing.T) {
	t.Parallel()
	for _, name := range []string{enterTemplateFunc, leaveTemplateFunc, rangeStepFunc} {
		for _, text := range []string{
			fmt.Sprintf(`{{define "x"}}{{%s}}{{%s}}.{{template "x" .}}{{end}}{{template "x" .}}`, name, name),
			fmt.Sprintf(`{{%s "output"}}`, name),
		} {
			var out bytes.Buffer
			err := runCmd(t, exportCmd(exportSample, &out), "-t", text)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), fmt.Sprintf("function %q not defined", name)) {
				t.Errorf("-t %s: %v (exit %d), want it refused as it is parsed, naming %s", text, err, ExitCode(err), name)
			}
		}
	}
}

// A template looping without writing ({{range}} over a large count, a recursion within the
// bound but of 2^60 calls) could not be stopped: Write returned at its context's end, and the
// template ran on in its goroutine until the process exited, a core busy all the while (in a
// test binary, for the rest of its tests). It now ends at its next range step or call once the
// context has: run here without Write's goroutine, it returns.
func TestTemplateLoopingWithoutWritingEndsWithItsContext(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		`{{range 1000000000000000000}}{{end}}`,
		`{{range $x := 1000000000000000000}}{{end}}`,
		`{{range 1000000}}{{range 1000000}}{{range 1000000}}{{end}}{{end}}{{end}}`,
		`{{define "x"}}{{if lt (len .) 60}}{{range 2}}{{template "x" (printf "%s." $)}}{{end}}{{end}}{{end}}{{template "x" ""}}`,
		`{{range 2}}{{else}}{{end}}{{with 1}}{{range 1000000000000000000}}{{end}}{{end}}`,
	} {
		t.Run(text, func(t *testing.T) {
			t.Parallel()
			tmpl, err := parseTemplate(text)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			run, err := guardedRun(ctx, tmpl)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- run.Execute(&bytes.Buffer{}, nil) }()
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("ended with %v, want its context's end", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("still runs 20s after its context ended")
			}
		})
	}
}

// The guard changes nothing a template prints: each of these, over the sample, prints through
// Write what text/template prints of it parsed without the guard (break and continue in a
// guarded range, its else, its variables, blocks and templates called within the bound).
func TestGuardedTemplatePrintsWhatTextTemplateDoes(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		`{{range .}}{{if eq .id "db"}}{{continue}}{{end}}{{.id}}{{end}}`,
		`{{range $i, $v := .}}{{$i}}={{$v.id}};{{break}}{{end}}`,
		`{{range .}}{{range .claims}}x{{else}}none{{end}}{{end}}`,
		`{{range $v := .}}{{range $v.claims}}{{.alloc}}{{else}}-{{end}}{{end}}`,
		`{{define "c"}}[{{.alloc}}]{{end}}{{range .}}{{range .claims}}{{template "c" .}}{{end}}{{end}}`,
		`{{block "b" .}}{{len .}}{{end}}|{{template "b" .}}`,
		`{{range 3}}{{.}}{{end}}{{with 1}}{{range 2}}w{{end}}{{end}}`,
		`{{define "x"}}{{if lt (len .) 5}}{{range 2}}.{{template "x" (printf "%s." $)}}{{end}}{{end}}{{end}}{{template "x" ""}}`,
	} {
		plain, err := newTemplate().Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		var want bytes.Buffer
		wantErr := plain.Execute(&want, exportSample)
		var got bytes.Buffer
		e := templateFlags(t, text)
		err = e.Write(context.Background(), &got, exportSample)
		if err != nil || wantErr != nil || got.String() != want.String() || got.Len() == 0 {
			t.Errorf("%s: printed %q (%v), text/template alone %q (%v)", text, got.String(), err, want.String(), wantErr)
		}
	}
}
