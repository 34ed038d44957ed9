package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"text/template"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/nomad"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// flush writes out what out holds and keeps the first error: *err when set, else the flush's.
// Commands that buffer their output end with it, often deferred: defer flush(out, &err).
func flush(out *bufio.Writer, err *error) {
	if ferr := out.Flush(); *err == nil {
		*err = ferr
	}
}

// redactOutput scrubs every secret value and mount flag volctl knows (and extra) from every
// string of the values a command is about to print (engine.RedactValue): data a plugin
// returned (volume_context, publish_context, its version, manifest and node ID, volume and
// snapshot IDs) is kept raw, and a hostile plugin may have echoed a secret into any of it.
// Each v is a pointer. The output is withheld when the secrets cannot be read. The read is
// not cut short by ctx's end, as RedactError's is not: a command interrupted (Ctrl-C, SIGTERM)
// while a plugin was slow still prints what it finished (the volumes created before, a group's
// allocs, a reconcile's report) and returns the error that says what the interrupt left, where
// a read ended by the signal would have withheld both behind "context canceled".
func redactOutput(ctx context.Context, e *engine.Engine, extra []string, vs ...any) error {
	return redactOutputKeeping(ctx, e, nil, extra, nil, vs...)
}

// redactNomadOutput is redactOutputKeeping with the credentials sent to Nomad (c's): its
// values, and its plain user masked as a word (nomad.Client.HideWords), which what answers
// for Nomad may echo anywhere.
func redactNomadOutput(ctx context.Context, e *engine.Engine, c *nomad.Client, keep []*string, vs ...any) error {
	return redactOutputKeeping(ctx, e, keep, c.Credentials(), c.HideWords, vs...)
}

// redactOutputKeeping is redactOutput, then each string keep points to (a field of the
// values, volctl's own identifier there: a volume's ID, its plugin's, the namespace it is
// registered in) is given back its value scrubbed of the state's secrets only, not of extra,
// the credentials sent to Nomad: a NOMAD_HTTP_AUTH password that is also a volume's name is
// not [REDACTED] where the output names the volume, which every other command prints. What is
// kept is chosen by its place, not its value: the same string anywhere else (in what Nomad
// answered, under a key that says it is the password) is scrubbed of extra.
// words, when set, is applied after: what a scrubber of values cannot do (nomad.Client.HideWords).
func redactOutputKeeping(ctx context.Context, e *engine.Engine, keep []*string, extra []string, words func(string) string, vs ...any) error {
	ctx = context.WithoutCancel(ctx) // one read of the local state: it ends on its own
	was := make([]string, len(keep))
	for i, p := range keep {
		was[i] = *p
	}
	for _, v := range vs {
		if err := e.RedactValue(ctx, v, extra...); err != nil {
			return fmt.Errorf("the output is withheld: reading the state to redact secrets from it: %w", err)
		}
		if words != nil {
			engine.RedactWith(v, words)
		}
	}
	if len(keep) == 0 || (len(extra) == 0 && words == nil) {
		return nil
	}
	local, err := e.Redactor(ctx)
	if err != nil {
		return fmt.Errorf("the output is withheld: reading the state to redact secrets from it: %w", err)
	}
	for i, p := range keep {
		*p = local(was[i])
	}
	return nil
}

// exportFlags are the --json, --jq and -t/--template flags every list and status command takes.
type exportFlags struct {
	JSON     bool
	Template string
	JQ       string
	tmpl     *template.Template // Template, parsed when the flag was set
	jq       *gojq.Code         // JQ, compiled when the flag was set
	result   reflect.Type       // what the command prints, when one type whatever its arguments (addActingExportFlags, addReadExportFlags), or nil
	reads    bool               // result is a reading command's (addReadExportFlags)
	// ios is the command's streams: what -t and --jq print to a terminal is escaped
	// (forTerminal), what they print elsewhere is exact. Nil (tests calling Write): exact.
	ios *iostreams.IOStreams
}

// addExportFlags adds the flags to a command that only shows something, printing to ios.
func addExportFlags(cmd *cobra.Command, e *exportFlags, ios *iostreams.IOStreams) {
	e.ios = ios
	cmd.Flags().BoolVar(&e.JSON, "json", false, "print JSON (a stable contract, see docs/json.md)")
	cmd.Flags().VarP(parsedValue[*gojq.Code]{&e.JQ, &e.Template, &e.jq, "expression", compileJQ},
		"jq", "q", "filter the JSON form with a jq expression (gojq); strings print bare")
	cmd.Flags().VarP(parsedValue[*template.Template]{&e.Template, &e.JQ, &e.tmpl, "string", e.parseTemplate},
		"template", "t", "format output with a Go template over the JSON form; a missing field is an error")
}

