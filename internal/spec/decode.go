package spec

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// schema describes one kind of body. maps are string-map arguments, which HCL1 let people
// write as blocks (`secrets { k = "v" }`) and HCL2 as attributes (`secrets = { k = "v" }`):
// both are accepted in native syntax; JSON has only the attribute (object) form.
type schema struct {
	what   string // "a volume spec", "a capability block": used in messages
	attrs  []string
	blocks []blockSchema
	maps   []string
	// hints explain names that are not allowed here but mean something elsewhere.
	hints map[string]string

	once         sync.Once
	native, json *hcl.BodySchema
}

type blockSchema struct {
	name   string
	labels []string
}

// hclSchema returns the HCL schema for native syntax or JSON, built once.
func (s *schema) hclSchema(json bool) *hcl.BodySchema {
	s.once.Do(func() {
		s.native, s.json = s.build(false), s.build(true)
	})
	if json {
		return s.json
	}
	return s.native
}

func (s *schema) build(json bool) *hcl.BodySchema {
	hs := &hcl.BodySchema{}
	for _, a := range s.attrs {
		hs.Attributes = append(hs.Attributes, hcl.AttributeSchema{Name: a})
	}
	for _, m := range s.maps {
		hs.Attributes = append(hs.Attributes, hcl.AttributeSchema{Name: m})
	}
	for _, b := range s.blocks {
		hs.Blocks = append(hs.Blocks, hcl.BlockHeaderSchema{Type: b.name, LabelNames: b.labels})
	}
	if !json {
		for _, m := range s.maps {
			hs.Blocks = append(hs.Blocks, hcl.BlockHeaderSchema{Type: m})
		}
	}
	return hs
}

func (s *schema) isAttr(name string) bool {
	for _, a := range s.attrs {
		if a == name {
			return true
		}
	}
	return s.isMap(name)
}

func (s *schema) isBlock(name string) bool {
	for _, b := range s.blocks {
		if b.name == name {
			return true
		}
	}
	return false
}

func (s *schema) isMap(name string) bool {
	for _, m := range s.maps {
		if m == name {
			return true
		}
	}
	return false
}

func (s *schema) names() []string {
	out := append([]string(nil), s.attrs...)
	out = append(out, s.maps...)
	for _, b := range s.blocks {
		out = append(out, b.name)
	}
	return out
}

// decoder collects diagnostics while a body is turned into a typed spec. It never stops at
// the first problem: validation reports everything it finds at once.
type decoder struct {
	json  bool
	diags hcl.Diagnostics
	// src is what the body's ranges index (the file, or its HCL1 rewrite): number literals
	// are read as written from it (nomadscalar.go). Nil: values only.
	src []byte
	// lits are the number literals the HCL1 rewrite changed, by offset in src, as written.
	lits map[int]numberLit
	// hcl1 is set while a volume spec is decoded: Nomad reads it with HCL1, which refuses
	// what HCL2 reads as an expression on a number (spacedSign).
	hcl1 bool
}

// at is where a diagnostic about block b as a whole points: its definition, but for a JSON
// block given as an item of a list ("capability": [{...}, {...}]), whose DefRange is the
// list's "[" for every item, the item's own closing brace (its body's MissingItemRange):
// before, the second capability's missing argument was named on the first one's line
// (TestJSONBlockInAListIsNamedWhereItIs).
func (d *decoder) at(b *hcl.Block) hcl.Range {
	if d.json && b.DefRange.Start.Byte < len(d.src) && d.src[b.DefRange.Start.Byte] == '[' {
		return b.Body.MissingItemRange()
	}
	return b.DefRange
}

// errorf and warnf report a diagnostic whose detail is format with args. A string argument
// quoted with %q is a value from the spec, by this package's habit: it is shown as shown
// shows it; one formatted otherwise (%s: a detail built before, a list of valid names) whole.
func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	d.add(hcl.DiagError, rng, summary, fmt.Sprintf(format, shownArgs(args)...))
}

func (d *decoder) warnf(rng hcl.Range, summary, format string, args ...any) {
	d.add(hcl.DiagWarning, rng, summary, fmt.Sprintf(format, shownArgs(args)...))
}

func shownArgs(args []any) []any {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = shown(s)
		}
	}
	return args
}

// detailValueMax is how many characters of a value from the spec a diagnostic's detail
// quotes: the source line under it is cut around the value (diagnostics.go, snippet), and a
// detail must not carry a megabyte value in full either.
const detailValueMax = 200

