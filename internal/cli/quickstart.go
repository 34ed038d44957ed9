package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
)

// QuickstartOptions are the inputs of `volctl quickstart`.
type QuickstartOptions struct {
	IO     *iostreams.IOStreams
	Logger *slog.Logger
	Now    func() time.Time

	// Keep leaves the temporary state dir (and the plugin's root) behind for inspection.
	Keep bool
	// TempDir is where the temporary directory is made; empty is $TMPDIR.
	TempDir string
	// Self is volctl as the advice to run it through sudo names it (selfForSudo); empty is
	// "volctl".
	Self string
	// Sudo says quickstart runs as root through sudo for another user (SUDO_UID not 0): what
	// --keep leaves is root's, and the commands it advises are printed with sudo before them.
	Sudo bool

	// mounter replaces the kernel's bind mounts in the plugin (tests: a host without mount
	// privileges); afterStep runs after each numbered step (tests: interrupt midway).
	mounter hostpath.Mounter
	// geteuid is os.Geteuid unless a test plays another user: the advice for a claim that cannot
	// mount depends on whether the process is root already.
	geteuid   func() int
	afterStep func(step int)
}

func newCmdQuickstart(f *Factory, runF func(*QuickstartOptions) error) *cobra.Command {
	opts := &QuickstartOptions{IO: f.IO, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "quickstart",
		Short: "Run the volume lifecycle on the built-in plugin, then clean up",
		Long: `Run the whole lifecycle with nothing else installed: start volctl's own hostpath CSI plugin
in this process, register it, create a volume, claim it, write a file through the claim's
mount, show the volume's status, release the claim, delete the volume and deregister the
plugin. Each step shows the command you would type to do it yourself.

Everything happens in a new temporary directory (its own state dir, plugin root and socket),
never in your state dir, and everything is cleaned up at the end, on failure and on Ctrl-C:
mounts, the plugin, the directory. --keep leaves the directory (the volume, the event log)
and prints how to look at it.

Claiming mounts the volume, which needs root (CAP_SYS_ADMIN): without it quickstart stops at
the claim, says so, cleans up and exits 1.`,
		Example: `  sudo volctl quickstart
  sudo volctl quickstart --keep`,
		Args:        exactArgs(0),
		Annotations: map[string]string{ownStateDir: "yes"},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Logger = f.Logger()
			exe, _ := os.Executable()
			opts.Self = selfForSudo(os.Args[0], exe)
			opts.Sudo = ranBySudo(os.Geteuid(), os.Getenv("SUDO_UID"))
			if runF != nil {
				return runF(opts)
			}
			// Output piped into `head` must not kill quickstart halfway with SIGPIPE, leaving
			// its mounts and directory behind: writes then fail quietly and cleanup still runs.
			signal.Ignore(syscall.SIGPIPE)
			defer signal.Reset(syscall.SIGPIPE)
			return quickstartRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "keep the temporary state dir and print how to inspect it")
	return cmd
}

// sudoSecurePath is sudo's usual secure_path: a volctl found there is found by sudo too.
var sudoSecurePath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/snap/bin"}

// selfForSudo names volctl for `sudo ... quickstart`. sudo resets PATH to its secure_path, so
// volctl found through the user's PATH in another directory (the README's
// export PATH="$PWD/bin:$PATH") would be "command not found" under sudo: then it is named by
// its full path (exe). A path typed (bin/volctl) works under sudo as typed.
func selfForSudo(argv0, exe string) string {
	if strings.Contains(argv0, "/") {
		return argv0
	}
	if exe == "" || slices.Contains(sudoSecurePath, filepath.Dir(exe)) {
		return "volctl"
	}
	return exe
}

// ranBySudo says a process of effective uid euid, with SUDO_UID sudoUID, runs as root through
// sudo for another user: sudo sets SUDO_UID to the uid of the user who ran it.
func ranBySudo(euid int, sudoUID string) bool {
	uid, err := strconv.Atoi(sudoUID)
	return euid == 0 && err == nil && uid != 0
}

