package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// exportCmd is a command with the export flags that prints v through them.
func exportCmd(v any, out *bytes.Buffer) *cobra.Command {
	var e exportFlags
	cmd := &cobra.Command{Use: "x", RunE: func(cmd *cobra.Command, _ []string) error {
		if !e.Enabled() {
			return nil
		}
		return e.Write(cmd.Context(), out, v)
	}}
	addExportFlags(cmd, &e, nil)
	return cmd
}

var exportSample = []map[string]any{
	{"id": "db", "capacity_bytes": 1 << 30, "claims": []any{map[string]any{"alloc": "web-0"}}},
	{"id": "logs", "capacity_bytes": 5, "claims": []any{}},
}

// --jq filters the JSON form as gh's does: strings bare, other values compact JSON, one a line.
func TestExportJQ(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--jq", ".[].id"}, "db\nlogs\n"},
		{[]string{"-q", `.[] | select(.capacity_bytes > 100) | {id, n: (.claims | length)}`}, `{"id":"db","n":1}` + "\n"},
		{[]string{"--jq", `map(.capacity_bytes) | add`}, "1073741829\n"},
		{[]string{"--jq", `.[0].claims`}, `[{"alloc":"web-0"}]` + "\n"},
		{[]string{"--jq", `empty`}, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			if err := runCmd(t, exportCmd(exportSample, &out), tt.args...); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("output %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// Mistakes in --jq and -t are usage errors (exit 2), and print nothing.
func TestExportUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--jq", ".["}, `invalid argument ".[" for "-q, --jq" flag`},
		{[]string{"--jq", ".[].id", "-t", "{{.}}"}, "--jq and -t/--template do not go together"},
		{[]string{"-t", "{{.}}", "--jq", "."}, "--jq and -t/--template do not go together"},
		{[]string{"--jq", `.[] | error("boom")`}, `--jq .[] | error("boom"): error: boom`},
		// A field the object lacks fails, rather than printing <no value> and exiting 0.
		{[]string{"-t", `{{range .}}{{.id}} {{.nope}}{{end}}`}, `map has no entry for key "nope"`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := runCmd(t, exportCmd(exportSample, &out), tt.args...)
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, ExitCode(err), tt.want, ExitUsage)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q before failing", out.String())
			}
		})
	}
	// with index reads a field that may be absent without failing.
	var out bytes.Buffer
	err := runCmd(t, exportCmd(exportSample, &out), "-t", `{{range .}}{{with index . "nope"}}{{.}}{{end}}{{.id}},{{end}}`)
	if err != nil || out.String() != "db,logs," {
		t.Fatalf("with index of an absent field: %q, %v", out.String(), err)
	}
}

// TestExportFilterEndsWithTheContext: a --jq filter or -t template that never ends (repeat,
// range(infinite), a while whose condition stays true, a template that calls itself in a
// range) stops when the command's context does. main turns Ctrl-C and SIGTERM into that
// context's end, not the process's: without this, Ctrl-C and timeout(1) could not stop such a
// filter (only SIGKILL did). The error is not a usage error (the filter was valid), nothing is
// printed, and an acting command says what was done. The error says what ended the filter
// (main's cause: "interrupt signal received"), not Go's "context canceled".
func TestExportFilterEndsWithTheContext(t *testing.T) {
	for _, e := range neverEnding(t) {
		what := e.what()
		t.Run(what, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			// As main's stopContext ends it at Ctrl-C.
			time.AfterFunc(100*time.Millisecond, func() { cancel(errors.New("interrupt signal received")) })
			var out bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- e.Write(ctx, &out, exportSample) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s still runs 10s after its context ended", what)
			}
			if err == nil || !strings.Contains(err.Error(), "interrupted before it ended (interrupt signal received), so nothing was printed") ||
				strings.Contains(err.Error(), "context canceled") || !errors.Is(err, context.Canceled) {
				t.Errorf("%s = %v, want it interrupted, saying by what and that nothing was printed, not \"context canceled\"", what, err)
			}
			if c := ExitCode(err); c != ExitError {
				t.Errorf("%s interrupted exits %d, want %d", what, c, ExitError)
			}
			if out.Len() > 0 {
				t.Errorf("%s interrupted printed %d bytes", what, out.Len())
			}
			if err := afterDone(err, "claim %q published", "db"); !strings.HasPrefix(err.Error(), `claim "db" published; only printing it failed: -`) {
				t.Errorf("after an acting command: %v", err)
			}
		})
	}
}

