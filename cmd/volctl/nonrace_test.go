package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ranWithoutRace runs the calling test in this package's test binary built without -race (the
// one scriptVolctl builds for the scripts' commands) and reports whether it did so, in which
// case the caller returns: the child's verdict is the test's, its output the test's log. It
// runs nothing and reports false when this binary is not race-built (it is that build).
//
// For the tests that read the repository's source (parse and type-check every Go file, scan
// every text with regexps): a single goroutine reading files, nothing the race detector can
// find, and under -race about three times the CPU (of go/parser's and go/types' every memory
// access, instrumented): TestExportedMethodsHaveCallers took 7 s of it, TestCitedTestsExist 6 s.
func ranWithoutRace(t *testing.T) bool {
	t.Helper()
	dir := scriptVolctl(t)
	if dir == "" {
		return false
	}
	cmd := exec.Command(filepath.Join(dir, "volctl"), "-test.run", "^"+t.Name()+"$", "-test.count=1", "-test.v")
	// Not "volctl", which TestMain runs as the volctl command.
	cmd.Args[0] = "volctl-without-race.test"
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("%s, run by the test binary built without -race: %v\n%s", t.Name(), err, out)
	case strings.Contains(string(out), "--- SKIP: "+t.Name()+" "):
		t.Skipf("skipped by the test binary built without -race:\n%s", out)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()+" "):
		t.Fatalf("%s did not run in the test binary built without -race:\n%s", t.Name(), out)
	}
	t.Logf("passed in the test binary built without -race:\n%s", out)
	return true
}