// addActingExportFlags adds the flags to a command that acts (claims, creates, registers,
// stops...) and then prints a T: a -t template reading a field no T has is refused as the
// flag is set, before anything is done (templateFieldsError), rather than exit 2 once the
// work was done, by a script that then knows nothing of it.
func addActingExportFlags[T any](cmd *cobra.Command, e *exportFlags, ios *iostreams.IOStreams) {
	e.result = reflect.TypeFor[T]()
	addExportFlags(cmd, e, ios)
}

// addReadExportFlags adds the flags to a command that only reads, and prints a T whatever its
// arguments: a -t template reading a field no T has is refused as the flag is set, as an acting
// command's is, whatever the state holds. Before, it ran only on a T: a range over an empty
// list never ran it, exit 0, and the same command failed, exit 2, once there was one. A reading
// command whose arguments decide its result's type calls checkReadTemplate before reading.
func addReadExportFlags[T any](cmd *cobra.Command, e *exportFlags, ios *iostreams.IOStreams) {
	e.result, e.reads = reflect.TypeFor[T](), true
	addExportFlags(cmd, e, ios)
}

// parseTemplate parses -t, and holds it to the fields of what an acting command prints.
func (e *exportFlags) parseTemplate(s string) (*template.Template, error) {
	t, err := parseTemplate(s)
	if err == nil {
		when := afterWork
		if e.reads {
			when = onEveryState
		}
		err = templateFieldsError(s, t, e.result, when)
	}
	return t, err
}

// parsedValue is -t or --jq: parsed (or compiled) as the flag is set, so that a broken
// template or filter is a usage error before the command does anything: a claim, a create or an
// expand must not run and then fail on how its result was to be printed. The two flags do not
// go together.
type parsedValue[T any] struct {
	text  *string // the flag as given
	other *string // the other flag's
	out   *T      // what parse made of it
	typ   string
	parse func(string) (T, error)
}

func (v parsedValue[T]) String() string { return *v.text }
func (v parsedValue[T]) Type() string   { return v.typ }

func (v parsedValue[T]) Set(s string) error {
	if *v.other != "" {
		return errors.New("--jq and -t/--template do not go together: give one")
	}
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.text, *v.out = s, x
	return nil
}

func compileJQ(s string) (*gojq.Code, error) {
	q, err := gojq.Parse(s)
	if err != nil {
		return nil, jqParseError(s, err)
	}
	return gojq.Compile(q)
}

// jqParseError places gojq's parse error in the filter: gojq says only what it met
// ("unexpected token \"|\""), not where, and a token can be anywhere in a long filter, or one
// of several alike (TestJQParseErrorSaysWhere). It says the line too when the filter has
// several; a filter ending too soon (a bracket left open, a string unterminated) ends there.
func jqParseError(s string, err error) error {
	var pe *gojq.ParseError
	if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(s) {
		return err
	}
	at := max(pe.Offset-len(pe.Token), 0)
	if pe.Token == "" && at == len(s) {
		return fmt.Errorf("%w at the end of the filter", err)
	}
	if !strings.HasSuffix(s[:pe.Offset], pe.Token) && pe.Offset > 0 {
		// gojq names a token the filter does not hold there: met at a string with an
		// interpolation (`.a "\(1)"`), it names the token before it (".a") and places the
		// string's opening quote at the offset's last byte. Name the place, not that token.
		at = pe.Offset - 1
		err = errors.New("unexpected token")
	}
	lineStart := strings.LastIndexByte(s[:at], '\n') + 1
	col := utf8.RuneCountInString(s[lineStart:at]) + 1
	if !strings.Contains(s, "\n") {
		return fmt.Errorf("%w at column %d", err, col)
	}
	return fmt.Errorf("%w at line %d, column %d", err, strings.Count(s[:at], "\n")+1, col)
}

// parseTemplate parses -t. A field the object does not have is an error ("map has no entry for
// key"), not a quiet "<no value>" and exit 0; a field left out when empty reads as
// {{with index . "field"}}...{{end}} (docs/json.md says which fields may be absent), and index
// printing a key the map lacks is an error too (templateindex.go).
func parseTemplate(s string) (*template.Template, error) {
	t, err := newTemplate().Parse(s)
	if err != nil {
		return nil, templateParseError(s, err)
	}
	lenientConditions(t)
	if err := guardTemplate(t); err != nil {
		return nil, err
	}
	return t, nil
}

// Enabled reports whether machine output was asked for.
func (e *exportFlags) Enabled() bool { return e.JSON || e.Template != "" || e.JQ != "" }