// shown is s as a diagnostic's detail quotes it: with %q, past detailValueMax characters, its
// start quoted, cutMark and its size ("LLL"... (524288 bytes)), the mark outside the quotes
// so that it does not read as part of the value; with any other verb, s whole.
func shown(s string) any {
	if _, cut := head([]byte(s), detailValueMax); cut != "" {
		return longValue(s)
	}
	return s
}

type longValue string

func (v longValue) Format(f fmt.State, verb rune) {
	if verb != 'q' {
		fmt.Fprintf(f, fmt.FormatString(f, verb), string(v))
		return
	}
	h, _ := head([]byte(v), detailValueMax)
	q := strconv.Quote(string(h))
	if f.Flag('+') {
		q = strconv.QuoteToASCII(string(h))
	}
	fmt.Fprintf(f, "%s%s (%d bytes)", q, cutMark, len(v))
}

// checkID reports s, an identifier of the kind what that names something that may be stored
// already (a volume's plugin_id, a group volume's source), as an error summary at rng when
// ValidateID refuses it, and says whether it is valid.
func (d *decoder) checkID(rng hcl.Range, what, summary, s string) bool {
	return d.reportID(rng, summary, ValidateID(what, s))
}

// checkNewID is checkID for an ID the spec makes (a volume's id and namespace, a plugin, a
// group and its allocs), by ValidateNewID's rules.
func (d *decoder) checkNewID(rng hcl.Range, what, summary, s string) bool {
	return d.reportID(rng, summary, ValidateNewID(what, s))
}

// checkNamespace is checkID for a volume's namespace, by ValidateNamespace's rules.
func (d *decoder) checkNamespace(rng hcl.Range, _, summary, s string) bool {
	return d.reportID(rng, summary, ValidateNamespace(s))
}

func (d *decoder) reportID(rng hcl.Range, summary string, err error) bool {
	if err != nil {
		d.errorf(rng, summary, "%s.", err)
		return false
	}
	return true
}

func (d *decoder) add(severity hcl.DiagnosticSeverity, rng hcl.Range, summary, detail string) {
	d.diags = append(d.diags, &hcl.Diagnostic{Severity: severity, Summary: summary, Detail: detail, Subject: rng.Ptr()})
}

// content decodes body against s and reports every name s does not know, with the nearest
// valid name as a suggestion. (HCL's own Content does this too, but in map order and with the
// first close name rather than the nearest, which makes output unstable.)
func (d *decoder) content(body hcl.Body, s *schema) *hcl.BodyContent {
	c, remain, diags := body.PartialContent(s.hclSchema(d.json))
	d.diags = append(d.diags, diags...)
	if sb, ok := body.(*hclsyntax.Body); ok {
		attrs := make([]*hclsyntax.Attribute, 0, len(sb.Attributes))
		for _, a := range sb.Attributes {
			attrs = append(attrs, a)
		}
		sort.Slice(attrs, func(i, j int) bool { return attrs[i].NameRange.Start.Byte < attrs[j].NameRange.Start.Byte })
		for _, a := range attrs {
			if !s.isAttr(a.Name) {
				d.unknown(s, a.Name, a.NameRange, false)
			}
		}
		for _, b := range sb.Blocks {
			if !s.isBlock(b.Type) && !s.isMap(b.Type) {
				d.unknown(s, b.Type, b.TypeRange, true)
			}
		}
		return c
	}
	// JSON: whatever PartialContent left over is unknown.
	attrs, _ := remain.JustAttributes()
	left := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		left = append(left, a)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].NameRange.Start.Byte < left[j].NameRange.Start.Byte })
	for _, a := range left {
		d.unknown(s, a.Name, a.NameRange, false)
	}
	return c
}

func (d *decoder) unknown(s *schema, name string, rng hcl.Range, block bool) {
	summary, detail := "Unsupported argument", fmt.Sprintf("An argument named %q is not expected in %s.", name, s.what)
	if block {
		summary, detail = "Unsupported block type", fmt.Sprintf("Blocks of type %q are not expected in %s.", name, s.what)
	}
	switch {
	case s.hints[name] != "":
		detail += " " + s.hints[name]
	case block && templateBlocks[name] != "":
		detail += " " + templateBlocks[name]
	case block && s.isAttr(name):
		detail += fmt.Sprintf(" %s is an argument: write %s = ...", name, name)
	case !block && s.isBlock(name) && !d.json:
		detail += fmt.Sprintf(" %s is a block: write %s { ... }", name, name)
	default:
		if sug := suggest(name, s.names()); sug != "" {
			detail += fmt.Sprintf(" Did you mean %q?", sug)
		}
	}
	d.errorf(rng, summary, "%s", detail)
}

