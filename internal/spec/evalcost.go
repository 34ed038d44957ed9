package spec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// MaxExprValues bounds the values one expression of a spec may build. A spec file is at most
// 1 MiB, but a for expression repeats its body once per element of its collection, so three
// nested over a list of 200 build 8,000,000 values from 2 KB of text, and four 1.6 billion:
// `volctl validate` (or an agent reading its config) ran for minutes and then took the host's
// memory. Nothing a CSI plugin is sent comes near the bound: mount flags and every map are
// limited to 4 KiB.
const MaxExprValues = 1 << 16

// exprValues is an upper bound on the values evaluating expr builds: each node of its syntax
// once, times, inside a for expression's key, value or condition, the length of the collection
// it iterates. Without variables and functions (eval gives none), no collection can be longer
// than the longest list or object written out in the expression, nor than its count of nodes,
// which bounds the length of one the bound cannot see (a reference to an iterator, an index).
// JSON expressions have no for expressions: their values are what the text holds.
func exprValues(expr hcl.Expression) int64 {
	node, ok := expr.(hclsyntax.Node)
	if !ok {
		return 0
	}
	// The walk visits a for expression's body twice: wrapped in a ChildScope (a value, no map
	// key), then itself.
	scope := func(n hclsyntax.Node) bool { _, ok := n.(hclsyntax.ChildScope); return ok }
	nodes := int64(0)
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if !scope(n) {
			nodes++
		}
		return nil
	})
	var length func(n hclsyntax.Node) int64
	length = func(n hclsyntax.Node) int64 {
		switch t := n.(type) {
		case *hclsyntax.TupleConsExpr:
			return int64(len(t.Exprs))
		case *hclsyntax.ObjectConsExpr:
			return int64(len(t.Items))
		case *hclsyntax.ForExpr:
			return length(t.CollExpr)
		case *hclsyntax.ParenthesesExpr:
			return length(t.Expression)
		}
		return nodes
	}
	// repeats maps each node inside a for expression's body to how many times it is
	// evaluated (a node absent from it, once).
	repeats := map[hclsyntax.Node]int64{}
	total := int64(0)
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if scope(n) {
			return nil
		}
		times, ok := repeats[n]
		if !ok {
			times = 1
		}
		total = satAdd(total, times)
		// A template's for directive is a ForExpr too (joined by a TemplateJoinExpr).
		f, ok := n.(*hclsyntax.ForExpr)
		if !ok {
			return nil
		}
		coll, body := f.CollExpr, []hclsyntax.Node{f.KeyExpr, f.ValExpr, f.CondExpr}
		// The walk enters a for expression before those nested in its body, which set
		// their own bodies' count after this one: the innermost count stands.
		each := satMul(times, length(coll))
		for _, b := range body {
			if b != nil {
				hclsyntax.VisitAll(b, func(c hclsyntax.Node) hcl.Diagnostics {
					if !scope(c) {
						repeats[c] = each
					}
					return nil
				})
			}
		}
		return nil
	})
	return total
}

// tooManyValues is the error for an expression past MaxExprValues, or nil.
func tooManyValues(expr hcl.Expression) *hcl.Diagnostic {
	n := exprValues(expr)
	if n <= MaxExprValues {
		return nil
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value too large to evaluate", Subject: expr.Range().Ptr(),
		Detail: fmt.Sprintf("This value would build up to %d values (a for expression builds its body once for each element it iterates); "+
			"volctl evaluates at most %d in one value of a spec. Write the values out, fewer of them.", n, MaxExprValues)}
}

// satAdd and satMul are + and * that stop at the largest int64 rather than wrap around:
// nested for expressions multiply past it from a few hundred bytes.
func satAdd(a, b int64) int64 {
	if a > 1<<62 || b > 1<<62 {
		return 1 << 62
	}
	return min(a+b, 1<<62)
}

func satMul(a, b int64) int64 {
	if a != 0 && b > (1<<62)/a {
		return 1 << 62
	}
	return a * b
}

// value evaluates expr, which must not be too costly to, without variables or functions.
func value(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	if diag := tooManyValues(expr); diag != nil {
		return cty.NilVal, hcl.Diagnostics{diag}
	}
	return expr.Value(nil)
}
