package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"unicode/utf8"
)

// newTemplate is the -t template before its text: its name, option and functions.
func newTemplate() *template.Template {
	return template.New("output").Option("missingkey=error").Funcs(textFuncs).Funcs(templateFuncs).Funcs(indexFuncs).Funcs(compareFuncs)
}

// templateParseErrorBudget bounds the bytes templateParseError parses again to find where an
// error is (text/template parses some MB a second): past it (a template of megabytes), the
// error keeps text/template's line alone.
const templateParseErrorBudget = 1 << 20

// templateParseError places text/template's parse error in the template, as jqParseError does
// gojq's: text/template says the line alone ("template: output:1: bad character U+007D '}'"),
// and a line of a template holds several actions, often alike (TestTemplateParseErrorSaysWhere).
// A string, raw string, comment or action left open is found by scanning the template
// (templateActions). Any other error is in one action: the parser stops at the first error, so
// the template cut after that action fails the same way and cut after any action before it
// does not (bisection over the actions' ends); within the action, the shortest cut that fails
// the same way ends at the token the parser stopped at. The column is the token's first
// character: the token the error quotes ("nope" of `function "nope" not defined`), else the
// action's "{{" when it ends at the action's "}}" (`{{end}}` where no block is open, `{{if}}`
// missing its value), else the character itself (a bad "}" in `{{.name}`). A template that ends
// with a block open ("unexpected EOF") ends at its end: the error says so, and which {{if}},
// {{range}} or {{with}} has no {{end}}.
func templateParseError(s string, err error) error {
	msg := err.Error()
	// text/template adds the line of the action a multi-line one began on, in its own words
	// ("unclosed action started at output:1"): the place said below is the exact one.
	what, line, ok := readParseError(msg)
	if !ok {
		return err
	}
	if what == "unexpected EOF" {
		return fmt.Errorf("template: unexpected EOF at the end of the template%s", openBlock(s))
	}
	// A place on another line than text/template's is a misreading of the template: it is
	// never said (the scan falls back to bisection, bisection to text/template's own line).
	onLine := func(at int) bool { return strings.Count(s[:at], "\n")+1 == line }
	ends, open := templateActions(s)
	if open.what != "" && strings.HasPrefix(what, open.what) && onLine(open.at) {
		return fmt.Errorf("template: %s %s", what, templatePlace(s, open.at))
	}
	fails := func(k int) bool {
		_, err := newTemplate().Parse(s[:k])
		return err != nil && err.Error() == msg
	}
	spent := 0
	i, _ := slices.BinarySearchFunc(ends, 0, func(e, _ int) int {
		if spent += e; spent <= templateParseErrorBudget && fails(e) {
			return 1
		}
		return -1
	})
	if i == len(ends) || spent > templateParseErrorBudget {
		return err
	}
	from := 0
	if i > 0 {
		from = ends[i-1]
	}
	// Cut after each character as the lexer reads them: a byte of invalid UTF-8 is one (the
	// number "08" of "{{08\x89" ends before it).
	for k := from; k < ends[i]; {
		_, size := utf8.DecodeRuneInString(s[k:])
		k += size
		if spent += k; spent > templateParseErrorBudget {
			return err
		}
		if fails(k) {
			if at := tokenStart(s[from:k], what) + from; onLine(at) {
				return fmt.Errorf("template: %s %s", what, templatePlace(s, at))
			}
			return err
		}
	}
	return err
}

// readParseError reads text/template's parse error msg ("template: output:2: unterminated
// quoted string in action started at output:1"): what it says without the line an action of
// several lines began on, and the line it is on: its "output:N", or for an action left open
// the line it started on, where templateParseError places it.
func readParseError(msg string) (what string, line int, ok bool) {
	m := parseErrorWords().FindStringSubmatch(msg)
	if m == nil {
		return "", 0, false
	}
	n := m[1]
	if m[2] == "unclosed action" && m[3] != "" {
		n = m[3]
	}
	line, err := strconv.Atoi(n)
	return m[2], line, err == nil
}

