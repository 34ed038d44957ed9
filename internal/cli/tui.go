package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/tui"
)

// TUIOptions are the inputs of `volctl tui`.
type TUIOptions struct {
	IO       *iostreams.IOStreams
	StateDir func() (string, error)
	LogLevel slog.Level // the --log-file's (Factory.LogLevel's): warn unless --verbose or VOLCTL_LOG says otherwise
	// Run runs the dashboard; tests replace it to see what it would be given.
	Run func(ctx context.Context, in io.Reader, out io.Writer, opts tui.Options) error

	// Advice rewrites the volctl commands the dashboard shows to carry the --state-dir given;
	// nil when none was.
	Advice func(string) string

	ReadOnly bool
	Refresh  time.Duration
	Probe    time.Duration
	Events   int
	LogFile  string
}

// tuiPeriodBounds hold tui --refresh and --probe: each tick reads the state, or probes every
// plugin, and below the least they ran back to back.
var (
	tuiRefreshBounds = spec.DurationBounds{Least: 100 * time.Millisecond, Most: 24 * time.Hour, Why: "reading the state more often keeps volctl and the database busy"}
	tuiProbeBounds   = spec.DurationBounds{Least: 100 * time.Millisecond, Most: 24 * time.Hour, Why: "probing more often keeps volctl and the plugins busy"}
)

func newCmdTUI(f *Factory, runF func(*TUIOptions) error) *cobra.Command {
	opts := &TUIOptions{IO: f.IO, StateDir: f.StateDir, Run: tui.Run}
	cmd := &cobra.Command{
		Use:   "tui",
		Short: "Full-screen dashboard of volumes, claims, plugins and events",
		Long: `A live, full-screen view of this host's volumes, claims and mounts, plugins and recent
events. The store is re-read every --refresh and plugins are probed every --probe, neither
blocking the screen. Enter shows everything about the selected row, / filters, s and S sort,
? lists every key. Release (x), detach (d), forced detach (F) and delete (D) act on the
selected claim or volume, and reconcile (R) on everything, after a confirmation; --readonly
turns them off. The event log is also volctl events, for scripts.

It needs a terminal on stdin and stdout; for scripts use ` + "`volctl volume status`" + ` (or --json).
NO_COLOR turns colour off; the selected row keeps its "> " marker. Engine warnings would tear
the screen, so they go to --log-file, or nowhere.`,
		Example: `  volctl tui
  volctl tui --readonly --refresh 5s
  NO_COLOR=1 volctl tui --log-file ~/volctl-tui.log --verbose`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.LogLevel = f.LogLevel(slog.LevelWarn)
			opts.Advice = f.advise
			if runF != nil {
				return runF(opts)
			}
			return tuiRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.ReadOnly, "readonly", false, "show only: no release, detach, delete or reconcile")
	boundedDurationVar(fl, &opts.Refresh, "refresh", tui.DefaultRefresh, tuiRefreshBounds, "how often the state is re-read, 100ms to 24h")
	boundedDurationVar(fl, &opts.Probe, "probe", tui.DefaultProbe, tuiProbeBounds, "how often plugins are probed live, 100ms to 24h")
	intVar(fl, &opts.Events, "events", "", tui.DefaultEvents, "how many recent events the events view keeps")
	fl.StringVar(&opts.LogFile, "log-file", "", "append engine warnings (and with --verbose, debug logs) to this file, pipe or terminal (where another user may write, only a regular file of your own)")
	return cmd
}

// errNoTerminal is what scripts get: exit 1 and where to go instead.
var errNoTerminal = errors.New("volctl tui needs a terminal; use `volctl volume status` (or --json) instead")

// tuiRun checks the options and the terminal, opens the engine with a logger that cannot
// write over the screen, decides the colours, and runs the dashboard until the user quits.
func tuiRun(ctx context.Context, opts *TUIOptions) error {
	// The flags first: a usage error is exit 2 with or without a terminal (checked after it,
	// `volctl tui --refresh 0` in a script exited 1, "needs a terminal").
	switch {
	case opts.Refresh <= 0:
		return usageError("tui: --refresh must be positive, got %s", opts.Refresh)
	case opts.Probe <= 0:
		return usageError("tui: --probe must be positive, got %s", opts.Probe)
	case opts.Events <= 0:
		return usageError("tui: --events must be positive, got %d", opts.Events)
	}
	if opts.LogFile != "" {
		if problem := writtenPathProblem("--log-file", opts.LogFile); problem != "" {
			return usageError("tui: %s", problem)
		}
	}
	if !opts.IO.IsStdinTTY() || !opts.IO.IsStdoutTTY() {
		return errNoTerminal
	}
	logger, closeLog, err := tuiLogger(opts.LogFile, opts.LogLevel)
	if err != nil {
		return err
	}
	defer closeLog()
	dir, err := opts.StateDir()
	if err != nil {
		return err
	}
	eng, err := engine.Open(ctx, engine.Config{StateDir: dir, Logger: logger})
	if err != nil {
		return stateDirError(dir, err)
	}
	// Closed after a normal return only (withEngine): a panic's report is scrubbed with it open.
	return withEngine(opts.IO, eng, func() error {
		// Colours are decided here, while the terminal is still ours to ask; the program never
		// queries it afterwards.
		renderer := tui.NewRenderer(opts.IO.Out, opts.IO.ColorEnabled())
		return opts.Run(ctx, opts.IO.In, opts.IO.Out, tui.Options{
			Engine: eng, ReadOnly: opts.ReadOnly, Refresh: opts.Refresh, Probe: opts.Probe,
			Events: opts.Events, Renderer: renderer, Advice: opts.Advice,
		})
	})
}

