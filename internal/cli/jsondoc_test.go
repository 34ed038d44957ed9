package cli

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// jsonDocSection is one section of docs/json.md and the Go value its command prints. tables
// picks the section's field tables that document value (nil: all of them); a section without
// a table is checked by its example alone.
type jsonDocSection struct {
	heading string // the section's heading, as written after "## "
	value   any
	tables  []int
}

var jsonDocSections = []jsonDocSection{
	{"`volctl plugin probe --json`", pluginProbeResult{}, nil},
	{"`volctl validate --json`", spec.JSONDiagnostic{}, nil},
	{"`volctl volume snapshot create --json`", snapshotCreated{}, nil},
	{"`volctl volume snapshot list --json`", engine.SnapshotList{}, nil},
	{"`volctl volume expand --json`", engine.VolumeInfo{}, nil},
	{"`volctl plugin register --json` and `volctl plugin status --json`", engine.PluginInfo{}, nil},
	{"`volctl volume register --json` and `volctl volume create --json`", engine.VolumeInfo{}, nil},
	{"`volctl volume status --json`", engine.VolumeSummary{}, []int{0}},
	{"`volctl volume status --json`", engine.VolumeInfo{}, []int{0, 1}},
	{"`volctl volume claim --json`", engine.ClaimInfo{}, nil},
	{"`volctl volume release --json`", engine.ReleaseResult{}, nil},
	{"`volctl volume detach --json`", engine.DetachResult{}, nil},
	{"`volctl status --json`", statusSummary{}, nil},
	{"`volctl group run --json`, `volctl group status --json`, `volctl group stop --json`", engine.GroupInfo{}, nil},
	{"`volctl reconcile --json`", engine.ReconcileReport{}, nil},
	{"`volctl events --json`", engine.EventInfo{}, nil},
	{"`volctl agent --metrics-addr ADDR`: `GET /healthz`", agent.Status{}, nil},
	{"`volctl nomad status --json`", NomadVolumeStatus{}, nil},
	{"`volctl nomad register --json` (with `--dry-run`)", NomadRegisterPlan{}, nil},
}

// TestJSONDocMatchesOutput holds docs/json.md to the JSON the commands print: every field a
// section's table lists is one its value has, every field the value can print is listed (or
// lies under a listed object: `claims`, `handover`), and every key of its example is one the
// value has. Field paths are compared without array brackets: `snapshots[].id` is
// snapshots.id; `*` in a listed name (`range.*.line`) stands for any one name, and a name in
// the same cell starting with "." (`allocs[].name`, `.index`) continues the one before it.
func TestJSONDocMatchesOutput(t *testing.T) {
	doc, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := splitJSONDoc(string(doc))
	for _, s := range jsonDocSections {
		body, ok := sections[s.heading]
		if !ok {
			t.Errorf("docs/json.md has no section %q", s.heading)
			continue
		}
		emitted := map[string]bool{} // path -> opaque (a map, or a type with its own MarshalJSON)
		typePaths(reflect.TypeOf(s.value), "", emitted, map[reflect.Type]bool{})
		name := reflect.TypeOf(s.value).String()

		tables := docTables(body)
		var listed []string
		for i, tb := range tables {
			if s.tables == nil || slices.Contains(s.tables, i) {
				listed = append(listed, tb...)
			}
		}
		for _, l := range listed {
			if !anyPath(emitted, func(p string) bool { return pathMatches(l, p) }) {
				t.Errorf("docs/json.md, %s: field `%s` is listed, but %s prints no such field", s.heading, l, name)
			}
		}
		if len(tables) > 0 {
			for p := range emitted {
				if !listedPath(listed, emitted, p) {
					t.Errorf("docs/json.md, %s: %s prints field `%s`, which its table does not list", s.heading, name, p)
				}
			}
		}
		for _, ex := range docExamples(body) {
			for _, p := range ex {
				_, has := emitted[p]
				// Under a map (segments, parameters, context) the keys are data.
				if !has && !anyPath(emitted, func(e string) bool { return emitted[e] && strings.HasPrefix(p, e+".") }) {
					t.Errorf("docs/json.md, %s: the example has field `%s`, which %s does not print", s.heading, p, name)
				}
			}
		}
	}
}

// splitJSONDoc is docs/json.md's "## " sections by heading.
func splitJSONDoc(doc string) map[string]string {
	out := map[string]string{}
	parts := strings.Split(doc, "\n## ")
	for _, p := range parts[1:] {
		heading, body, _ := strings.Cut(p, "\n")
		out[heading] += body
	}
	return out
}

var docFieldName = regexp.MustCompile("`([^`]+)`")

// docTables is the field names each `| field | type | meaning |` table of body lists, as paths
// without brackets.
func docTables(body string) [][]string {
	var tables [][]string
	for _, rows := range docTypedRows(body) {
		var names []string
		for _, r := range rows {
			names = append(names, r.fields...)
		}
		tables = append(tables, names)
	}
	return tables
}