// templateBlocks are the blocks of HCL's templating languages (Terraform's, a jobspec's
// HCL2) that a spec, read as Nomad reads it, has none of: they were refused as any unknown
// block ("Blocks of type "dynamic" are not expected"), leaving the writer to guess why
// (TestTemplateBlocksSayToWriteTheValuesOut).
var templateBlocks = map[string]string{
	"dynamic":  "Specs are not templates (nor are Nomad's volume specs): write each block it would make out in full.",
	"locals":   "Specs are not templates (nor are Nomad's volume specs): write each value out where it is used.",
	"variable": "Specs are not templates (nor are Nomad's volume specs): write each value out where it is used.",
}

// Suggest is the validator's did-you-mean for callers outside the spec files (flags, kinds):
// the candidate nearest to given if it is near enough to be a likely typo, else "".
func Suggest[T ~string](given string, candidates []T) string {
	return suggest(given, joinable(candidates))
}

// suggest returns the candidate nearest to given, if it is near enough to be a likely typo.
func suggest(given string, candidates []string) string {
	for _, c := range candidates {
		if len(c) > len(given) && c[len(given)] == '_' && strings.HasPrefix(c, given) {
			return c // "plugin" for "plugin_id"
		}
	}
	// An edit distance is at least the difference in length (in runes, as levenshtein counts):
	// a candidate whose length differs by more than the limit cannot be suggested, and is not
	// compared. A name or value of 500 KB (a spec may hold one) costs a rune count, not
	// millions of steps per candidate.
	limit, n := max(2, len(given)/3), utf8.RuneCountInString(given)
	best, bestDist := "", -1
	for _, c := range candidates {
		if d := n - utf8.RuneCountInString(c); d > limit || -d > limit {
			continue
		}
		dist := levenshtein.Distance(given, c, nil)
		if bestDist < 0 || dist < bestDist {
			best, bestDist = c, dist
		}
	}
	if bestDist >= 0 && bestDist <= limit {
		return best
	}
	return ""
}

// value evaluates an attribute. No variables or functions exist in specs: HCL reports any use
// of them. A null value counts as unset.
func (d *decoder) value(attr *hcl.Attribute) (cty.Value, bool) {
	if lit, ok := attr.Expr.(*hclsyntax.LiteralValueExpr); ok && lit.Val.IsNull() && d.hcl1 {
		// HCL2's null, which volctl read as the argument left out (`id = null`: a volume with
		// no ID, valid; a capability's `access_mode = null`: the capability dropped), is a name
		// HCL1 does not know ("Unknown token: IDENT null"), in a block or not: Nomad refuses the
		// file (TestNullInAnHCLVolumeSpecIsRefused). Said here, once, where an argument's value
		// is read; a null as a map's value or a list's item is refused by its type.
		d.diags = append(d.diags, hcl1SyntaxError(attr.Expr.Range(), "null (a name it does not know: leave the argument out instead)"))
		return cty.NilVal, false
	}
	v, diags := d.eval(attr.Expr)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() || v.IsNull() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	if t := v.Type(); t.IsListType() || t.IsTupleType() || t.IsSetType() {
		d.normalFormList(attr.Name, attr.Expr)
	} else {
		d.normalForm(attr.Name, attr.Expr.Range())
	}
	return v, true
}

// literalHint says how to write template text as Nomad passes it: its HCL1 parser reads
// "${...}" and "%{...}" in a string as plain text (a plugin parameter such as csi-driver-nfs's
// subDir = "${pvc.metadata.name}" reaches the plugin as written).
const literalHint = `Specs are not templates: Nomad reads "${...}" and "%{...}" in a string as plain text, ` +
	`and so does volctl when they are escaped: write "$\u007b" for "${" and "%\u007b" for "%{", which both read alike ` +
	`(HCL2's "$${" is read as "${" here, but Nomad sends it as written).`

