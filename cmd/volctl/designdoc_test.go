package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// citation is a comment's pointer into the design: "docs/architecture.md, Lock order",
// "docs/architecture.md (Lock order)" or `docs/architecture.md, "Plugins behind a held socket"`,
// read in comments joined across their lines (commentLineBreak), where a citation often wraps.
var citation = regexp.MustCompile(`docs/architecture\.md(?:, | \()"?([A-Z][A-Za-z /()-]*?)[)"]`)

// commentLineBreak is a line break inside a comment, with the next line's indent and "//".
var commentLineBreak = regexp.MustCompile(`\n\s*// ?`)

// citesRule says whether doc has the rule or bullet name: "**Name.**" in "The rules, in one
// place", or "**Name**" before what it is about ("**Lock waits.**", "**Plugins behind a held
// socket** (`reusableFingerprint`...").
func citesRule(doc, name string) bool {
	return strings.Contains(doc, "**"+name+".**") || strings.Contains(doc, "**"+name+"** (")
}

// TestDesignCitations holds the code's comments to the design document in the repository: no
// comment cites a design document that is not there, and every rule a comment names by section
// is one docs/architecture.md states ("**Name.**" under "The rules, in one place").
func TestDesignCitations(t *testing.T) {
	t.Parallel()
	if ranWithoutRace(t) { // source read, nothing to race
		return
	}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	cited := 0
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(src), "DESIGN"+".md") {
				t.Errorf("%s cites %s, which is not in the repository: cite docs/architecture.md", path, "DESIGN"+".md")
			}
			for _, m := range citation.FindAllStringSubmatch(commentLineBreak.ReplaceAllString(string(src), " "), -1) {
				cited++
				if !citesRule(string(doc), m[1]) {
					t.Errorf("%s cites docs/architecture.md, %q: the document has no rule of that name", path, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if cited == 0 {
		t.Fatal("no comment cites docs/architecture.md: the pattern no longer matches the comments")
	}
}

// TestGRPCCodesStayInCSI: outside the internal/csi tree (and internal/hostpath, a plugin: a
// gRPC server), no code imports grpc/codes; it asks csi's predicates (csi.IsTimeout,
// csi.IsUnavailable, ...) instead. Tests may import it to inject codes.
func TestGRPCCodesStayInCSI(t *testing.T) {
	t.Parallel()
	for path, imp := range imports(t, "../../internal", ".") {
		if imp["google.golang.org/grpc/codes"] && !strings.HasPrefix(path, "../../internal/csi/") && !strings.HasPrefix(path, "../../internal/hostpath/") {
			t.Errorf("%s imports grpc/codes: use csi's predicates (internal/csi/errors.go)", path)
		}
	}
}

// TestAgentImportsNoHCL: the agent's config is parsed in internal/spec (spec.Parser.ParseAgentConfig),
// so internal/agent needs no HCL of its own.
func TestAgentImportsNoHCL(t *testing.T) {
	t.Parallel()
	for path, imp := range imports(t, "../../internal/agent") {
		for p := range imp {
			if strings.HasPrefix(p, "github.com/hashicorp/hcl") {
				t.Errorf("%s imports %s: parse agent config in internal/spec", path, p)
			}
		}
	}
}

// imports maps each Go file below roots, tests and testdata left out, to the packages it imports.
func imports(t *testing.T, roots ...string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	walkGoFiles(t, roots, func(path string) error {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		out[path] = map[string]bool{}
		for _, imp := range f.Imports {
			out[path][strings.Trim(imp.Path.Value, `"`)] = true
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("no Go files below %v", roots)
	}
	return out
}

// walkGoFiles calls fn with each Go file below roots, tests and testdata left out.
func walkGoFiles(t *testing.T, roots []string, fn func(path string) error) {
	t.Helper()
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			return fn(path)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestExportsAreUsed: an exported function or method of the engine, the store, the spec or the
// csi client that no code of volctl calls (only tests) is a seam nobody uses: it moves to the
// tests or goes. It is a check by name: a name volctl uses anywhere counts as used.
func TestExportsAreUsed(t *testing.T) {
	t.Parallel()
	if ranWithoutRace(t) { // source read, nothing to race
		return
	}
	// Exported for an interface, or for the tests of other packages; each says why.
	allowed := map[string]string{
		"GRPCStatus": "csi.Error: lets gRPC's status.Code see the code through wrapping",
		"TagRPC":     "csi.answerWatcher: gRPC's stats.Handler, which marks an RPC the plugin answered",
		"HandleRPC":  "csi.answerWatcher: gRPC's stats.Handler, which marks an RPC the plugin answered",
		"TagConn":    "csi.answerWatcher: gRPC's stats.Handler (nothing to do per connection)",
		"HandleConn": "csi.answerWatcher: gRPC's stats.Handler (nothing to do per connection)",
		"Prepare":    "store's driver wrapper: database/sql's driver.Conn",
		"History":    "store.Tx: claim_history as the engine's and volctl's tests read it (no command lists freed claims)",
		"RowsRead":   "store.Store: the engine's tests count the rows a read costs (events --follow's polls)",
		// The command asks what its registration did (RegisterVolumeOutcome).
		"RegisterVolume": "engine.Engine: every package's tests register volumes with it (RegisterVolumeOutcome without the outcome)",
		// The command asks what its plugin registration did (RegisterPluginOutcome).
		"RegisterPlugin": "engine.Engine: every package's tests register plugins with it (RegisterPluginOutcome without the outcome)",
	}
	declared := map[string]string{}
	used := map[string]int{}
	err := filepath.WalkDir("../../internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "csitest" || d.Name() == "hostpathtest") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, pkg := range []string{"engine", "store", "spec", "csi"} {
			if filepath.Dir(path) != "../../internal/"+pkg {
				continue
			}
			for _, dd := range f.Decls {
				if fd, ok := dd.(*ast.FuncDecl); ok && fd.Name.IsExported() {
					declared[fd.Name.Name] = path
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				used[id.Name]++
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range declared {
		if used[name] <= 1 && allowed[name] == "" { // the declaration is the one use
			t.Errorf("%s declares %s, which only tests call: move it to the tests, or use it", path, name)
		}
	}
}

// designImports is the package layering docs/architecture.md states (its package table and
// "Data flows one way"), for volctl's own code (tests and test doubles aside): for each
// package, the packages of ours it imports, and, where the document limits an import to a
// few names, those names (nil: any). An import not listed is one the document does not
// describe: change the document and this table together.
var designImports = map[string]map[string][]string{
	"cmd/volctl":                 {"cli": nil, "crash": nil, "iostreams": nil, "noquery": nil},
	"internal/atomicfile":        {},
	"internal/backoff":           {},
	"internal/buildinfo":         {},
	"internal/iostreams":         {},
	"internal/manpages":          {},
	"internal/noquery":           {},
	"internal/procfs":            {},
	"internal/mountflags":        {},
	"internal/pathtrust":         {},
	"internal/nomadcorpus":       {},
	"internal/nomadaddr":         {},
	"internal/shellquote":        {},
	"internal/spec":              {"shellquote": nil},
	"internal/crash":             {"spec": {"EscapeLines"}},
	"internal/display":           {"spec": nil},
	"internal/csi":               {"csi/internal/wire": nil, "spec": nil},
	"internal/csi/internal/wire": {"spec": nil},
	"internal/store":             {"atomicfile": nil, "backoff": nil, "nomadaddr": {"Shown", "InMessage"}, "pathtrust": nil, "procfs": nil, "shellquote": nil, "spec": nil},
	"internal/hostpath":          {"atomicfile": nil, "buildinfo": nil, "crash": nil, "mountflags": nil, "pathtrust": nil, "spec": nil},
	"internal/engine": {"backoff": nil, "crash": nil, "csi": nil, "display": {"Ago", "Latency"}, "mountflags": nil, "nomadaddr": nil, "pathtrust": nil,
		"procfs": nil, "shellquote": nil, "spec": nil, "store": nil},
	"internal/nomad": {"csi": {"Scrubber"}, "engine": {"VolumeInfo", "ShownNomadAddress", "HiddenNomadPathAndQuery"},
		"shellquote": nil, "spec": nil},
	"internal/tui": {"crash": nil, "display": nil, "engine": nil, "shellquote": nil, "spec": nil},
	"internal/agent": {"atomicfile": nil, "backoff": nil, "crash": nil, "engine": nil, "hostpath": {"RemoveStaleSocket"}, "pathtrust": nil, "procfs": nil,
		"agent/starthelper": nil, "spec": nil, "store": {"NoSpace"}},
	"internal/agent/starthelper": {},
	"internal/agent/metrics":     {"agent": nil, "crash": nil, "engine": nil, "store": {"ClaimStates"}},
	"internal/cli": {"agent": nil, "agent/metrics": nil, "atomicfile": nil, "backoff": nil, "buildinfo": nil, "crash": nil, "pathtrust": nil,
		"csi": nil, "display": nil, "engine": nil, "hostpath": nil, "iostreams": nil, "nomad": nil,
		"shellquote": nil, "spec": nil, "store": {"DirError", "FileName"}, "tui": nil},
	"internal/tools/genman": {"cli": nil, "iostreams": nil, "manpages": nil},
}

// testOnlyPackages hold test doubles and helpers: no volctl code imports them.
var testOnlyPackages = []string{"internal/csi/csitest", "internal/hostpath/hostpathtest", "internal/nomad/nomadtest",
	"internal/hostpath/csisanity", "internal/iostreams/ptytest", "internal/procfs/procfstest", "internal/shellquote/shellquotetest",
	"internal/store/storetest", "internal/testproc"}

// TestPackagesImportAsTheDesignSays holds volctl's code to designImports: every import of one
// of our packages is listed for the importing package, a limited one uses only its names
// (the store, opened by the engine alone, lends the others an error type and a few names;
// the agent takes hostpath's RemoveStaleSocket and nomad csi's Scrubber only), the CSI
// protobuf stubs are imported by the internal/csi tree and internal/hostpath only, and
// database/sql by internal/store only (nothing else writes SQL).
func TestPackagesImportAsTheDesignSays(t *testing.T) {
	t.Parallel()
	if ranWithoutRace(t) { // source read, nothing to race
		return
	}
	const mod = "github.com/volctl/volctl/internal/"
	seen := map[string]bool{}
	walkGoFiles(t, []string{"../../internal", "."}, func(path string) error {
		pkg := strings.TrimPrefix(filepath.ToSlash(filepath.Dir(path)), "../../")
		if pkg == "." {
			pkg = "cmd/volctl"
		}
		testOnly := slices.ContainsFunc(testOnlyPackages, func(p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") })
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			switch {
			case p == "github.com/container-storage-interface/spec/lib/go/csi" &&
				!strings.HasPrefix(pkg, "internal/csi") && !strings.HasPrefix(pkg, "internal/hostpath"):
				t.Errorf("%s imports the CSI protobuf stubs: only the internal/csi tree and internal/hostpath do (docs/architecture.md)", path)
			case p == "database/sql" && pkg != "internal/store":
				t.Errorf("%s imports database/sql: nothing but internal/store writes SQL (docs/architecture.md)", path)
			}
			ours, ok := strings.CutPrefix(p, mod)
			if !ok || testOnly {
				continue
			}
			if slices.ContainsFunc(testOnlyPackages, func(tp string) bool { return "internal/"+ours == tp || strings.HasPrefix("internal/"+ours, tp+"/") }) {
				t.Errorf("%s imports %s, a package of test doubles", path, p)
				continue
			}
			allowed, listed := designImports[pkg]
			if !listed {
				t.Errorf("%s: package %s is not in designImports: add it, and to docs/architecture.md's package table", path, pkg)
				continue
			}
			seen[pkg+" "+ours] = true
			names, ok := allowed[ours]
			if !ok {
				t.Errorf("%s imports %s, which docs/architecture.md does not have %s import: change the document and designImports, or drop the import", path, p, pkg)
				continue
			}
			if names == nil {
				continue
			}
			local := filepath.Base(ours)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && x.Obj == nil && !slices.Contains(names, sel.Sel.Name) {
					t.Errorf("%s uses %s.%s: docs/architecture.md has %s take only %v from %s", path, local, sel.Sel.Name, pkg, names, ours)
				}
				return true
			})
		}
		return nil
	})
	// An edge the table allows that no code has is a stale line of the document's layering.
	for pkg, allowed := range designImports {
		for ours := range allowed {
			if !seen[pkg+" "+ours] {
				t.Errorf("designImports lets %s import %s, which it no longer does: drop it here and in docs/architecture.md", pkg, ours)
			}
		}
	}
}

// TestMigrationsAreInTheDesign: docs/architecture.md's Schema paragraph names every migration
// of the store (what each adds), so that a new one is described where the schema is.
func TestMigrationsAreInTheDesign(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../../internal/store/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found (%v)", err)
	}
	for _, f := range files {
		if name := filepath.Base(f); !strings.Contains(string(doc), name+"`") {
			t.Errorf("docs/architecture.md does not name migration %s: say what it adds under Schema", name)
		}
	}
}

// docFiles is the documentation a user or a reader of the code is pointed to: README.md,
// BENCHMARKS.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	return append(files, "../../README.md", "../../BENCHMARKS.md")
}

// repoText calls fn with the path and text of every file of the repository a test, benchmark or
// function may be cited in: the documentation (docFiles), every Go file (tests included), the
// test scripts, and CI's and the release's configuration.
func repoText(t *testing.T, fn func(path, text string)) {
	t.Helper()
	files := append(docFiles(t), "../../.ci/run", "../../.goreleaser.yaml")
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".txtar")) {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fn(f, string(raw))
	}
}

// parsedGoFiles calls fn with every Go file of volctl, tests included, parsed.
func parsedGoFiles(t *testing.T, fn func(path string, f *ast.File)) {
	t.Helper()
	goFiles(t, func(path string) {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		fn(path, f)
	})
}

// goFiles calls fn with the path of every Go file of volctl, tests included.
func goFiles(t *testing.T, fn func(path string)) {
	t.Helper()
	for _, root := range []string{"../../internal", "."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			fn(path)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// testFuncs is the Test, Benchmark and Fuzz functions volctl's tests declare.
func testFuncs(t *testing.T) []string {
	t.Helper()
	var names []string
	parsedGoFiles(t, func(path string, f *ast.File) {
		if !strings.HasSuffix(path, "_test.go") {
			return
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && testFuncName.MatchString(fd.Name.Name) {
				names = append(names, fd.Name.Name)
			}
		}
	})
	if len(names) == 0 {
		t.Fatal("no Test, Benchmark or Fuzz function found")
	}
	return names
}

var (
	testFuncName = regexp.MustCompile(`^(Test|Benchmark|Fuzz)[A-Z0-9_]`)
	// citedTest is a test, benchmark or fuzz target named in text; one after a dot is a field
	// or method of another package's (sanity.TestConfig, testscript.TestScript).
	citedTest = regexp.MustCompile(`(?:^|[^.\w])((?:Test|Benchmark|Fuzz)[A-Z0-9_]\w*)`)
	// goTestPattern is a go test -run or -bench pattern: its argument, quoted or not; one
	// starts with a capital, ^ or . (prose goes on in lower case: "-run of").
	goTestPattern = regexp.MustCompile(`(?:^|[\s` + "`" + `(])-(run|bench)[ =]('[^']*'|"[^"]*"|[A-Z^.][^\s'"` + "`" + `)]*)`)
)

// goTestPatterns is goTestPattern.FindAllStringSubmatch(text, -1), the regexp left unrun on
// the text (most of the repository's) holding neither "-run" nor "-bench", which every match
// holds: run over every file under -race it cost seconds of CPU.
func goTestPatterns(text string) [][]string {
	if !strings.Contains(text, "-run") && !strings.Contains(text, "-bench") {
		return nil
	}
	return goTestPattern.FindAllStringSubmatch(text, -1)
}

// citedTests is the names citedTest finds in text, in order (its first group of each match of
// FindAllStringSubmatch), found without the regexp: a match starts at the start of the text
// or at any character but a dot or a word character, so the regexp tried one at nearly every
// character of the repository's text, 2 s of CPU with as much again in the race runtime.
// TestCitedTestsScanIsTheRegexp holds the two to the same answers.
func citedTests(text string) []string {
	var names []string
	for i := 0; i < len(text); {
		j := strings.IndexAny(text[i:], "TBF")
		if j < 0 {
			break
		}
		j += i
		i = j + 1
		if j > 0 && (text[j-1] == '.' || isWordByte(text[j-1])) {
			continue
		}
		var n int
		for _, p := range []string{"Test", "Benchmark", "Fuzz"} {
			if strings.HasPrefix(text[j:], p) {
				n = len(p)
			}
		}
		if n == 0 || j+n >= len(text) || !(text[j+n] == '_' || '0' <= text[j+n] && text[j+n] <= '9' || 'A' <= text[j+n] && text[j+n] <= 'Z') {
			continue
		}
		end := j + n + 1
		for end < len(text) && isWordByte(text[end]) {
			end++
		}
		names = append(names, text[j:end])
		i = end
	}
	return names
}

// TestCitedTestsScanIsTheRegexp: citedTests finds what citedTest does, on the cases at its
// edges and on random text built of their pieces.
func TestCitedTestsScanIsTheRegexp(t *testing.T) {
	t.Parallel()
	// Written with @ for Test, % for Benchmark and & for Fuzz: this file's text is one that
	// TestCitedTestsExist reads, and these are no tests' names.
	texts := strings.Split(strings.NewReplacer("@", "Test", "%", "Benchmark", "&", "Fuzz").Replace(
		"|@|@A|@_|@9|@a| @A|.@A|x@A|_@A|9@A|@A.@B|@A @B|@A@B|(@A)|`%X`|&Y,|&@A|é@A|\n@A\n|T@A|B%C|%|&_x|@É"+
			"|sanity.@Config and @Config|-run @A/b|a.b @C_d9e"), "|")
	pieces := []string{"Test", "Benchmark", "Fuzz", "T", "B", "F", "A", "a", "9", "_", ".", " ", "é", "\n", "("}
	r := rand.New(rand.NewPCG(36, 36))
	for range 3000 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		var want []string
		for _, m := range citedTest.FindAllStringSubmatch(text, -1) {
			want = append(want, m[1])
		}
		if got := citedTests(text); !slices.Equal(got, want) {
			t.Errorf("citedTests(%q) = %q; the regexp finds %q", text, got, want)
		}
	}
}

// isWordByte says whether b is a word character as \w means it: [0-9A-Za-z_].
func isWordByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// TestCitedTestsExist: every test, benchmark or fuzz target the documentation, a comment, a
// message or a script names by its name is one the tests declare, and every `go test -run`
// or `-bench` pattern they give selects at least one. A test renamed or removed leaves its
// citations pointing at nothing, and a reader who looks for the proof of a claim finds none;
// a reproduce command that selects no benchmark runs nothing and says PASS.
func TestCitedTestsExist(t *testing.T) {
	t.Parallel()
	if ranWithoutRace(t) { // source read, nothing to race
		return
	}
	declared := testFuncs(t)
	cited := 0
	repoText(t, func(path, text string) {
		flat := commentLineBreak.ReplaceAllString(text, " ")
		for _, m := range goTestPatterns(flat) {
			pattern := strings.Trim(m[2], `'"`)
			if pattern == "^$" {
				continue
			}
			// A pattern's first element selects the top-level function; what follows a slash
			// selects subtests or a fuzz corpus entry.
			top, _, _ := strings.Cut(pattern, "/")
			re, err := regexp.Compile(top)
			if err != nil {
				t.Errorf("%s: go test -%s %s: not a pattern go test takes: %v", path, m[1], m[2], err)
				continue
			}
			prefix := "Test|Fuzz"
			if m[1] == "bench" {
				prefix = "Benchmark"
			}
			kind := regexp.MustCompile("^(" + prefix + ")")
			cited++
			if !slices.ContainsFunc(declared, func(n string) bool { return kind.MatchString(n) && re.MatchString(n) }) {
				t.Errorf("%s: go test -%s %s selects no %s function of volctl's tests", path, m[1], m[2], strings.ReplaceAll(prefix, "|", " or "))
			}
		}
		for _, name := range citedTests(flat) {
			cited++
			if !slices.Contains(declared, name) && !prefixOfPattern(flat, name) {
				t.Errorf("%s names %s, which no test declares: name the test as it is now", path, name)
			}
		}
	})
	if cited < 100 {
		t.Fatalf("found %d citations of tests: the patterns no longer match how tests are named", cited)
	}
}

// prefixOfPattern says whether name occurs in text as (the start of) a go test -run or -bench
// pattern, which TestCitedTestsExist checks as a pattern: -run TestCompatCorpus.
func prefixOfPattern(text, name string) bool {
	for _, m := range goTestPatterns(text) {
		if strings.HasPrefix(strings.TrimLeft(m[2], `'"^`), name) {
			return true
		}
	}
	return false
}

// goDeclared is every name volctl's Go code declares, tests included: functions, methods, types,
// variables, constants, struct fields and interface methods; and, of them, the types.
func goDeclared(t *testing.T) (names, types map[string]bool) {
	t.Helper()
	names, types = map[string]bool{}, map[string]bool{}
	parsedGoFiles(t, func(_ string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				names[n.Name.Name] = true
			case *ast.TypeSpec:
				names[n.Name.Name], types[n.Name.Name] = true, true
			case *ast.ValueSpec:
				for _, id := range n.Names {
					names[id.Name] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					names[id.Name] = true
				}
			}
			return true
		})
	})
	return names, types
}

// citedGoName is a code span of the documentation that reads as a Go name: camel case (a
// unit, `MiB`, is not), maybe qualified by its package or type (`store.Tx`,
// `engine.ErrConflict`), maybe called (`spec.ParseVolume()`).
var citedGoName = regexp.MustCompile("`(?:([A-Za-z_][A-Za-z0-9_]*)\\.)?(?:[A-Za-z_][A-Za-z0-9_]*\\.)*([A-Za-z_]*[a-z][A-Z][A-Za-z0-9_]*)(?:\\(\\))?`")

// camelName is a Go name of words, not a unit's or a letter's: one with two lower-case letters.
var camelName = regexp.MustCompile(`[a-z]{2}`)

// foreignGoNames are names the documentation cites that are not volctl's: another program's, a
// library's or a service manager's, each with whose.
var foreignGoNames = map[string]string{
	"TimeoutStopSec":            "systemd's unit setting (docs/agent.md)",
	"TimeoutStartSec":           "systemd's unit setting (docs/agent.md)",
	"controllerUnpublishVolume": "Nomad's csi_endpoint.go",
	"expandVolume":              "Nomad's csi_endpoint.go",
	"isReadyForConsistentReads": "Nomad's server",
	"DialContext":               "gRPC's",
	"WithBlock":                 "gRPC's",
	"RunWithContext":            "gojq's Code.RunWithContext",
	"DeadlineExceeded":          "a gRPC status code",
	"CSIVolumeByID":             "Nomad's state store",
	"ClusterMetadata":           "Nomad's server state (its cluster ID)",
}

// TestCitedGoNamesExist: every Go name the documentation quotes as code (README.md,
// BENCHMARKS.md, docs/*.md) is one volctl's code declares, or another program's it names
// (foreignGoNames). A function renamed or folded into another leaves the document pointing a
// reader at nothing.
func TestCitedGoNamesExist(t *testing.T) {
	t.Parallel()
	if ranWithoutRace(t) { // source read, nothing to race
		return
	}
	declared, types := goDeclared(t)
	// A name qualified by what is not volctl's package or type (`sync.OnceValue`, `api.DefaultConfig`) is the
	// standard library's or another module's.
	ours := maps.Clone(types)
	walkGoFiles(t, []string{"../../internal"}, func(path string) error {
		ours[filepath.Base(filepath.Dir(path))] = true
		return nil
	})
	cited := 0
	for _, path := range docFiles(t) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			for _, m := range citedGoName.FindAllStringSubmatch(line, -1) {
				if (m[1] != "" && !ours[m[1]]) || !camelName.MatchString(m[2]) {
					continue
				}
				cited++
				if !declared[m[2]] && foreignGoNames[m[2]] == "" {
					t.Errorf("%s:%d quotes %s, which volctl's code does not declare: name it as it is now", path, i+1, m[0])
				}
			}
		}
	}
	if cited < 100 {
		t.Fatalf("the documentation quotes %d Go names: the pattern no longer matches how it quotes them", cited)
	}
}

