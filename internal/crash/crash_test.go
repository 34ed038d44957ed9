package crash

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/testproc"
)

// crashChild, set in the environment, makes the test binary panic in a goroutine started by
// Go, as a volctl goroutine would, instead of running the tests.
const crashChild = "VOLCTL_CRASH_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(crashChild) {
	case "":
		testproc.Start() // the children of a test binary that dies go with it (internal/testproc)
	case "group":
		// A goroutine of a WaitGroup panics while another waits for the group; the crash
		// report takes a while (as scrubbing the value of secrets through the state does).
		defer OnCrash(func() { time.Sleep(300 * time.Millisecond) })()
		var wg sync.WaitGroup
		GoGroup(&wg, func() { panic("in a goroutine of a group") })
		wg.Wait()
		os.Stderr.WriteString("the wait went on past the crash\n")
		os.Exit(0)
	default:
		defer OnCrash(func() { os.Stderr.WriteString("terminal restored\n") })()
		Go(func() { panic("in a goroutine") })
		select {}
	}
	os.Exit(m.Run())
}

// A goroutine of a group (GoGroup) that panics is not done: whoever waits for the group does
// not go on while the crash is reported (reconcile printed "Nothing to do" and closed the
// state the report reads to scrub the panic's value, which it then withheld).
func TestPanicInAGroupDoesNotEndTheWait(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChild+"=group")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != ExitCode {
		t.Fatalf("a panic in a goroutine of a group: %v; want exit status %d\n%s", err, ExitCode, stderr.String())
	}
	if out := stderr.String(); strings.Contains(out, "the wait went on") || !strings.Contains(out, "panic: in a goroutine of a group") {
		t.Errorf("stderr:\n%s\nwant the panic reported, and the wait for the group not ended by it", out)
	}
}

// TestGroupsAreWaitedWithGoGroup: no goroutine started by Go is done with a deferred Done
// (`defer wg.Done()`), which a panic runs before Recover ends the process: GoGroup.
func TestGroupsAreWaitedWithGoGroup(t *testing.T) {
	eachGoFile(t, func(fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Go" || fmt.Sprint(sel.X) != "crash" {
				return true
			}
			lit, ok := call.Args[0].(*ast.FuncLit)
			if !ok {
				return true
			}
			for _, st := range lit.Body.List {
				if d, ok := st.(*ast.DeferStmt); ok {
					if sel, ok := d.Call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Done" && len(d.Call.Args) == 0 {
						t.Errorf("%s: crash.Go with a deferred %s.Done(): use crash.GoGroup, whose Done a panic does not run", fset.Position(d.Pos()), sel.X)
					}
				}
			}
			return true
		})
	})
}

// A panic in a goroutine started by Go ends the process with ExitCode, the OnCrash functions
// run first, the panic's value and stack and what to do on stderr.
func TestPanicInAGoroutineExitsWithTheCrashCode(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChild+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != ExitCode {
		t.Fatalf("a panic in a goroutine: %v; want exit status %d\n%s", err, ExitCode, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{"terminal restored\n", "panic: in a goroutine\n", "crash_test.go", "volctl crashed (exit status 70)", "volctl reconcile"} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr says no %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "terminal restored") > strings.Index(out, "panic:") {
		t.Errorf("the terminal was restored after the panic was printed:\n%s", out)
	}
}

// TestEveryGoroutineIsStartedByGo: volctl's code (not its tests, nor the test doubles) starts
// no goroutine with a go statement, whose panic would exit with Go's status 2, volctl's
// status for a usage error: crash.Go starts them.
func TestEveryGoroutineIsStartedByGo(t *testing.T) {
	eachGoFile(t, func(fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: a go statement: start it with crash.Go, so that a panic in it exits with the crash code", fset.Position(g.Pos()))
			}
			return true
		})
	})
}

// eachGoFile parses each of volctl's Go files (not its tests, nor the test doubles) for fn.
func eachGoFile(t *testing.T, fn func(*token.FileSet, *ast.File)) {
	t.Helper()
	root := filepath.Join("..", "..")
	skip := map[string]bool{"internal/crash": true, "internal/tools": true, "internal/csi/csitest": true, "internal/hostpath/hostpathtest": true}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (skip[filepath.ToSlash(rel)] || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		fn(fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A report is passed through the scrubs Redact registered; one that fails, panics or does not
// return in time withholds the panic's value, which may hold the secret it was to scrub, and
// keeps the stack and what to do.
func TestReportWithholdsWhatItCannotScrub(t *testing.T) {
	defer func(d time.Duration) { redactTimeout = d }(redactTimeout)
	redactTimeout = 100 * time.Millisecond
	const secret = "s3cret-in-a-panic"
	scrub := func(s string) (string, error) { return strings.ReplaceAll(s, secret, "[REDACTED]"), nil }
	for _, tc := range []struct {
		name  string
		scrub func(string) (string, error)
		says  string
	}{
		{"scrubbed", scrub, "panic: token " + "[REDACTED]" + " rejected\n"},
		{"scrub fails", func(string) (string, error) { return "", errors.New("reading the state: locked") },
			"[the panic's value is withheld: scrubbing it of secrets failed: reading the state: locked]"},
		{"scrub panics", func(s string) (string, error) { panic(s) },
			"[the panic's value is withheld: scrubbing it of secrets failed: the scrubbing panicked]"},
		{"scrub hangs", func(string) (string, error) { select {} },
			"[the panic's value is withheld: scrubbing it of secrets failed: it took longer than 100ms]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			report(&out, errors.New("token "+secret+" rejected"), []byte("goroutine 1 [running]:\nmain.main()\n"), nil, tc.scrub)
			for _, want := range []string{tc.says, "goroutine 1 [running]:", "volctl crashed"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report says no %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), secret) {
				t.Errorf("report prints the secret:\n%s", out.String())
			}
		})
	}
}

// A panic's value may wrap what a plugin said (an error it answered, a string it returned):
// the report shows its control characters as escapes, as an error is shown, never sends them
// to the terminal; the stack's indenting tabs and its lines stay as they are.
func TestReportEscapesThePanicsText(t *testing.T) {
	var out bytes.Buffer
	report(&out, errors.New("plugin answered \x1b]52;c;cHduZWQ=\a\x1b[2J\u009b31m\rX"),
		[]byte("goroutine 1 [running]:\nmain.main()\n\t/src/main.go:10 +0x1d\n"), nil)
	if i := strings.IndexFunc(out.String(), func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f
	}); i >= 0 {
		t.Errorf("the report prints %q raw to the terminal:\n%q", out.String()[i], out.String())
	}
	for _, want := range []string{`plugin answered \x1b]52;c;cHduZWQ=\a\x1b[2J\u009b31m\rX`, "\n\t/src/main.go:10 +0x1d\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report does not show %q:\n%s", want, out.String())
		}
	}
}