// parseErrorWords reads text/template's parse error: its line, what it says, and the line an
// action of several lines began on.
var parseErrorWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)^template: output:(\d+): (.*?)(?: (?:in action )?started at output:(\d+))?$`)
})

// openPart is a string, raw string, character constant, comment or action a template leaves
// open: what text/template's error says of it, and where it begins.
type openPart struct {
	what string
	at   int
}

// templateActions scans s as text/template's lexer does, as far as where each action ends:
// the offsets just past each action's "}}" (and len(s) past the last), and what s leaves
// open. A string or character constant ends at its line's end, where the lexer stops, and a
// backslash escapes no newline: the lexer stops there too; "{{-" and any space (a tab, a
// newline) before "/*" opens a comment.
func templateActions(s string) (ends []int, open openPart) {
	for i := 0; i < len(s); {
		start := strings.Index(s[i:], "{{")
		if start < 0 {
			break
		}
		start += i
		j := start + 2
		comment := j
		if len(s) >= j+2 && s[j] == '-' && isTemplateSpace(s[j+1]) { // the lexer's trim marker
			comment += 2
		}
		if strings.HasPrefix(s[comment:], "/*") {
			c := strings.Index(s[comment+2:], "*/")
			if c < 0 {
				return append(ends, len(s)), openPart{"unclosed comment", comment}
			}
			j = comment + 2 + c + 2
		}
		for j < len(s) && !strings.HasPrefix(s[j:], "}}") {
			quote := s[j]
			var kind string
			switch quote {
			case '"':
				kind = "unterminated quoted string"
			case '`':
				kind = "unterminated raw quoted string"
			case '\'':
				kind = "unterminated character constant"
			default:
				j++
				continue
			}
			k := j + 1
			for ; k < len(s) && s[k] != quote; k++ {
				if quote != '`' && (s[k] == '\n' || s[k] == '\\' && k+1 < len(s) && s[k+1] == '\n') {
					break // a backslash escapes no newline
				}
				if quote != '`' && s[k] == '\\' {
					k++
				}
			}
			if k >= len(s) || s[k] != quote {
				return append(ends, len(s)), openPart{kind, j}
			}
			j = k + 1
		}
		if j >= len(s) {
			return append(ends, len(s)), openPart{"unclosed action", start}
		}
		i = j + 2
		ends = append(ends, i)
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(s) {
		ends = append(ends, len(s))
	}
	return ends, openPart{}
}

// isTemplateSpace is the lexer's space (its isSpace): the trim marker "- " may have any.
func isTemplateSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// quotedInError is what a text/template error quotes: a %q string, a <keyword>, {{end}},
// {{else}} or a character constant as written ("malformed character constant: 'ab'").
var quotedInError = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`"(?:[^"\\]|\\.)*"|<[^<>]+>|\{\{(?:end|else)\}\}|constant: '(?:[^'\\]|\\.)*'`)
})

// tokenLookahead is how many bytes text/template's lexer reads past a token before the parser
// refuses it ("." of `{{ .name. }}` is refused once the space after it is read): the token the
// error quotes ends that far before the end of the shortest cut that fails, or less.
const tokenLookahead = 2

// tokenStart is where the token that ends prefix, or ends up to tokenLookahead bytes before
// its end, begins (templateParseError).
func tokenStart(prefix, what string) int {
	quoted := quotedInError().FindAllString(what, -1)
	for back := 0; back <= min(tokenLookahead, len(prefix)); back++ {
		for _, q := range quoted {
			tok := strings.TrimPrefix(q, "constant: ")
			if strings.HasPrefix(q, `"`) {
				if u, err := strconv.Unquote(q); err == nil {
					tok = u
				}
			} else if strings.HasPrefix(q, "<") {
				tok = q[1 : len(q)-1]
			}
			if tok != "" && strings.HasSuffix(prefix[:len(prefix)-back], tok) {
				return len(prefix) - back - len(tok)
			}
		}
	}
	// A token the error quotes cut short ("\"000000000"...: text/template quotes at most ten
	// characters of one) is not the end of the cut: its last place in the cut is where it
	// begins. Before, the last character read was named (FuzzTemplateParse, testdata
	// 16cca23e0bdb67d5).
	for _, q := range quoted {
		if !strings.HasPrefix(q, `"`) || !strings.Contains(what, q+"...") {
			continue
		}
		if tok, err := strconv.Unquote(q); err == nil && tok != "" {
			if at := strings.LastIndex(prefix, tok); at >= 0 {
				return at
			}
		}
	}
	// {{else}} or {{end}} quoted of an action that is not that whole (`{{else if` cut before
	// its "}}", `{{- end`): the action's "{{". Before, the last character read was named
	// (FuzzTemplateParse, testdata "{{else if").
	for _, q := range quoted {
		if q != "{{else}}" && q != "{{end}}" {
			continue
		}
		if at := strings.LastIndex(prefix, "{{"); at >= 0 {
			rest := strings.TrimPrefix(prefix[at+2:], "-")
			if strings.HasPrefix(strings.TrimLeft(rest, " \t\r\n"), q[2:len(q)-2]) {
				return at
			}
		}
	}
	if strings.HasSuffix(prefix, "}}") {
		if at := strings.LastIndex(prefix[:len(prefix)-2], "{{"); at >= 0 {
			return at
		}
	}
	if strings.HasSuffix(prefix, "{{") {
		return len(prefix) - 2
	}
	_, size := utf8.DecodeLastRuneInString(prefix)
	return len(prefix) - size
}

