package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
)

// panicSecret is what a panic in the dashboard carries, and its crash report must not print.
const panicSecret = "dashboard-panic-secret-31c7"

// panickingEngine is fakeEngine whose Dashboard read panics, carrying the secret, as engine
// code a dashboard command runs may: bubbletea runs it in a goroutine of its own.
type panickingEngine struct{ *fakeEngine }

func (p panickingEngine) Dashboard(ctx context.Context, events int) (engine.Dashboard, error) {
	panic("dashboard read held " + panicSecret)
}

// runCrashingDashboard is the child process of TestDashboardPanicIsReportedAsAnyOther: the
// dashboard as volctl runs it (main's crash.Recover, a crash.Redact the engine registered),
// made to panic where VOLCTL_TEST_DASHBOARD_PANIC says.
func runCrashingDashboard(where string) {
	defer crash.Recover()
	crash.Redact(func(s string) (string, error) { return strings.ReplaceAll(s, panicSecret, "[REDACTED]"), nil })
	opts := Options{Engine: fixture(), Refresh: time.Hour, Probe: time.Hour, Now: func() time.Time { return testNow }}
	switch where {
	case "command":
		opts.Engine = panickingEngine{fixture()}
	case "loop":
		// On bubbletea's event loop: the model's Update showing the volume Enter opened,
		// not a command's read.
		opts.Now = func() time.Time {
			if bytes.Contains(debug.Stack(), []byte("tui.(*Model).Update(")) {
				panic("dashboard update held " + panicSecret)
			}
			return testNow
		}
	}
	in, keys := io.Pipe()
	if where == "loop" {
		go func() {
			time.Sleep(500 * time.Millisecond) // the volumes drawn
			keys.Write([]byte("\r"))
		}()
	}
	err := Run(context.Background(), in, os.Stdout, opts)
	if errors.Is(err, crash.ErrPanicked) {
		os.Exit(crash.ExitCode) // what cli's ExitCode makes of it
	}
	os.Exit(0)
}

// A panic inside the dashboard, in a command bubbletea runs (an engine read) or on its event
// loop (the model's Update or View), is reported as any other volctl panic: exit status 70, the
// report on stderr scrubbed by crash.Redact, with what to do. bubbletea recovers such panics
// itself and prints their value to stdout with fmt.Printf, past volctl's scrubbing: the
// secret a panic carries must be on neither stream.
func TestDashboardPanicIsReportedAsAnyOther(t *testing.T) {
	if where := os.Getenv("VOLCTL_TEST_DASHBOARD_PANIC"); where != "" {
		runCrashingDashboard(where)
		return
	}
	t.Parallel()
	for _, where := range []string{"command", "loop"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDashboardPanicIsReportedAsAnyOther$")
			cmd.Env = append(os.Environ(), "VOLCTL_TEST_DASHBOARD_PANIC="+where)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != crash.ExitCode {
				t.Errorf("the dashboard that panicked exited %v, want exit status %d", err, crash.ExitCode)
			}
			for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
				if strings.Contains(out, panicSecret) {
					t.Errorf("%s prints the secret the panic carried:\n%s", name, out)
				}
			}
			// The terminal given back: the alternate screen left, the cursor shown.
			if out := stdout.String(); !strings.Contains(out[strings.LastIndex(out, "\x1b[?1049h")+1:], "\x1b[?1049l") || !strings.HasSuffix(out, "\x1b[?25h") {
				t.Errorf("the terminal is not given back after the panic: stdout ends %q", out[max(0, len(out)-80):])
			}
			for _, want := range []string{"[REDACTED]", "goroutine ", "volctl crashed", "volctl reconcile"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr says no %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

// The commands of a batch and of a sequence, which bubbletea runs itself, are guarded too, and
// the message keeps its type (bubbletea tells a sequence by its unexported type).
func TestGuardReachesTheCommandsOfBatchesAndSequences(t *testing.T) {
	t.Parallel()
	a := func() tea.Msg { return "a" }
	b := func() tea.Msg { return "b" }
	for name, msg := range map[string]tea.Msg{"batch": tea.Batch(a, nil, b)(), "sequence": tea.Sequence(a, nil, b)()} {
		got := guardMsg(msg)
		if reflect.TypeOf(got) != reflect.TypeOf(msg) {
			t.Errorf("%s: guarded message is a %T, want %T", name, got, msg)
			continue
		}
		in, out := reflect.ValueOf(msg), reflect.ValueOf(got)
		for i := range in.Len() {
			orig, _ := in.Index(i).Interface().(tea.Cmd)
			cmd, _ := out.Index(i).Interface().(tea.Cmd)
			switch {
			case orig == nil:
				if cmd != nil {
					t.Errorf("%s: a nil command became one", name)
				}
			case reflect.ValueOf(cmd).Pointer() == reflect.ValueOf(orig).Pointer():
				t.Errorf("%s: command %d is not guarded", name, i)
			case cmd() != orig():
				t.Errorf("%s: guarded command %d answers %v, want %v", name, i, cmd(), orig())
			}
		}
	}
}
