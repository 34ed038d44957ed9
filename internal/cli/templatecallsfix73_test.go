package cli

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
)

// TestDefinedTemplatesAreCheckedWhereCalled: the body of a {{define}}d or {{block}} template
// is checked with dot, and $, the type of the value it is called with, at each call: a read
// the called template makes of a field that type never has is refused, as one in the main
// template is, and a valid one is taken. Recursion ends (a template calling itself, two calling
// each other), a template called with two types is checked with each, one never called is not
// checked (nothing says what its dot would be), nor one called with a value whose type is not
// known (what index gives) or one not defined: those are left to the run. Each template
// refused fails when run on a result of that type; each taken and marked runs, runs on one.
func TestDefinedTemplatesAreCheckedWhereCalled(t *testing.T) {
	claim := engine.ClaimInfo{ID: 1, VolumeID: "db", Alloc: "web-0", Mode: "write", State: "published",
		TargetPath: "/t", Degraded: true, Binds: []engine.Bind{{Destination: "/a"}, {Destination: "/b", ReadOnly: true}}}
	vol := engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", Name: "db", PluginID: "mem"},
		Claims: []engine.ClaimInfo{claim}}
	ofClaim, ofVolumes := checkTemplateFields[engine.ClaimInfo], checkTemplateFields[[]engine.VolumeInfo]
	for _, c := range []struct {
		check  func(*exportFlags) error
		sample any
		tmpl   string
		bad    string // what the refusal says; "" when taken
		runs   bool   // a template taken runs on the sample
	}{
		// A valid read inside a define, a block, through $ (the argument).
		{ofClaim, claim, `{{define "c"}}{{.alloc}} {{$.state}}{{end}}{{template "c" .}}`, "", true},
		{ofClaim, claim, `{{block "c" .}}{{.target_path}}{{end}}`, "", true},
		{ofClaim, claim, `{{define "b"}}{{$.destination}}{{end}}{{range .binds}}{{template "b" .}}{{end}}`, "", true},
		{ofClaim, claim, `{{define "b"}}{{$.alloc}}{{end}}{{range .binds}}{{template "b" .}}{{end}}`, `$ has no field "alloc"`, false},
		{ofClaim, claim, `{{define "b"}}{{.destinaton}}{{end}}{{with $c := .}}{{range $c.binds}}{{template "b" .}}{{end}}{{end}}`,
			`no field "destinaton" (did you mean destination?)`, false},
		// Recursive: a template calling itself, two calling each other.
		{ofClaim, claim, `{{define "r"}}{{.alloc}}{{if not .degraded}}{{template "r" .}}{{end}}{{end}}{{template "r" .}}`, "", true},
		{ofClaim, claim, `{{define "r"}}{{if .degraded}}{{.nosuch}}{{else}}{{template "r" .}}{{end}}{{end}}{{template "r" .}}`, `no field "nosuch"`, false},
		{ofClaim, claim, `{{define "a"}}{{.alloc}}{{if .degraded}}{{template "b" .}}{{end}}{{end}}{{define "b"}}{{.state}}{{if not .degraded}}{{template "a" .}}{{end}}{{end}}{{template "a" .}}`, "", true},
		{ofClaim, claim, `{{define "a"}}{{.alloc}}{{if .degraded}}{{template "b" .}}{{end}}{{end}}{{define "b"}}{{.stat}}{{if not .degraded}}{{template "a" .}}{{end}}{{end}}{{template "a" .}}`,
			`no field "stat" (did you mean state?)`, false},
		{ofVolumes, []engine.VolumeInfo{vol}, `{{define "v"}}{{range .}}{{.id}}{{template "v" .claims}}{{end}}{{end}}{{template "v" .}}`, `no field "claims"`, false},
		// One template, two types of dot: checked with each.
		{ofVolumes, []engine.VolumeInfo{vol}, `{{define "i"}}{{.id}};{{end}}{{range .}}{{template "i" .}}{{range .claims}}{{template "i" .}}{{end}}{{end}}`, "", true},
		{ofVolumes, []engine.VolumeInfo{vol}, `{{define "n"}}{{.name}};{{end}}{{range .}}{{template "n" .}}{{range .claims}}{{template "n" .}}{{end}}{{end}}`, `no field "name"`, false},
		// Never called, or called only with another type than the result's: not checked as the result.
		{ofClaim, claim, `{{define "unused"}}{{.nosuch}}{{end}}{{.alloc}}`, "", true},
		{ofClaim, claim, `{{define "b"}}{{.destination}}{{end}}{{range .binds}}{{template "b" .}}{{end}}`, "", true},
		// Left to the run: a value whose type is not known, a template not defined.
		{ofClaim, claim, `{{define "x"}}{{.nosuch}}{{end}}{{template "x" (index . "binds")}}`, "", false},
		{ofClaim, claim, `{{define "x"}}{{.a}}{{end}}{{template "x" 1}}`, "", false},
		{ofClaim, claim, `{{template "nowhere" .}}`, "", false},
	} {
		err := c.check(&exportFlags{Template: c.tmpl})
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v, want it taken", c.tmpl, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad) || ExitCode(err) != ExitUsage):
			t.Errorf("%s: %v, want a usage error holding %q", c.tmpl, err, c.bad)
		}
		var out bytes.Buffer
		werr := (&exportFlags{Template: c.tmpl}).Write(context.Background(), &out, c.sample)
		switch {
		case c.bad != "" && werr == nil:
			t.Errorf("%s: refused, yet it runs on %T: %q", c.tmpl, c.sample, out.String())
		case c.runs && werr != nil:
			t.Errorf("%s: taken, and fails on %T: %v", c.tmpl, c.sample, werr)
		}
	}
}

