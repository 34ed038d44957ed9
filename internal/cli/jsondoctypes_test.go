package cli

import (
	"encoding"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonFieldFacts is what one field path of a --json object is in Go: its type and whether
// encoding/json leaves it out when empty (omitempty, omitzero).
type jsonFieldFacts struct {
	typ  reflect.Type
	omit bool
}

// TestJSONDocTypesMatchOutput holds the type column of docs/json.md's field tables to the
// values the commands print: a field documented as a string is one (or marshals as one), an
// integer an integer, and a field documented without "or absent" is never left out of the
// object: one tagged omitempty disappears when empty (a bool when false, a count when 0), and a
// script reading it as documented (`.ready == false`, `.claims | length`) gets null instead.
// A cell naming several fields (`a`, `b`) gives each the type, or, listed as "string, integer",
// each its own in order.
func TestJSONDocTypesMatchOutput(t *testing.T) {
	sections := splitJSONDoc(readJSONDoc(t))
	for _, s := range jsonDocSections {
		body, ok := sections[s.heading]
		if !ok {
			continue // TestJSONDocMatchesOutput says so
		}
		facts := map[string]jsonFieldFacts{}
		fieldFacts(reflect.TypeOf(s.value), "", facts, map[reflect.Type]bool{})
		for i, rows := range docTypedRows(body) {
			if s.tables != nil && !slices.Contains(s.tables, i) {
				continue
			}
			for _, r := range rows {
				types := []string{r.typ}
				if parts := strings.Split(r.typ, ", "); len(parts) == len(r.fields) && len(parts) > 1 {
					types = parts
				}
				for j, field := range r.fields {
					f, ok := facts[field]
					if !ok {
						continue // a wildcard, or under a map or a type marshalling itself
					}
					doc := types[min(j, len(types)-1)]
					if want, got := docBaseType(doc), goJSONType(f.typ); !typesAgree(want, got) {
						t.Errorf("docs/json.md, %s: `%s` is documented as %q, but %s prints it as a JSON %s",
							s.heading, field, doc, reflect.TypeOf(s.value), got)
					}
					if f.omit && !strings.Contains(doc, "absent") {
						t.Errorf("docs/json.md, %s: `%s` is documented as %q, always there, but %s leaves it out when empty (omitempty): say \"or absent\", or print it always",
							s.heading, field, doc, reflect.TypeOf(s.value))
					}
				}
			}
		}
	}
}

// docTypedRow is one row of a field table: the fields its first cell names (paths without
// brackets, as docTables reads them) and its type cell.
type docTypedRow struct {
	fields []string
	typ    string
}

// docTypedRows is each field table of body, row by row.
func docTypedRows(body string) [][]docTypedRow {
	var tables [][]docTypedRow
	in := false
	for line := range strings.SplitSeq(body, "\n") {
		switch {
		case strings.HasPrefix(line, "| field |"):
			tables, in = append(tables, nil), true
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case !in || strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		row := docTypedRow{typ: strings.TrimSpace(cells[2])}
		prev := ""
		for _, m := range docFieldName.FindAllStringSubmatch(cells[1], -1) {
			name := strings.ReplaceAll(m[1], "[]", "")
			if strings.HasPrefix(name, ".") && prev != "" {
				name = prev[:strings.LastIndex(prev, ".")] + name
			}
			row.fields = append(row.fields, name)
			prev = name
		}
		tables[len(tables)-1] = append(tables[len(tables)-1], row)
	}
	return tables
}

// fieldFacts records the facts of every field path t prints, down to maps and types that
// marshal themselves (their insides are not fields).
func fieldFacts(t reflect.Type, prefix string, out map[string]jsonFieldFacts, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || marshalsItself(t) {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "" && f.Anonymous:
			fieldFacts(f.Type, prefix, out, seen)
			continue
		case name == "":
			name = f.Name
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		omit := false
		for o := range strings.SplitSeq(opts, ",") {
			// omitempty leaves out a struct never; omitzero one that is zero.
			omit = omit || o == "omitzero" || o == "omitempty" && f.Type.Kind() != reflect.Struct
		}
		out[p] = jsonFieldFacts{typ: f.Type, omit: omit}
		fieldFacts(f.Type, p, out, seen)
	}
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

func marshalsItself(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

// goJSONType is the JSON type t prints as: string, bool, integer, number, object or array;
// "any" for an interface. A type that marshals itself is asked, with its zero value.
func goJSONType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if marshalsItself(t) {
		b, err := json.Marshal(reflect.New(t).Interface())
		switch {
		case err != nil || len(b) == 0:
			return "any"
		case b[0] == '"':
			return "string"
		case b[0] == '{':
			return "object"
		case b[0] == '[':
			return "array"
		case b[0] == 't' || b[0] == 'f':
			return "bool"
		case b[0] == 'n':
			return "any"
		}
		return "number"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "any"
}

// docBaseType is the JSON type a type cell names first: "string or absent" is string,
// "array of strings" array, "string (RFC 3339)" string.
func docBaseType(cell string) string {
	word, _, _ := strings.Cut(strings.TrimSpace(cell), " ")
	return strings.TrimSuffix(word, ",")
}

// typesAgree: a documented number may be any number; an integer is an integer.
func typesAgree(doc, got string) bool {
	return doc == got || got == "any" || doc == "number" && got == "integer"
}

func readJSONDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}
