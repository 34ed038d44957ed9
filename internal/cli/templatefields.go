package cli

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

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
// list, the values of a map), of $; a field the type never has is refused, in a branch that
// may not run too (a typo there fails the day it runs), and so is a field read from a list
// (the result of a create is a list of volumes: {{.id}} for {{range .}}{{.id}}{{end}}). What
// is left to the run: a field left out when empty (it is in the type), what a function or
// variable other than $ gives, a map's keys, a type that writes its own JSON.
// The error says where the read is in text, the template, as -t's other errors do.
func templateFieldsError(text string, tmpl *template.Template, result reflect.Type, when string) error {
	if tmpl == nil || tmpl.Tree == nil || result == nil {
		return nil
	}
	c := fieldCheck{root: result}
	c.list(tmpl.Tree.Root, result)
	if c.bad == "" {
		return nil
	}
	at := ""
	if int(c.pos) <= len(text) {
		at = " " + templatePlace(text, int(c.pos))
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

// fieldCheck walks a template's tree, following the type of dot (nil: not known, nothing
// checked), and keeps the first field no result could have.
type fieldCheck struct {
	root reflect.Type

	bad    string    // the first refused read, as written (.claim.nosuch)
	pos    parse.Pos // where it is in the template's text
	name   string    // the field it names
	of     string    // what it was read from, as written (.claim), "" for the result
	fields []string  // the fields there are; nil when it was read from a list
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
			c.pipe(n.Pipe, dot)
			c.list(n.List, dot)
			c.list(n.ElseList, dot)
		case *parse.WithNode:
			c.list(n.List, c.pipe(n.Pipe, dot))
			c.list(n.ElseList, dot)
		case *parse.RangeNode:
			c.list(n.List, elemType(c.pipe(n.Pipe, dot)))
			c.list(n.ElseList, dot)
		case *parse.TemplateNode:
			c.pipe(n.Pipe, dot)
		}
	}
}

// pipe checks what the pipeline reads and returns its type: that of its one argument, when
// it is nothing else.
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
		return nil
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
		if n.Ident[0] == "$" {
			return c.follow(c.root, n.Ident[1:], "$", n.Position())
		}
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
				c.refuse(path, name, of, names, pos)
				return nil
			}
			t = fields[i].typ
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				return nil
			}
			t = t.Elem()
		case reflect.Slice, reflect.Array:
			c.refuse(path, name, of, nil, pos)
			return nil
		default:
			return nil
		}
	}
	return t
}

func (c *fieldCheck) refuse(path, name, of string, fields []string, pos parse.Pos) {
	if c.bad == "" {
		c.bad, c.name, c.of, c.fields, c.pos = path, name, of, fields, pos
	}
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