// TestDefinedTemplateRefusalSaysWhere: a read refused in a called template is placed in the
// template's text (the define's body), as one in the main template is.
func TestDefinedTemplateRefusalSaysWhere(t *testing.T) {
	err := checkTemplateFields[engine.ClaimInfo](&exportFlags{Template: "{{define \"t\"}}\n  {{.nosuch}}{{end}}{{template \"t\" .}}"})
	if err == nil || !strings.Contains(err.Error(), "at line 2, column 5") {
		t.Errorf("%v, want the refusal placed at line 2, column 5", err)
	}
}

// TestManyTemplatesCallingEachOtherAreCheckedQuickly: templates that all call each other (a
// loop of calls through every order of them) are checked in bounded time, and not refused when
// each reads what its dot has; one typo among them is refused.
func TestManyTemplatesCallingEachOtherAreCheckedQuickly(t *testing.T) {
	const n = 12
	build := func(typo int) string {
		var b strings.Builder
		for i := range n {
			field := "alloc"
			if i == typo {
				field = "alocc"
			}
			fmt.Fprintf(&b, `{{define "t%d"}}{{.%s}}`, i, field)
			for j := range n {
				if j != i {
					fmt.Fprintf(&b, `{{if .degraded}}{{template "t%d" .}}{{end}}`, j)
				}
			}
			b.WriteString(`{{end}}`)
		}
		b.WriteString(`{{template "t0" .}}`)
		return b.String()
	}
	start := time.Now()
	if err := checkTemplateFields[engine.ClaimInfo](&exportFlags{Template: build(-1)}); err != nil {
		t.Errorf("%d templates calling each other, each valid: %v, want them taken", n, err)
	}
	if err := checkTemplateFields[engine.ClaimInfo](&exportFlags{Template: build(n - 1)}); err == nil || !strings.Contains(err.Error(), `"alocc"`) {
		t.Errorf("%d templates calling each other, the last reading .alocc: %v, want it refused", n, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("checking took %s", took)
	}
	// Each template is checked once: a loop of calls is not followed through every order.
	tm, err := parseTemplate(build(-1))
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeFor[engine.ClaimInfo]()
	c := fieldCheck{vars: []templateVar{{"$", typ}}, calls: newTemplateCalls(tm), low: noLow}
	c.list(tm.Tree.Root, typ)
	if c.bad != "" || c.calls.checks != n {
		t.Errorf("%d templates calling each other: %d bodies checked (refused: %q), want %d", n, c.calls.checks, c.bad, n)
	}
}

// TestLenientIndexEndsAtTheFirstKeyMissing: in a condition, index of keys the first of which
// the map lacks, or through a null, is nothing at once; printed, it still fails, and an index
// out of range still fails in a condition too.
func TestLenientIndexEndsAtTheFirstKeyMissing(t *testing.T) {
	sample := map[string]any{"a": nil, "m": map[string]any{"k": "v"}, "l": []any{1}}
	for tmpl, want := range map[string]string{
		`{{if index . "nope" "x" "y"}}y{{else}}n{{end}}`:    "n",
		`{{if index . "a" "b"}}y{{else}}n{{end}}`:           "n",
		`{{with index . "m" "k"}}{{.}}{{else}}-{{end}}`:     "v",
		`{{range index . "m" "nope" "x"}}x{{else}}-{{end}}`: "-",
		`{{if not (index . "nope" "x")}}none{{end}}`:        "none",
	} {
		var out bytes.Buffer
		if err := (&exportFlags{Template: tmpl}).Write(context.Background(), &out, sample); err != nil || out.String() != want {
			t.Errorf("%s: %q, %v; want %q", tmpl, out.String(), err, want)
		}
	}
	for tmpl, want := range map[string]string{
		`{{index . "nope" "x"}}`:                       "map has no entry for key",
		`{{index . "a" "b"}}`:                          "index of nil pointer",
		`{{if index . "l" 5}}y{{end}}`:                 "index out of range: 5",
		`{{if index . "m" "k" "x"}}y{{end}}`:           "cannot index slice/array with type string",
		`{{$x := index . "m" "nope"}}{{$x}}`:           "map has no entry for key",
		`{{if index . "m" "k"}}{{index . "q"}}{{end}}`: "map has no entry for key",
	} {
		var out bytes.Buffer
		err := (&exportFlags{Template: tmpl}).Write(context.Background(), &out, sample)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), lenientIndex) {
			t.Errorf("%s: %v (output %q), want an error saying %q", tmpl, err, out.String(), want)
		}
	}
}

