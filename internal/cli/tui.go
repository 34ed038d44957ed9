package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/tui"
)

// TUIOptions are the inputs of `volctl tui`.
type TUIOptions struct {
	IO       *iostreams.IOStreams
	StateDir func() (string, error)
	Verbose  bool
	// Run runs the dashboard; tests replace it to see what it would be given.
	Run func(ctx context.Context, in io.Reader, out io.Writer, opts tui.Options) error

	ReadOnly bool
	Refresh  time.Duration
	Probe    time.Duration
	Events   int
	LogFile  string
}

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
			opts.Verbose = f.Verbose()
			if runF != nil {
				return runF(opts)
			}
			return tuiRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.ReadOnly, "readonly", false, "show only: no release, detach, delete or reconcile")
	durationVar(fl, &opts.Refresh, "refresh", tui.DefaultRefresh, "how often the state is re-read")
	durationVar(fl, &opts.Probe, "probe", tui.DefaultProbe, "how often plugins are probed live")
	fl.IntVar(&opts.Events, "events", tui.DefaultEvents, "how many recent events the events view keeps")
	fl.StringVar(&opts.LogFile, "log-file", "", "append engine warnings (and with --verbose, debug logs) to this file (not a symlink, nor another user's file)")
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
	if !opts.IO.IsStdinTTY() || !opts.IO.IsStdoutTTY() {
		return errNoTerminal
	}
	logger, closeLog, err := tuiLogger(opts.LogFile, opts.Verbose)
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
	return withEngine(eng, func() error {
		// Colours are decided here, while the terminal is still ours to ask; the program never
		// queries it afterwards.
		renderer := tui.NewRenderer(opts.IO.Out, opts.IO.ColorEnabled())
		return opts.Run(ctx, opts.IO.In, opts.IO.Out, tui.Options{
			Engine: eng, ReadOnly: opts.ReadOnly, Refresh: opts.Refresh, Probe: opts.Probe,
			Events: opts.Events, Renderer: renderer,
		})
	})
}

// tuiLogger writes to the log file when one is given, else nowhere: stderr is the screen.
func tuiLogger(path string, verbose bool) (*slog.Logger, func(), error) {
	if path == "" {
		return slog.New(slog.DiscardHandler), func() {}, nil
	}
	f, err := openLogFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("tui: --log-file: %w", err)
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(f, logOptions(level))), func() { f.Close() }, nil
}

// openLogFile opens the --log-file to append to, often a path in /tmp, where every user may put
// a file first: a symlink is not followed (volctl, as root, appended its log to the file it
// named), a named pipe does not hold the start (pathtrust.OpenRegular), and a file another user
// owns is refused, since they would read what volctl logs (TestTUILogFileIsNotAnotherUsersToPlant).
func openLogFile(path string) (*os.File, error) {
	f, err := pathtrust.OpenRegular(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if nr := (*pathtrust.NotRegularError)(nil); errors.As(err, &nr) {
		return nil, fmt.Errorf("%w (a symlink is not followed): give the path of a regular file, or of one to create", err)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && !pathtrust.Trusted(st.Uid) {
		f.Close()
		return nil, fmt.Errorf("%s is owned by uid %d, another user, who would read what volctl logs there (one may make it first in a directory every user may write, such as /tmp): "+
			"remove it, or give a path in a directory only you may write", path, st.Uid)
	}
	return f, nil
}
