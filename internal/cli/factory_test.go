package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/tui"
)

// TestStateDirResolution follows the order of docs/architecture.md (Command line): --state-dir, $VOLCTL_STATE_DIR,
// /var/lib/volctl as root, else $XDG_STATE_HOME/volctl.
func TestStateDirResolution(t *testing.T) {
	tests := []struct {
		name string
		flag string
		env  map[string]string
		euid int
		want string
	}{
		{"flag wins", "/srv/flag", map[string]string{"VOLCTL_STATE_DIR": "/srv/env"}, 0, "/srv/flag"},
		{"env", "", map[string]string{"VOLCTL_STATE_DIR": "/srv/env"}, 0, "/srv/env"},
		{"root", "", nil, 0, "/var/lib/volctl"},
		{"user with XDG", "", map[string]string{"XDG_STATE_HOME": "/home/u/.state"}, 1000, "/home/u/.state/volctl"},
		// The XDG spec says a relative path there is invalid, to be ignored: taken relative to
		// the working directory, each directory volctl ran in had a state of its own, and a
		// volume claimed in one was free in the next.
		{"user with a relative XDG", "", map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/u"}, 1000, "/home/u/.local/state/volctl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := iostreams.Test()
			f := NewFactory(ios)
			f.stateDirFlag = tt.flag
			f.lookupEnv = func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			f.geteuid = func() int { return tt.euid }
			got, err := f.StateDir()
			if err != nil || got != tt.want {
				t.Fatalf("StateDir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	// A relative --state-dir is made absolute: it ends up in mount paths.
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	f.stateDirFlag = "rel/state"
	got, err := f.StateDir()
	if err != nil || !filepath.IsAbs(got) {
		t.Fatalf("relative state dir = %q, %v", got, err)
	}
}

// Every way the state dir can fail to open comes out of engine.Open as a *store.DirError for
// that dir, and the factory shows it naming the dir exactly once, in the words it always had.
func TestEngineStateDirErrors(t *testing.T) {
	t.Parallel()
	file := func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(t *testing.T, target, link string) {
		t.Helper()
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	const mkdirFailed = "open state: create state directory: mkdir "
	tests := []struct {
		name string
		// setup makes the case in tmp and returns the state dir to open and the error the
		// command shows for it.
		setup func(t *testing.T, tmp string) (dir, want string)
	}{
		{"not a directory", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			file(t, dir)
			// Before, "not a directory" alone: what stands there and what to do, said.
			return dir, mkdirFailed + dir + ": not a directory (it is a regular file: give a directory with --state-dir or VOLCTL_STATE_DIR, or move it away)"
		}},
		{"a named pipe", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			if err := syscall.Mkfifo(dir, 0o600); err != nil {
				t.Fatal(err)
			}
			return dir, mkdirFailed + dir + ": not a directory (it is a named pipe: give a directory with --state-dir or VOLCTL_STATE_DIR, or move it away)"
		}},
		{"parent not a directory", func(t *testing.T, tmp string) (string, string) {
			parent := filepath.Join(tmp, "file")
			file(t, parent)
			dir := filepath.Join(parent, "state")
			return dir, "state dir " + dir + ": " + mkdirFailed + parent + ": not a directory (" + parent + " is a regular file: give a directory with --state-dir or VOLCTL_STATE_DIR, or move it away)"
		}},
		{"cannot be made (procfs)", func(t *testing.T, tmp string) (string, string) {
			if _, err := os.Stat("/proc/self/mountinfo"); err != nil {
				t.Skipf("no procfs at /proc to refuse the directory: %v", err)
			}
			dir := "/proc/volctl-test-" + filepath.Base(tmp)
			return dir, mkdirFailed + dir + ": no such file or directory"
		}},
		{"unwritable parent", func(t *testing.T, tmp string) (string, string) {
			if os.Geteuid() == 0 {
				t.Skip("root writes through a directory's mode bits")
			}
			parent := filepath.Join(tmp, "ro")
			mkdir(t, parent)
			if err := os.Chmod(parent, 0o500); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(parent, 0o700) })
			dir := filepath.Join(parent, "state")
			return dir, mkdirFailed + dir + ": permission denied (volctl runs as uid " + strconv.Itoa(os.Geteuid()) +
				", which may not make it there: run volctl as root, or give a state dir this user may write with --state-dir or VOLCTL_STATE_DIR)"
		}},
		{"dangling symlink", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			symlink(t, filepath.Join(tmp, "gone"), dir)
			return dir, mkdirFailed + dir + ": file exists (it is a symlink to " + filepath.Join(tmp, "gone") +
				", which does not exist: create that directory, or remove the symlink and volctl makes the state dir there)"
		}},
		{"symlink to a file", func(t *testing.T, tmp string) (string, string) {
			target := filepath.Join(tmp, "file")
			file(t, target)
			dir := filepath.Join(tmp, "state")
			symlink(t, target, dir)
			return dir, mkdirFailed + dir + ": not a directory (it is a symlink to " + target + ", a regular file: give a directory with --state-dir or VOLCTL_STATE_DIR, or point the symlink at a directory)"
		}},
		{"symlink loop", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			symlink(t, "state", dir)
			return dir, mkdirFailed + dir + ": file exists (it is a symlink to state, a loop of symlinks that never reaches a directory: remove or fix the symlink)"
		}},
		{"database is a directory", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			mkdir(t, filepath.Join(dir, store.FileName))
			return dir, "open state: state database " + filepath.Join(dir, store.FileName) + " is a directory, not a regular file: SQLite cannot use it; move it out of the state dir"
		}},
		{"database unreadable (symlink loop)", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			mkdir(t, dir)
			db := filepath.Join(dir, store.FileName)
			symlink(t, store.FileName, db)
			// A symlink, as a link to a database elsewhere is: refused by name, saying what to do,
			// not the stat's "too many levels of symbolic links" alone.
			return dir, "open state: state database " + db + " is a symlink (to \"" + store.FileName + "\"), not a regular file: " +
				"SQLite would keep its write-ahead log beside the target, out of volctl's sight; nothing was opened: " +
				"with no volctl running, move the file it points to (and its -wal and -shm) into its place, or remove the symlink"
		}},
		{"not a database", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			mkdir(t, dir)
			db := filepath.Join(dir, store.FileName)
			if err := os.WriteFile(db, []byte("this is not a database, just text long enough to be read as a header"), 0o600); err != nil {
				t.Fatal(err)
			}
			return dir, "open state " + db + ": not a SQLite database: it does not start with SQLite's header (volctl cannot read it as its state: a damaged file, or another file put there. " +
				"Move it aside with its -wal and -shm and restore a backup of the three (see Backups in docs/architecture.md), or use another --state-dir)"
		}},
		{"lock dir is a file", func(t *testing.T, tmp string) (string, string) {
			dir := filepath.Join(tmp, "state")
			mkdir(t, dir)
			file(t, filepath.Join(dir, "locks"))
			return dir, "lock dir: mkdir " + filepath.Join(dir, "locks") + ": not a directory"
		}},
		{"lock dir is a file, state dir a symlink", func(t *testing.T, tmp string) (string, string) {
			real := filepath.Join(tmp, "real")
			mkdir(t, real)
			file(t, filepath.Join(real, "locks"))
			dir := filepath.Join(tmp, "state")
			symlink(t, real, dir)
			return dir, "state dir " + dir + ": lock dir: mkdir " + filepath.Join(real, "locks") + ": not a directory"
		}},
		{"owned by another user", func(t *testing.T, tmp string) (string, string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root, to give the state dir to another user")
			}
			const nobody = 65534
			dir := filepath.Join(tmp, "state")
			mkdir(t, dir)
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			return dir, "open state: state dir " + dir + " is owned by uid 65534, not by this user (uid 0): " +
				"another user could redirect volctl's mounts through it; chown it to this user or use another --state-dir"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, want := tt.setup(t, t.TempDir())
			e, err := engine.Open(context.Background(), engine.Config{StateDir: dir})
			if err == nil {
				e.Close()
				t.Fatalf("engine.Open(%s) succeeded", dir)
			}
			var de *store.DirError
			if !errors.As(err, &de) || de.Dir != dir {
				t.Errorf("engine.Open(%s) = %q (%T), want a *store.DirError for that dir", dir, err, err)
			}

			ios, _, _, _ := iostreams.Test()
			f := NewFactory(ios)
			f.stateDirFlag = dir
			_, err = f.Engine(context.Background())
			if err == nil {
				t.Fatal("Factory.Engine succeeded")
			}
			if err.Error() != want {
				t.Errorf("Factory.Engine error:\n got %s\nwant %s", err, want)
			}
			if n := strings.Count(err.Error(), dir); n != 1 {
				t.Errorf("the error names the state dir %d times, want once: %s", n, err)
			}
		})
	}
}