func (q *quickstart) self() string {
	if q.opts.Self == "" {
		return "volctl"
	}
	return q.opts.Self
}

// The names quickstart uses.
const (
	quickstartPlugin = "hostpath"
	quickstartVolume = "demo"
	quickstartAlloc  = "web-0"
	quickstartNode   = "quickstart"
)

const quickstartSpec = `# A volume for volctl quickstart: created by the hostpath plugin, 1 MiB to 10 MiB,
# claimed by one writer at a time, mounted as a directory.
id           = "demo"
name         = "demo"
type         = "csi"
plugin_id    = "hostpath"
capacity_min = "1MiB"
capacity_max = "10MiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`

// quickstart is one run: where it works and what it started, so cleanup can undo it.
type quickstart struct {
	opts   *QuickstartOptions
	out    io.Writer
	dir    string // the temporary directory holding everything below
	state  string
	root   string
	socket string
	step   int

	mounts      *mountWatch // the plugin's Mounter
	plugin      *hostpath.Plugin
	stopPlugin  context.CancelFunc
	pluginDone  chan error
	engine      *engine.Engine
	deleted     bool // the volume is gone and the plugin deregistered: nothing to keep
	volumeMade  bool // the volume was created: --keep's advice may name it
	interrupted bool
}

func quickstartRun(ctx context.Context, opts *QuickstartOptions) (err error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := checkQuickstartTemp(opts.TempDir); err != nil {
		return err
	}
	sweepQuickstarts(opts.TempDir, opts.IO.ErrOut)
	dir, err := os.MkdirTemp(opts.TempDir, "volctl-quickstart-")
	if err != nil {
		// The directory comes from $TMPDIR (os.TempDir) unless a test gives one: say so, and
		// what to do. Before, a bare "stat /gone/x: no such file or directory"
		// (TestQuickstartWithAMissingTMPDIRNamesIt).
		where := opts.TempDir
		if where == "" {
			where = os.TempDir()
		}
		return fmt.Errorf("quickstart: making its temporary directory in %s ($TMPDIR, else /tmp): %w; set TMPDIR to a directory that exists and that you can write to", where, err)
	}
	// Held until this process exits, however it exits: a later quickstart that can take it
	// finds the directory left by one killed before its cleanup (sweepQuickstarts).
	held, err := markQuickstart(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("quickstart: %w", err)
	}
	defer held.Close()
	q := &quickstart{
		opts: opts, out: opts.IO.Out, dir: dir,
		state:  filepath.Join(dir, "state"),
		root:   filepath.Join(dir, "hostpath"),
		socket: filepath.Join(dir, "hostpath.sock"),
	}
	defer func() {
		if ctx.Err() != nil {
			q.interrupted = true
		}
		gone, kept, cerr := q.cleanup()
		// Once the directory is gone, or kept with its claims released, what the errors say to
		// run about quickstart's state does not hold, and run as printed (with no --state-dir)
		// it acts on the user's own state dir: each says so. Before, only a step's error after
		// a cleanup with no error of its own did: one that failed in part, its directory gone
		// all the same, printed both its own error and the step's as they were
		// (TestQuickstartPartlyFailedCleanupSaysItsAdviceNoLongerApplies), and with --keep the
		// step's advice named the claim the cleanup released, without the kept state dir
		// (TestQuickstartKeepInterruptedAdvisesNothingOnTheUsersState).
		// The cleanup's own error is said whole, interrupted or not: it is what failed.
		moot := func(e error, interrupted bool) error {
			switch {
			case e == nil:
				return e
			case kept:
				return &cleanedUp{err: e, dir: dir, interrupted: interrupted, keptState: q.state, self: q.self(), sudo: q.opts.Sudo}
			case gone:
				return &cleanedUp{err: e, dir: dir, interrupted: interrupted}
			case q.opts.Keep && q.plugin != nil:
				// Kept with a claim left in it: what e says to run acts on that state, and names
				// it, run as the kept lines on stdout say (TestQuickstartKeptWithAFailedReleaseAdvisesTheKeptState).
				return q.onKeptState(e)
			}
			return e
		}
		switch {
		case cerr != nil && err != nil:
			fmt.Fprintf(opts.IO.ErrOut, "Error: %s\n", escapeLines(moot(cerr, false).Error()))
			err = moot(err, q.interrupted)
		case cerr != nil:
			err = moot(cerr, false)
		default:
			err = moot(err, q.interrupted)
		}
	}()
	what := "removed at the end"
	if opts.Keep {
		what = "kept at the end (--keep)"
	}
	fmt.Fprintf(q.out, "volctl quickstart: the whole volume lifecycle against volctl's own CSI plugin,\n"+
		"in a temporary directory that is %s: %s\n", what, dir)
	if err := q.run(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("quickstart: interrupted: %w", err)
		}
		return err
	}
	return nil
}