// Write prints v as indented JSON, or through the jq filter or the template. Both see exactly
// the JSON form (field names as in --json), so the contracts cannot drift apart. A jq filter
// or template runs until it ends, ctx does (Ctrl-C, the SIGTERM of timeout(1), which main
// turns into ctx's end rather than the end of the process), or one of its bounds stops it
// (boundFilter: its time, its heap, its output).
func (e *exportFlags) Write(ctx context.Context, w io.Writer, v any) error {
	if e.Template == "" && e.JQ == "" {
		return writeJSON(w, v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var data any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return err
	}
	if e.JQ != "" {
		return e.writeJQ(ctx, w, data) // gojq reads json.Number exactly, as its own numbers
	}
	data = templateNumbers(data)
	tmpl := e.tmpl
	if tmpl == nil { // set without the flag, by a caller in this package
		if tmpl, err = parseTemplate(e.Template); err != nil {
			return usageError("--template: %v", err)
		}
	}
	var buf heldOutput // nothing is printed from a template that fails half-way
	run, stop := boundFilter(ctx)
	defer stop()
	if err := executeTemplate(run, tmpl, &buf, data); err != nil {
		var deep templateDepthError // said in its own words: the guard's place is not the text's
		if errors.As(err, &deep) {
			return usageError("--template: %w", deep)
		}
		err = templateExecError(e.Template, err)
		if bound := passedBound(run); bound != nil {
			return usageError("--template: %v", bound)
		}
		if ctx.Err() != nil { // interrupted: not a usage error, and nothing is printed
			return fmt.Errorf("--template: %w", interruptedFilter(ctx))
		}
		if isTemplateBound(err) {
			return usageError("--template: %v", err)
		}
		return usageError("--template: %v (the fields are those of --json: docs/json.md; for one left out when empty, {{with index . \"FIELD\"}}...{{end}})", err)
	}
	return e.writeHeld(w, &buf)
}

// templateNumbers is v, the JSON form as Write decodes it (numbers as json.Number), with every
// number made one a template can use as a number: an integer as int64 (uint64 past it, a
// *big.Int past that, exact in each), anything else as float64. A json.Number is a string, so
// `{{if .write_claims}}` was true for 0, `{{eq .write_claims 0}}` an error and
// `{{printf "%d" .write_claims}}` printed %!d(json.Number=0). Maps and lists are changed in
// place: v is Write's own.
func templateNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return templateNumber(v)
	case map[string]any:
		for k, x := range v {
			v[k] = templateNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = templateNumbers(x)
		}
	}
	return v
}

// templateNumber is n as templateNumbers makes it.
func templateNumber(n json.Number) any {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u
		}
		if b, ok := new(big.Int).SetString(s, 10); ok {
			return b
		}
	}
	f, _ := strconv.ParseFloat(s, 64) // out of range: ±Inf, as gojq reads it too
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		// A whole number written with a fraction (a latency's "0.000", "3.000", always three
		// decimals) is an integer too, as json.md has it: `{{eq .probe_latency_ms 0}}` of a
		// plugin down failed, "incompatible types for comparison"
		// (TestPluginStatusWholeProbeLatencyIsAnIntegerToATemplate).
		return int64(f)
	}
	return f
}

// writeHeld writes what a -t template or --jq filter printed to w: exactly, unless stdout is
// a terminal, where every character the terminal would act on rather than show is escaped
// (forTerminal). A template or a filter prints a plugin's strings raw (its version, node ID,
// a volume's context), and its escape sequences would clear the screen, retitle the window,
// write the clipboard (OSC 52) or reorder the line (a bidi override) where a table shows them
// as text; a script reading a pipe or a file gets the data as it is.
func (e *exportFlags) writeHeld(w io.Writer, buf *heldOutput) error {
	if e.ios == nil || !e.ios.IsStdoutTTY() {
		_, err := buf.WriteTo(w)
		return err
	}
	var all bytes.Buffer
	all.Grow(buf.Len())
	buf.WriteTo(&all) // a bytes.Buffer's writes do not fail
	_, err := w.Write(forTerminal(all.Bytes()))
	return err
}

// forTerminal is b with every control character but newline and tab, every bidi control,
// every character that shows as nothing and every byte that is not UTF-8 written as an escape
// (spec.EscapeControl: "\x1b", "\u009b", "\u202e", "\xff"): the output of a template or a
// filter made fit for a terminal, its lines and columns (newlines, tabs) kept as laid out.
func forTerminal(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\n\t")
		if i < 0 {
			i = len(b)
		}
		out = append(out, spec.EscapeControl(string(b[:i]))...)
		if i < len(b) {
			out = append(out, b[i])
			i++
		}
		b = b[i:]
	}
	return out
}