// The factory tells an error about the state dir from any other by its type, not by looking
// for the dir's path in the text: another error that happens to contain the path still gets
// the state dir put in front, and a dir error, however wrapped, is shown as it is.
func TestStateDirErrorByType(t *testing.T) {
	const dir = "/srv/state"
	dirErr := &store.DirError{Dir: dir, Err: errors.New("open state: create state directory: mkdir /srv: permission denied")}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"other error naming the dir", errors.New("plugin socket /srv/state/run/mem.sock: connection refused"),
			"state dir /srv/state: plugin socket /srv/state/run/mem.sock: connection refused"},
		{"other error naming a longer path", errors.New("open /srv/state2/x: denied"),
			"state dir /srv/state: open /srv/state2/x: denied"},
		{"other error", errors.New("engine: closed"), "state dir /srv/state: engine: closed"},
		{"dir error", dirErr, "state dir /srv/state: open state: create state directory: mkdir /srv: permission denied"},
		{"wrapped dir error", fmt.Errorf("engine: %w", &store.DirError{Dir: dir, Err: errors.New("lock dir: mkdir /srv/state/locks: not a directory"), Named: true}),
			"engine: lock dir: mkdir /srv/state/locks: not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := stateDirError(dir, tt.err)
			if err.Error() != tt.want {
				t.Errorf("stateDirError:\n got %s\nwant %s", err, tt.want)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("stateDirError(%v) does not wrap it", tt.err)
			}
		})
	}
}

