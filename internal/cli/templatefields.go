package cli

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// checkTemplateFields refuses, before an acting command does anything, a -t template that
// reads a field the command's result (of type T) never has: {{.target}} for a claim's
// target_path. Commands that act declare T with addActingExportFlags, which checks -t as it is
// set; this is the same check for a template set without the flag, by a caller in this
// package.
func checkTemplateFields[T any](e *exportFlags) error {
	return checkTemplateFieldsOf(e, reflect.TypeFor[T](), afterWork)
}

// checkReadTemplate is checkTemplateFields for a command that only reads, whose result (of
// type T) its arguments decide (one volume's status or the list): called before anything is
// read. A template that reads a field no T has ran only on a T: on an empty state (a range
// over no volumes) it printed nothing, exit 0, and once a volume existed it failed, exit 2;
// a CI script's typo passed until then (TestReadingTemplatesAreCheckedWhateverTheState).
func checkReadTemplate[T any](e *exportFlags) error {
	return checkTemplateFieldsOf(e, reflect.TypeFor[T](), onEveryState)
}

func checkTemplateFieldsOf(e *exportFlags, result reflect.Type, when string) error {
	tmpl := e.tmpl
	if tmpl == nil && e.Template != "" {
		tmpl, _ = parseTemplate(e.Template) // a template that does not parse fails as it is written
	}
	if err := templateFieldsError(e.Template, tmpl, result, when); err != nil {
		return usageError("--template: %v", err)
	}
	return nil
}

// What a template refused for a field its result never has would have done: an acting
// command's (afterWork), a reading command's (onEveryState).
const (
	afterWork    = "so the template would fail once the work was done: nothing was done"
	onEveryState = "so the template would fail on every state that gives it one to print (an empty one runs no range over it)"
)

// templateFieldsError says why tmpl would fail on every result of type result, or nil. The
// template is parsed as its flag is set, but a field is looked up only as it runs, on the
// result: the claim was made, the volume created, and then the command failed with exit 2 on a
// typo, leaving a script that stops at the error with a claim it does not know it holds. What
// the template reads is followed through the result's type as its JSON form has it: a field of
// the result, of a field (.claim.state), of what a with or range gives dot (the elements of a
// list, the values of a map), of $, of a variable the template declares, bound as text/template
// binds it (a range's element and index, a with's value, `$x := .claims`, `$x = .`) and scoped
// as it scopes it (to the {{end}} of the if, with or range it is declared in); a field the type
// never has is refused, in a branch that may not run too (a typo there fails the day it runs),
// and so is a field read from a list (the result of a create is a list of volumes: {{.id}} for
// {{range .}}{{.id}}{{end}}) or from a string, number or bool ({{.target_path.x}}), or from
// every value of an object ranged over (everyValue). Before
// (round 61), a variable other than $ was not followed: {{range $v := .}}{{$v.idd}}{{end}}, the
// usual idiom, passed on an empty state and failed once there was a volume, and a create ran
// before failing on it. What is left to the run: a field left out when empty (it is in the
// type), what a function gives and a variable given it ({{$x := index . "a"}}), a variable
// whose type its branches or a range's steps may change ({{if .a}}{{$x = .claim}}{{end}}), a
// map's keys, a type that writes its own JSON, a template called with a value whose type is
// not known, or one that is not defined.
// A {{template}} call's template (a {{define}}, a {{block}}) is checked where it is called:
// its reads with dot, and $, the type of the value it is given (templateCalls). Before,
// only the call's pipeline was: {{define "t"}}{{.nosuch}}{{end}}{{template "t" .}} passed,
// and a claim was made before the template failed on printing it. A template defined but never
// called is not checked: nothing says what its dot would be.
// The error says where the read is in text, the template, as -t's other errors do.
func templateFieldsError(text string, tmpl *template.Template, result reflect.Type, when string) error {
	if tmpl == nil || tmpl.Tree == nil || result == nil {
		return nil
	}
	c := fieldCheck{vars: []templateVar{{"$", result}}, calls: newTemplateCalls(tmpl), low: noLow}
	c.list(tmpl.Tree.Root, result)
	if c.bad == "" {
		return nil
	}
	at := ""
	if int(c.pos) <= len(text) {
		at = " " + templatePlace(text, int(c.pos))
	}
	if c.values != "" {
		if at != "" {
			at += ","
		}
		return fmt.Errorf("%s reads what no value of the object {{range %s}} ranges over has (its values are dot, and the range's variable, in turn),%s %s (docs/json.md)",
			c.bad, c.values, at, when)
	}
	if c.scalar != "" {
		of := c.of
		if of == "" {
			of = "."
		}
		if at != "" {
			at += ","
		}
		return fmt.Errorf("%s reads a field of %s (%s), which has none,%s %s (docs/json.md)", c.bad, c.scalar, of, at, when)
	}
	if c.fields == nil {
		list := c.of
		if list == "" {
			list = "."
		}
		if at != "" {
			at += ","
		}
		return fmt.Errorf("%s reads a field of a list, which has none,%s %s. "+
			"Range over the list: {{range %s}}{{.%s}}{{end}} (docs/json.md)", c.bad, at, when, list, c.name)
	}
	hint := ""
	if sug := spec.Suggest(c.name, c.fields); sug != "" {
		hint = " (did you mean " + sug + "?)"
	}
	where := "the result"
	if c.of != "" {
		where = c.of
	}
	return fmt.Errorf("%s has no field %q%s%s, %s. "+
		"Its fields are %s (docs/json.md)", where, c.name, hint, at, when, strings.Join(c.fields, ", "))
}