// eval evaluates expr with no variables or functions. A native-syntax string that interpolates
// or has a directive is refused even when it needs no variable ("${1+1}", "%{if true}a%{endif}"):
// evaluated, it would send a plugin other text than Nomad sends for the same spec. JSON
// strings are literal already (evaluated without a context, HCL does not read them as templates).
//
// An expression holding a template is refused without being evaluated: its value is never
// used, and a template's for directives nested three deep over lists of 100 built a string of
// 50 MB before it was refused (a level more, 5 GB). What evaluating it would have refused
// first (a variable, a function call) is found in its syntax.
func eval(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	rng, ok := templateIn(expr)
	if !ok {
		return value(expr)
	}
	if diags := notEvaluable(expr); diags.HasErrors() {
		for _, diag := range diags {
			diag.Detail += " " + literalHint
		}
		return cty.NilVal, diags
	}
	return cty.NilVal, hcl.Diagnostics{&hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Interpolation not allowed",
		Detail:   "volctl does not evaluate a template in a spec. " + literalHint,
		Subject:  rng.Ptr(),
	}}
}

// eval is eval, refusing first what the file's reader refuses before any value: in a volume
// spec, a number's sign apart from its digits (spacedSign) and what HCL1 has no syntax for
// (hcl1Syntax: operators, conditionals, ..., ":" in an object).
func (d *decoder) eval(expr hcl.Expression) (cty.Value, hcl.Diagnostics) {
	if d.hcl1 {
		if rng, ok := spacedSign(expr); ok {
			return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid number", Subject: rng.Ptr(),
				Detail: "Nomad reads volume specs with HCL1, which takes a - as a number's sign only directly before its digits, and refuses the file otherwise. Write the sign against the number (-5, not - 5)."}}
		}
		if diag := d.notHCL1(expr); diag != nil {
			return cty.NilVal, hcl.Diagnostics{diag}
		}
		if diag := d.heredocMarker(expr); diag != nil {
			return cty.NilVal, hcl.Diagnostics{diag}
		}
		v, diags := eval(expr)
		if diag := d.escapedTemplate(expr); diag != nil {
			diags = append(diags, diag)
		}
		if diags.HasErrors() {
			return v, diags
		}
		v, hdiags := d.heredoc(expr, v)
		return v, append(diags, hdiags...)
	}
	return eval(expr)
}

// notEvaluable is what evaluating a native-syntax expression without variables or functions
// refuses first, in HCL's words: each reference to a variable (not a for expression's own)
// and each function call.
func notEvaluable(expr hcl.Expression) hcl.Diagnostics {
	node, ok := expr.(hclsyntax.Expression)
	if !ok {
		return nil
	}
	var diags hcl.Diagnostics
	for _, tr := range hclsyntax.Variables(node) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Variables not allowed",
			Detail: "Variables may not be used here.", Subject: tr[0].SourceRange().Ptr()})
	}
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if call, ok := n.(*hclsyntax.FunctionCallExpr); ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Function calls not allowed",
				Detail: "Functions may not be called here.", Subject: call.Range().Ptr()})
		}
		return nil
	})
	return diags
}

// templateIn returns the first interpolation or directive in a native-syntax expression's
// strings and heredocs.
func templateIn(expr hcl.Expression) (hcl.Range, bool) {
	return firstIn(expr, func(n hclsyntax.Node) (hcl.Range, bool) {
		switch t := n.(type) {
		case *hclsyntax.TemplateWrapExpr, *hclsyntax.TemplateJoinExpr:
			return n.Range(), true
		case *hclsyntax.TemplateExpr:
			for _, p := range t.Parts {
				if _, lit := p.(*hclsyntax.LiteralValueExpr); !lit {
					return p.Range(), true
				}
			}
		}
		return hcl.Range{}, false
	})
}

// firstIn returns the range match returns for the first node of a native-syntax expression
// it matches.
func firstIn(expr hcl.Expression, match func(hclsyntax.Node) (hcl.Range, bool)) (hcl.Range, bool) {
	e, ok := expr.(hclsyntax.Expression)
	if !ok {
		return hcl.Range{}, false
	}
	// Most values are a literal or a quoted string without interpolation: ask match about them
	// in the order VisitAll would, without its walker (every attribute is asked this twice).
	switch t := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return match(t)
	case *hclsyntax.TemplateExpr:
		if literalParts(t) {
			if r, ok := match(t); ok {
				return r, true
			}
			for _, p := range t.Parts {
				if r, ok := match(p); ok {
					return r, true
				}
			}
			return hcl.Range{}, false
		}
	}
	var found *hcl.Range
	hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
		if found == nil {
			if r, ok := match(n); ok {
				found = &r
			}
		}
		return nil
	})
	if found == nil {
		return hcl.Range{}, false
	}
	return *found, true
}