// TestCommandsOpeningTheirOwnEngineNameTheStateDirOnce: the dashboard and the agent open the
// engine themselves, not through the factory, and their errors name the state dir once too.
func TestCommandsOpeningTheirOwnEngineNameTheStateDirOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(dir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	stateDir := func() (string, error) { return dir, nil }
	ios, _, _, _ := iostreams.Test()
	ios.SetTTY(true, true, true)
	runs := map[string]func() error{
		"tui": func() error {
			return tuiRun(context.Background(), &TUIOptions{IO: ios, StateDir: stateDir,
				Refresh: tui.DefaultRefresh, Probe: tui.DefaultProbe, Events: tui.DefaultEvents,
				Run: func(context.Context, io.Reader, io.Writer, tui.Options) error { return nil }})
		},
		"agent": func() error {
			return agentRun(context.Background(), &AgentOptions{IO: ios, StateDir: stateDir, LogFormat: "text"})
		},
	}
	for name, run := range runs {
		err := run()
		if err == nil {
			t.Fatalf("%s with the state dir a file succeeded", name)
		}
		if n := strings.Count(err.Error(), dir); n != 1 {
			t.Errorf("%s: %q names the state dir %d times, want once", name, err, n)
		}
	}
}

// TestStateDirWithAnUnexpandedTildeIsRefused: a "~" is the shell's to expand, and it does
// not in quotes, after "=" in a flag (--state-dir=~/volctl) or in a systemd unit's
// Environment=: volctl took "~/volctl" as a relative path and made a directory named "~" in
// the working directory, a state each directory had its own of, and a "~" a later `rm -rf ~`
// would mistake. It is refused (exit 2), saying what to write; "./~x" or "a/~" are paths as
// any other.
func TestStateDirWithAnUnexpandedTildeIsRefused(t *testing.T) {
	for _, dir := range []string{"~", "~/volctl", "~root/volctl"} {
		for _, viaFlag := range []bool{false, true} {
			f := stateDirGiven(dir, viaFlag)
			got, err := f.StateDir()
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "$HOME") {
				t.Errorf("state dir %q (flag %v): %q, %v; want it refused, exit 2, saying to write $HOME", dir, viaFlag, got, err)
			}
		}
	}
	for _, dir := range []string{"./~x", "a/~", "/tmp/~"} {
		f := NewFactory(nil)
		f.stateDirFlag = dir
		if _, err := f.StateDir(); err != nil {
			t.Errorf("state dir %q: %v", dir, err)
		}
	}
}

// stateDirGiven is a factory given dir as --state-dir, or as VOLCTL_STATE_DIR, the only
// variable set.
func stateDirGiven(dir string, viaFlag bool) *Factory {
	f := NewFactory(nil)
	f.lookupEnv = func(k string) (string, bool) {
		if k == "VOLCTL_STATE_DIR" && !viaFlag {
			return dir, true
		}
		return "", false
	}
	if viaFlag {
		f.stateDirFlag = dir
	}
	return f
}