// filterInterrupted is a --jq filter or -t template ended by ctx (Ctrl-C, the SIGTERM of
// timeout(1)): it says so, and what ended it (context.Cause: main's "interrupt signal
// received"), not Go's "context canceled", and that nothing was printed; it is ctx's error for
// errors.Is.
type filterInterrupted struct{ err, cause error }

func interruptedFilter(ctx context.Context) error {
	return filterInterrupted{err: ctx.Err(), cause: context.Cause(ctx)}
}

func (f filterInterrupted) Error() string {
	by := ""
	if f.cause != nil && f.cause != f.err {
		by = " (" + f.cause.Error() + ")"
	}
	return "interrupted before it ended" + by + ", so nothing was printed"
}

func (f filterInterrupted) Unwrap() error { return f.err }

// executeTemplate runs tmpl (parsed by parseTemplate, which guards it) until it ends or ctx
// does. text/template cannot be stopped from outside, and a template can loop for good
// ({{range 1000000000000}}): it stops once ctx has ended at its next write, which fails, or
// at its next range step or template call, whose guard fails (templateguard.go). A step of its
// own that is long (a function making text, bounded by maxFilterOutput) is not waited for.
func executeTemplate(ctx context.Context, tmpl *template.Template, buf *heldOutput, data any) error {
	run, err := guardedRun(ctx, tmpl)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	crash.Go(func() { done <- run.Execute(ctxWriter{ctx, buf}, data) })
	select {
	case err := <-done:
		return indexNamed(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ctxWriter writes to buf until ctx ends, then fails every write with ctx's error; past
// maxFilterOutput, it fails with errFilterOutput.
type ctxWriter struct {
	ctx context.Context
	w   *heldOutput
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if int64(c.w.Len()+len(p)) > maxFilterOutput.Load() {
		return 0, errFilterOutput
	}
	return c.w.Write(p)
}

// maxFilterOutput bounds what a --jq filter or -t template may print. Their output is held
// until they end, so that one failing half-way prints nothing: one that never ends but writes
// (`repeat(1)`, a template calling itself) would hold more and more until the machine ran out
// of memory, the plugins and the agent beside it too, while `| head` waited for a first line.
// No volctl object comes near it (the event log's 10,000 events are a few MiB of JSON).
// An atomic for the tests, which lower it (a bound passed at a MiB proves what one passed at
// 64 does, for a 64th of the work) while another test's template, left running, may read it.
var maxFilterOutput = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(64 << 20)
	return &n
}()

// maxFilterHeap bounds the memory a --jq filter or -t template may take while it runs: one that builds a value
// without end and prints nothing meanwhile ([range(1e9)], a recursion keeping what it made)
// passes no output bound, and would take the machine's memory, the plugins' and the agent's
// beside it, while nobody pressed Ctrl-C. gojq looks at its context between any two steps, so
// the filter stops at the next one once a watcher (boundFilter) sees the heap grown past this.
// No filter over a volctl object comes near it (the event log's 10,000 events are a few MiB).
// A var for the tests, which lower it (TestExportFilterMemoryIsBounded): it is read when a
// filter starts, by the goroutine starting it.
var maxFilterHeap uint64 = 512 << 20

var errFilterHeap error = &boundError{"stopped: it held more than %d MiB, more than any filter or template over a volctl object needs (one that builds a value without end?); nothing is printed",
	func() int64 { return int64(maxFilterHeap) }}

// boundError is the error of a filter or template stopped by one of its bounds (one error per
// bound, for errors.Is), saying the bound as it is when the error is printed.
type boundError struct {
	format string // with one %d: the bound in MiB
	bound  func() int64
}

func (e *boundError) Error() string { return fmt.Sprintf(e.format, e.bound()>>20) }

// maxFilterTime bounds the time a --jq filter or -t template may run. One that never ends and
// prints nothing meanwhile (repeat(empty), last(range(1e18)), a template ranging over
// 1<<62) passes neither the output's bound nor the heap's, and ran until interrupted: in a CI
// job, until the job's own timeout, hours later. A bound of steps would not vary with the
// machine, but a template has no steps to count, and gojq none to give: one bound of time
// for both. Filters over volctl objects end within a second (group_by or sort_by over the
// event log's 10,000 events: about 0.1 s, 0.7 s under the race detector); one that pairs each
// event with every other (10^8 steps) takes minutes, and is better piped: --json | jq. A var
// for the test (TestExportFilterTimeIsBounded).
var maxFilterTime = time.Minute

// filterTimedOut is the cause a filter or template stopped by maxFilterTime is cancelled with.
type filterTimedOut struct{ after time.Duration }

func (f filterTimedOut) Error() string {
	return fmt.Sprintf("stopped: it ran %s without ending, longer than any filter or template over a volctl object needs (one that never ends? repeat, range(infinite), until(false; ...)); nothing is printed; for one meant to run longer, pipe --json to jq", f.after)
}

// boundFilter is ctx, cancelled with filterTimedOut as its cause once maxFilterTime has passed,
// and with errFilterHeap once the heap holds maxFilterHeap more than it did at the call, or by
// stop, which ends the watcher. passedBound says which, if either.
func boundFilter(ctx context.Context) (_ context.Context, stop func()) {
	timed, cancel := context.WithTimeoutCause(ctx, maxFilterTime, filterTimedOut{maxFilterTime})
	run, stopHeap := cancelPastHeap(timed, heapBytes()+maxFilterHeap, errFilterHeap)
	return run, func() { stopHeap(); cancel() }
}

// passedBound is the bound of boundFilter that ended run (its time, its heap), nil when none did.
func passedBound(run context.Context) error {
	var timedOut filterTimedOut
	switch cause := context.Cause(run); {
	case cause == errFilterHeap:
		return cause
	case errors.As(cause, &timedOut):
		return cause
	}
	return nil
}

// cancelPastHeap is ctx, cancelled with cause once the heap holds more than limit bytes (read
// every 10 ms), or by stop, which ends the watcher.
func cancelPastHeap(ctx context.Context, limit uint64, cause error) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	crash.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if heapBytes() > limit {
					cancel(cause)
					return
				}
			}
		}
	})
	return ctx, func() { cancel(nil) }
}

