package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestBinaryLeavesOutManPageGenerator: the man page generator (cobra/doc, and the go-md2man,
// blackfriday and YAML packages it imports) stays out of volctl. Every package linked in is
// initialised by every volctl process, `volctl volume claim` included, and these are needed only
// to write docs/man, which `go run ./internal/tools/genman docs/man` does (internal/manpages).
func TestBinaryLeavesOutManPageGenerator(t *testing.T) {
	t.Parallel()
	unwanted := map[string]string{
		"github.com/spf13/cobra/doc":         "the man page generator",
		"github.com/cpuguy83/go-md2man/v2":   "cobra/doc's Markdown-to-roff converter",
		"github.com/russross/blackfriday/v2": "go-md2man's Markdown parser",
		"go.yaml.in/yaml/v3":                 "cobra/doc's YAML docs",
		"gopkg.in/yaml.v3":                   "cobra/doc's YAML docs",
	}
	leavesOut(t, unwanted, "keep it in internal/manpages and out of the binary")
}

// TestBinaryLeavesOutPrometheusClient: the Prometheus client library stays out of volctl. Its
// initialisation (a default registry with Go and process collectors, procfs, expvar) cost about
// 1 ms of every process's start-up (issue 16) for an endpoint only `volctl agent --metrics-addr`
// serves; internal/agent/metrics keeps the agent's metrics and writes the text format itself,
// and reads the Go runtime's figures with ReadMemStats rather than runtime/metrics.
// Tests may use the library (promlint, the parser, the byte-for-byte comparisons).
func TestBinaryLeavesOutPrometheusClient(t *testing.T) {
	t.Parallel()
	unwanted := map[string]string{
		"github.com/prometheus/client_golang": "the Prometheus client library",
		"github.com/prometheus/procfs":        "its process collector's /proc reader",
		"runtime/metrics":                     "the runtime's metric descriptions, built at initialisation (0.06 ms)",
	}
	leavesOut(t, unwanted, "keep the agent's metrics in internal/agent/metrics without it")
}

// TestBinaryLeavesOutGRPCTracing: the release is built with grpcnotrace (releaseTags), which
// leaves out gRPC's request tracing: golang.org/x/net/trace and the html/template it renders
// its pages with, initialised by every process (about 110,000 instructions and 30 page faults
// of `volctl version`'s start-up, issue 16) for a feature volctl never turns on
// (grpc.EnableTracing).
func TestBinaryLeavesOutGRPCTracing(t *testing.T) {
	t.Parallel()
	unwanted := map[string]string{
		"golang.org/x/net/trace": "gRPC's request tracing",
		"html/template":          "the templates x/net/trace renders its pages with",
	}
	leavesOut(t, unwanted, "build with -tags "+releaseTags+" as the release does (releaseTags, .goreleaser.yaml, README)")
}

// TestReleaseBuildTags: the benchmarks and the package listings above build volctl with
// releaseTags, which must be the tags the release is built with (.goreleaser.yaml) and the
// README's build command gives.
func TestReleaseBuildTags(t *testing.T) {
	t.Parallel()
	for _, f := range []struct{ file, want string }{
		{"../../.goreleaser.yaml", "      - -tags=" + releaseTags + "\n"},
		{"../../README.md", "go build -tags " + releaseTags + " -o bin/volctl ./cmd/volctl"},
	} {
		b, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), f.want) {
			t.Errorf("%s does not build with the release's tags: want %q in it (releaseTags)", f.file, f.want)
		}
	}
}

// leavesOut fails for each package volctl links under a prefix of unwanted (prefix: what it is).
func leavesOut(t *testing.T, unwanted map[string]string, fix string) {
	t.Helper()
	for _, dep := range volctlDeps(t) {
		for prefix, what := range unwanted {
			if dep == prefix || strings.HasPrefix(dep, prefix+"/") {
				t.Errorf("volctl links %s (%s), which every process would initialise: %s", dep, what, fix)
			}
		}
	}
}