// literalParts reports whether every part of a template is a literal: a quoted string
// without interpolation, whose only nodes are the template and its parts.
func literalParts(t *hclsyntax.TemplateExpr) bool {
	for _, p := range t.Parts {
		if _, lit := p.(*hclsyntax.LiteralValueExpr); !lit {
			return false
		}
	}
	return true
}

// str decodes a string attribute. Numbers and bools are accepted and converted, as Nomad's
// HCL1 decoding did (`uid = 1000` is "1000").
func (d *decoder) str(attr *hcl.Attribute) (string, bool) {
	return d.strOf(attr, func(_ hcl.Expression, v cty.Value) (string, bool) { return toString(v) })
}

// literalStr is str with a number kept as written (literalString).
func (d *decoder) literalStr(attr *hcl.Attribute) (string, bool) {
	return d.strOf(attr, func(expr hcl.Expression, v cty.Value) (string, bool) {
		return d.literalString(expr, v, "In mount_options,")
	})
}

// weakStr is str for a string field Nomad decodes weakly (id, name, external_id, ...): a
// number or bool becomes what Nomad makes of it (weakString: 0755 is "493", true is "1"), and
// one Nomad cannot read is refused.
func (d *decoder) weakStr(attr *hcl.Attribute) (string, bool) {
	if attr == nil {
		return "", false
	}
	v, ok := d.value(attr)
	if !ok {
		return "", false
	}
	s, err := d.weakString(attr.Expr, v)
	switch {
	case errors.Is(err, errNotString):
		d.errorf(attr.Expr.Range(), "Incorrect value type", "%s must be a string, not %s.", attr.Name, typeName(v))
		return "", false
	case err != nil:
		d.errorf(attr.Expr.Range(), "Invalid value", "%s: %s.", attr.Name, err.Error())
		return "", false
	}
	return s, true
}

func (d *decoder) strOf(attr *hcl.Attribute, conv func(hcl.Expression, cty.Value) (string, bool)) (string, bool) {
	if attr == nil {
		return "", false
	}
	v, ok := d.value(attr)
	if !ok {
		return "", false
	}
	if t, lit := d.numberLiteral(attr.Expr); lit && d.hcl1 && v.Type() == cty.Number && !d.readable(attr.Expr, attr.Name+":", t) {
		return "", false
	}
	s, ok := conv(attr.Expr, v)
	if !ok && v.Type() == cty.Number && d.hcl1 {
		return "", false // weakStr said why
	}
	if !ok {
		d.errorf(attr.Expr.Range(), "Incorrect value type", "%s must be a string, not %s.", attr.Name, typeName(v))
		return "", false
	}
	return s, true
}

// typeName is what v is, for an error saying it is not what was wanted: its type's name, or
// "null" for a null, which cty names by its type ("dynamic", for a null written as such).
func typeName(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return v.Type().FriendlyName()
}

// ownIfNull marks the error just added, which names v by typeName, as volctl's words alone
// (ownWords) when v is a null: a null secret or mount flag is masked in the snippet, and
// hideMasked scrubbed its text, "null", from the words too ("element 0 is [REDACTED]").
func (d *decoder) ownIfNull(v cty.Value) {
	if v.IsNull() {
		d.diags[len(d.diags)-1].Extra = ownWords{}
	}
}