// TestPackageTableNamesEveryPackage: docs/architecture.md's package table (the block that opens
// it) names every package of volctl, test doubles and tools included, by its path under
// internal/ or, for one inside another's directory, by its path below it in that one's row
// ("storetest/", "csitest/bareclient/"). A package added without a line in the table is one
// the design document does not describe.
func TestPackageTableNamesEveryPackage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "```\n")
	table, _, ok := strings.Cut(table, "```")
	if !ok {
		t.Fatal("docs/architecture.md opens with no package table (a ``` block)")
	}
	pkgs := map[string]bool{}
	goFiles(t, func(path string) { // the paths alone: parsing each file cost 2 s of CPU under -race
		if !strings.Contains(path, "testdata") {
			pkgs[strings.TrimPrefix(filepath.ToSlash(filepath.Dir(path)), "../../")] = true
		}
	})
	for pkg := range pkgs {
		if pkg == "." {
			pkg = "cmd/volctl"
		}
		rel := strings.TrimPrefix(pkg, "internal/")
		named := regexp.MustCompile(`(^|[\s(])(internal/)?` + regexp.QuoteMeta(rel) + `/?([\s),:;]|$)`).MatchString(table)
		// Inside an ancestor's row, by its path below that ancestor: "storetest/ (for tests)",
		// "csitest/bareclient/" in csi's.
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts) && !named; i++ {
			named = regexp.MustCompile(`(^|[\s(])` + regexp.QuoteMeta(strings.Join(parts[i:], "/")) + `/`).MatchString(table)
		}
		if !named {
			t.Errorf("docs/architecture.md's package table does not name %s: add it (and to designImports, or testOnlyPackages)", pkg)
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages: the walk no longer finds volctl's", len(pkgs))
	}
}
