package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBinaryLeavesOutManPageGenerator: the man page generator (cobra/doc, and the go-md2man,
// blackfriday and YAML packages it imports) stays out of volctl. Every package linked in is
// initialised by every volctl process, `volctl volume claim` included, and these are needed only
// to write docs/man, which `go run ./internal/tools/genman docs/man` does (internal/manpages).
func TestBinaryLeavesOutManPageGenerator(t *testing.T) {
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
	unwanted := map[string]string{
		"github.com/prometheus/client_golang": "the Prometheus client library",
		"github.com/prometheus/procfs":        "its process collector's /proc reader",
		"runtime/metrics":                     "the runtime's metric descriptions, built at initialisation (0.06 ms)",
	}
	leavesOut(t, unwanted, "keep the agent's metrics in internal/agent/metrics without it")
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

// volctlDeps lists the packages `go list -deps` says volctl's main package is built from, with
// the release's build tags.
func volctlDeps(t *testing.T) []string {
	t.Helper()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	if releaseTags != "" {
		args = append(args, "-tags", releaseTags)
	}
	cmd := exec.Command(gocmd, append(args, ".")...)
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Skipf("listing volctl's packages needs the go command (%v)", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed only %d packages for volctl: the listing is broken\n%s", len(deps), out)
	}
	return deps
}