// neverEnding are --jq filters and -t templates that never end: the filters print nothing
// meanwhile, the template writes as it goes.
func neverEnding(t *testing.T) []exportFlags {
	return []exportFlags{
		jqFlags(t, `last(repeat(1))`), jqFlags(t, `[range(infinite)] | length`), jqFlags(t, `[.[] | .id] | until(false; .)`),
		jqFlags(t, `repeat(empty)`), jqFlags(t, `last(range(1e18))`),
		// Two calls at each of 60 levels (within maxTemplateDepth): 2^60 calls, writing as it
		// goes; and a range over a count, printing nothing.
		templateFlags(t, `{{define "x"}}{{if lt (len .) 60}}{{range 2}}.{{template "x" (printf "%s." $)}}{{end}}{{end}}{{end}}{{template "x" ""}}`),
		templateFlags(t, `{{range 1000000000000000000}}{{end}}`),
	}
}

func jqFlags(t *testing.T, filter string) exportFlags {
	t.Helper()
	code, err := compileJQ(filter)
	if err != nil {
		t.Fatal(err)
	}
	return exportFlags{JQ: filter, jq: code}
}

func templateFlags(t *testing.T, text string) exportFlags {
	t.Helper()
	tm, err := parseTemplate(text)
	if err != nil {
		t.Fatal(err)
	}
	return exportFlags{Template: text, tmpl: tm}
}

// what is the flag as typed: --jq FILTER or -t TEMPLATE.
func (e exportFlags) what() string {
	if e.Template != "" {
		return "-t " + e.Template
	}
	return "--jq " + e.JQ
}

// TestExportFilterTimeIsBounded: a --jq filter or -t template that never ends ran until
// interrupted, and one that prints nothing meanwhile (repeat(empty), last(range(1e18))) passes
// neither the output's bound nor the heap's: a CI job's `volctl volume status --jq` hung until
// the job's own timeout, hours later, while nobody pressed Ctrl-C. Past maxFilterTime it is
// stopped, a usage error (exit 2) saying so and what to do, nothing printed; the context here
// never ends (but as the test's backstop).
func TestExportFilterTimeIsBounded(t *testing.T) {
	d := maxFilterTime
	maxFilterTime = 300 * time.Millisecond
	t.Cleanup(func() { maxFilterTime = d })
	for _, e := range neverEnding(t) {
		t.Run(e.what(), func(t *testing.T) {
			ctx, cancel := context.WithTimeoutCause(context.Background(), 20*time.Second, errors.New("the test's backstop, 20s"))
			defer cancel()
			var out bytes.Buffer
			err := e.Write(ctx, &out, exportSample)
			if want := "stopped: it ran 300ms without ending"; err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), want) ||
				!strings.Contains(err.Error(), "pipe --json to jq") {
				t.Errorf("%s: %v (exit %d), want a usage error saying %q and what to do", e.what(), err, ExitCode(err), want)
			}
			if out.Len() > 0 {
				t.Errorf("%s printed %d bytes", e.what(), out.Len())
			}
		})
	}
}

// untimedFilters lifts maxFilterTime for the rest of t: a test of another bound sees that one,
// not the time's, which a starved machine reaches first (a template building 64 MiB through
// js ran past the minute under a load of 24).
func untimedFilters(t *testing.T) {
	d := maxFilterTime
	maxFilterTime = time.Hour
	t.Cleanup(func() { maxFilterTime = d })
}

// lowerFilterOutput lowers maxFilterOutput to n for the rest of t, and lowerFilterHeap
// maxFilterHeap: a bound passed at a MiB or two proves what one passed at 64 or 512 does, for a
// fraction of the work and memory (they took 45 s of CPU and 1.9 GB at their real sizes). Only
// for tests that do not call t.Parallel: an honest filter of a test running beside it would
// see the lowered bound.
func lowerFilterOutput(t *testing.T, n int64) {
	d := maxFilterOutput.Load()
	maxFilterOutput.Store(n)
	t.Cleanup(func() { maxFilterOutput.Store(d) })
}

func lowerFilterHeap(t *testing.T, n uint64) {
	d := maxFilterHeap
	maxFilterHeap = n
	t.Cleanup(func() { maxFilterHeap = d })
}