// cleanedUp is quickstart's error err once its cleanup removed dir, and all it made with it:
// what err says was left (a claim that stands, an intent for `volctl reconcile`) and the
// commands it names for it no longer hold, and run, they would act on the user's own state
// dir. An interruption, and a result that could not be printed, are said without them; any
// other failure as it was, saying that its advice about quickstart's state is moot. Before,
// "Cleaned up: ... is gone." was followed by "the claim stands: `volctl volume release demo
// --alloc web-0` releases it" (TestQuickstartErrorsAfterItsCleanupAdviseNothingOnItsState).
// keptState, set, is the state dir of a --keep run whose claims the cleanup released: the
// directory stays, and the commands err names act on it only with --state-dir.
type cleanedUp struct {
	err         error
	dir         string
	interrupted bool
	keptState   string
	self        string // volctl as this run was named (quickstart.self)
	sudo        bool   // run through sudo: what it kept is root's, read with sudo too
}

func (c *cleanedUp) Error() string {
	gone := fmt.Sprintf("cleaned up: %s is gone, with the volume, claim and plugin it made, so nothing is left to finish or undo", c.dir)
	if c.keptState != "" {
		// Named as the kept lines on stdout name it, sudo and all: without it, the command
		// failed for the user who ran sudo, "permission denied" (TestQuickstartKeptUnderSudoInterruptedAdvisesSudo).
		gone = fmt.Sprintf("kept %s, its claims released as quickstart stopped its plugin, so no claim is left to finish or undo; `%s %s status` shows what is there",
			c.dir, keptSelf(c.self, c.sudo), shellquote.Flag("--state-dir", c.keptState))
	}
	var printing *doneError
	switch {
	case c.interrupted:
		return "quickstart: interrupted; " + gone
	case errors.As(c.err, &printing):
		return fmt.Sprintf("quickstart: writing its output failed: %v; %s", printing.err, gone)
	}
	return fmt.Sprintf("%v (quickstart %s; what this says to run on that state no longer applies)", c.err, gone)
}

func (c *cleanedUp) Unwrap() error { return c.err }

// keptSelf is volctl as a kept run's advice names it: self quoted, after sudo where it ran so.
func keptSelf(self string, sudo bool) string {
	if sudo {
		return "sudo " + shellquote.Arg(self)
	}
	return shellquote.Arg(self)
}

// onKeptState is e, of a --keep run that kept its directory with a claim left in it, with each
// volctl command it advises run as the kept lines say (sudo, volctl as it was named) on the kept
// state dir, and saying the plugin must be started first: bare, they acted on the user's own
// state dir, where a volume "demo" may be the user's.
func (q *quickstart) onKeptState(e error) error {
	with := "`" + keptSelf(q.self(), q.opts.Sudo) + " " + shellquote.Flag("--state-dir", q.state) + " "
	msg := string((&stateDirAdvice{}).rewriteWith([]byte(e.Error()), []byte(with)))
	return &redactedError{err: e, msg: msg + fmt.Sprintf(" (quickstart kept %s with this in it: start its plugin first, as said above, for what this names to run)", q.dir)}
}