func toString(v cty.Value) (string, bool) {
	// A whole number in int64 reads as strconv writes it; cty's conversion (big.Float's
	// shortest decimal of HCL's 512-bit numbers) makes the same string some 100 times slower:
	// 340,000 numbers in mount_flags took 13 s.
	if v.Type() == cty.Number && v.IsKnown() && !v.IsNull() {
		if f := v.AsBigFloat(); f.IsInt() {
			if i, acc := f.Int64(); acc == big.Exact && !(i == 0 && f.Signbit()) { // cty writes -0
				return strconv.FormatInt(i, 10), true
			}
		}
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil || sv.IsNull() {
		return "", false
	}
	return sv.AsString(), true
}

func (d *decoder) boolean(attr *hcl.Attribute) (bool, bool) {
	if attr == nil {
		return false, false
	}
	v, ok := d.value(attr)
	if !ok {
		return false, false
	}
	bv, err := convert.Convert(v, cty.Bool)
	if err != nil {
		d.errorf(attr.Expr.Range(), "Incorrect value type", "%s must be true or false, not %s.", attr.Name, typeName(v))
		return false, false
	}
	return bv.True(), true
}

// integer decodes a whole number from lo to hi; summary names what is wrong with one out of
// that range.
func (d *decoder) integer(attr *hcl.Attribute, lo, hi int, summary string) (int, bool) {
	if attr == nil {
		return 0, false
	}
	v, ok := d.value(attr)
	if !ok {
		return 0, false
	}
	nv, err := convert.Convert(v, cty.Number)
	if err != nil {
		d.errorf(attr.Expr.Range(), "Incorrect value type", "%s must be a whole number, not %s.", attr.Name, typeName(v))
		return 0, false
	}
	bf := nv.AsBigFloat()
	// The number as written when it is a literal; rounded to ten digits, a fraction past them
	// read as a whole number ("count must be a whole number, not 1.": TestGroupCountWithAFractionIsNamedAsWritten).
	shown, lit := d.numberLiteral(attr.Expr)
	if !lit {
		shown = bf.Text('g', 10)
	}
	if !bf.IsInt() {
		d.errorf(attr.Expr.Range(), "Invalid value", "%s must be a whole number, not %s.", attr.Name, shown)
		return 0, false
	}
	// A whole number still, past the range: say which bound, not that it is no whole number.
	switch {
	case bf.Cmp(big.NewFloat(float64(lo))) < 0:
		d.errorf(attr.Expr.Range(), summary, "%s must be at least %d, not %s.", attr.Name, lo, shown)
		return 0, false
	case bf.Cmp(big.NewFloat(float64(hi))) > 0:
		d.errorf(attr.Expr.Range(), summary, "%s must be at most %d, not %s.", attr.Name, hi, shown)
		return 0, false
	}
	i, _ := bf.Int64()
	return int(i), true
}

// strList decodes a list of strings.
func (d *decoder) strList(attr *hcl.Attribute) ([]string, bool) {
	if attr == nil {
		return nil, false
	}
	v, ok := d.value(attr)
	if !ok {
		return nil, false
	}
	t := v.Type()
	if !t.IsListType() && !t.IsTupleType() && !t.IsSetType() {
		d.errorf(attr.Expr.Range(), "Incorrect value type", "%s must be a list of strings, not %s.", attr.Name, t.FriendlyName())
		return nil, false
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		s, ok := toString(ev)
		if !ok {
			d.errorf(attr.Expr.Range(), "Incorrect value type", "%s must be a list of strings; element %d is %s.", attr.Name, len(out), typeName(ev))
			d.ownIfNull(ev)
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// stringMap is a decoded map argument with the source ranges validation messages point at.
type stringMap struct {
	name      string
	nameRange hcl.Range
	entries   []mapEntry
	keys      map[string]bool // the entries' keys: a map of 90,000 keys is checked for repeats in linear time
	looked    int             // keys looked up, for tests
	refused   bool            // written as something other than a map, and refused as such
}

type mapEntry struct {
	key, value           string
	keyRange, valueRange hcl.Range
}

func (m *stringMap) values() map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m.entries))
	for _, e := range m.entries {
		out[e.key] = e.value
	}
	return out
}

// stringMap decodes the map argument name from c, whether written as `name { k = "v" }`
// or `name = { k = "v" }`. It returns nil when the map is absent.
func (d *decoder) stringMap(c *hcl.BodyContent, name string) *stringMap {
	return d.stringMapOf(c, name, 0, func(_ hcl.Expression, v cty.Value) (string, error) {
		if s, ok := toString(v); ok {
			return s, nil
		}
		return "", errNotString
	})
}

// literalMap is stringMap for topology segments, which Nomad decodes straight into strings:
// a number is sent as written (zone = 01 is "01"), as a mount option is (literalString). A map
// of more than limit entries is refused before any is evaluated.
func (d *decoder) literalMap(c *hcl.BodyContent, name string, limit int) *stringMap {
	return d.stringMapOf(c, name, limit, func(expr hcl.Expression, v cty.Value) (string, error) {
		if s, ok := d.literalString(expr, v, "In "+name+","); ok {
			return s, nil
		}
		return "", errNotString
	})
}

// nomadMap is stringMap for parameters, secrets and context, whose numbers and bools become
// the strings Nomad makes of them (weakString).
func (d *decoder) nomadMap(c *hcl.BodyContent, name string) *stringMap {
	return d.stringMapOf(c, name, maxCSIMapEntries, d.weakString)
}

// stringMapOf is stringMap with each value made a string by conv. A map of more than limit
// entries (0: any number) is refused before any of them is evaluated.
func (d *decoder) stringMapOf(c *hcl.BodyContent, name string, limit int, conv func(hcl.Expression, cty.Value) (string, error)) *stringMap {
	var out *stringMap
	if attr := c.Attributes[name]; attr != nil {
		out = &stringMap{name: name, nameRange: attr.NameRange}
		if d.hcl1 {
			// Its values are evaluated one by one (mapValue): the object itself is checked here.
			if diag := d.notHCL1(attr.Expr); diag != nil {
				d.diags = append(d.diags, diag)
				out.refused = true
				return out
			}
		}
		pairs, diags := hcl.ExprMap(attr.Expr)
		if diags.HasErrors() {
			d.notAMap(name, attr.Expr)
			out.refused = true
			return out
		}
		if d.tooManyEntries(out, len(pairs), limit) {
			return out
		}
		for _, p := range pairs {
			kv, kdiags := eval(p.Key)
			d.diags = append(d.diags, kdiags...)
			if kdiags.HasErrors() {
				continue
			}
			key, ok := toString(kv)
			if !ok {
				d.errorf(p.Key.Range(), "Invalid map key", "Keys of %s must be strings.", name)
				continue
			}
			d.mapValue(out, key, p.Key.Range(), p.Value, conv)
		}
	}
	for _, b := range c.Blocks {
		if b.Type != name {
			continue
		}
		if out != nil {
			if name == "segments" {
				// Not merged by Nomad, as parameters and secrets are: each segments block is a
				// topology of its own to it, and "merge them" advised one topology requiring
				// them all, a narrower placement than the file meant
				// (TestValidateDuplicateSegmentsAdviceKeepsNomadsTopologies).
				d.errorf(b.TypeRange, "Duplicate segments", "segments is set more than once in one topology. Nomad makes each segments block a topology of its own "+
					"(two blocks, two topologies, either of which will do), not one topology with all their segments: for topologies of their own, "+
					"write a topology block for each; to require all the segments together, write them in one segments block.")
				continue
			}
			d.errorf(b.TypeRange, "Duplicate "+name, "%s is set more than once; merge them into one.", name)
			continue
		}
		out = &stringMap{name: name, nameRange: b.TypeRange}
		attrs, diags := b.Body.JustAttributes()
		d.diags = append(d.diags, diags...)
		if d.tooManyEntries(out, len(attrs), limit) {
			continue
		}
		sorted := make([]*hcl.Attribute, 0, len(attrs))
		for _, a := range attrs {
			sorted = append(sorted, a)
		}
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].NameRange.Start.Byte < sorted[j].NameRange.Start.Byte })
		for _, a := range sorted {
			if d.hcl1 && (a.Name == "true" || a.Name == "false") {
				d.diags = append(d.diags, hcl1SyntaxError(a.NameRange, "keys that are numbers or bools (HCL1 takes a name or a quoted string)"))
				continue
			}
			d.mapValue(out, a.Name, a.NameRange, a.Expr, conv)
		}
	}
	return out
}