// TestExportFilterOutputIsBounded: a --jq filter or -t template that writes for good is held
// (nothing is printed from one that fails half-way) only up to maxFilterOutput: past it, it
// fails as a usage error, printing nothing, rather than hold more until the machine runs out
// of memory (the context never ends here: nobody pressed Ctrl-C). At two bounds, 1 and 2 MiB,
// each named by the error: the one set is the one held to.
func TestExportFilterOutputIsBounded(t *testing.T) {
	untimedFilters(t)
	jq, err := compileJQ(`"x" * 65536 | repeat(.)`)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := parseTemplate(`{{define "x"}}{{range $}}{{printf "%65536d" 1}}{{template "x" $}}{{end}}{{end}}{{template "x" .}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, bound := range []int64{1 << 20, 2 << 20} {
		lowerFilterOutput(t, bound)
		for _, e := range []exportFlags{{JQ: "repeat", jq: jq}, {Template: "recursive", tmpl: tm}} {
			// Bounded by the memory the filter holds, not by time, which a starved machine (a
			// parallel go test, the race detector) stretches: past 64 MiB more, 32 times the
			// bound, the output is not bounded, and the filter is stopped (an interrupted one,
			// which the check below refuses) before it takes the machine's memory.
			// Past the heap as it is now: the process's heap holds other tests' garbage too.
			ctx, cancel := cancelPastHeap(context.Background(), heapBytes()+64<<20, errors.New("the heap grew by 64 MiB"))
			var out bytes.Buffer
			err := e.Write(ctx, &out, exportSample)
			cancel()
			if want := fmt.Sprintf("its output passed %d MiB", bound>>20); err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), want) {
				t.Errorf("%s%s: %v (exit %d), want a usage error saying %s", e.JQ, e.Template, err, ExitCode(err), want)
			}
			if out.Len() > 0 {
				t.Errorf("%s%s printed %d bytes", e.JQ, e.Template, out.Len())
			}
		}
	}
}

// TestExportFilterMemoryIsBounded: a --jq filter that builds a value without end and prints
// nothing while it does ([range(1e9)], a recursion that keeps what it made) is stopped once it
// holds maxFilterHeap (32 MiB here), as a usage error saying so, printing nothing, rather than
// run the machine, and the agent and plugins beside it, out of memory while nobody presses
// Ctrl-C.
func TestExportFilterMemoryIsBounded(t *testing.T) {
	untimedFilters(t)
	lowerFilterHeap(t, 32<<20)
	// A new 64 KiB string each step, so that the filter passes the bound within a second, even
	// under the race detector: collected in an array, and kept on a recursion's stack.
	for _, filter := range []string{`[range(1e9) | "x" * 65536]`, `def f: ["x" * 65536, f]; f`} {
		code, err := compileJQ(filter)
		if err != nil {
			t.Fatal(err)
		}
		e := exportFlags{JQ: filter, jq: code}
		// Past four times the bound more, the filter is not bounded: it is stopped
		// (interrupted, which the check below refuses) before it takes the machine's memory.
		ctx, cancel := cancelPastHeap(context.Background(), heapBytes()+4*maxFilterHeap, errors.New("the heap grew by 128 MiB"))
		var out bytes.Buffer
		err = e.Write(ctx, &out, exportSample)
		cancel()
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "it held more than 32 MiB") {
			t.Errorf("--jq %s: %v (exit %d), want a usage error saying it held more than 32 MiB", filter, err, ExitCode(err))
		}
		if out.Len() > 0 {
			t.Errorf("--jq %s printed %d bytes", filter, out.Len())
		}
		runtime.GC()
	}
}

// TestExportTemplateMemoryIsBounded: a -t template that builds a value without printing it
// (a string doubled by printf in a range, html escaping its own escapes, a recursion keeping a
// string in each call) is stopped as a usage error saying why, printing nothing, rather than take
// the machine's memory (the agent's and the plugins' beside it) while nobody presses Ctrl-C.
// Each template here ends on its own, so that the old code's failure is an answer, not the
// test's process killed. The bounds are lowered, the output's to 1 MiB and the heap's to 32 MiB,
// and the templates with them.
func TestExportTemplateMemoryIsBounded(t *testing.T) {
	untimedFilters(t)
	lowerFilterOutput(t, 1<<20)
	lowerFilterHeap(t, 32<<20)
	for _, text := range []string{
		// A string doubled by printf, none of it written: 2^22 bytes here, 2^40 for 40.
		`{{$x := "x"}}{{range 22}}{{$x = printf "%s%s" $x $x}}{{end}}{{len $x}}`,
		// js escapes \ as \\: doubled again without printf.
		`{{$x := "\\"}}{{range 22}}{{$x = js $x}}{{end}}{{len $x}}`,
		// 99 calls deep (within maxTemplateDepth), each holding its own copy of what it was
		// given, 10,000 bytes shorter each time, 49 MB in all, the last looping while they are
		// held: no one step is large.
		`{{define "r"}}{{$k := printf "%s" .}}{{if gt (len .) 10000}}{{template "r" (slice . 10000)}}{{else}}{{range 10000000}}{{end}}{{end}}{{end}}{{template "r" (printf "%990000d" 1)}}`,
	} {
		tm, err := parseTemplate(text)
		if err != nil {
			t.Fatal(err)
		}
		e := exportFlags{Template: text, tmpl: tm}
		var out bytes.Buffer
		err = e.Write(context.Background(), &out, exportSample)
		if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "1 MiB") && !strings.Contains(err.Error(), "it held more than 32 MiB") {
			t.Errorf("-t %s: %v (exit %d), want a usage error saying it passed a bound", text, err, ExitCode(err))
		}
		if out.Len() > 0 {
			t.Errorf("-t %s printed %q", text, out.String())
		}
		runtime.GC()
	}
}