// heapBytes is what the heap's objects take now, live and not yet swept. ReadMemStats stops
// the world for a moment, every 10 ms while a filter runs only; runtime/metrics, which would
// not, is kept out of the binary: every process would initialise it (TestBinaryLeavesOutPrometheusClient).
func heapBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heldOutput holds a filter's or template's output until it ends, in blocks that double in size
// up to heldBlockMax: a bytes.Buffer copies all it holds each time it doubles, and one that
// reached maxFilterOutput had copied as much again and held half as much more meanwhile (96 MiB
// at once). Each byte here is copied once in, once out (WriteTo).
type heldOutput struct {
	blocks [][]byte
	n      int
}

const heldBlockMax = 1 << 20

func (h *heldOutput) Len() int { return h.n }

func (h *heldOutput) Write(p []byte) (int, error) { return hold(h, p) }

func (h *heldOutput) WriteString(s string) (int, error) { return hold(h, s) }

func hold[T string | []byte](h *heldOutput, p T) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(h.blocks) == 0 || len(h.blocks[len(h.blocks)-1]) == cap(h.blocks[len(h.blocks)-1]) {
			h.blocks = append(h.blocks, make([]byte, 0, min(heldBlockMax, max(4<<10, h.n, len(p)))))
		}
		last := &h.blocks[len(h.blocks)-1]
		k := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	h.n += n
	return n, nil
}

func (h *heldOutput) WriteByte(c byte) error {
	_, err := h.Write([]byte{c})
	return err
}