// tuiLogger writes to the log file when one is given, else nowhere: stderr is the screen.
func tuiLogger(path string, level slog.Level) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.DiscardHandler), func() {}, nil
	}
	f, err := openLogFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("tui: --log-file: %w", err)
	}
	return slog.New(slog.NewTextHandler(f, logOptions(level))), func() { f.Close() }, nil
}

// openLogFile opens the --log-file to append to. It is often a path in /tmp, where every user
// may put a file first, and volctl often runs as root: there a symlink is not followed (volctl
// appended its log to the file it named), a named pipe is refused (its planter reads the log)
// and so is a file another user owns, who would read what volctl logs
// (TestTUILogFileIsNotAnotherUsersToPlant). Where nobody but root and this user could have put
// the thing at path (no directory on the way another user may write, nor its own directory,
// even sticky: a path not there yet in /tmp may be a symlink by the open; no entry of another
// user's), it is opened as given: /dev/null, /dev/stderr, /proc/self/fd/2, a terminal, the
// user's own named pipe with a reader, a symlink of their own (TestTUILogFileOfTheUsersOwnOpens).
// In a directory of another user's that only they may write (sudo volctl tui --log-file
// ~/tui.log), that user's regular file, or a new one, is opened, nothing else.
func openLogFile(path string) (*os.File, error) {
	var dir syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(path), &dir); err == nil && !pathtrust.Trusted(dir.Uid) {
		return openLogFileIn(path, dir.Uid)
	}
	planted := ""
	if pr := pathtrust.Ancestors(path); pr != nil {
		planted = fmt.Sprintf("%s %s", pr.Path, pr.Why)
	} else if pathtrust.OthersMayWrite(dir.Mode, dir.Gid) || pathtrust.ACLWriter(filepath.Dir(path), dir.Mode) != "" {
		// A directory every user may write, sticky (/tmp): Ancestors lets it be, but whoever
		// may write it can put a symlink at a path not there yet between a look and the open
		// (TestTUILogFileRaceWithAPlantedSymlinkIsNotFollowed).
		planted = "its directory may be written by other users"
	} else if fi, err := os.Lstat(path); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && !pathtrust.Trusted(st.Uid) {
			planted = fmt.Sprintf("it is owned by uid %d, another user", st.Uid)
		}
	}
	if planted != "" {
		return openLogFileIn(path, uint32(os.Geteuid()))
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	switch {
	case errors.Is(err, unix.ENXIO):
		// A named pipe (or a socket) nobody has open to read: a blocking open would wait for good.
		return nil, fmt.Errorf("%s: nothing reads it (a named pipe opens for writing only once a reader has it open): start the reader first, such as cat %s, or give a file", path, path)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// Logged lines wait for a slow reader of a pipe or terminal rather than being dropped.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if err := logFileKind(f, path, uint32(os.Geteuid())); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openLogFileIn opens path where someone other than root and this user may have put what is
// there (owner, the directory's owner, or anyone who may write a directory on the way): only a
// regular file of owner's, root's or this user's, not through a symlink, is opened.
func openLogFileIn(path string, owner uint32) (*os.File, error) {
	f, err := pathtrust.OpenRegular(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if nr := (*pathtrust.NotRegularError)(nil); errors.As(err, &nr) {
		why := "another user may write its directory, or one on the way, or owns it"
		if pr := pathtrust.Ancestors(path); pr != nil {
			why = fmt.Sprintf("%s %s", pr.Path, pr.Why)
		} else if owner != uint32(os.Geteuid()) {
			why = fmt.Sprintf("its directory is uid %d's", owner)
		}
		return nil, fmt.Errorf("%w, where another user could have put it (%s), so a symlink is not followed: give the path of a regular file, or of one to create, in a directory only you may write", err, why)
	}
	if err != nil {
		return nil, err
	}
	if err := logFileKind(f, path, owner); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// handedOverFD reports whether path names a descriptor volctl was started with (/dev/stderr,
// /proc/self/fd/N): whoever started volctl opened it and handed it over (`sudo volctl tui
// --log-file /dev/stderr 2>>~/tui.log`), so its owner, the invoking user, is not a stranger
// to refuse (review25d).
func handedOverFD(path string) bool {
	switch {
	case path == "/dev/stdout", path == "/dev/stderr":
		return true
	case strings.HasPrefix(path, "/proc/self/fd/"), strings.HasPrefix(path, "/dev/fd/"):
		_, err := strconv.Atoi(path[strings.LastIndexByte(path, '/')+1:])
		return err == nil
	}
	return false
}

// logFileKind refuses an opened log file that is not a regular file, named pipe or character
// device, or a file or pipe neither root's, this user's nor owner's: its owner would read
// what volctl logs, and may have put it where volctl looked.
func logFileKind(f *os.File, path string, owner uint32) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	m := fi.Mode()
	if !m.IsRegular() && m&fs.ModeNamedPipe == 0 && m&fs.ModeCharDevice == 0 {
		return fmt.Errorf("%s is %s: give the path of a regular file, a named pipe or a terminal", path, pathtrust.FileKind(m))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && m&fs.ModeCharDevice == 0 && !pathtrust.Trusted(st.Uid) && st.Uid != owner && !handedOverFD(path) {
		return fmt.Errorf("%s is owned by uid %d, another user, who would read what volctl logs there (one may make it first in a directory every user may write, such as /tmp): "+
			"remove it, or give a path in a directory only you may write", path, st.Uid)
	}
	return nil
}