// tooManyEntries refuses m, of n entries, when they are more than limit (0: any number).
func (d *decoder) tooManyEntries(m *stringMap, n, limit int) bool {
	if limit == 0 || n <= limit {
		return false
	}
	if limit == maxPluginMapEntries {
		d.errorf(m.nameRange, "Map too large", "%s has %d entries; volctl takes a plugin's map (a volume's context, a topology's segments) of up to %d bytes (16 KiB) of keys and values, "+
			"which hold at most %d entries (every key but one empty key a byte or more).", m.name, n, MaxPluginMap, limit)
	} else {
		d.errorf(m.nameRange, "Map too large", "%s has %d entries; the CSI spec limits a map to %d bytes (4 KiB) of keys and values, which hold at most %d entries (every key but one empty key a byte or more). "+
			"Pass the plugin fewer.", m.name, n, MaxCSIMap, limit)
	}
	m.refused = true
	return true
}

// notAMap is the error for a map's value written as something else: what to write, in the
// file's syntax, and, for a list of maps, which Nomad reads (HCL and JSON alike), what Nomad
// makes of it, which volctl does not guess at (checked with Nomad v2.0.6-dev,
// TestMapWrittenAsAList).
func (d *decoder) notAMap(name string, expr hcl.Expression) {
	like := fmt.Sprintf("%s = { key = \"value\" }", name)
	if d.json {
		like = fmt.Sprintf("\"%s\": {\"key\": \"value\"}", name)
	}
	if _, ok := expr.(*hclsyntax.ForExpr); ok {
		// A map it may well build: what is refused is the expression, each value of such a
		// map read as written (and masked so in a diagnostic, a secret's). Before, "must be a
		// map of strings" named a type the value had (TestMapBuiltByAForExpressionIsRefusedAsAnExpression).
		d.errorf(expr.Range(), "Map built by an expression", "%s is read as written, a map of its keys and values, like %s: a for expression that builds one is not evaluated here; write out its entries.", name, like)
		return
	}
	if !listOfMaps(expr) {
		d.errorf(expr.Range(), "Incorrect value type", "%s must be a map of strings, like %s.", name, like)
		return
	}
	nomad := "Nomad merges the maps of such a list into one"
	if name == "segments" {
		nomad = "Nomad makes each map of such a list a topology of its own (two maps, two topologies, either of which will do), " +
			"not one topology with all their segments; for topologies of their own, write a topology for each"
	}
	d.errorf(expr.Range(), "Map written as a list", "%s is one map of strings, not a list of maps: write %s. %s.", name, like, nomad)
}