// WriteTo writes what h holds to w, block by block.
func (h *heldOutput) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, b := range h.blocks {
		k, err := w.Write(b)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

var errFilterOutput error = &boundError{"its output passed %d MiB, more than any volctl object makes (a filter or template that repeats for good?); nothing is printed", maxFilterOutput.Load}

// afterDone wraps the error of printing an acting command's result (a --jq filter or -t
// template that fails on it): the work is done by then, and the error says what was done.
// It is exit 1, as a result lost to a full disk or a reader gone is, even when printing failed
// for a filter or template, which before the work is a usage error, exit 2: 2 says nothing was
// done (flags, specs and a template's fields are all checked before anything is), and a script
// that took a claim kept for one never made would leave it held
// (TestFilterFailingAfterTheWorkExitsOne).
func afterDone(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	if ee, ok := err.(*exitError); ok && ee.code == ExitUsage && !ee.silent {
		err = ee.err
	}
	return &doneError{done: fmt.Sprintf(format, args...), err: err}
}

// doneError is the error of an acting command that did its work but could not print its
// result (afterDone): what was done, which stands, and, for a claim, what to run next.
// Report words it for a reader gone (`| head -c0`), whose EPIPE is otherwise quiet: a script
// whose claim exited 1 with nothing on stderr could not tell a claim made and kept from one
// refused or rolled back (TestActingCommandWhoseReaderIsGoneSaysWhatItKept).
type doneError struct {
	done string // what was done: `claim "db" for alloc "a" published at /...`
	next string // what to run next, commands pasteable as printed; "" for nothing to say
	err  error  // printing the result
}

func (e *doneError) Error() string {
	msg := e.done + "; only printing it failed: " + e.err.Error()
	if e.next != "" {
		msg += "; " + e.next
	}
	return msg
}

func (e *doneError) Unwrap() error { return e.err }

// withNext is err (afterDone's) with next, what to run next, added to it; err as it is when it
// is not afterDone's.
func withNext(err error, next string) error {
	if de, ok := err.(*doneError); ok {
		de.next = next
	}
	return err
}

// claimKeptNext is what to run after claim cl was made and its result not printed: claiming
// again as it is held prints the target path, a release undoes the claim. The claim again
// carries its mode: a read claim's advised a write claim, refused as a claim the alloc already
// holds otherwise (TestAdviceOfRefusalsAndKeptClaimsRunsAsPrintedAndKeepsTheLine).
func claimKeptNext(cl engine.ClaimInfo) string {
	flags := []string{shellquote.Flag("--alloc", cl.Alloc)}
	if cl.Mode == "read" {
		flags = append(flags, "--read-only")
	}
	return fmt.Sprintf("the claim stands: `%s` prints its target path again, `%s` releases it",
		shellquote.CommandFlags("volctl volume claim", []string{cl.VolumeID}, flags...),
		shellquote.CommandFlags("volctl volume release", []string{cl.VolumeID}, shellquote.Flag("--alloc", cl.Alloc)))
}

// printDone prints line, an acting command's result, to w. The work is done by then; when the
// line cannot be written (a pipe whose reader closed it, a file on a full disk), the command fails all the
// same (exit 1), with afterDone's error saying what was done, so that a script reading the
// line (TARGET=$(volctl volume claim ...)) never takes an empty answer for success.
func printDone(w io.Writer, line, format string, args ...any) error {
	_, err := io.WriteString(w, line)
	return afterDone(err, format, args...)
}

// escapeLines is s with every control character but the newlines between its lines, and the
// tabs that indent a line, shown as display.Escape shows it (spec.EscapeLines): for messages of
// more than one line (an error joining several) that word data from outside volctl; a word
// past maxEchoedWord is cut (spec.CutWords), saying how much was left out: a value of 10,000
// bytes typed or given by a plugin was repeated whole by the error refusing it.
func escapeLines(s string) string { return spec.EscapeLines(spec.CutWords(s, maxEchoedWord)) }

// maxEchoedWord is the longest word (a run of characters without white space) a message on
// stderr keeps whole: more than any ID quoted, escaped as %q may (128 bytes, 4 characters a
// byte), and any path a user means to read.
const maxEchoedWord = 1024

// quotedIDs lists IDs quoted, comma-separated: "a", "b", each as shownQ quotes it.
func quotedIDs(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = shownQ(id)
	}
	return strings.Join(q, ", ")
}

// shownQ is s quoted as %q quotes it, with what %q leaves raw and a terminal shows as nothing
// (a combining grapheme joiner, a variation selector, a Hangul filler: spec.IsInvisible) escaped
// too, as display.Escape shows it: for a plugin's IDs in a line that words them. Before, a
// snapshot ID "snap-1\u034f" printed by `snapshot create` read as "snap-1", which `snapshot
// list` shows escaped (TestSnapshotCreateLineEscapesAnInvisibleID).
func shownQ(s string) string { return display.Escape(strconv.Quote(s)) }

// writeJQ prints each result of the --jq filter on its own line: a string as it is, anything
// else as compact JSON, as gh and jq -r do.
func (e *exportFlags) writeJQ(ctx context.Context, w io.Writer, data any) error {
	code := e.jq
	if code == nil { // set without the flag, by a caller in this package
		var err error
		if code, err = compileJQ(e.JQ); err != nil {
			return usageError("--jq: %v", err)
		}
	}
	var buf heldOutput
	run, stop := boundFilter(ctx)
	defer stop()
	iter := code.RunWithContext(run, data)
	for {
		x, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := x.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil && halt.ExitCode() == 0 {
				break // halt: stop, success. halt_error on null is one with exit code 5 (or its argument's)
			}
			if bound := passedBound(run); bound != nil {
				return usageError("--jq %s: %v", e.JQ, bound)
			}
			if ctx.Err() != nil { // interrupted: not a usage error, and nothing is printed
				return fmt.Errorf("--jq %s: %w", e.JQ, interruptedFilter(ctx))
			}
			return usageError("--jq %s: %v", e.JQ, err)
		}
		if s, ok := x.(string); ok {
			buf.WriteString(s)
		} else {
			b, err := gojq.Marshal(x)
			if err != nil {
				return usageError("--jq %s: %v", e.JQ, err)
			}
			buf.Write(escapeJSONControls(b))
		}
		buf.WriteByte('\n')
		if int64(buf.Len()) > maxFilterOutput.Load() {
			return usageError("--jq %s: %v", e.JQ, errFilterOutput)
		}
	}
	return e.writeHeld(w, &buf)
}