// FuzzTemplateFieldCheck fuzzes the check of what a -t reads (templateFieldsError) on typed
// results, the templates it calls with them: it must not panic and must end quickly, and a
// template it refuses that has no branch (nothing in it that may not run) fails when run on a
// result of that type with every field set (a refusal of what runs is never a false one).
func FuzzTemplateFieldCheck(f *testing.F) {
	for _, s := range []string{
		`{{define "t"}}{{.nosuch}}{{end}}{{template "t" .}}`,
		`{{define "t"}}{{$.alloc}}{{end}}{{template "t" .}}`,
		`{{block "t" .}}{{.target_path}}{{end}}{{template "t" .binds}}`,
		`{{define "a"}}{{.alloc}}{{template "b" .}}{{end}}{{define "b"}}{{.state}}{{template "a" .}}{{end}}{{template "a" .}}`,
		`{{define "v"}}{{range .}}{{.id}}{{template "v" .claims}}{{end}}{{end}}{{template "v" .}}`,
		`{{define "i"}}{{.id}}{{end}}{{template "i" .}}{{with .claims}}{{template "i" (index . 0)}}{{end}}`,
		`{{define "u"}}{{.nosuch}}{{end}}{{.id}}`,
		`{{template "output" .}}`,
	} {
		f.Add(s)
	}
	claim := engine.ClaimInfo{ID: 1, VolumeID: "db", Alloc: "web-0", Mode: "write", State: "published", TargetPath: "/t",
		Binds: []engine.Bind{{Destination: "/a"}}, MountAllows: []string{"exec"}, LastRPC: "r", LastCode: "c", LastError: "e",
		Group: "g", Outcome: "o", CreatedAt: time.Unix(1, 0), UpdatedAt: time.Unix(2, 0), FreedAt: time.Unix(3, 0)}
	vol := engine.VolumeInfo{VolumeSummary: engine.VolumeSummary{ID: "db", Name: "db", PluginID: "mem"},
		Parameters: map[string]string{"sku": "x"}, Claims: []engine.ClaimInfo{claim}}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1024 {
			return
		}
		tmpl, err := parseTemplate(s)
		if err != nil {
			return
		}
		branches := false
		for _, w := range []string{"if", "with", "range", "else", "and", "or", "break", "continue"} {
			branches = branches || strings.Contains(s, w)
		}
		for _, c := range []struct {
			typ    reflect.Type
			sample any
		}{
			{reflect.TypeFor[engine.ClaimInfo](), claim},
			{reflect.TypeFor[[]engine.VolumeInfo](), []engine.VolumeInfo{vol}},
		} {
			start := time.Now()
			refused := templateFieldsError(s, tmpl, c.typ, afterWork)
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("%q: checking took %s", s, took)
			}
			if refused == nil || branches {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var out bytes.Buffer
			err := (&exportFlags{Template: s, tmpl: tmpl}).Write(ctx, &out, c.sample)
			cancel()
			if err == nil {
				t.Fatalf("%q refused for %v (%v), yet it runs on one: %q", s, c.typ, refused, out.String())
			}
		}
	})
}