// listOfMaps reports whether expr is a list whose items are all maps (objects).
func listOfMaps(expr hcl.Expression) bool {
	items, diags := hcl.ExprList(expr)
	if diags.HasErrors() || len(items) == 0 {
		return false
	}
	for _, item := range items {
		if _, diags := hcl.ExprMap(item); diags.HasErrors() {
			return false
		}
	}
	return true
}

func (d *decoder) mapValue(m *stringMap, key string, keyRange hcl.Range, expr hcl.Expression, conv func(hcl.Expression, cty.Value) (string, error)) {
	m.looked++
	if m.keys[key] {
		d.errorf(keyRange, "Duplicate map key", "%s has the key %q more than once.", m.name, key)
		return
	}
	v, diags := d.eval(expr)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return
	}
	s, err := conv(expr, v)
	if errors.Is(err, errNotString) {
		d.errorf(expr.Range(), "Incorrect value type", "The value of %s.%s must be a string, not %s.", m.name, key, typeName(v))
		d.ownIfNull(v)
		return
	}
	if err != nil {
		d.errorf(expr.Range(), "Invalid value", "The value of %s.%s: %s.", m.name, key, err.Error())
		return
	}
	if m.keys == nil {
		m.keys = map[string]bool{}
	}
	m.keys[key] = true
	d.keyNormalForm(m.name, key, keyRange)
	d.normalForm("The value of "+m.name+"."+key, expr.Range())
	m.entries = append(m.entries, mapEntry{key: key, value: s, keyRange: keyRange, valueRange: expr.Range()})
}

// blocksOf returns c's blocks of one type, in source order.
func blocksOf(c *hcl.BodyContent, typ string) []*hcl.Block {
	var out []*hcl.Block
	for _, b := range c.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// single returns the one block of a type, reporting any repeats.
func (d *decoder) single(c *hcl.BodyContent, typ, where string) *hcl.Block {
	bs := blocksOf(c, typ)
	for _, b := range bs[min(1, len(bs)):] {
		d.errorf(b.TypeRange, "Duplicate "+typ+" block", "Only one %s block is allowed in %s.", typ, where)
	}
	if len(bs) == 0 {
		return nil
	}
	return bs[0]
}

// missing reports a required argument that is absent from a body.
func (d *decoder) missing(rng hcl.Range, name, why string) {
	detail := fmt.Sprintf("The argument %q is required.", name)
	if why != "" {
		detail = why
	}
	d.errorf(rng, "Missing required argument", "%s", detail)
}

func joinStrings[T ~string](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = string(v)
	}
	return strings.Join(parts, ", ")
}