var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		if err := checkText("json", textGrowth*argSize(v)); err != nil {
			return "", err
		}
		b, err := marshalJSON(v, false)
		return strings.TrimSuffix(string(b), "\n"), err
	},
	"join":  boundedJoin,
	"upper": boundedCase("upper", strings.ToUpper),
	"lower": boundedCase("lower", strings.ToLower),
}

// writeJSON prints v indented, as marshalJSON makes it.
func writeJSON(w io.Writer, v any) error {
	b, err := marshalJSON(v, true)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// marshalJSON is the one place volctl makes the JSON text it prints (--json, -t's json, and,
// through escapeJSONControls, --jq's results): v encoded, a newline after it, indented by two
// spaces when indent is set, with <, > and & as they are (the output is read by programs and
// people, never embedded in HTML), and with every character a terminal could act on escaped
// (escapeJSONControls).
func marshalJSON(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return escapeJSONControls(b.Bytes()), nil
}

// escapeJSONControls rewrites, in the JSON text b, each DEL, C1 control (U+0080–U+009F),
// U+2028 and U+2029, bidi control (spec.IsBidiControl) and character that shows as nothing
// (spec.IsInvisible) as a \u escape. encoding/json escapes C0 only (and U+2028/2029), gojq C0
// and DEL: the rest would reach a terminal raw, and C1's U+009B is an escape sequence's CSI
// (a plugin's node ID, version or context could recolour the screen or worse), a bidi
// override lays the rest of the line out reversed ("Trojan Source"), and a zero width space
// makes "n1\u200b" read as "n1", as a table shows neither raw (display.Escape). Escaped, the
// text is still JSON and decodes to the same strings. In JSON these characters can stand only
// inside strings, and b is valid UTF-8 (both encoders write nothing else), so a scan of its
// runes is exact. Each of them is DEL or starts with the byte 0xc2, 0xe2 or one of
// spec.InvisibleLeads, which no continuation byte is: any other byte is skipped without decoding (a table of 10,000
// volumes named in CJK passes through here). One past U+FFFF is written as JSON writes it, a
// surrogate pair.
func escapeJSONControls(b []byte) []byte {
	var out []byte
	done := 0 // b[:done] is in out
	leads := spec.InvisibleLeads()
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < 0x7f || c != 0x7f && c != 0xc2 && c != 0xe2 && !leads[c] {
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 || spec.IsBidiControl(r) || spec.IsInvisible(r) {
			out = append(out, b[done:i]...)
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
			done = i + n
		}
		i += n - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// none is what an empty table cell shows.
const none = "<none>"

// table prints aligned columns with <none> in empty cells. Every cell is shown as
// display.Escape writes it: a control character from a plugin (its version, node ID, a volume's
// context) is printed as a visible escape, never sent to the terminal, and cannot break a row.
//
// A volume list of 10,000 rows is held until its widest cells are known, and a process pays
// for every fresh page of memory it touches (BENCHMARKS.md, `volume status`). So the rows are
// packed into chunks of bytes, each row its cell count and then each cell's length and text,
// rather than kept as a slice of strings per row in a slice grown by copying: about 40 bytes a
// volume, written once.
type table struct {
	out    io.Writer
	chunks [][]byte // the rows in order; a row never spans two chunks
	widths []int    // the widest cell of each column so far, by display.Width
	cols   int      // cells in the first row
	rows   int
	uneven bool // a row of another length than the first, or a cell tabwriter would split
}

// tableChunk is the most a chunk of rows takes unless one row needs more; the first chunks
// are smaller, so that a table of a few rows takes a few hundred bytes.
const tableChunk = 64 << 10

func newTable(out io.Writer, headers ...string) *table {
	t := &table{out: out}
	t.add(headers)
	return t
}

// row adds a row, each cell escaped for the terminal and an empty one shown as <none>.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		if strings.TrimSpace(c) == "" {
			cells[i] = none
		} else {
			cells[i] = display.Escape(c) // a plugin's strings reach the terminal as text
		}
	}
	t.add(cells)
}