// serveCommand is the command that starts the quickstart's plugin as it runs it, through
// volctl (the word that runs it), its words quoted for a shell (the paths are under a temporary
// directory, whose name $TMPDIR chooses).
func (q *quickstart) serveCommand(volctl string) string {
	return volctl + " plugin serve hostpath " + shellquote.Flag("--socket", q.socket) + " " + shellquote.Flag("--root", q.root) + " --node-id " + quickstartNode
}

// begin narrates a numbered step and the commands a user would type for it.
func (q *quickstart) begin(title string, commands ...string) {
	if q.step > 0 && q.opts.afterStep != nil {
		q.opts.afterStep(q.step)
	}
	q.step++
	fmt.Fprintf(q.out, "\n==> %d. %s\n", q.step, title)
	for _, c := range commands {
		fmt.Fprintf(q.out, "$ %s\n", c)
	}
}

func (q *quickstart) run(ctx context.Context) error {
	q.begin("Point volctl at a state dir of its own (yours is not touched)",
		"export VOLCTL_STATE_DIR="+shellquote.Arg(q.state))

	q.begin("Start the built-in hostpath plugin",
		q.serveCommand("volctl")+" &")
	if err := q.startPlugin(ctx); err != nil {
		return err
	}
	fmt.Fprintf(q.out, "Serving %s on %s\n", hostpath.PluginName, q.socket)

	e, err := engine.Open(ctx, engine.Config{StateDir: q.state, Logger: q.opts.Logger})
	if err != nil {
		return fmt.Errorf("quickstart: %w", stateDirError(q.state, err))
	}
	q.engine = e
	// Each step runs the command's own run function on this engine, so quickstart shows what
	// the command shows.
	ios := q.opts.IO
	eng := func(context.Context) (*engine.Engine, error) { return q.engine, nil }

	q.begin("Register it: volctl fingerprints the plugin and probes its health",
		"volctl plugin register --id "+quickstartPlugin+" "+shellquote.Flag("--socket", q.socket))
	if err := pluginRegisterRun(ctx, &PluginRegisterOptions{IO: ios, Engine: eng,
		ID: quickstartPlugin, Type: string(spec.PluginMonolith), Socket: q.socket}); err != nil {
		return err
	}

	specPath := filepath.Join(q.dir, "demo.hcl")
	q.begin("Create a volume from a Nomad volume spec", shellquote.Command("cat", specPath))
	if err := os.WriteFile(specPath, []byte(quickstartSpec), 0o600); err != nil {
		return fmt.Errorf("quickstart: %w", err)
	}
	fmt.Fprint(q.out, quickstartSpec)
	fmt.Fprintf(q.out, "$ %s\n", shellquote.Command("volctl volume create", specPath))
	if err := volumeSubmitRun(ctx, &VolumeSubmitOptions{IO: ios, Engine: eng, ReadFile: os.ReadFile,
		Verb: spec.VerbCreate, Files: []string{specPath}}); err != nil {
		return err
	}
	q.volumeMade = true

	q.begin("Claim it for an alloc: stage and publish, and print where it is mounted",
		fmt.Sprintf("volctl volume claim %s --alloc %s", quickstartVolume, quickstartAlloc))
	if err := volumeClaimRun(ctx, &VolumeClaimOptions{IO: ios, Engine: eng,
		VolumeID: quickstartVolume, Alloc: quickstartAlloc}); err != nil {
		if ce := (*csi.Error)(nil); errors.As(err, &ce) && q.mounts.denied.Load() {
			// The plugin's own words, not the generic hint for the code: the cause is known.
			geteuid := q.opts.geteuid
			if geteuid == nil {
				geteuid = os.Geteuid
			}
			if geteuid() == 0 {
				// Root already: sudo changes nothing (TestQuickstartAsRootWithoutCapabilityIsNotToldToUseSudo).
				return withCode(ExitError, fmt.Errorf("quickstart stopped at the claim: mounting a volume needs CAP_SYS_ADMIN, which this process lacks though it runs as root "+
					"(a container without --privileged, or a user namespace); run it where it may mount: on the host, or in a privileged container\n(%s answered %s: %s)", ce.RPC, ce.Code, ce.Message))
			}
			// The command as it was run, quoted as every other line quickstart prints (a volctl
			// under "My Projects": TestQuickstartSudoAdviceQuotesAVolctlPathWithASpace), its
			// --keep kept (TestQuickstartKeepSudoAdviceKeepsKeep: dropped, the advised run removed
			// what the user asked to keep).
			again := keptSelf(q.self(), true) + " quickstart"
			if q.opts.Keep {
				again += " --keep"
			}
			return withCode(ExitError, fmt.Errorf("quickstart stopped at the claim: mounting a volume needs root (CAP_SYS_ADMIN), "+
				"and this process cannot bind-mount. Run it as root: %s\n(%s answered %s: %s)", again, ce.RPC, ce.Code, ce.Message))
		}
		return err
	}
	cl, err := e.ClaimInfo(ctx, quickstartVolume, quickstartAlloc)
	if err != nil {
		return err
	}
	vol, err := e.Volume(ctx, quickstartVolume)
	if err != nil {
		return err
	}

	file := filepath.Join(cl.TargetPath, "hello.txt")
	q.begin("Write a file through the claim's target: it lands in the volume's directory",
		"echo 'hello from volctl' > "+shellquote.Arg(file))
	if err := os.WriteFile(file, []byte("hello from volctl\n"), 0o644); err != nil {
		return fmt.Errorf("quickstart: writing through the target: %w", err)
	}
	volDir, ok := q.plugin.VolumePath(vol.ExternalID)
	if !ok {
		return fmt.Errorf("quickstart: the plugin does not know volume %q", vol.ExternalID)
	}
	inVolume := filepath.Join(volDir, "hello.txt")
	fmt.Fprintf(q.out, "$ %s\n", shellquote.Command("cat", inVolume))
	got, err := os.ReadFile(inVolume)
	if err != nil {
		return fmt.Errorf("quickstart: the file written through the target is not in the volume: %w", err)
	}
	fmt.Fprint(q.out, string(got))

	q.begin("Show the volume and its claim", "volctl volume status "+quickstartVolume)
	if err := volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: eng, Now: q.opts.Now, ID: quickstartVolume}); err != nil {
		return err
	}

	q.begin("Release the claim: unpublish and unstage",
		fmt.Sprintf("volctl volume release %s --alloc %s", quickstartVolume, quickstartAlloc))
	if err := volumeReleaseRun(ctx, &VolumeReleaseOptions{IO: ios, Engine: eng, VolumeID: quickstartVolume, Alloc: quickstartAlloc}); err != nil {
		return err
	}

	if q.opts.Keep {
		q.begin("Keep the volume and the state for you to look at")
		return nil
	}
	q.begin("Delete the volume and deregister the plugin",
		fmt.Sprintf("volctl volume delete %s --yes", quickstartVolume))
	confirm := (&Factory{IO: ios}).confirm
	if err := volumeDeleteRun(ctx, &VolumeDeleteOptions{IO: ios, Engine: eng, Confirm: confirm, ID: quickstartVolume, Yes: true}); err != nil {
		return err
	}
	fmt.Fprintf(q.out, "$ volctl plugin deregister %s\n", quickstartPlugin)
	if err := pluginDeregisterRun(ctx, &DeregisterOptions{IO: ios, Engine: eng, Confirm: confirm, ID: quickstartPlugin}); err != nil {
		return err
	}
	q.deleted = true
	if q.opts.afterStep != nil {
		q.opts.afterStep(q.step)
	}
	return nil
}

