package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/nomadcorpus"
	"github.com/volctl/volctl/internal/noquery"
	"github.com/volctl/volctl/internal/testproc"
)

// TestMain lets testscript run this test binary as the volctl command.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) != "volctl" { // the test binary, not a volctl it runs
		// What the tests start and mount goes with a test binary that dies (internal/testproc).
		testproc.Start()
	}
	noquery.Restore() // main.go imports it: the test binary's output goes to os.Stdout too
	// Under -race every process sleeps 1 s before it exits (the race runtime's default
	// atexit_sleep_ms). The tests here start hundreds of volctl processes; the ones they start
	// inherit this and exit at once. (It does not change this process: GORACE is read at start.)
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	if filepath.Base(os.Args[0]) != "volctl" && signal.Ignored(syscall.SIGHUP) {
		// The tests run under nohup (or another runner that ignores SIGHUP): an ignored signal
		// stays ignored across exec, so every volctl they start would begin with SIGHUP ignored,
		// which volctl honours by design (stopContext), and the tests of SIGHUP's clean stop
		// would wait for an agent that never stops. Caught here instead, it is reset to its
		// default in each process started, as on a terminal; this process still ignores it.
		// Not in a volctl this binary runs as (testscript), whose disposition is the test's.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
	testscript.Main(cleanBench{m}, map[string]func(){
		"volctl": func() {
			execRaceBuilt()
			testRetry()
			os.Exit(run())
		},
	})
}

// Test-only retry waits. In a volctl's environment (this test binary run as volctl), each is the
// first wait between tries of a retryable RPC, the cap being eight times it: commandRetryEnv for
// a command's (engine.DefaultRetry: 250 ms, 500 ms, 1 s by default, 1.75 s per command against a
// plugin answering UNAVAILABLE), agentRetryEnv for the agent's (agent.Retry: 15.5 s per RPC).
// The number of tries is kept. A test sets one only where what it proves (tried that many
// times, then left for reconcile or counted as failed, the error kept) does not depend on the
// waits' length, whose growth and cap internal/engine's and internal/agent's tests prove.
// TestScripts sets commandRetryEnv for every script.
const (
	commandRetryEnv = "VOLCTL_TEST_RETRY_BASE"
	agentRetryEnv   = "VOLCTL_TEST_AGENT_RETRY_BASE"
)

// testRetry applies commandRetryEnv and agentRetryEnv to this process, when set.
func testRetry() {
	setRetryBase(commandRetryEnv, &engine.DefaultRetry)
	setRetryBase(agentRetryEnv, &agent.Retry)
}

func setRetryBase(name string, p *engine.RetryPolicy) {
	v := os.Getenv(name)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a positive duration\n", name, v)
		os.Exit(2)
	}
	p.Base, p.Max = d, 8*d
}

// The volctl commands the tests here start are many (600 processes for the scripts alone, as
// many again for the crash, race and leak tests), and under -race a process spends about 60 ms
// of CPU on the race runtime's start before volctl runs (its shadow memory's page faults) and
// runs its command about three times slower: under -race, commands that end by themselves run
// from this package's test binary built without it (scriptVolctl, shortVolctl), but for the
// commands that live on beside others, `agent`, `plugin serve` and `tui`, which replace
// themselves with this race-built binary (execRaceBuilt). What runs without the race detector
// is one command's own code, which internal/cli's and internal/engine's tests run in process
// under -race; what the agents and plugins do while commands come and go is still race-checked.
const raceVolctlEnv = "VOLCTL_TEST_RACE_VOLCTL" // the race-built volctl, in a script's environment

// scriptVolctl returns the directory of a volctl built as this package's test binary without
// -race, once per test process, or "" when this binary is not race-built (it is that volctl).
func scriptVolctl(t testing.TB) string {
	if !raceBuilt {
		return ""
	}
	args := scriptBuildArgs()
	return filepath.Dir(builtOnce(t, strings.Join(args, " "), ".", "volctl", args, nil))
}

// scriptBuildArgs are the go command's arguments for scriptVolctl's build.
func scriptBuildArgs() []string {
	args := []string{"test", "-c"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" && s.Value != "" {
				args = append(args, "-tags", s.Value) // a script may want what they compile in
			}
		}
	}
	return args
}