// templatePlace says where byte at of s is: "at column C", or "at line L, column C" in a
// template of several lines; columns count characters, as jqParseError's do.
func templatePlace(s string, at int) string {
	lineStart := strings.LastIndexByte(s[:at], '\n') + 1
	col := utf8.RuneCountInString(s[lineStart:at]) + 1
	if !strings.Contains(s, "\n") {
		return fmt.Sprintf("at column %d", col)
	}
	return fmt.Sprintf("at line %d, column %d", strings.Count(s[:at], "\n")+1, col)
}

// openBlockMark is an action openBlock adds to find the block a template leaves open.
const openBlockMark = "{{`\x00open block`}}"

// openBlock names the outermost {{if}}, {{range}} or {{with}} s leaves without its {{end}}, or
// "": s is parsed again with as many {{end}}s as it lacks, the mark before the last, and the
// block is the template's last node when the mark is in it (a {{define}} left open is not one).
func openBlock(s string) string {
	const most = 16 // {{end}}s to try
	if len(s) > templateParseErrorBudget/most {
		return ""
	}
	for n := 1; n <= most; n++ {
		t, err := newTemplate().Parse(s + strings.Repeat("{{end}}", n-1) + openBlockMark + "{{end}}")
		if err != nil {
			if strings.HasSuffix(err.Error(), ": unexpected EOF") {
				continue
			}
			return ""
		}
		nodes := t.Tree.Root.Nodes
		if len(nodes) == 0 || !holdsMark(nodes[len(nodes)-1]) {
			return ""
		}
		var keyword string
		switch nodes[len(nodes)-1].(type) {
		case *parse.IfNode:
			keyword = "{{if}}"
		case *parse.RangeNode:
			keyword = "{{range}}"
		case *parse.WithNode:
			keyword = "{{with}}"
		default:
			return ""
		}
		at := strings.LastIndex(s[:min(int(nodes[len(nodes)-1].Position()), len(s))], "{{")
		if at < 0 {
			return ""
		}
		return fmt.Sprintf(": the %s %s has no {{end}}", keyword, templatePlace(s, at))
	}
	return ""
}

// holdsMark reports whether n is or holds openBlock's mark.
func holdsMark(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		return n != nil && (len(n.Nodes) > 0 && holdsMark(n.Nodes[len(n.Nodes)-1]))
	case *parse.ActionNode:
		return n.String() == openBlockMark
	case *parse.IfNode:
		return holdsBranchMark(&n.BranchNode)
	case *parse.RangeNode:
		return holdsBranchMark(&n.BranchNode)
	case *parse.WithNode:
		return holdsBranchMark(&n.BranchNode)
	}
	return false
}

func holdsBranchMark(b *parse.BranchNode) bool {
	if b.ElseList != nil {
		return holdsMark(b.ElseList)
	}
	return holdsMark(b.List)
}

// execPlace reads the place text/template gives an error of a template's run, "template:
// output:LINE:COL: ...", COL counting bytes from 0 (`{{ .Foo }}` failing at ".Foo" said
// output:1:3).
var execPlace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^template: output:(\d+):(\d+): (.*)$`) })

// templateExecError says where in s the template run failed as templateParseError says where
// it did not parse: "at column C" (and line), C counting characters from 1, as --jq's errors
// and -t's parse errors do, where text/template counts bytes from 0 (TestTemplateRunErrorSaysWhere).
// An error of no place, or of a place not in s, is left as it is.
func templateExecError(s string, err error) error {
	m := execPlace().FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	line, lerr := strconv.Atoi(m[1])
	col, cerr := strconv.Atoi(m[2])
	if lerr != nil || cerr != nil || line < 1 {
		return err
	}
	at := 0
	for i := 1; i < line; i++ {
		nl := strings.IndexByte(s[at:], '\n')
		if nl < 0 {
			return err
		}
		at += nl + 1
	}
	if end := strings.IndexByte(s[at:], '\n'); col < 0 || at+col > len(s) || (end >= 0 && col > end) || !utf8.RuneStart(s[at+col]) {
		return err
	}
	return placedError{msg: "template: " + m[3] + " " + templatePlace(s, at+col), err: err}
}

// placedError is err said with its place in the template's own words.
type placedError struct {
	msg string
	err error
}

func (p placedError) Error() string { return p.msg }
func (p placedError) Unwrap() error { return p.err }