// startPlugin serves the hostpath plugin in this process until cleanup.
func (q *quickstart) startPlugin(ctx context.Context) error {
	if len(q.socket) > spec.MaxSocketPath {
		return fmt.Errorf("quickstart: the socket path %s is %d bytes, longer than a unix socket allows (%d); set TMPDIR to a shorter directory",
			q.socket, len(q.socket), spec.MaxSocketPath)
	}
	q.mounts = &mountWatch{Mounter: q.opts.mounter}
	if q.mounts.Mounter == nil {
		q.mounts.Mounter = hostpath.SystemMounter{}
	}
	p, err := hostpath.New(hostpath.Config{Root: q.root, NodeID: quickstartNode, Logger: q.opts.Logger, Mounter: q.mounts})
	if err != nil {
		return fmt.Errorf("quickstart: %w", err)
	}
	lis, err := hostpath.Listen(q.socket)
	if err != nil {
		return fmt.Errorf("quickstart: %w", err)
	}
	// The plugin outlives an interrupt of the steps: cleanup still needs it to unmount.
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	q.plugin, q.stopPlugin, q.pluginDone = p, stop, make(chan error, 1)
	crash.Go(func() { q.pluginDone <- p.Serve(serveCtx, lis) })
	return nil
}

// cleanup undoes everything the run did, whatever step it reached: claims are released through
// the plugin, the plugin stops, anything still mounted under the directory is unmounted, and
// the directory goes (unless --keep). It runs on a context of its own, so Ctrl-C during the
// steps does not stop the cleanup.
// cleanup releases quickstart's claims, stops its plugin, unmounts what is left and removes its
// directory, or keeps it (--keep); gone says the directory was removed, kept that it was kept
// with every claim released.
func (q *quickstart) cleanup() (gone, kept bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errOut := q.opts.IO.ErrOut
	if q.interrupted {
		fmt.Fprintln(errOut, "Interrupted: cleaning up")
	}
	var errs []error
	released := true // every claim quickstart made is released
	if q.engine != nil {
		if claims, err := q.engine.Claims(ctx); err != nil {
			errs, released = append(errs, err), false
		} else {
			for _, c := range claims {
				if _, err := q.engine.Release(ctx, c.VolumeID, c.Alloc); err != nil {
					errs, released = append(errs, err), false
				}
			}
		}
		if err := q.engine.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if q.stopPlugin != nil {
		q.stopPlugin()
		if err := <-q.pluginDone; err != nil {
			errs = append(errs, fmt.Errorf("hostpath plugin: %w", err))
		}
	}
	// A safety net: nothing may stay mounted, whatever failed above.
	unmountErr := hostpath.UnmountAll(q.dir)
	if unmountErr != nil {
		errs = append(errs, unmountErr)
	}
	switch {
	case q.opts.Keep && q.plugin == nil:
		// Stopped before its plugin served: nothing to look at or use again, and the advice of a
		// kept run named a volume never made and a socket refused
		// (TestQuickstartKeepAfterAnEarlyFailureAdvisesNothingThatFails).
		if err := os.RemoveAll(q.dir); err != nil {
			errs = append(errs, fmt.Errorf("quickstart: removing %s: %w", q.dir, err))
		} else {
			gone = true
			fmt.Fprintf(errOut, "Nothing to keep: quickstart stopped before its plugin served; %s is gone.\n", q.dir)
		}
	case q.opts.Keep:
		kept = released
		// Kept for the user: no later quickstart removes it (sweepQuickstarts).
		if err := os.Remove(filepath.Join(q.dir, quickstartMark)); err != nil {
			errs = append(errs, fmt.Errorf("quickstart: %w", err))
		}
		// Named as this run was (q.self): after `sudo bin/volctl quickstart --keep`, a bare
		// `volctl` is not found unless it is on PATH.
		// Run through sudo, what it kept is root's (0700): its user's shell runs the advice
		// with sudo too. Before, every line failed for them, "permission denied"
		// (TestQuickstartKeptUnderSudoAdvisesCommandsItsUserCanRun).
		self := keptSelf(q.self(), q.opts.Sudo)
		sudo := ""
		if q.opts.Sudo {
			sudo = "sudo "
		}
		fmt.Fprintf(q.out, "\nKept %s. Look at it with:\n", q.dir)
		fmt.Fprintf(q.out, "  %s %s status\n", self, shellquote.Flag("--state-dir", q.state))
		if q.volumeMade {
			fmt.Fprintf(q.out, "  %s %s volume status %s\n", self, shellquote.Flag("--state-dir", q.state), quickstartVolume)
			fmt.Fprintf(q.out, "To use the volume again, start the plugin on the same root first:\n")
		} else {
			fmt.Fprintf(q.out, "To go on, start the plugin on the same root first:\n")
		}
		fmt.Fprintf(q.out, "  %s &\n", q.serveCommand(self))
		fmt.Fprintf(q.out, "Remove it with: %s%s\n", sudo, shellquote.Command("rm -rf", q.dir))
	case unmountErr != nil:
		// Removing the directory could reach through a mount into data elsewhere.
		errs = append(errs, fmt.Errorf("quickstart: %s is left in place because something under it is still mounted", q.dir))
	default:
		if err := os.RemoveAll(q.dir); err != nil {
			errs = append(errs, fmt.Errorf("quickstart: removing %s: %w", q.dir, err))
			break
		}
		gone = true
		if q.deleted {
			fmt.Fprintf(q.out, "\nDone: everything was cleaned up (%s is gone).\n", q.dir)
		} else {
			fmt.Fprintf(errOut, "Cleaned up: %s is gone.\n", q.dir)
		}
	}
	return gone, kept, errors.Join(errs...)
}

// mountWatch is the plugin's Mounter as quickstart runs it: it remembers whether a mount was
// refused for want of privileges (hostpath.IsNoMountPrivilege), which the plugin can only
// say in words over gRPC.
type mountWatch struct {
	hostpath.Mounter
	denied atomic.Bool
}

func (m *mountWatch) BindMount(source, target, carry string, flags uintptr) error {
	err := m.Mounter.BindMount(source, target, carry, flags)
	if hostpath.IsNoMountPrivilege(err) {
		m.denied.Store(true)
	}
	return err
}

// quickstartMark is the file in a quickstart's directory that says a quickstart runs there,
// locked (flock) by that quickstart until its process exits (markQuickstart). Removed when the
// directory is kept (--keep).
const quickstartMark = ".volctl-quickstart"

// markQuickstart makes quickstartMark in dir, locked: made under another name, locked, and
// renamed into place, so that a mark no process holds is always one whose quickstart is gone.
// The kernel drops the lock when the process exits, SIGKILL too. (The directory itself is not
// what is locked: the plugin's socket there locks it, hostpath.Listen.) The lock is held until
// the returned file is closed.
func markQuickstart(dir string) (*os.File, error) {
	tmp := filepath.Join(dir, quickstartMark+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", tmp, err)
	}
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, quickstartMark)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepQuickstarts removes, from tmp ("" is $TMPDIR), the directories of quickstarts killed
// before their cleanup could run (SIGKILL, the OOM killer): their bind mounts,
// the plugin's root and the state dir stayed, mounted, under /tmp for good
// (TestQuickstartRemovesWhatAKilledQuickstartLeft). Only a directory that a quickstart of this
// user made is touched (sweepable: this user's, 0700, in a directory where no other user can
// rename it), and only when it holds a quickstart's mark, a regular file, whose lock no process
// holds: a quickstart running, one kept with --keep, another user's and anything else named
// like one are left. quickstart runs as root, in a /tmp every user writes to: another user's
// directory, or a FIFO as its mark, would have let them hang every quickstart or swap the
// directory for a symlink to what root would then unmount (TestQuickstartSweepTouchesOnlyItsOwn).
// Its mounts are unmounted first, and it is removed only once nothing is mounted under it
// (hostpath.UnmountAll). What it does, and any failure, is said on errOut; a failure does not
// stop this quickstart.
func sweepQuickstarts(tmp string, errOut io.Writer) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm()&0o002 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return // every user may rename what is in it
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "volctl-quickstart-*"))
	for _, dir := range dirs {
		if !sweepable(dir) {
			continue
		}
		// Not blocking in the open: a FIFO as the mark would hold it until a writer came.
		f, err := os.OpenFile(filepath.Join(dir, quickstartMark), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			continue // not a quickstart's, or kept
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // not a mark, or its quickstart is running
			continue
		}
		if err := hostpath.UnmountAll(dir); err != nil {
			fmt.Fprintf(errOut, "Warning: %s, left by a quickstart killed before it cleaned up, is left in place: unmounting what it mounted: %v\n", dir, err)
		} else if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(errOut, "Warning: removing %s, left by a quickstart killed before it cleaned up: %v\n", dir, err)
		} else {
			fmt.Fprintf(errOut, "Removed %s, left by a quickstart killed before it cleaned up (what it mounted unmounted first).\n", dir)
		}
		f.Close()
	}
}