// fieldCheck walks a template's tree, following the type of dot and of each variable in scope
// (nil: not known, nothing checked), and keeps the first field no result could have.
type fieldCheck struct {
	vars  []templateVar  // the variables in scope, the innermost last, as text/template's stack
	calls *templateCalls // the templates it may call, and what is known of their checks
	// low is the lowest index (templateCalls.index) of a call on stack this check met, and did
	// not check again (noLow: none): what it found holds only once that call's group is done.
	low int

	fieldRefusal
}

// fieldRefusal is the first read a fieldCheck refused ("" bad: none), and what it says of it.
type fieldRefusal struct {
	bad    string    // the first refused read, as written (.claim.nosuch)
	pos    parse.Pos // where it is in the template's text
	name   string    // the field it names
	of     string    // what it was read from, as written (.claim), "" for the result
	fields []string  // the fields there are; nil when it was read from a list or a scalar
	scalar string    // what it was read from when that is a string, number or bool: "a string"
	values string    // set when no value of the object this ranges over (as written) has it
}

// templateVar is a variable a template declares ($ too), and the type of what it holds.
type templateVar struct {
	name string
	typ  reflect.Type
}

func (c *fieldCheck) list(l *parse.ListNode, dot reflect.Type) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			c.pipe(n.Pipe, dot)
		case *parse.IfNode:
			c.branch(&n.BranchNode, dot, false)
		case *parse.WithNode:
			c.branch(&n.BranchNode, dot, true)
		case *parse.RangeNode:
			c.rangeOver(n, dot)
		case *parse.TemplateNode:
			c.call(n, c.pipe(n.Pipe, dot))
		}
	}
}

// noLow is fieldCheck.low when the check met no call whose check is under way.
const noLow = math.MaxInt

// maxTemplateChecks bounds how many times the bodies of the templates a -t calls are checked
// (a call whose check is done is not checked again; one of a group of templates calling each
// other may be, once more, when one of them was refused): past it, a call is left to the run,
// as one with a value whose type is not known is.
const maxTemplateChecks = 10000

// templateCalls is what the checks of a -t know of the templates it calls, shared by the check
// of its main template and of every template called. Templates that call each other (a
// template calling itself) are checked as Tarjan's algorithm finds the strongly connected
// components of a graph, the calls (a template and the type of its dot) its nodes: a call met
// again while its check is under way, or done but in a group whose first call's check is not,
// is not checked again, its reads being that check's (which ends recursion); once the first
// call of a group is done, what was found of each call in it is kept (pending moves to done),
// but for the calls that passed in a group one of which was refused: whether they pass was
// found while taking that one to pass, and they are checked again if called again.
type templateCalls struct {
	set     *template.Template            // the -t, its {{define}}s and {{block}}s
	index   map[templateCall]int          // the calls on stack, by the order their check began
	stack   []templateCall                // the calls under way, or done in a group not yet done
	pending map[templateCall]fieldRefusal // what was found of the calls done on stack
	done    map[templateCall]fieldRefusal // the calls checked, and what was refused in them
	next    int                           // the index of the next call checked
	depth   int                           // the calls under way (maxTemplateDepth)
	checks  int                           // the bodies checked so far (maxTemplateChecks)
}

// templateCall is a template called with a value of a type: its body checked with that dot.
type templateCall struct {
	name string
	dot  reflect.Type
}