// prebuild starts, when the whole package runs (no -test.run, no -test.list), the builds its
// tests will ask for, one after the other in the background: scriptVolctl's (under -race),
// then buildVolctl's with failpoints and without. The tests that run first are the ones not
// parallel (TestCrashAtRandomMoments, which waits for scriptVolctl's build anyway), alone,
// each on one core; the builds take the other. Before, each build ran when a test first asked
// for it, in that test's time: in base runs at a load of 20, the failpoints build made
// TestCrashTakeBackAfterTheSizeWasAsked, then not parallel, take 168 s of the package's wall.
// Each build is still the one builtOnce makes once per process (same key): a test that wants
// one before it is done waits for it, and one that failed fails that test with the go
// command's output. The returned function waits for the builds, so that the directory they
// go to is removed after them (waitPrebuilt).
func prebuild() {
	run, list := flag.Lookup("test.run"), flag.Lookup("test.list")
	if run == nil || run.Value.String() != "" || (list != nil && list.Value.String() != "") {
		return
	}
	done := make(chan struct{})
	prebuilt = done
	go func() {
		defer close(done)
		var builds [][]string
		if raceBuilt {
			builds = append(builds, scriptBuildArgs())
		}
		builds = append(builds, volctlBuildArgs(failpointsTag), volctlBuildArgs())
		for _, args := range builds {
			_, _ = buildOnce(strings.Join(args, " "), ".", "volctl", args, nil)
		}
	}()
}

// prebuilt is closed once prebuild's builds are done; nil when it started none.
var prebuilt chan struct{}

// waitPrebuilt waits for prebuild's builds, if it started any. TestCrashAtRandomMoments waits
// for them before its rounds: its kills, a few milliseconds after a start, are meant for
// commands running on a machine this package leaves quiet, not beside a build.
func waitPrebuilt() {
	if prebuilt != nil {
		<-prebuilt
	}
}

// shortVolctl returns the volctl the tests here run for a command that ends by itself (a
// claim, a status, a reconcile), as the scripts do: under -race, this package's test binary
// built without it (scriptVolctl), with $VOLCTL_TEST_RACE_VOLCTL set in this process's
// environment, which the commands inherit, so that one asked to run the agent, a plugin server
// or the dashboard replaces itself with the race-built binary (execRaceBuilt); otherwise
// "volctl", this test binary. The race detector sees one process: what these tests race and
// kill is processes, which it cannot see, and a command's own code runs under it in
// internal/cli's and internal/engine's tests.
func shortVolctl(t testing.TB) string {
	t.Helper()
	dir := scriptVolctl(t)
	if dir == "" {
		return "volctl"
	}
	raceSelf.once.Do(func() {
		raceSelf.bin, raceSelf.err = exec.LookPath("volctl")
		if raceSelf.err == nil {
			raceSelf.err = os.Setenv(raceVolctlEnv, raceSelf.bin)
		}
	})
	if raceSelf.err != nil {
		t.Fatalf("the race-built volctl for long-lived commands: %v", raceSelf.err)
	}
	return filepath.Join(dir, "volctl")
}

// shortPath is $PATH with shortVolctl's directory first, for a command a shell finds by name.
func shortPath(t testing.TB) string {
	t.Helper()
	if bin := shortVolctl(t); bin != "volctl" {
		return filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	}
	return os.Getenv("PATH")
}

// raceSelf is this race-built test binary as $PATH names it "volctl" (shortVolctl).
var raceSelf struct {
	once sync.Once
	bin  string
	err  error
}