// TestEmptyStateDirVariableIsRefused: VOLCTL_STATE_DIR set but empty (`VOLCTL_STATE_DIR=$STATE
// volctl volume delete db --yes` in a script whose $STATE is unset) was taken for not set, and
// root's command acted on /var/lib/volctl, the system's state, where --state-dir "" is refused
// for that reason. It is refused (exit 2), naming the variable; --state-dir still wins over it,
// and a variable not set at all still means the default.
func TestEmptyStateDirVariableIsRefused(t *testing.T) {
	f := NewFactory(nil)
	f.geteuid = func() int { return 0 }
	f.lookupEnv = func(k string) (string, bool) { return "", k == "VOLCTL_STATE_DIR" }
	got, err := f.StateDir()
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "VOLCTL_STATE_DIR is set but empty") {
		t.Errorf("VOLCTL_STATE_DIR empty: %q, %v; want it refused, exit 2, naming the variable", got, err)
	}
	f.stateDirFlag = "/srv/state"
	if got, err := f.StateDir(); err != nil || got != "/srv/state" {
		t.Errorf("--state-dir with VOLCTL_STATE_DIR empty: %q, %v; want the flag's", got, err)
	}
	f.stateDirFlag = ""
	f.lookupEnv = func(string) (string, bool) { return "", false }
	if got, err := f.StateDir(); err != nil || got != "/var/lib/volctl" {
		t.Errorf("VOLCTL_STATE_DIR not set, as root: %q, %v; want /var/lib/volctl", got, err)
	}
}

// TestStateDirWithBlanksOrControlsIsRefused: a state dir of blanks (VOLCTL_STATE_DIR=" ", a
// template's padding), one with a blank before it (--state-dir " /srv/state", copied from a
// table) or after it, or with a control character (a newline from `$(cat file)` or a CRLF
// file) was taken as written: " " and " /srv/state" are relative paths, and volctl made a new,
// empty state under the working directory and exited 0 with "No volumes registered", the
// system's state unseen. Each is refused (exit 2), naming where it came from and the
// character; a blank inside a path is a path as any other.
func TestStateDirWithBlanksOrControlsIsRefused(t *testing.T) {
	for _, dir := range []string{" ", "\t", " /srv/state", "/srv/state ", "/srv/state\n", "/srv/a\nb", "/srv/state\r", "/srv/\x1b[31mred"} {
		for _, viaFlag := range []bool{false, true} {
			f, from := stateDirGiven(dir, viaFlag), "VOLCTL_STATE_DIR"
			if viaFlag {
				from = "--state-dir"
			}
			got, err := f.StateDir()
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), from+" ") || strings.ContainsAny(err.Error(), "\n\r\x1b") {
				t.Errorf("state dir %q (%s): %q, %v; want it refused, exit 2, naming %s, the text escaped", dir, from, got, err, from)
			}
		}
	}
	for _, dir := range []string{"/srv/my state", "/srv/état"} {
		f := NewFactory(nil)
		f.stateDirFlag = dir
		if got, err := f.StateDir(); err != nil || got != dir {
			t.Errorf("state dir %q: %q, %v", dir, got, err)
		}
	}
}

// TestStateDirFlagNamesEveryDefault: --state-dir's usage (every command's --help, the man
// pages) names each state dir volctl takes when neither the flag nor VOLCTL_STATE_DIR is
// given, as StateDir resolves it. It said "else $XDG_STATE_HOME/volctl", and for a user
// without XDG_STATE_HOME, as most have, the state dir is $HOME/.local/state/volctl: a newcomer
// without root looked for their volumes in a directory the help named wrongly.
func TestStateDirFlagNamesEveryDefault(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	usage := NewRootCmd(NewFactory(ios)).PersistentFlags().Lookup("state-dir").Usage
	for _, tt := range []struct {
		env     map[string]string
		euid    int
		written string // how the usage writes the state dir StateDir gives
	}{
		{nil, 0, "/var/lib/volctl"},
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, 1000, "$XDG_STATE_HOME/volctl"},
		{map[string]string{"HOME": "/h"}, 1000, "$HOME/.local/state/volctl"},
	} {
		f := NewFactory(ios)
		f.lookupEnv = func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
		f.geteuid = func() int { return tt.euid }
		got, err := f.StateDir()
		if err != nil {
			t.Fatal(err)
		}
		want := strings.NewReplacer("$XDG_STATE_HOME", "/x", "$HOME", "/h").Replace(tt.written)
		if got != want {
			t.Fatalf("StateDir() with %v as uid %d = %q, want %q", tt.env, tt.euid, got, want)
		}
		if !strings.Contains(usage, tt.written) {
			t.Errorf("--state-dir's usage %q does not name %s, the state dir with %v as uid %d", usage, tt.written, tt.env, tt.euid)
		}
	}
}
