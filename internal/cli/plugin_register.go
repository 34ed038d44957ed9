package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/backoff"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// PluginRegisterOptions are the inputs of `volctl plugin register`.
type PluginRegisterOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)

	// Files hold plugin blocks ("-" is standard input); or, without files, the flags below
	// declare one plugin.
	Files    []string
	ReadFile func(string) ([]byte, error)

	ID               string
	Type             string
	Socket           string
	ControllerSocket string
	NodeSocket       string
	Timeout          time.Duration
	// Wait is how long a plugin that does not answer (engine.PluginNotAnswering) is waited for.
	Wait time.Duration

	Exporter exportFlags
}

func newCmdPluginRegister(f *Factory, runF func(*PluginRegisterOptions) error) *cobra.Command {
	opts := &PluginRegisterOptions{IO: f.IO, Engine: f.Engine}
	cmd := &cobra.Command{
		Use:   "register FILE... | - | --id ID --socket PATH",
		Short: "Fingerprint a CSI plugin and store it",
		Long: `Register CSI plugins: connect to each, fingerprint it (who it is, what it can do, its node
ID and topology), probe its health, and store it in the state dir.

The plugins come from spec files of plugin blocks (or - for standard input), or from flags for
a single plugin. A monolith serves controller and node on one socket (--socket) or on split
sockets (--controller-socket and --node-socket); a controller or node plugin takes --socket
for its one service. A plugin split in two processes, as Nomad runs it (a controller plugin
job and a node plugin job with one plugin ID), is two plugin blocks with the same ID, one of
type controller and one of type node, in one file or two, or the two halves registered one
after the other: volctl joins them into one plugin with both sockets. The plugin must be running, unless its spec has an exec block (then
volctl agent starts it). Registering an ID again replaces its declaration; one ID in two of
the files given at once is refused.

A plugin whose socket is missing or refuses connections, as while it starts or restarts, is
waited for, up to --wait (5s), then the error names the socket. One that answers with an error,
or does not answer in time, fails at once.

Every file is checked before any plugin is registered; an invalid one registers nothing.
Files of more than 32 MiB together are refused, unread past that (exit 2).
Exit status: 0 when all are registered, 2 for invalid specs or flags, 1 when a plugin cannot
be reached or fingerprinted.`,
		Example: `  volctl plugin register plugins.hcl
  volctl plugin register --id hostpath --socket /run/volctl/hostpath.sock
  volctl plugin register --id ebs --type controller --socket /run/csi/ebs-ctrl.sock --timeout 5m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if err := checkSpecArgs(args); err != nil {
				return err
			}
			flagsSet := cmd.Flags().Changed("id") || cmd.Flags().Changed("socket") || cmd.Flags().Changed("controller-socket") ||
				cmd.Flags().Changed("node-socket") || cmd.Flags().Changed("type") || cmd.Flags().Changed("timeout")
			switch {
			case len(args) > 0 && flagsSet:
				return usageError("plugin register: give spec files or --id and sockets, not both")
			case len(args) == 0 && !flagsSet:
				return usageError("plugin register: give spec files (or - for standard input), or --id ID --socket PATH\nSee '%s --help'.", cmd.CommandPath())
			}
			if runF != nil {
				return runF(opts)
			}
			return pluginRegisterRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	idVar(fl, &opts.ID, "id", "the plugin's ID (what volume specs name in plugin_id)")
	fl.StringVar(&opts.Type, "type", string(spec.PluginMonolith), "monolith, controller or node")
	fl.StringVar(&opts.Socket, "socket", "", "the plugin's socket (PATH or unix://PATH): a monolith's one socket, or a controller's or node plugin's")
	fl.StringVar(&opts.ControllerSocket, "controller-socket", "", "a split monolith's controller socket")
	fl.StringVar(&opts.NodeSocket, "node-socket", "", "a split monolith's node socket")
	durationVar(fl, &opts.Timeout, "timeout", 0, "timeout of the long RPCs (create, publish, stage, ...), 1s to 24h; 0 is the default, 2m")
	durationVar(fl, &opts.Wait, "wait", defaultRegisterWait, "how long to wait for a plugin whose socket is missing or refuses connections (starting, or restarting); 0 fails at once")
	addActingExportFlags[[]engine.PluginInfo](cmd, &opts.Exporter, opts.IO)
	return cmd
}

// flagPlugin builds the plugin the flags declare, placing --socket as a plugin block places
// socket: the one socket of a monolith, or a controller's or node plugin's only socket.
func (o *PluginRegisterOptions) flagPlugin() (spec.Plugin, error) {
	sock, ctrlSock, nodeSock := o.Socket, o.ControllerSocket, o.NodeSocket
	if err := socketFlags("plugin register", socketFlag{"socket", &sock}, socketFlag{"controller-socket", &ctrlSock}, socketFlag{"node-socket", &nodeSock}); err != nil {
		return spec.Plugin{}, err
	}
	p := spec.Plugin{ID: o.ID, Type: spec.PluginType(o.Type), Timeout: o.Timeout, ControllerSocket: ctrlSock, NodeSocket: nodeSock}
	switch {
	case p.Type == spec.PluginController && o.ControllerSocket == "":
		p.ControllerSocket = sock
	case p.Type == spec.PluginNode && o.NodeSocket == "":
		p.NodeSocket = sock
	default:
		p.Socket = sock
	}
	return p, nil
}

// plugins returns the plugins to register: all of every file, or the one of the flags. Specs
// are parsed and checked before anything is registered.
func (o *PluginRegisterOptions) plugins(ctx context.Context) ([]spec.Plugin, error) {
	if o.Wait < 0 {
		return nil, usageError("plugin register: --wait must not be negative, got %s", o.Wait)
	}
	if len(o.Files) == 0 {
		p, err := o.flagPlugin()
		if err != nil {
			return nil, err
		}
		if o.Timeout < 0 {
			return nil, usageError("plugin register: --timeout must not be negative, got %s", o.Timeout)
		}
		if err := p.Validate(); err != nil {
			return nil, usageError("plugin register: %v", err)
		}
		return []spec.Plugin{p}, nil
	}
	sources, err := readSpecSources(ctx, o.IO, o.ReadFile, o.Files)
	if err != nil {
		return nil, unreadSpecs("plugin register", "registered", o.Files, err)
	}
	var (
		out     []spec.Plugin
		invalid int
		seen    = declarations{}
	)
	for _, s := range sources {
		parser := spec.NewParser() // one a file: a parser keeps every file it parsed
		ps, diags := parser.ParsePlugins(s.Name, s.Src)
		diags = append(diags, exposedSecrets(s, heldSecrets(nil, ps, nil))...)
		if err := writeSpecDiagnostics(o.IO, parser, diags); err != nil {
			return nil, err
		}
		if diags.HasErrors() {
			invalid++
			continue
		}
		for _, p := range ps {
			first, dup := seen.add("plugin", p.ID, s.Name)
			if !dup {
				out = append(out, *p)
				continue
			}
			// The controller half in one file and the node half in another (a plugin split
			// in two, as Nomad's two plugin jobs declare it) are one plugin.
			i := slices.IndexFunc(out, func(o spec.Plugin) bool { return o.ID == p.ID })
			if !spec.IsSplitHalf(p.Type) || !spec.IsSplitHalf(out[i].Type) || p.Type == out[i].Type {
				return nil, usageError("plugin register: plugin %q is declared in both %s and %s; nothing was registered", p.ID, first, s.Name)
			}
			joined, problem := spec.JoinSplit(out[i], *p)
			if problem != "" {
				return nil, usageError("plugin register: %s (%s and %s); nothing was registered", strings.TrimSuffix(problem, "."), first, s.Name)
			}
			out[i] = joined
		}
	}
	if invalid > 0 {
		return nil, invalidSpecs("plugin register", "registered", invalid, len(sources))
	}
	return out, nil
}

// defaultRegisterWait is --wait's default: the short RPC timeout, the time a plugin is given
// to answer GetPluginInfo (docs/architecture.md, Timeouts).
const defaultRegisterWait = csi.DefaultShortTimeout

// registerWaiting registers p, trying again while the plugin does not answer at all
// (engine.PluginNotAnswering: its socket missing, or nothing listening on it, as while it
// restarts), up to wait; the last error then says how long it was waited for.
func registerWaiting(ctx context.Context, e *engine.Engine, p spec.Plugin, wait time.Duration) (engine.PluginInfo, engine.Registration, error) {
	deadline := time.Now().Add(wait)
	waits := backoff.New(100*time.Millisecond, time.Second)
	for {
		info, reg, err := e.RegisterPluginOutcome(ctx, p)
		if err == nil || !engine.PluginNotAnswering(err) || wait <= 0 {
			return info, reg, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return info, reg, fmt.Errorf("%w; waited %s for it to answer (--wait)", err, wait)
		}
		t := time.NewTimer(min(waits.Next(), left))
		select {
		case <-ctx.Done():
			// The stop said, and that it cut the wait short: the socket's error alone read as
			// the answer of a wait that had run out (TestPluginRegisterWaitInterruptedSaysSo).
			t.Stop()
			return info, reg, fmt.Errorf("%w; stopped waiting for it to answer (--wait): %w", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// pluginRegisterRun registers each plugin in turn and stops at the first that fails.
func pluginRegisterRun(ctx context.Context, opts *PluginRegisterOptions) error {
	plugins, err := opts.plugins(ctx)
	if err != nil {
		return err
	}
	notePluginSecrets(plugins)
	for _, p := range plugins {
		for _, sock := range []string{p.Socket, p.ControllerSocket, p.NodeSocket} {
			if w := engine.SocketExposure(sock); w != "" {
				fmt.Fprintf(opts.IO.ErrOut, "Warning: plugin %q: %s\n", p.ID, escapeLines(w))
			}
		}
		if p.Exec != nil {
			if err := agent.MissingCommand(p); err != nil {
				fmt.Fprintf(opts.IO.ErrOut, "Warning: plugin %q: the agent cannot start it until its command is there: %s\n", p.ID, escapeLines(err.Error()))
			} else if err := agent.UntrustedCommand(p); err != nil {
				fmt.Fprintf(opts.IO.ErrOut, "Warning: plugin %q: the agent will not start it: %s\n", p.ID, escapeLines(err.Error()))
			}
		}
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	infos := make([]engine.PluginInfo, 0, len(plugins))
	var did []string // each plugin's outcome, worded for a result whose printing failed
	var regErr, printErr error
	for _, p := range plugins {
		info, reg, err := registerWaiting(ctx, e, p, opts.Wait)
		if err != nil {
			regErr = err
			break
		}
		if err := redactOutput(ctx, e, nil, &info); err != nil {
			return fmt.Errorf("plugin register: %w", err)
		}
		infos = append(infos, info)
		did = append(did, pluginRegisteredWords(info.ID, reg))
		if !opts.Exporter.Enabled() && printErr == nil {
			_, printErr = fmt.Fprintln(opts.IO.Out, display.Escape(pluginRegisteredLine(info, reg)))
		}
	}
	if opts.Exporter.Enabled() {
		printErr = opts.Exporter.Write(ctx, opts.IO.Out, infos)
	}
	if printErr != nil && len(infos) > 0 {
		// Each worded by what was done, as its line is: "registered" was said of one registered
		// again unchanged or updated (as `volume create` words its own:
		// TestCreateAgainUnchangedWhoseFilterFailsIsNotSaidCreated).
		return errors.Join(afterDone(printErr, "%s", strings.Join(did, ", ")), regErr)
	}
	return regErr
}

// pluginRegisteredWords says what registering plugin id did (r), for an error whose result was
// not printed: `plugin "hp" registered`, `... registered again, unchanged`, `... updated
// (timeout changed)`.
func pluginRegisteredWords(id string, r engine.Registration) string {
	switch r.Outcome {
	case engine.Unchanged:
		return fmt.Sprintf("plugin %s registered again, unchanged", shownQ(id))
	case engine.Updated:
		return fmt.Sprintf("plugin %s updated (%s changed)", shownQ(id), strings.Join(r.Changed, ", "))
	}
	return fmt.Sprintf("plugin %s registered", shownQ(id))
}
