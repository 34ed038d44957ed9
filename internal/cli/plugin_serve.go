package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// newCmdPluginServe is the parent of volctl's built-in plugins.
func newCmdPluginServe(f *Factory) *cobra.Command {
	return parentCmd("serve", "Serve one of volctl's built-in CSI plugins", "", newCmdPluginServeHostpath(f, nil))
}

// PluginServeHostpathOptions are the inputs of `volctl plugin serve hostpath`.
type PluginServeHostpathOptions struct {
	IO     *iostreams.IOStreams
	Logger *slog.Logger        // --verbose: one debug line per RPC, secrets redacted
	Getenv func(string) string // for CSI_ENDPOINT

	Socket       string
	Root         string
	NodeID       string
	EnableAttach bool
	MaxVolumes   int64
}

func newCmdPluginServeHostpath(f *Factory, runF func(*PluginServeHostpathOptions) error) *cobra.Command {
	opts := &PluginServeHostpathOptions{IO: f.IO, Getenv: os.Getenv}
	cmd := &cobra.Command{
		Use:   "hostpath --socket PATH --root DIR --node-id ID",
		Short: "Serve the directory-backed CSI plugin",
		Long: `Serve volctl's own CSI plugin, hostpath.csi.volctl.dev, on a unix socket until interrupted.

It is a monolith (controller and node): volumes are directories under --root, snapshots and
clones are copies, expansion records the new size, NodeStageVolume bind-mounts the volume on
the staging path and NodePublishVolume bind-mounts that on the target (read-only when asked).
Block volumes are refused. Mounting needs root (CAP_SYS_ADMIN); without it the node RPCs answer
FAILED_PRECONDITION. State lives under --root and survives a restart.

--socket takes a path or unix://PATH; without it, $CSI_ENDPOINT is used. A stale socket (one
nothing listens on) is replaced; if another plugin is listening, serve refuses to start. A socket
directory another user owns or may write (a sticky one such as /tmp aside), or reached through one,
is refused: they could take the socket's name while the plugin serves. --node-id is sent to
every CO and recorded in the volumes' topology: one past the CSI spec's 256 bytes, or holding a
control or format character (an escape sequence, a bidi override, a zero width space) or a space
other than U+0020, is refused.
SIGINT, SIGTERM or SIGHUP (unless ignored, as under nohup) stops it and removes the socket.
A panic in an RPC's handler ends it with exit status 70 (the caller's RPC fails UNAVAILABLE and
is retried once it is started again; its mounts stay), rather than serving on with its state
in doubt.`,
		Example: `  volctl plugin serve hostpath --socket /run/volctl/hostpath.sock --root /var/lib/volctl-hostpath --node-id $(hostname)
  CSI_ENDPOINT=unix:///run/csi/hp.sock volctl plugin serve hostpath --root /srv/volumes --node-id n1 --enable-attach`,
		Args: exactArgs(0),
		RunE: runOpts(opts, func([]string) { opts.Logger = f.Logger() }, runF, pluginServeHostpathRun),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Socket, "socket", "", "unix socket to serve on: PATH or unix://PATH (default $CSI_ENDPOINT)")
	fl.StringVar(&opts.Root, "root", "", "directory holding the volumes, snapshots and the plugin's state (required)")
	fl.StringVar(&opts.NodeID, "node-id", "", "node ID reported by NodeGetInfo and in the volumes' topology (required)")
	fl.BoolVar(&opts.EnableAttach, "enable-attach", false, "offer ControllerPublishVolume and require its publish_context in NodeStageVolume")
	intVar(fl, &opts.MaxVolumes, "max-volumes", "", 0, "max volumes per node reported by NodeGetInfo and enforced by ControllerPublishVolume (0 = unset)")
	// Checked where the docs test parses too (requiredFlag): the run's own check below keeps
	// an empty value given (--root ''), and --socket, which CSI_ENDPOINT may stand for.
	requiredFlag(cmd, "root", serveRootRequired)
	requiredFlag(cmd, "node-id", serveNodeIDRequired)
	return cmd
}

const (
	serveRootRequired   = "plugin serve hostpath: --root is required"
	serveNodeIDRequired = "plugin serve hostpath: --node-id is required"
)

