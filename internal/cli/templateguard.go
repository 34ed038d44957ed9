package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/template"
	"text/template/parse"
)

// A -t template loops in two ways only: a {{range}} (over a count as large as it likes, {{range
// 1000000000000}}) and a {{template}} calling one that calls it again. text/template can be
// stopped in neither but by a failed write, and it fails a call nested too deep only at 100,000
// calls: an error there unwinds through every {{range}} it is in, each catching the panic that
// carries it and throwing it again on top of the ones before, which takes time growing as the
// square of the depth (a recursion writing a byte a call, stopped by a bound at 10,000 deep,
// took 35 s of CPU to return, at 30,000 deep 8 minutes; a command whose template met the
// depth's own limit returned only at maxFilterTime, a core busy all the while, and the
// goroutine running it went on after, for hours, in a process that does not exit, the tests').
// So every template a -t holds is guarded as it is parsed: a call of enterTemplateFunc at the
// start of each (its {{define}}s, and the one its text makes) and of leaveTemplateFunc at its
// end keep the depth of calls, refused past maxTemplateDepth; and a call of rangeStepFunc at
// the start of every {{range}}'s body, and enterTemplateFunc too, end the template once its
// context has ended, so that one looping without writing stops with the command instead of
// running on.

// maxTemplateDepth bounds how deep a -t template's {{template}} calls nest (the template the
// text makes is 1). A volctl object nests a few levels: a template walking it calls itself
// once a level.
const maxTemplateDepth = 100

// The functions the guard calls. They are added to a template after its text is parsed, so a
// template that names one fails to parse (`function "volctlLeaveTemplate" not defined`): a
// template cannot leave more calls than it entered, and dodge the bound.
const (
	enterTemplateFunc = "volctlEnterTemplate"
	leaveTemplateFunc = "volctlLeaveTemplate"
	rangeStepFunc     = "volctlRangeStep"
)

// errTemplateDepth is a template stopped for calling templates deeper than maxTemplateDepth.
var errTemplateDepth = fmt.Errorf("stopped: it called templates more than %d deep ({{template}} within {{template}}), deeper than any volctl object nests (a template that calls itself without end?); nothing is printed", maxTemplateDepth)

// templateDepthError is errTemplateDepth naming the template whose call went past the bound.
type templateDepthError struct{ name string }

func (e templateDepthError) Error() string {
	return fmt.Sprintf("template %q: %v", e.name, errTemplateDepth)
}

func (e templateDepthError) Unwrap() error { return errTemplateDepth }

// guardTemplate guards every template tmpl holds (see above). It is done once, as -t is
// parsed: guardedRun binds the functions to one run.
func guardTemplate(tmpl *template.Template) error {
	// Not a guard: a run outside guardedRun (a test's, comparing with text/template's own) is
	// not bounded, and shares no depth with another.
	unbound := template.FuncMap{
		enterTemplateFunc: func(string) string { return "" },
		leaveTemplateFunc: func() string { return "" },
		rangeStepFunc:     func() string { return "" },
	}
	step, err := guardNode(unbound, rangeStepFunc)
	if err != nil {
		return err
	}
	leave, err := guardNode(unbound, leaveTemplateFunc)
	if err != nil {
		return err
	}
	for _, t := range tmpl.Templates() {
		if t.Tree == nil || t.Tree.Root == nil {
			continue
		}
		enter, err := guardNode(unbound, enterTemplateFunc+" "+strconv.Quote(t.Name()))
		if err != nil {
			return err
		}
		guardRanges(t.Tree.Root, step)
		root := t.Tree.Root
		root.Nodes = append(append([]parse.Node{enter}, root.Nodes...), leave)
	}
	tmpl.Funcs(unbound)
	return nil
}

// guardNode is the action {{call}}, parsed with funcs.
func guardNode(funcs template.FuncMap, call string) (parse.Node, error) {
	t, err := template.New("volctl guard").Funcs(funcs).Parse("{{" + call + "}}")
	if err != nil {
		return nil, err
	}
	if t.Tree == nil || len(t.Tree.Root.Nodes) != 1 {
		return nil, errors.New("the template guard " + call + " did not parse as one action")
	}
	return t.Tree.Root.Nodes[0], nil
}

// guardRanges puts step at the start of the body of every {{range}} under n.
func guardRanges(n parse.Node, step parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			guardRanges(c, step)
		}
	case *parse.IfNode:
		guardRanges(n.List, step)
		guardRanges(n.ElseList, step)
	case *parse.WithNode:
		guardRanges(n.List, step)
		guardRanges(n.ElseList, step)
	case *parse.RangeNode:
		guardRanges(n.List, step)
		guardRanges(n.ElseList, step)
		if n.List != nil {
			n.List.Nodes = append([]parse.Node{step}, n.List.Nodes...)
		}
	}
}

// templateGuard is one run's depth of calls and its context.
type templateGuard struct {
	ctx   context.Context
	depth int
}

func (g *templateGuard) funcs() template.FuncMap {
	return template.FuncMap{
		enterTemplateFunc: func(name string) (string, error) {
			if err := g.ctx.Err(); err != nil {
				return "", err
			}
			if g.depth++; g.depth > maxTemplateDepth {
				return "", templateDepthError{name}
			}
			return "", nil
		},
		leaveTemplateFunc: func() string { g.depth--; return "" },
		rangeStepFunc: func() (string, error) {
			return "", g.ctx.Err()
		},
	}
}

// guardedRun is tmpl (guarded by guardTemplate) with its guard bound to one run, ended by
// ctx: a clone, whose functions are its own.
func guardedRun(ctx context.Context, tmpl *template.Template) (*template.Template, error) {
	run, err := tmpl.Clone()
	if err != nil {
		return nil, err
	}
	return run.Funcs((&templateGuard{ctx: ctx}).funcs()), nil
}