// execRaceBuilt replaces a script's volctl built without -race with the race-built one
// ($VOLCTL_TEST_RACE_VOLCTL) when it runs a command that lives on beside others.
func execRaceBuilt() {
	bin := os.Getenv(raceVolctlEnv)
	if bin == "" || raceBuilt || !longLived(os.Args[1:]) {
		return
	}
	err := syscall.Exec(bin, append([]string{"volctl"}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", bin, err)
	os.Exit(2)
}

// longLived reports whether volctl's arguments run the agent, a plugin server or the
// dashboard: the first word not a flag is agent or tui, or plugin followed by serve.
func longLived(args []string) bool {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	switch {
	case len(words) == 0:
		return false
	case words[0] == "agent", words[0] == "tui":
		return true
	}
	return len(words) > 1 && words[0] == "plugin" && words[1] == "serve"
}

// cleanBench removes the volctl the benchmarks built (benchVolctl) once the tests have run.
type cleanBench struct{ m *testing.M }

func (c cleanBench) Run() int {
	if !flag.Parsed() {
		flag.Parse() // as m.Run would: prebuild reads -test.run
	}
	prebuild()
	code := c.m.Run()
	waitPrebuilt()
	if bench.dir != "" {
		os.RemoveAll(bench.dir)
	}
	return code
}

// TestScripts runs testdata/script/*.txtar against the real command.
// Conditions: [root] (euid 0), [mount] (bind mounts work here) and [corpus] (the Nomad spec
// corpus is at $SHARED/compat/nomad-specs; its absence fails under CI=true). Commands beyond
// testscript's own: exitcode, waitfile and memplugin (see each one's doc).
// Variables: SHARED (the ../shared folder beside the project), STATE (a fresh state dir,
// also exported as VOLCTL_STATE_DIR).
func TestScripts(t *testing.T) {
	t.Parallel()
	shared, err := filepath.Abs(filepath.Join("..", "..", "..", "shared"))
	if err != nil {
		t.Fatal(err)
	}
	// Under -race, `exec volctl` finds the volctl built without it first (scriptVolctl).
	var path, raceVolctl string
	if dir := scriptVolctl(t); dir != "" {
		if raceVolctl, err = exec.LookPath("volctl"); err != nil {
			t.Fatal(err)
		}
		path = dir + string(os.PathListSeparator) + os.Getenv("PATH")
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		// Scripts put plugin sockets in $WORK: keep it short whatever $TMPDIR is.
		WorkdirRoot:         hostpathtest.ShortDir(t),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			state := filepath.Join(env.WorkDir, "state")
			env.Setenv("SHARED", shared)
			env.Setenv("STATE", state)
			env.Setenv("VOLCTL_STATE_DIR", state)
			env.Setenv("NO_COLOR", "1")
			env.Setenv(commandRetryEnv, "10ms")
			if path != "" {
				env.Setenv("PATH", path)
				env.Setenv(raceVolctlEnv, raceVolctl)
			}
			// Mounts must not outlive a script, even one that fails before releasing its
			// claims: unmount whatever is left under its work dir before the dir is removed.
			env.Defer(func() {
				if err := hostpath.UnmountAll(env.WorkDir); err != nil {
					env.T().Log("cleaning up mounts:", err)
				}
			})
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			case "mount":
				return hostpathtest.CanMount() == nil, nil
			case "corpus":
				// The Nomad spec corpus beside the checkout: scripts that need it skip
				// without it, except under CI=true, where it must be present.
				_, err := nomadcorpus.Find()
				if err != nil && nomadcorpus.Required() {
					return false, fmt.Errorf("%v (CI=true: the corpus is required)", err)
				}
				return err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":  cmdWaitFile,
			"exitcode":  cmdExitCode,
			"memplugin": cmdMemPlugin,
		},
	})
}

// cmdExitCode runs a command and checks its exact exit status: exitcode N volctl ARGS...
// Its stdout and stderr are then checked with the usual stdout/stderr commands.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdWaitFile waits for a path (a plugin's socket) to appear: waitfile PATH [SECONDS].
// Without SECONDS it waits as long as something may still make the path: it fails at once
// when the background command started last (the agent or plugin server that makes it) has
// exited without it, and only after waitFileBackstop otherwise. A fixed 10 s was not enough
// on a loaded machine (three race-built processes start before a plugin's socket appears),
// and a test proves the path appears, not how fast. '! waitfile' waits for it to go.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile PATH [SECONDS]")
	}
	limit, maker := waitFileBackstop, (*exec.Cmd)(nil)
	if len(args) == 2 {
		s, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit = time.Duration(s) * time.Second
	} else if bg := ts.BackgroundCmds(); len(bg) > 0 && !neg {
		maker = bg[len(bg)-1]
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(limit)
	for {
		// Whether the maker had exited is read before the path: a path made just before
		// its exit is seen.
		exited := maker != nil && maker.Process.Signal(syscall.Signal(0)) != nil
		_, err := os.Stat(path)
		exists := err == nil
		if exists != neg {
			return
		}
		if exited {
			ts.Fatalf("%s did not appear, and the background command that would make it (%s) exited (wait for it to see its output)",
				path, strings.Join(maker.Args, " "))
		}
		if time.Now().After(deadline) {
			if neg {
				ts.Fatalf("%s still exists after %v", path, limit)
			}
			ts.Fatalf("%s did not appear within %v", path, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFileBackstop bounds a waitfile whose maker still runs (or that has none: a memplugin
// serves in this process): well past what a loaded machine takes, well within go test's
// -timeout, so a hung maker fails the script with its name.
const waitFileBackstop = 2 * time.Minute
