package cli

import (
	"errors"
	"fmt"
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
// one when arguments are indexed ([n]) and may be used again.
func printfSize(format string, args []any) int {
	verbs, pads := 0, 0
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
	return len(format) + pads + textGrowth*sum
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
