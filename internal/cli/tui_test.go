package cli

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muesli/termenv"

	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/tui"
)

func TestTUIFlags(t *testing.T) {
	tests := []flagCase[TUIOptions]{
		{name: "defaults", want: TUIOptions{Refresh: tui.DefaultRefresh, Probe: tui.DefaultProbe, Events: tui.DefaultEvents}},
		{name: "all flags", args: []string{"--readonly", "--refresh", "500ms", "--probe", "1m", "--events", "50", "--log-file", "/tmp/x.log"},
			want: TUIOptions{ReadOnly: true, Refresh: 500 * time.Millisecond, Probe: time.Minute, Events: 50, LogFile: "/tmp/x.log"}},
		{name: "extra argument", args: []string{"x"}, wantErr: "accepts 0 arg"},
		{name: "bad duration", args: []string{"--refresh", "soon"}, wantErr: "invalid argument"},
	}
	checkFlagCases(t, newCmdTUI, tests, func(_ *testing.T, o TUIOptions) (TUIOptions, error) {
		o.IO, o.StateDir, o.Run, o.Verbose = nil, nil, nil, false // not flags of its own
		return o, nil
	})
}

func TestTUIRun(t *testing.T) {
	tests := []struct {
		name          string
		stdin, stdout bool
		color         bool
		mutate        func(*TUIOptions)
		wantErr       string
		wantCode      int
		wantProfile   termenv.Profile
	}{
		{name: "no terminal at all", wantErr: "volctl tui needs a terminal; use `volctl volume status` (or --json) instead", wantCode: ExitError},
		{name: "piped stdout", stdin: true, wantErr: "needs a terminal", wantCode: ExitError},
		{name: "piped stdin", stdout: true, wantErr: "needs a terminal", wantCode: ExitError},
		{name: "bad refresh", stdin: true, stdout: true, mutate: func(o *TUIOptions) { o.Refresh = 0 },
			wantErr: "--refresh must be positive", wantCode: ExitUsage},
		// A usage error is exit 2 with no terminal too, not "needs a terminal", exit 1.
		{name: "bad refresh, no terminal", mutate: func(o *TUIOptions) { o.Refresh = 0 },
			wantErr: "--refresh must be positive", wantCode: ExitUsage},
		{name: "bad events, piped stdout", stdin: true, mutate: func(o *TUIOptions) { o.Events = -1 },
			wantErr: "--events must be positive", wantCode: ExitUsage},
		{name: "bad probe", stdin: true, stdout: true, mutate: func(o *TUIOptions) { o.Probe = -time.Second },
			wantErr: "--probe must be positive", wantCode: ExitUsage},
		{name: "NO_COLOR: no colour profile", stdin: true, stdout: true, wantProfile: termenv.Ascii},
		{name: "log file that cannot be opened", stdin: true, stdout: true,
			mutate:  func(o *TUIOptions) { o.LogFile = filepath.Join(t.TempDir(), "missing", "x.log") },
			wantErr: "--log-file", wantCode: ExitError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			ios.SetTTY(tt.stdin, tt.stdout, tt.stdout)
			ios.SetColorEnabled(tt.color)
			dir := t.TempDir()
			var ran *tui.Options
			opts := &TUIOptions{
				IO: ios, StateDir: func() (string, error) { return dir, nil },
				Refresh: tui.DefaultRefresh, Probe: tui.DefaultProbe, Events: tui.DefaultEvents,
				Run: func(_ context.Context, _ io.Reader, _ io.Writer, o tui.Options) error { ran = &o; return nil },
			}
			if tt.mutate != nil {
				tt.mutate(opts)
			}
			if expectErr(t, tuiRun(context.Background(), opts), tt.wantErr, tt.wantCode) {
				if ran != nil {
					t.Fatal("the dashboard ran")
				}
				return
			}
			if ran == nil || ran.Engine == nil {
				t.Fatal("the dashboard did not run on an engine")
			}
			if p := ran.Renderer.ColorProfile(); p != tt.wantProfile {
				t.Errorf("colour profile %v, want %v", p, tt.wantProfile)
			}
			if _, err := os.Stat(filepath.Join(dir, "volctl.db")); err != nil {
				t.Errorf("engine not opened on the state dir: %v", err)
			}
		})
	}
}

// --log-file is often a path in /tmp (the help's example was one), where every user may put a
// file first: a symlink there had volctl, as root, append its log to the file it named (one of
// root's: /etc/shadow), a named pipe held the dashboard's start in open(2) for good, and a file
// another user made and left writable to all was appended to, that user reading what volctl
// logged. Each is refused, naming the file and what to do; a file of the user's own is appended to.
func TestTUILogFileIsNotAnotherUsersToPlant(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "shadow")
	if err := os.WriteFile(victim, []byte("root:*:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.log")
	if err := os.WriteFile(theirs, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(theirs, 0o666) // whatever the umask
	ownedByOther := os.Geteuid() == 0 && os.Chown(theirs, 4242, 4242) == nil
	ours := filepath.Join(dir, "ours.log")
	for _, tt := range []struct {
		name, path string
		want       []string // in the error; none: opened
		skip       string
	}{
		{name: "symlink", path: link, want: []string{link, "a symlink", "not followed"}},
		{name: "named pipe", path: fifo, want: []string{fifo, "a named pipe"}},
		{name: "another user's file", path: theirs, want: []string{theirs, "uid 4242", "remove it"},
			skip: map[bool]string{false: "needs root to give the file to another user"}[ownedByOther]},
		{name: "our own file", path: ours},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			type result struct {
				logger *slog.Logger
				closer func()
				err    error
			}
			done := make(chan result, 1)
			go func() {
				l, c, err := tuiLogger(tt.path, true)
				done <- result{l, c, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				if w, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
					defer w.Close() // lets the blocked open go on, and the test end
				}
				t.Fatalf("tuiLogger(%s) still blocked after 10s", tt.path)
			}
			if r.err == nil {
				r.logger.Warn("a warning")
				r.closer()
			}
			if len(tt.want) == 0 {
				if r.err != nil {
					t.Fatalf("tuiLogger(%s), a file of this user's own: %v", tt.path, r.err)
				}
				if b, _ := os.ReadFile(tt.path); !strings.Contains(string(b), "a warning") {
					t.Fatalf("%s holds %q, want the warning appended", tt.path, b)
				}
				return
			}
			if r.err == nil {
				t.Errorf("tuiLogger(%s), %s: opened and written to, want a refusal", tt.path, tt.name)
			} else {
				for _, w := range tt.want {
					if !strings.Contains(r.err.Error(), w) {
						t.Errorf("tuiLogger(%s): %v, want it to say %q", tt.path, r.err, w)
					}
				}
			}
			if b, _ := os.ReadFile(victim); string(b) != "root:*:19000:0:99999:7:::\n" {
				t.Errorf("%s, the symlink's target, now holds %q: the log was written through the symlink", victim, b)
			}
			if fi, err := os.Stat(theirs); err == nil && fi.Size() != 0 {
				t.Errorf("%s, another user's file, now holds %d bytes of volctl's log", theirs, fi.Size())
			}
		})
	}
}
