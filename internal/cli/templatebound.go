package cli

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"text/template"
)

// A -t template can make text without printing it: a string doubled by printf in a range, or
// escaped again and again by js ({{range 40}}{{$x = printf "%s%s" $x $x}}{{end}} holds 1 TiB),
// and one printf of a long format makes gigabytes at once. The output's bound
// (maxFilterOutput) sees none of it, and the heap's (maxFilterHeap) cannot stop a step already
// allocating: so every function that makes text is held to maxFilterOutput before it runs, by
// what it could make of its arguments, and the heap's bound stops the rest (many such strings
// kept, one per call of a recursion).

// errTemplateText is a template function refused because its result could pass maxFilterOutput.
var errTemplateText error = &boundError{"it would make more than %d MiB of text, more than any volctl object needs (a template that builds a value without end?); nothing is printed", maxFilterOutput.Load}

// textGrowth is the most bytes fmt's verbs, html, js and urlquery make of one byte of their
// arguments (js's \u003C for <, %+q's \x80 for an invalid byte).
const textGrowth = 6

// fmtMaxWidth is the largest width or precision fmt takes; a larger one prints %!(BADWIDTH).
const fmtMaxWidth = 1_000_000

// textFuncs replace the template's builtins that make text (print, printf, println, html, js
// and urlquery) with ones that refuse, before doing any work, arguments that could make more
// than maxFilterOutput.
var textFuncs = template.FuncMap{
	"html":     escaper("html", template.HTMLEscaper),
	"js":       escaper("js", template.JSEscaper),
	"urlquery": escaper("urlquery", template.URLQueryEscaper),
	"print": func(args ...any) (string, error) {
		// Sprint puts a space between two operands when neither is a string.
		if err := checkText("print", argsSize(args)+len(args)); err != nil {
			return "", err
		}
		return fmt.Sprint(args...), nil
	},
	"println": func(args ...any) (string, error) {
		if err := checkText("println", argsSize(args)+len(args)+1); err != nil {
			return "", err
		}
		return fmt.Sprintln(args...), nil
	},
	"printf": func(format string, args ...any) (string, error) {
		if err := checkText("printf", printfSize(format, args)); err != nil {
			return "", err
		}
		return fmt.Sprintf(format, args...), nil
	},
}

// escaper is the builtin escaper f, refusing arguments it could make more than
// maxFilterOutput of.
func escaper(name string, f func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := checkText(name, textGrowth*argsSize(args)); err != nil {
			return "", err
		}
		return f(args...), nil
	}
}

// checkText is errTemplateText, naming the function, when size passes maxFilterOutput.
func checkText(name string, size int) error {
	if int64(size) > maxFilterOutput.Load() || size < 0 {
		return fmt.Errorf("%s: %w", name, errTemplateText)
	}
	return nil
}

// argSize is how long the text of a is: a string's length, or fmt's %v of anything else (the
// command's result, whose size its JSON bounds).
func argSize(a any) int {
	switch a := a.(type) {
	case string:
		return len(a)
	case []byte:
		return len(a)
	}
	return len(fmt.Sprint(a))
}

func argsSize(args []any) int {
	n := 0
	for _, a := range args {
		n += argSize(a)
	}
	return n
}

