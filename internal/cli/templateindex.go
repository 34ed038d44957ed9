package cli

import (
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
)

// A -t template reads a field that may be absent with {{with index . "field"}}...{{end}}
// (docs/json.md): text/template's index gives nothing for a key the map lacks, which with and
// if read as false. Printed, that nothing was Go's "<no value>", exit 0: {{index .parameters
// "skuname"}} of a volume without that parameter, or {{index . "nmae"}}, a typo, printed
// "<no value>" where docs/json.md promises that a field the object lacks is an error, exit 2
// (TestTemplateIndexOfAMissingKeyFails), and a script read "<no value>" as the value. So index
// is two functions: where its result is printed or kept ({{index . "k"}}, {{index . "k" |
// upper}}, {{$x := index . "k"}}), a key the map lacks is an error, named as missingkey=error
// names one; in the condition of an if, with or range, it is text/template's (the key lacking:
// nothing, false).

// lenientIndex is the name index goes by in the conditions of if, with and range.
const lenientIndex = "volctl_index_or_nothing"

// indexNamed is err of a template's execution with index's lenient form named index, as the
// template's author wrote it: an error of index in a condition ("index out of range: 5")
// named a function the author never wrote.
func indexNamed(err error) error {
	if err == nil || !strings.Contains(err.Error(), lenientIndex) {
		return err
	}
	return renamedIndex{err}
}

// renamedIndex is an error whose text names index where it said lenientIndex.
type renamedIndex struct{ err error }

func (r renamedIndex) Error() string { return strings.ReplaceAll(r.err.Error(), lenientIndex, "index") }
func (r renamedIndex) Unwrap() error { return r.err }

// indexFuncs are index, refusing a missing key, and its lenient form.
var indexFuncs = template.FuncMap{
	"index":      jsonIndex(true),
	lenientIndex: jsonIndex(false),
}

// jsonIndex is text/template's index (x[1][2] for index x 1 2, over maps, slices, arrays and
// strings), giving an error for a key a map lacks when strict. When not, a key a map lacks, or
// a nil reached before the last key, makes the whole index nothing at once (the map's element
// type's zero, the nil): {{if index . "parameters" "skuname"}} of a volume without parameters
// is false, as {{with index . "parameters"}} is. Before, the zero of the first key
// missing was indexed with the next key: "index of nil pointer", exit 2, a pointer the
// template's author never wrote (TestIndexInAConditionOfAnAbsentObjectIsNothing).
func jsonIndex(strict bool) func(item reflect.Value, keys ...reflect.Value) (reflect.Value, error) {
	return func(item reflect.Value, keys ...reflect.Value) (reflect.Value, error) {
		item = indirectValue(item)
		if !item.IsValid() {
			return reflect.Value{}, fmt.Errorf("index of untyped nil")
		}
		for _, key := range keys {
			key = indirectValue(key)
			for item.Kind() == reflect.Pointer || item.Kind() == reflect.Interface {
				if item.IsNil() {
					if !strict {
						return reflect.Zero(item.Type()), nil
					}
					return reflect.Value{}, fmt.Errorf("index of nil pointer")
				}
				item = item.Elem()
			}
			switch item.Kind() {
			case reflect.Array, reflect.Slice, reflect.String:
				var i int64
				switch key.Kind() {
				case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
					i = key.Int()
				case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
					i = int64(key.Uint())
				case reflect.Invalid:
					return reflect.Value{}, fmt.Errorf("cannot index slice/array with nil")
				default:
					return reflect.Value{}, fmt.Errorf("cannot index slice/array with type %s", key.Type())
				}
				if i < 0 || i >= int64(item.Len()) {
					return reflect.Value{}, fmt.Errorf("index out of range: %d", i)
				}
				item = item.Index(int(i))
			case reflect.Map:
				if !key.IsValid() || !key.Type().AssignableTo(item.Type().Key()) {
					return reflect.Value{}, fmt.Errorf("value has type %s; should be %s", valueType(key), item.Type().Key())
				}
				x := item.MapIndex(key)
				switch {
				case x.IsValid():
					item = x
				case strict:
					return reflect.Value{}, fmt.Errorf("map has no entry for key %q", fmt.Sprint(key.Interface()))
				default:
					return reflect.Zero(item.Type().Elem()), nil
				}
			default:
				return reflect.Value{}, fmt.Errorf("can't index item of type %s", item.Type())
			}
		}
		return item, nil
	}
}

// indirectValue is v, or what it holds when it is an interface.
func indirectValue(v reflect.Value) reflect.Value {
	if v.Kind() == reflect.Interface && !v.IsNil() {
		return v.Elem()
	}
	if v.Kind() == reflect.Interface {
		return reflect.Value{}
	}
	return v
}

func valueType(v reflect.Value) string {
	if !v.IsValid() {
		return "nil"
	}
	return v.Type().String()
}

// lenientConditions renames index to lenientIndex in the conditions of every if, with and
// range of tmpl's templates, where a key a map lacks is read as false.
func lenientConditions(tmpl *template.Template) {
	for _, t := range tmpl.Templates() {
		if t.Tree != nil {
			lenientIn(t.Tree.Root, false)
		}
	}
}

// lenientIn walks n, renaming index where cond (in the condition of a branch).
func lenientIn(n parse.Node, cond bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n != nil {
			for _, c := range n.Nodes {
				lenientIn(c, false)
			}
		}
	case *parse.ActionNode:
		lenientIn(n.Pipe, false)
	case *parse.IfNode:
		lenientBranch(&n.BranchNode)
	case *parse.WithNode:
		lenientBranch(&n.BranchNode)
	case *parse.RangeNode:
		lenientBranch(&n.BranchNode)
	case *parse.TemplateNode:
		lenientIn(n.Pipe, false)
	case *parse.PipeNode:
		if n != nil {
			for _, c := range n.Cmds {
				lenientIn(c, cond)
			}
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			lenientIn(a, cond)
		}
	case *parse.IdentifierNode:
		if cond && n.Ident == "index" {
			n.Ident = lenientIndex
		}
	case *parse.ChainNode:
		lenientIn(n.Node, cond)
	}
}

func lenientBranch(b *parse.BranchNode) {
	lenientIn(b.Pipe, true)
	lenientIn(b.List, false)
	lenientIn(b.ElseList, false)
}