// TestBinaryLeavesOutHCLWrite: volctl writes the exported Nomad files with its own writer
// (internal/nomad/hcl.go), not hclwrite. hclwrite imports go-cmp, whose package initialisation
// compiles regexps (about 0.6 ms a process, per GODEBUG=inittrace=1), paid by every volctl
// process though only `export nomad` writes HCL. Tests may use both (they are not linked in).
func TestBinaryLeavesOutHCLWrite(t *testing.T) {
	t.Parallel()
	unwanted := map[string]string{
		"github.com/hashicorp/hcl/v2/hclwrite": "HCL's writer, replaced by internal/nomad's",
		"github.com/google/go-cmp":             "hclwrite's comparison library, whose init compiles regexps",
	}
	leavesOut(t, unwanted, "write HCL with internal/nomad's writer")
}

// TestNoRegexpCompiledAtInit: none of volctl's own packages compiles a regexp in a
// package-level variable, which every process would pay for at start-up (5-35 µs each, most of
// what internal/spec, csi and cli did at init); a pattern is compiled on first use
// (sync.OnceValue) instead.
func TestNoRegexpCompiledAtInit(t *testing.T) {
	t.Parallel()
	for _, line := range volctlPackages(t) {
		fields := strings.Fields(line)
		if !strings.HasPrefix(fields[0], "github.com/volctl/volctl/") {
			continue
		}
		for _, name := range fields[2:] {
			file := filepath.Join(fields[1], name)
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					for _, v := range spec.(*ast.ValueSpec).Values {
						if call := regexpCompile(v); call != "" {
							t.Errorf("%s: package-level %s: every volctl process would compile it at start-up; compile it on first use (sync.OnceValue)", file, call)
						}
					}
				}
			}
		}
	}
}

// regexpCompile names the regexp.Compile-like call in an initialiser, outside function
// literals (which run later), or is empty.
func regexpCompile(expr ast.Expr) (found string) {
	ast.Inspect(expr, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.SelectorExpr:
			if pkg, ok := n.X.(*ast.Ident); ok && pkg.Name == "regexp" && strings.Contains(n.Sel.Name, "Compile") && found == "" {
				found = "regexp." + n.Sel.Name
			}
		}
		return true
	})
	return found
}

// volctlDeps lists the packages `go list -deps` says volctl's main package is built from, with
// the release's build tags.
func volctlDeps(t *testing.T) []string {
	t.Helper()
	var deps []string
	for _, line := range volctlPackages(t) {
		deps = append(deps, strings.Fields(line)[0])
	}
	return deps
}

// volctlPackages is `go list -deps` of volctl's main package with the release's build tags: a
// line per package, its import path, its directory and its Go files, separated by spaces.
func volctlPackages(t *testing.T) []string {
	t.Helper()
	l := volctlListing()
	if l.err != nil {
		if ee, ok := l.err.(*exec.ExitError); ok {
			t.Fatalf("go %s: %v\n%s", strings.Join(l.args, " "), l.err, ee.Stderr)
		}
		t.Skipf("listing volctl's packages needs the go command (%v)", l.err)
	}
	deps := strings.Split(strings.TrimSpace(string(l.out)), "\n")
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed only %d packages for volctl: the listing is broken\n%s", len(deps), l.out)
	}
	return deps
}

// listing is one run of the go command: its arguments, its output and how it failed.
type listing struct {
	args []string
	out  []byte
	err  error
}

// volctlListing runs `go list -deps` for volctlPackages once per test process: four tests read
// the same listing, each of them a second of CPU.
var volctlListing = sync.OnceValue(func() listing {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"list", "-deps", "-f", `{{.ImportPath}} {{.Dir}} {{join .GoFiles " "}}`}
	if releaseTags != "" {
		args = append(args, "-tags", releaseTags)
	}
	cmd := exec.Command(gocmd, append(args, ".")...)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	return listing{args: args, out: out, err: err}
})