func newTemplateCalls(set *template.Template) *templateCalls {
	return &templateCalls{set: set, index: map[templateCall]int{},
		pending: map[templateCall]fieldRefusal{}, done: map[templateCall]fieldRefusal{}}
}

// call checks what the template n calls reads, called with a value of type dot: its body with
// dot, and $, that type, in a scope of its own (a called template sees no variable of its
// caller's), as text/template runs it. A call of a template not defined, or with a value whose
// type is not known (nil: nothing in the body could be refused), is left to the run; so is one
// nested deeper than maxTemplateDepth, which the run stops, or past maxTemplateChecks.
func (c *fieldCheck) call(n *parse.TemplateNode, dot reflect.Type) {
	calls := c.calls
	if calls == nil || calls.set == nil || dot == nil || c.bad != "" {
		return
	}
	called := calls.set.Lookup(n.Name)
	if called == nil || called.Tree == nil || called.Tree.Root == nil {
		return
	}
	key := templateCall{n.Name, dot}
	if i, ok := calls.index[key]; ok {
		c.low = min(c.low, i)
		c.adopt(calls.pending[key]) // a refusal found holds
		return
	}
	if r, ok := calls.done[key]; ok {
		c.adopt(r)
		return
	}
	if calls.depth >= maxTemplateDepth || calls.checks >= maxTemplateChecks {
		return
	}
	calls.checks++
	calls.depth++
	at, idx := len(calls.stack), calls.next
	calls.next++
	calls.index[key] = idx
	calls.stack = append(calls.stack, key)
	body := &fieldCheck{vars: []templateVar{{"$", dot}}, calls: calls, low: noLow}
	body.list(called.Tree.Root, dot)
	calls.depth--
	calls.pending[key] = body.fieldRefusal
	if body.low < idx {
		c.low = min(c.low, body.low) // in a group whose first call is under way
	} else {
		group := calls.stack[at:]
		refused := slices.ContainsFunc(group, func(k templateCall) bool { return calls.pending[k].bad != "" })
		for _, k := range group {
			if r := calls.pending[k]; r.bad != "" || !refused {
				calls.done[k] = r
			}
			delete(calls.pending, k)
			delete(calls.index, k)
		}
		calls.stack = calls.stack[:at]
	}
	c.adopt(body.fieldRefusal)
}

// adopt makes r c's refusal, unless c has one.
func (c *fieldCheck) adopt(r fieldRefusal) {
	if c.bad == "" && r.bad != "" {
		c.fieldRefusal = r
	}
}

// branch checks an if (with false) or a with: its pipeline, whose variables are in scope to its
// {{end}}, its list (dot what the pipeline gives, for a with) and its else list. After it, a
// variable declared outside that either branch set to another type holds either: not known.
func (c *fieldCheck) branch(n *parse.BranchNode, dot reflect.Type, with bool) {
	outer := len(c.vars)
	t := c.pipe(n.Pipe, dot)
	body := dot
	if with {
		body = t
	}
	inner := len(c.vars)
	start := slices.Clone(c.vars)
	c.list(n.List, body)
	then := slices.Clone(c.vars[:inner])
	c.vars = start
	c.list(n.ElseList, dot)
	c.vars = c.vars[:inner]
	c.merge(then)
	c.vars = c.vars[:outer]
}

// rangeOver checks a range. Its variables are bound as text/template binds them: to what is
// ranged over (the else list sees that), then, at each step, the only one to the element, or
// the first to the index and the second to the element. A variable declared outside that the
// body sets ($x = ...) is not known in the body (a step sees what the one before it left) nor
// after it (a break may end it anywhere).
func (c *fieldCheck) rangeOver(n *parse.RangeNode, dot reflect.Type) {
	outer := len(c.vars)
	over := c.pipe(n.Pipe, dot)
	inner := len(c.vars)
	start := slices.Clone(c.vars)
	elem := elemType(over)
	switch decl := n.Pipe.Decl; len(decl) {
	case 1:
		c.set(decl[0].Ident[0], elem)
	case 2:
		c.set(decl[0].Ident[0], indexType(over))
		c.set(decl[1].Ident[0], elem)
	}
	set := map[string]bool{}
	assignedIn(n.List, set)
	for _, d := range n.Pipe.Decl {
		delete(set, d.Ident[0]) // set afresh at each step
	}
	for name := range set {
		c.set(name, nil)
	}
	body := slices.Clone(c.vars)
	c.list(n.List, elem)
	if st := jsonShape(over); c.bad == "" && elem == nil && st != nil && st.Kind() == reflect.Struct {
		c.everyValue(n, st, body)
	}
	c.vars = c.vars[:inner]
	for name := range set {
		c.set(name, nil)
	}
	if n.Pipe.IsAssign {
		for _, d := range n.Pipe.Decl {
			c.set(d.Ident[0], nil) // the last step's, or what was ranged over
		}
	}
	ran := slices.Clone(c.vars)
	c.vars = start
	c.list(n.ElseList, dot)
	c.vars = c.vars[:inner]
	c.merge(ran)
	c.vars = c.vars[:outer]
}

