package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