// docExamples is the field paths of each ```json example of body: keys of objects, under arrays
// without brackets; "..." stands for fields left out.
func docExamples(body string) [][]string {
	var out [][]string
	for _, block := range strings.Split(body, "```json\n")[1:] {
		text, _, _ := strings.Cut(block, "```")
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			out = append(out, []string{"(example is not JSON: " + err.Error() + ")"})
			continue
		}
		var paths []string
		var walk func(v any, prefix string)
		walk = func(v any, prefix string) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if k == "..." {
						continue
					}
					p := k
					if prefix != "" {
						p = prefix + "." + k
					}
					paths = append(paths, p)
					walk(x, p)
				}
			case []any:
				for _, x := range v {
					walk(x, prefix)
				}
			}
		}
		walk(v, "")
		sort.Strings(paths)
		out = append(out, paths)
	}
	return out
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// typePaths records in out every field path t prints, mapped to whether its value is opaque
// to the path: a map (its keys are data) or a type that marshals itself.
func typePaths(t reflect.Type, prefix string, out map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for _, f := range jsonStructFields(t) {
		p := f.name
		if prefix != "" {
			p = prefix + "." + f.name
		}
		ft := f.typ
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array {
			ft = ft.Elem()
		}
		out[p] = ft.Kind() == reflect.Map || ft.Implements(jsonMarshaler) || reflect.PointerTo(ft).Implements(jsonMarshaler)
		typePaths(f.typ, p, out, seen)
	}
}

func anyPath(paths map[string]bool, f func(string) bool) bool {
	for p := range paths {
		if f(p) {
			return true
		}
	}
	return false
}

// pathMatches reports whether the listed name l (a path, * for any one name) is path p.
func pathMatches(l, p string) bool {
	ls, ps := strings.Split(l, "."), strings.Split(p, ".")
	if len(ls) != len(ps) {
		return false
	}
	for i := range ls {
		if ls[i] != "*" && ls[i] != ps[i] {
			return false
		}
	}
	return true
}

// listedPath reports whether path p is documented by the names listed: one of them is p; or
// p is an object whose fields are listed one by one (`capabilities.plugin`); or p lies under a
// listed object whose fields are not (`claims`, each as another section prints it; `handover`,
// whose fields its row names).
func listedPath(listed []string, emitted map[string]bool, p string) bool {
	is := func(p string) bool {
		return slices.ContainsFunc(listed, func(l string) bool { return pathMatches(l, p) })
	}
	itemized := func(p string) bool {
		return anyPath(emitted, func(e string) bool { return strings.HasPrefix(e, p+".") }) && // an object
			slices.ContainsFunc(listed, func(l string) bool { return pathUnder(l, p) })
	}
	if is(p) || itemized(p) {
		return true
	}
	ps := strings.Split(p, ".")
	for n := len(ps) - 1; n > 0; n-- {
		if a := strings.Join(ps[:n], "."); is(a) {
			return !itemized(a)
		}
	}
	return false
}

// pathUnder reports whether the listed name l is a field under path p (`capabilities.plugin`
// under capabilities).
func pathUnder(l, p string) bool {
	ls := strings.Split(l, ".")
	return len(ls) > len(strings.Split(p, ".")) && pathMatches(strings.Join(ls[:len(strings.Split(p, "."))], "."), p)
}

// TestEveryJSONCommandIsDocumented: every command that takes --json has its section in
// docs/json.md (its path, `volctl ... --json`, in a heading), and every section is one
// jsonDocSections holds to a Go value, so that no command's JSON is a contract nobody wrote
// down or no test compares with what it prints.
func TestEveryJSONCommandIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/json.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := splitJSONDoc(string(doc))
	var headings []string
	for h := range sections {
		headings = append(headings, h)
	}
	ios, _, _, _ := iostreams.Test()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil && !c.Hidden {
			want := "`" + c.CommandPath() + " --json`"
			documented := slices.ContainsFunc(headings, func(h string) bool { return strings.Contains(h, want) })
			// A top-level form of a volume command ("same as volume create") is named in the
			// section of the command it is ("Also `volctl register` and `volctl create`").
			if !documented && strings.Contains(c.Short, "(same as ") {
				documented = slices.ContainsFunc(headings, func(h string) bool {
					return strings.Contains(sections[h], "`"+c.CommandPath()+"`")
				})
			}
			if !documented {
				t.Errorf("%s takes --json, but docs/json.md has no section headed %s", c.CommandPath(), want)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(NewFactory(ios)))
	for _, h := range headings {
		if !slices.ContainsFunc(jsonDocSections, func(s jsonDocSection) bool { return s.heading == h }) {
			t.Errorf("docs/json.md's section %q is not in jsonDocSections: add it with the value its command prints", h)
		}
	}
}