// everyValue checks the body of a range over an object (a struct in its JSON form: its values
// of as many types as its fields) with dot, and the range's element variable, each field's
// type in turn, vars the variables in scope as the body begins; the first refusal stands when
// every field's refuses: the body reads what no value of the object has
// ({{range .}}{{.x}}{{end}} of a claim, its values strings, numbers, bools and a list). It was
// left to the run, the claim made before the template failed
// (TestRangeOverTheClaimObjectIsRefusedBeforeTheClaim). A field whose type is not known, or
// under which the body passes, leaves the range to the run: a body that reads a field of the
// values that have it, in a branch that tests which they are, is no typo.
func (c *fieldCheck) everyValue(n *parse.RangeNode, st reflect.Type, vars []templateVar) {
	fields := jsonStructFields(st)
	var first *fieldCheck
	for _, f := range fields {
		typ := f.typ
		if jsonShape(typ) == nil {
			if !writesATime(typ) {
				return
			}
			typ = reflect.TypeFor[string]() // RFC 3339 text
		}
		trial := &fieldCheck{vars: slices.Clone(vars), calls: c.calls, low: noLow}
		if decl := n.Pipe.Decl; len(decl) > 0 {
			trial.set(decl[len(decl)-1].Ident[0], typ)
		}
		trial.list(n.List, typ)
		c.low = min(c.low, trial.low)
		if trial.bad == "" {
			return
		}
		if first == nil {
			first = trial
		}
	}
	if first != nil {
		c.refuse(first.bad, first.name, first.of, first.fields, first.scalar, first.pos)
		c.values = n.Pipe.String()
	}
}

// writesATime says whether t is a time.Time (or a pointer to one), which JSON writes as a string.
func writesATime(t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t == reflect.TypeFor[time.Time]()
}

// merge makes each variable in scope whose type in other (the same variables as another branch
// left them) is another one not known.
func (c *fieldCheck) merge(other []templateVar) {
	for i := range c.vars {
		if c.vars[i].typ != other[i].typ {
			c.vars[i].typ = nil
		}
	}
}

// lookup is the type of the variable name in scope (nil: not known, or none).
func (c *fieldCheck) lookup(name string) reflect.Type {
	for i := len(c.vars) - 1; i >= 0; i-- {
		if c.vars[i].name == name {
			return c.vars[i].typ
		}
	}
	return nil
}

// set gives the variable name in scope the type t, as $name = ... does.
func (c *fieldCheck) set(name string, t reflect.Type) {
	for i := len(c.vars) - 1; i >= 0; i-- {
		if c.vars[i].name == name {
			c.vars[i].typ = t
			return
		}
	}
}

// assignedIn adds to set the variables l sets ($x = ...), in its nested lists and pipelines too.
func assignedIn(l *parse.ListNode, set map[string]bool) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		switch n := n.(type) {
		case *parse.ActionNode:
			assignedInPipe(n.Pipe, set)
		case *parse.IfNode:
			assignedInBranch(&n.BranchNode, set)
		case *parse.WithNode:
			assignedInBranch(&n.BranchNode, set)
		case *parse.RangeNode:
			assignedInBranch(&n.BranchNode, set)
		case *parse.TemplateNode:
			assignedInPipe(n.Pipe, set)
		}
	}
}

func assignedInBranch(n *parse.BranchNode, set map[string]bool) {
	assignedInPipe(n.Pipe, set)
	assignedIn(n.List, set)
	assignedIn(n.ElseList, set)
}

func assignedInPipe(p *parse.PipeNode, set map[string]bool) {
	if p == nil {
		return
	}
	if p.IsAssign {
		for _, d := range p.Decl {
			set[d.Ident[0]] = true
		}
	}
	for _, cmd := range p.Cmds {
		for _, a := range cmd.Args {
			for {
				if ch, ok := a.(*parse.ChainNode); ok {
					a = ch.Node
					continue
				}
				break
			}
			if sub, ok := a.(*parse.PipeNode); ok {
				assignedInPipe(sub, set)
			}
		}
	}
}