// add appends a row's cells as they are.
func (t *table) add(cells []string) {
	need := binary.MaxVarintLen64 * (1 + len(cells))
	for _, c := range cells {
		need += len(c)
	}
	last := len(t.chunks) - 1
	if last < 0 || cap(t.chunks[last])-len(t.chunks[last]) < need {
		// The shift is bounded: past 54 chunks 512<<len overflows, and every row took a chunk.
		t.chunks = append(t.chunks, make([]byte, 0, max(need, min(tableChunk, 512<<min(len(t.chunks), 7)))))
		last++
	}
	if t.rows == 0 {
		t.cols = len(cells)
	} else if len(cells) != t.cols {
		t.uneven = true
	}
	b := binary.AppendUvarint(t.chunks[last], uint64(len(cells)))
	for i, c := range cells {
		if strings.ContainsAny(c, "\t\n\v\f") {
			t.uneven = true
		}
		if i == len(t.widths) {
			t.widths = append(t.widths, 0)
		}
		t.widths[i] = max(t.widths[i], display.Width(c))
		b = append(binary.AppendUvarint(b, uint64(len(c))), c...)
	}
	t.chunks[last] = b
	t.rows++
}

// reset drops every row, the header too: a followed event log prints its header once.
func (t *table) reset() {
	t.chunks, t.widths, t.cols, t.rows, t.uneven = nil, t.widths[:0], 0, 0, false
}

// each calls fn with every row's cells in order; cells is reused between calls and its
// slices point into the table.
func (t *table) each(fn func(cells [][]byte) error) error {
	var cells [][]byte
	for _, b := range t.chunks {
		for len(b) > 0 {
			n, k := binary.Uvarint(b)
			b = b[k:]
			cells = cells[:0]
			for range n {
				l, k := binary.Uvarint(b)
				cells = append(cells, b[k:k+int(l)])
				b = b[k+int(l):]
			}
			if err := fn(cells); err != nil {
				return err
			}
		}
	}
	return nil
}

// render aligns the columns as text/tabwriter does with padding 2 (every column but the last
// padded with spaces to its widest cell plus 2) in one pass over the cells, without tabwriter's
// per-cell bookkeeping: a volume list has 10,000 rows. Unlike tabwriter, widths are terminal
// cells (display.Width), not runes: a CJK or emoji name takes two cells a character and would
// put the columns after it out of line (TestTableAlignsWideCharactersByCells). A table
// tabwriter would read otherwise (a cell with a tab, a newline, \v or \f; rows of unequal
// length) goes through tabwriter itself (TestTableRenderMatchesTabwriter).
func (t *table) render() error {
	if t.rows == 0 {
		return nil
	}
	if t.uneven || t.cols == 0 {
		tw := tabwriter.NewWriter(t.out, 0, 0, 2, ' ', 0)
		err := t.each(func(cells [][]byte) error {
			_, err := tw.Write(append(bytes.Join(cells, []byte{'\t'}), '\n'))
			return err
		})
		if err != nil {
			return err
		}
		return tw.Flush()
	}
	var line []byte
	return t.each(func(cells [][]byte) error {
		line = line[:0]
		for i, c := range cells[:t.cols-1] {
			line = append(line, c...)
			for n := t.widths[i] + 2 - cellWidth(c); n > 0; n-- {
				line = append(line, ' ')
			}
		}
		line = append(append(line, cells[t.cols-1]...), '\n')
		_, err := t.out.Write(line)
		return err
	})
}

// cellWidth is display.Width of a cell's bytes, without a string made for printable ASCII.
func cellWidth(c []byte) int {
	for _, b := range c {
		if b < 0x20 || b >= 0x80 {
			return display.Width(string(c))
		}
	}
	return len(c)
}

// keyValues prints "Key  = value" lines aligned, as `nomad volume status ID` does, each value
// as display.Escape writes it (as a table's cells).
func keyValues(out io.Writer, pairs ...[2]string) error {
	tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
	for _, p := range pairs {
		v := display.Escape(p[1])
		if strings.TrimSpace(v) == "" {
			v = none
		}
		fmt.Fprintf(tw, "%s\t= %s\n", p[0], v)
	}
	return tw.Flush()
}

// ago is age for a moment in a sentence-like detail row: "2d ago", "just now" (display.Ago).
func ago(now, t time.Time) string { return display.Ago(now, t) }

// age renders how long ago t was, for tables: "45s", "2m", "3h", "2d" (display.Age).
func age(now, t time.Time) string { return display.Age(now, t) }

// bytesIEC renders a byte count as people read capacities ("10 GiB"); 0 is empty.
func bytesIEC(n int64) string { return display.Bytes(n) }