// pluginServeHostpathRun checks the options and serves until ctx is done.
func pluginServeHostpathRun(ctx context.Context, opts *PluginServeHostpathOptions) error {
	endpoint, from := opts.Socket, "--socket"
	if endpoint == "" && opts.Getenv != nil {
		endpoint, from = opts.Getenv("CSI_ENDPOINT"), "CSI_ENDPOINT"
	}
	switch {
	case endpoint == "":
		return usageError("plugin serve hostpath: --socket is required (or set CSI_ENDPOINT=unix://PATH)")
	case opts.Root == "":
		return usageError("%s", serveRootRequired)
	case opts.NodeID == "":
		return usageError("%s", serveNodeIDRequired)
	case opts.MaxVolumes < 0:
		return usageError("plugin serve hostpath: --max-volumes must not be negative, got %d", opts.MaxVolumes)
	}
	if err := nodeIDProblem(opts.NodeID); err != nil {
		return usageError("plugin serve hostpath: %v", err)
	}
	// Taken as written, as the state dir is not (Factory.StateDir): "~/vols" (after "=", in an
	// agent's plugin args, where no shell expands it) and " /srv/vols" were paths under the
	// working directory, where the plugin made a root of its own and kept the volumes' data
	// (TestServeRootOrSocketWithAnUnexpandedTildeOrBlankIsRefused).
	if problem := writtenPathProblem("--root", opts.Root); problem != "" {
		return usageError("plugin serve hostpath: %s", problem)
	}
	path, problem := spec.SocketEndpoint(from, endpoint)
	if problem != "" { // named as the user gave it
		return usageError("plugin serve hostpath: %s", strings.TrimSuffix(problem, "."))
	}
	if problem := writtenPathProblem(from, path); problem != "" {
		return usageError("plugin serve hostpath: %s", problem)
	}
	socket, err := hostpath.ParseEndpoint(endpoint)
	if err != nil {
		return usageError("plugin serve hostpath: %v", err)
	}
	if problem := spec.SocketPathProblem("socket "+socket, socket); problem != "" {
		return usageError("plugin serve hostpath: %s", strings.TrimSuffix(problem, "."))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The socket first: a second instance pointed at a live socket is refused before it touches
	// the root, which may be the first instance's.
	lis, err := hostpath.Listen(socket)
	if err != nil {
		return fmt.Errorf("plugin serve hostpath: %w", err)
	}
	p, err := hostpath.New(hostpath.Config{
		Root:         opts.Root,
		NodeID:       opts.NodeID,
		EnableAttach: opts.EnableAttach,
		MaxVolumes:   opts.MaxVolumes,
		Logger:       log,
	})
	if err != nil {
		lis.Close()
		return err
	}
	if opts.IO != nil {
		// On stderr, so that a supervisor's log (the agent's, systemd's) shows the start too.
		fmt.Fprintf(opts.IO.ErrOut, "Serving %s on %s (root %s, node %s); %s stops it\n",
			hostpath.PluginName, display.Escape(socket), display.Escape(opts.Root), opts.NodeID, stopSignalWords()) // a path may hold any byte
	}
	if os.Geteuid() != 0 {
		log.Warn("not running as root: bind mounts need CAP_SYS_ADMIN, and without it NodeStageVolume and NodePublishVolume answer FAILED_PRECONDITION")
	}
	defer outliveLogReader()()
	return p.Serve(ctx, lis)
}

// nodeIDProblem refuses a node ID that would not read as itself: the plugin sends it to every
// CO as NodeGetInfo's node_id and records it in each volume's topology, and the start line
// prints it. An escape sequence in it retitled or cleared the terminal that started the
// plugin, and a bidi override or a zero width space showed in `volctl plugin status` as a node
// ID no one could type in a topology_request. The rules are a node ID's (spec.ValidateNodeID,
// which `export nomad` writes a plugin job by): UTF-8, at most the CSI spec's 256 bytes, no
// control or format character, no space but U+0020. A host's name in two scripts is served: the
// plugin keys its attachments and topology by it, and one that ran with it must start again.
func nodeIDProblem(id string) error { return spec.ValidateNodeID("--node-id", id) }

// writtenPathProblem is what is wrong with path as a user wrote it for what ("--root"): a
// blank before or after it, or a leading "~", which only a shell expands; "" when nothing is.
// A control character inside is a path's own, as Linux allows it (its start line escapes it:
// TestPluginServeHostpathStartLineEscapesItsRoot).
func writtenPathProblem(what, path string) string {
	if strings.HasPrefix(path, "-") {
		// The next flag taken as the value, the value left out (`--root --enable-attach`,
		// `tui --log-file --readonly`, `export nomad -o --include-secrets`): the flag meant was
		// lost, and a path named after it made in the working directory, exit 0, as the state
		// dir's was (TestPathFlagThatIsAFlagIsRefused).
		return fmt.Sprintf("%s %q begins with \"-\", a flag taken as its value (was the value left out?): write ./%s for a path so named", what, path, path)
	}
	if strings.TrimSpace(path) != path {
		return fmt.Sprintf("%s %q begins or ends with a blank: write the path without it", what, path)
	}
	if strings.HasPrefix(path, "~") {
		return fmt.Sprintf("%s %q begins with \"~\", which only a shell expands, and it was not expanded (quoted, after \"=\", or in a service's or agent's arguments): write the full path ($HOME/... for your home directory)", what, path)
	}
	return ""
}