// pipe checks what the pipeline reads and returns its type: that of its one argument, when
// it is nothing else. Its variables are declared ($x := ...) or set ($x = ...) to that type, as
// text/template does.
func (c *fieldCheck) pipe(p *parse.PipeNode, dot reflect.Type) reflect.Type {
	if p == nil {
		return nil
	}
	var last reflect.Type
	for _, cmd := range p.Cmds {
		for _, a := range cmd.Args {
			last = c.arg(a, dot)
		}
	}
	if len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		last = nil
	}
	for _, d := range p.Decl {
		if p.IsAssign {
			c.set(d.Ident[0], last)
		} else {
			c.vars = append(c.vars, templateVar{d.Ident[0], last})
		}
	}
	return last
}

// arg checks what one argument reads and returns its type.
func (c *fieldCheck) arg(n parse.Node, dot reflect.Type) reflect.Type {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot
	case *parse.FieldNode:
		return c.follow(dot, n.Ident, "", n.Position())
	case *parse.VariableNode:
		return c.follow(c.lookup(n.Ident[0]), n.Ident[1:], n.Ident[0], n.Position())
	case *parse.ChainNode:
		t := c.arg(n.Node, dot)
		return c.follow(t, n.Field, "("+n.Node.String()+")", n.Position())
	case *parse.PipeNode:
		return c.pipe(n, dot)
	}
	return nil
}

// follow follows the field names from t, written after prefix, and returns the type reached.
func (c *fieldCheck) follow(t reflect.Type, names []string, prefix string, pos parse.Pos) reflect.Type {
	path := prefix
	for _, name := range names {
		t = jsonShape(t)
		if t == nil {
			return nil
		}
		of := path
		path += "." + name
		switch t.Kind() {
		case reflect.Struct:
			fields := jsonStructFields(t)
			i := slices.IndexFunc(fields, func(f jsonField) bool { return f.name == name })
			if i < 0 {
				names := make([]string, len(fields))
				for j, f := range fields {
					names[j] = f.name
				}
				c.refuse(path, name, of, names, "", pos)
				return nil
			}
			t = fields[i].typ
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return nil
			}
			t = t.Elem()
		case reflect.Slice, reflect.Array:
			c.refuse(path, name, of, nil, "", pos)
			return nil
		default:
			if kind := scalarKind(t); kind != "" {
				c.refuse(path, name, of, nil, kind, pos)
			}
			return nil
		}
	}
	return t
}

func (c *fieldCheck) refuse(path, name, of string, fields []string, scalar string, pos parse.Pos) {
	if c.bad == "" {
		c.bad, c.name, c.of, c.fields, c.scalar, c.pos = path, name, of, fields, scalar, pos
	}
}

// scalarKind says what a value of type t (as jsonShape gives it) is in its JSON form when that
// is a string, a number or a bool, "" otherwise: the template reads it as a Go string, int64,
// uint64, float64 or bool, none of which has a field or a method a field read could name.
func scalarKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return ""
}

// indexType is the type of a range's index over a t: a list's int, a map's key, which JSON
// makes a string whatever it was in Go.
func indexType(t reflect.Type) reflect.Type {
	switch t = jsonShape(t); {
	case t == nil:
		return nil
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return reflect.TypeFor[int]()
	case t.Kind() == reflect.Map:
		return reflect.TypeFor[string]()
	}
	return nil
}

// elemType is the type of dot in a range over a t: a list's elements, a map's values.
func elemType(t reflect.Type) reflect.Type {
	switch t = jsonShape(t); {
	case t == nil:
		return nil
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array, t.Kind() == reflect.Map:
		return t.Elem()
	}
	return nil
}

// jsonShape is t as its JSON form is shaped (a pointer is what it points to), or nil when that
// is not known from the type: an interface, a type that writes its own JSON or text (a time, a
// duration, redacted secrets), a []byte (a string).
func jsonShape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	for _, m := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return nil
		}
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
		return nil
	}
	return t
}

// jsonField is a field of a struct as JSON prints it: its name and type.
type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonStructFields is the fields JSON prints of struct t, those of embedded structs it
// promotes in place.
func jsonStructFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && f.Anonymous && jsonShape(f.Type) != nil && jsonShape(f.Type).Kind() == reflect.Struct:
			out = append(out, jsonStructFields(jsonShape(f.Type))...)
		case name == "":
			out = append(out, jsonField{f.Name, f.Type})
		default:
			out = append(out, jsonField{name, f.Type})
		}
	}
	return out
}