// printfSize is more than fmt.Sprintf(format, args...) can make: the format, each verb's width
// and precision, and each argument at textGrowth bytes a byte, every verb taking the largest
// one when arguments are indexed ([n]) and may be used again. fmt pads each element of a list
// or map, and each field of a struct, to a verb's width, so the widths count once per value
// in the argument that has the most (printfLeaves): counted once, `printf "%999999v" .` over
// a list was held to a megabyte, and made one per key and value, 140 GB over 10,000 events
// (TestTemplatePrintfWidthOverAListIsBounded).
func printfSize(format string, args []any) int {
	verbs, typed, pads := 0, 0, 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			continue
		}
		verbs++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		// A width, then a precision: digits, or * taking an argument.
		for part := 0; part < 2 && i < len(format); part++ {
			if part == 1 {
				if format[i] != '.' {
					break
				}
				i++
			}
			if i < len(format) && format[i] == '[' {
				for i < len(format) && format[i] != ']' {
					i++
				}
				i++
			}
			if i < len(format) && format[i] == '*' {
				pads += fmtMaxWidth
				i++
				continue
			}
			n := 0
			for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
				n = min(n*10+int(format[i]-'0'), fmtMaxWidth)
			}
			pads += n
		}
		if i < len(format) && format[i] == '[' {
			for i < len(format) && format[i] != ']' {
				i++
			}
			i++
		}
		if i < len(format) && format[i] != 'v' && format[i] != 'T' {
			typed++ // a verb some value may not fit: %!d(string=x)
		}
	}
	sum, largest := 0, 0
	for _, a := range args {
		n := argSize(a)
		sum += n
		largest = max(largest, n)
	}
	if strings.Contains(format, "[") {
		sum = max(sum, verbs*largest)
	}
	leaves := 1
	for _, a := range args {
		leaves = max(leaves, printfLeaves(reflect.ValueOf(a), 0))
	}
	// fmt's own words for a verb it cannot fill: "%!d(string=)" for each value of a list a
	// typed verb (any but %v and %T) does not fit, "%!v(MISSING)" for a verb with no
	// argument left (or a bad index), "%!(EXTRA string=…)" for an argument left over. Counted
	// as the format's few bytes, one printf of a format doubled by print made three times the
	// bound (TestTemplatePrintfErrorTextIsCountedInItsBound); counted for every verb and value,
	// an ordinary `printf "%d volumes: %v" (len .) .` over 10,000 volumes was refused.
	words := satAdd(satMul(typed, satMul(leaves, fmtErrorWords)), satMul(verbs, fmtMissingWords))
	if extra := len(args) - verbs; extra > 0 {
		words = satAdd(words, satMul(extra, fmtErrorWords))
	}
	return satAdd(satAdd(len(format), satMul(pads, leaves)), satAdd(words, satMul(textGrowth, sum)))
}

// fmtErrorWords is more than fmt writes around a value for a verb it cannot fill, the value
// aside: "%!" and the verb, its type's name (those of what a command's result decodes to:
// string, float64, map[string]interface {}), "=", "(", ")", or "(MISSING)", "(EXTRA ".
const fmtErrorWords = 64

// fmtMissingWords is more than fmt writes for a verb with no argument to fill it:
// "%!v(MISSING)", "%!(BADINDEX)", "%!(BADWIDTH)", "%!(NOVERB)".
const fmtMissingWords = 16

// satMul and satAdd are a*b and a+b of sizes (not negative), math.MaxInt where they would
// overflow: a size past any bound.
func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// printfLeaves is how many values fmt pads to a verb's width when it prints v (depth: how deep
// in the argument v is): one for a scalar, and for a list, map or struct those of each element,
// key, value or field. A pointer below the top is printed as its address, one value, as fmt
// does (so no cycle is followed); a []byte is one value.
func printfLeaves(v reflect.Value, depth int) int {
	switch v.Kind() {
	case reflect.Invalid:
		return 1
	case reflect.Interface:
		if v.IsNil() {
			return 1
		}
		return printfLeaves(v.Elem(), depth)
	case reflect.Pointer:
		if v.IsNil() || depth > 0 {
			return 1
		}
		return printfLeaves(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 1
		}
		n := 0
		for i := range v.Len() {
			n += printfLeaves(v.Index(i), depth+1)
		}
		return max(n, 1)
	case reflect.Map:
		n := 0
		for it := v.MapRange(); it.Next(); {
			n += printfLeaves(it.Key(), depth+1) + printfLeaves(it.Value(), depth+1)
		}
		return max(n, 1)
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += printfLeaves(v.Field(i), depth+1)
		}
		return max(n, 1)
	}
	return 1
}

// boundedJoin is the template's join, refusing a result that could pass maxFilterOutput.
func boundedJoin(sep string, v []any) (string, error) {
	if err := checkText("join", argsSize(v)+len(sep)*len(v)); err != nil {
		return "", err
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, sep), nil
}

// boundedCase is upper or lower, refusing a string whose result could pass maxFilterOutput
// (a letter may take more bytes in the other case: ɐ is 2, Ɐ 3).
func boundedCase(name string, f func(string) string) func(string) (string, error) {
	return func(s string) (string, error) {
		if err := checkText(name, 2*len(s)); err != nil {
			return "", err
		}
		return f(s), nil
	}
}

// isTemplateBound says whether err is a template stopped by one of the bounds on what it makes.
func isTemplateBound(err error) bool {
	return errors.Is(err, errFilterOutput) || errors.Is(err, errTemplateText)
}
