package cli

import (
	"context"
	"fmt"
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
		o.IO, o.StateDir, o.Run, o.LogLevel = nil, nil, nil, 0 // not flags of its own
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
	// What is planted is planted where another user may write: a directory like /tmp, which is
	// sticky (and the entries then another user's), or a shared one that is not.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
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
				l, c, err := tuiLogger(tt.path, slog.LevelDebug)
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

// Where nobody but root and this user could have put what is at the path, --log-file opens it
// as given: the usual ways to watch a full-screen program's log (/dev/null, /dev/stderr, a
// /proc/self/fd link, a named pipe with a reader, a symlink of the user's own) all worked before
// round 25 and must again. Under sudo, the invoking user's own file in their own directory,
// which only they may write, opens too; a symlink there is still not followed, and what another
// user owns in a sticky directory like /tmp is still refused.
func TestTUILogFileOfTheUsersOwnOpens(t *testing.T) {
	asRoot := os.Geteuid() == 0
	dir := t.TempDir()
	own := filepath.Join(dir, "own.log")
	if err := os.WriteFile(own, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(filepath.Join(dir, "held.log"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	fdLink := fmt.Sprintf("/proc/self/fd/%d", held.Fd())
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	lonely := filepath.Join(dir, "lonely")
	if err := syscall.Mkfifo(lonely, 0o600); err != nil {
		t.Fatal(err)
	}
	// A user's home under sudo: theirs, 0755, only they may write it.
	home := filepath.Join(dir, "home")
	mustMkdir := func(d string, mode os.FileMode) {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	mustMkdir(home, 0o755)
	homeLog, homeLink := filepath.Join(home, "tui.log"), filepath.Join(home, "link.log")
	if err := os.WriteFile(homeLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(own, homeLink); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(dir, "tmp")
	mustMkdir(sticky, os.ModeSticky|0o777)
	stickyLink, stickyFifo := filepath.Join(sticky, "link.log"), filepath.Join(sticky, "fifo.log")
	if err := os.Symlink(own, stickyLink); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(stickyFifo, 0o666); err != nil {
		t.Fatal(err)
	}
	if asRoot {
		for _, p := range []string{home, homeLog, homeLink, stickyLink, stickyFifo} {
			if err := os.Lchown(p, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}
	}
	needsRoot := map[bool]string{false: "needs root to give files to another user"}[asRoot]
	for _, tt := range []struct {
		name, path string
		check      string   // the file that must hold the warning; "" for none to read
		reader     bool     // a reader holds the pipe open
		want       []string // in the error; none: opened
		skip       string
	}{
		{name: "/dev/null", path: "/dev/null"},
		{name: "/dev/stderr", path: "/dev/stderr"},
		{name: "a /proc/self/fd link", path: fdLink, check: held.Name()},
		{name: "a symlink of the user's own in their own directory", path: link, check: own},
		{name: "the user's own named pipe, read", path: fifo, reader: true},
		{name: "the user's own named pipe, not read", path: lonely, want: []string{lonely, "nothing reads it", "start the reader first"}},
		{name: "the invoking user's file in their own directory (sudo)", path: homeLog, check: homeLog, skip: needsRoot},
		{name: "the invoking user's symlink in their own directory (sudo)", path: homeLink, want: []string{homeLink, "a symlink", "not followed", "uid 4242"}, skip: needsRoot},
		{name: "another user's symlink in a sticky directory", path: stickyLink, want: []string{stickyLink, "a symlink", "not followed"}, skip: needsRoot},
		{name: "another user's named pipe in a sticky directory", path: stickyFifo, want: []string{stickyFifo, "a named pipe"}, skip: needsRoot},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip != "" {
				t.Skip(tt.skip)
			}
			var got chan []byte
			if tt.reader {
				r, err := os.OpenFile(tt.path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
				if err != nil {
					t.Fatal(err)
				}
				got = make(chan []byte, 1)
				defer func() {
					select {
					case b := <-got:
						if !strings.Contains(string(b), "a warning") {
							t.Errorf("the pipe's reader got %q, want the warning", b)
						}
					case <-time.After(10 * time.Second):
						t.Error("the pipe's reader got nothing in 10s")
					}
					r.Close()
				}()
				go func() {
					var all []byte
					buf := make([]byte, 4096)
					for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !strings.Contains(string(all), "a warning"); {
						n, _ := r.Read(buf)
						all = append(all, buf[:n]...)
						time.Sleep(5 * time.Millisecond)
					}
					got <- all
				}()
			}
			logger, closer, err := tuiLogger(tt.path, slog.LevelDebug)
			if len(tt.want) > 0 {
				if err == nil {
					closer()
					t.Fatalf("tuiLogger(%s), %s: opened, want a refusal", tt.path, tt.name)
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("tuiLogger(%s): %v, want it to say %q", tt.path, err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("tuiLogger(%s), %s: %v", tt.path, tt.name, err)
			}
			if tt.path != "/dev/stderr" {
				logger.Warn("a warning")
			}
			closer()
			if tt.check != "" {
				if b, _ := os.ReadFile(tt.check); !strings.Contains(string(b), "a warning") {
					t.Errorf("%s holds %q, want the warning appended", tt.check, b)
				}
			}
		})
	}
}

// A path not there yet in a directory every user may write (a sticky /tmp): another user may
// put a symlink at it between the look and the open, and the open, O_CREAT without
// O_NOFOLLOW, followed it: volctl, as root, appended its log to the file the symlink named
// (review25d, at attempt 1571 of a loop). In such a directory the path is opened as one that
// may be planted, a symlink never followed. The race is run for a bounded number of attempts:
// the old code lost it within a few thousand; the new code cannot, its open never follows.
func TestTUILogFileRaceWithAPlantedSymlinkIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	sticky := filepath.Join(dir, "tmp")
	if err := os.Mkdir(sticky, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sticky, "tui.log")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the planter
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.Symlink(victim, path)
			_ = os.Remove(path)
		}
	}()
	defer func() { close(stop); <-done }()
	for attempt := 1; attempt <= 5000; attempt++ {
		f, err := openLogFile(path)
		if err != nil {
			continue
		}
		fi, serr := f.Stat()
		f.Close()
		if serr == nil && os.SameFile(fi, vi) {
			t.Fatalf("attempt %d: openLogFile(%s) opened %s through a symlink planted between the look and the open", attempt, path, victim)
		}
		_ = os.Remove(path)
	}
}

// A descriptor volctl was started with, named /proc/self/fd/N or /dev/fd/N, is the invoking
// user's to hand over: `sudo volctl tui --log-file /dev/stderr 2>>~/tui.log` opened a file that
// user owns and was refused as "another user's" (review25d).
func TestTUILogFileHandedOverByTheInvokingUserOpens(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	file := filepath.Join(t.TempDir(), "tui.log")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(file, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, p := range []string{fmt.Sprintf("/proc/self/fd/%d", held.Fd()), fmt.Sprintf("/dev/fd/%d", held.Fd())} {
		f, err := openLogFile(p)
		if err != nil {
			t.Errorf("openLogFile(%s), a descriptor of uid 4242's file handed over: %v; want it opened", p, err)
			continue
		}
		f.Close()
	}
}