// sweepable reports whether dir may be a directory a quickstart of this user made there
// (os.MkdirTemp: mode 0700): a directory, not a link to one, this user's, which no other
// user may write. With the directory it is in sticky or written by no other user (checked
// by the caller), no other user can rename it or put a link in its place.
func sweepable(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// checkQuickstartTemp refuses the directory quickstart works under (dir, else $TMPDIR, else
// /tmp) where what it makes there would not be what it uses: a relative one, read from the
// working directory by the commands it prints too, or one another user controls, which its
// plugin refuses as a root, its words then advising a --root quickstart has not
// (TestQuickstartTMPDIRErrorsNameTMPDIR).
func checkQuickstartTemp(dir string) error {
	if dir == "" {
		dir = os.TempDir()
	}
	if what := spec.StrayText(dir); what != "" {
		// Its socket's path, made under it, would be refused at step 3 for it, after a
		// directory made and a plugin started
		// (TestQuickstartRefusesATMPDIRHoldingAControlCharacterBeforeItStarts).
		return fmt.Errorf("quickstart: $TMPDIR %s %s, and so would the paths quickstart makes under it; set TMPDIR to a directory whose path has none (or unset it for /tmp)", strconv.Quote(dir), what)
	}
	if !utf8.ValidString(dir) {
		// So would the paths under it, sent to the plugin in CSI's UTF-8 strings: refused at
		// step 5, after a plugin started and a volume made (TestQuickstartRefusesANonUTF8TMPDIRBeforeItStarts).
		return fmt.Errorf("quickstart: $TMPDIR %s is not UTF-8, and so would the paths quickstart makes under it be, which CSI carries in UTF-8 strings; set TMPDIR to a directory whose path is UTF-8 (or unset it for /tmp)", strconv.Quote(dir))
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("quickstart: $TMPDIR is %s, a relative path, which the plugin and the commands it prints would each read from their working directory; set TMPDIR to an absolute path (or unset it for /tmp)", shellquote.Arg(dir))
	}
	refuse := func(what string) error {
		return fmt.Errorf("quickstart: $TMPDIR %s %s: another user could replace what quickstart makes there, and its plugin, as root, mount what they put; set TMPDIR to a directory only you can write to",
			dir, what)
	}
	if pr := pathtrust.Ancestors(dir); pr != nil {
		return refuse(fmt.Sprintf("is reached through %s, which %s", pr.Path, pr.Why))
	}
	// The directory itself, as the walk leaves it to its caller: not a name in it, which any
	// user may make in a /tmp (a symlink named as quickstart's own, refused as the way there:
	// TestQuickstartTempNotRefusedForAnotherUsersNameInStickyTmp).
	fi, err := os.Stat(dir)
	if err != nil {
		return nil // MkdirTemp says what
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
	case !pathtrust.Trusted(st.Uid):
		return refuse(fmt.Sprintf("is owned by uid %d, neither root nor this user", st.Uid))
	case st.Mode&syscall.S_ISVTX == 0 && pathtrust.Writers(st.Mode, st.Gid) != "":
		return refuse(fmt.Sprintf("may be written by %s, and is not sticky", pathtrust.Writers(st.Mode, st.Gid)))
	case st.Mode&syscall.S_ISVTX == 0 && pathtrust.ACLWriter(dir, st.Mode) != "":
		// As the plugin's check of its root reads it (TestQuickstartRefusesAnACLWritableTMPDIRNamingIt).
		return refuse(fmt.Sprintf("may be written by %s through its ACL, and is not sticky", pathtrust.ACLWriter(dir, st.Mode)))
	}
	return nil
}
