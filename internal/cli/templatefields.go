package cli

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"text/template/parse"

	"github.com/volctl/volctl/internal/spec"
)

// checkTemplateFields refuses, before an acting command does anything, a -t template that
// reads a field the command's result (of type T) never has: {{.target}} for a claim's
// target_path. The template is parsed as its flag is set, but a field is looked up only as
// it runs, on the result: the claim was made, the volume created, and then the command failed
// with exit 2 on a typo, leaving a script that stops at the error with a claim it does not
// know it holds. Only fields read from the result itself are checked (., $, and the else of a
// with or range, where . is still the result); one left out when empty is in the type, and
// passes.
func checkTemplateFields[T any](e *exportFlags) error {
	tmpl := e.tmpl
	if tmpl == nil && e.Template != "" { // set without the flag, by a caller in this package
		tmpl, _ = parseTemplate(e.Template) // a template that does not parse fails as it is written
	}
	if tmpl == nil || tmpl.Tree == nil {
		return nil
	}
	fields, ok := resultFields(reflect.TypeFor[T]())
	if !ok {
		return nil
	}
	var bad []string
	check := func(name string) {
		if !slices.Contains(fields, name) && !slices.Contains(bad, name) {
			bad = append(bad, name)
		}
	}
	var walk func(n parse.Node, dotIsResult bool)
	walkList := func(l *parse.ListNode, dotIsResult bool) {
		if l != nil {
			for _, n := range l.Nodes {
				walk(n, dotIsResult)
			}
		}
	}
	walkBranch := func(b *parse.BranchNode, bodyDot bool, dotIsResult bool) {
		walk(b.Pipe, dotIsResult)
		walkList(b.List, bodyDot)
		walkList(b.ElseList, dotIsResult)
	}
	walk = func(n parse.Node, dotIsResult bool) {
		switch n := n.(type) {
		case *parse.ListNode:
			walkList(n, dotIsResult)
		case *parse.ActionNode:
			walk(n.Pipe, dotIsResult)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				for _, a := range c.Args {
					walk(a, dotIsResult)
				}
			}
		case *parse.FieldNode:
			if dotIsResult {
				check(n.Ident[0])
			}
		case *parse.VariableNode:
			if n.Ident[0] == "$" && len(n.Ident) > 1 {
				check(n.Ident[1])
			}
		case *parse.ChainNode:
			walk(n.Node, dotIsResult)
		case *parse.IfNode:
			walkBranch(&n.BranchNode, dotIsResult, dotIsResult)
		case *parse.WithNode:
			walkBranch(&n.BranchNode, false, dotIsResult)
		case *parse.RangeNode:
			walkBranch(&n.BranchNode, false, dotIsResult)
		case *parse.TemplateNode:
			walk(n.Pipe, dotIsResult)
		}
	}
	walk(tmpl.Tree.Root, true)
	if len(bad) == 0 {
		return nil
	}
	hint := ""
	if sug := spec.Suggest(bad[0], fields); sug != "" {
		hint = " (did you mean " + sug + "?)"
	}
	return usageError("--template: the result has no field %s%s, so the template would fail once the work was done: "+
		"nothing was done. The fields are %s (docs/json.md)", quotedIDs(bad), hint, strings.Join(fields, ", "))
}

// resultFields is the names of the fields T's JSON form has (any of them left out when empty),
// or false when that is not known from the type: not a struct, or one that marshals itself.
func resultFields(t reflect.Type) ([]string, bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(reflect.TypeFor[json.Marshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Marshaler]()) {
		return nil, false
	}
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			inner, ok := resultFields(f.Type)
			if !ok {
				return nil, false
			}
			out = append(out, inner...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out, true
}
