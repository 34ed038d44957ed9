package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/display"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// PluginProbeOptions are the inputs of `volctl plugin probe`.
type PluginProbeOptions struct {
	IO     *iostreams.IOStreams
	Logger *slog.Logger // --verbose: the CSI RPC trace, secrets redacted
	// State is the engine of the state dir when one exists (nil otherwise; it never makes
	// one): a plugin may echo in what it says (its identity, node ID, topology, errors) a
	// secret volctl sent it, which is scrubbed from the output as plugin status scrubs it.
	State func(context.Context) *engine.Engine

	Socket           string // a monolith's one socket
	ControllerSocket string // or a split plugin's sockets
	NodeSocket       string
	Timeout          time.Duration
	Exporter         exportFlags
}

func newCmdPluginProbe(f *Factory, runF func(*PluginProbeOptions) error) *cobra.Command {
	opts := &PluginProbeOptions{IO: f.IO, State: f.existingEngine}
	cmd := &cobra.Command{
		Use:   "probe --socket PATH",
		Short: "Fingerprint and probe any CSI plugin once",
		Long: `Connect to a CSI plugin, ask who it is and what it can do (GetPluginInfo,
GetPluginCapabilities, ControllerGetCapabilities, NodeGetCapabilities, NodeGetInfo), and probe
its health once. Nothing is registered and no state is touched: the state, when there is one,
is only read, for the secret values to keep out of what the plugin says.

A monolith serves everything on one socket (--socket); a split plugin has a controller socket
and a node socket (--controller-socket, --node-socket; either alone is fine). A socket is a
path or unix://PATH.

Exits 1 when a socket is missing or the plugin fails, and shows an unhealthy plugin with its
error; 2 for a socket path no socket can have (longer than 107 bytes). A plugin that answers but is still initialising shows Health = not ready and exits 0.`,
		Example: `  volctl plugin probe --socket /run/csi/hostpath.sock
  volctl plugin probe --controller-socket /run/csi/ctrl.sock --node-socket /run/csi/node.sock --json
  volctl plugin probe --socket /run/csi/x.sock -t '{{.provider}} {{.healthy}}'`,
		Args: exactArgs(0),
		RunE: runOpts(opts, func([]string) { opts.Logger = f.Logger() }, runF, pluginProbeRun),
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Socket, "socket", "", "the plugin's socket, serving controller and node (PATH or unix://PATH)")
	fl.StringVar(&opts.ControllerSocket, "controller-socket", "", "a split plugin's controller socket")
	fl.StringVar(&opts.NodeSocket, "node-socket", "", "a split plugin's node socket")
	boundedDurationVar(fl, &opts.Timeout, "timeout", csi.DefaultShortTimeout, probeTimeoutBounds, "timeout of each RPC, 100ms to 24h")
	addReadExportFlags[pluginProbeResult](cmd, &opts.Exporter, opts.IO)
	return cmd
}

// probeTimeoutBounds hold plugin probe --timeout: a plugin on a local socket answers within
// milliseconds, and an RPC allowed less than the least fails for nothing.
var probeTimeoutBounds = spec.DurationBounds{Least: 100 * time.Millisecond, Most: 24 * time.Hour, Why: "an RPC needs that long to be sent and answered"}

// pluginProbeResult is the JSON contract of `volctl plugin probe --json` (docs/json.md).
type pluginProbeResult struct {
	Provider           string            `json:"provider"`
	Version            string            `json:"version"`
	ControllerSocket   string            `json:"controller_socket"`
	NodeSocket         string            `json:"node_socket"`
	NodeID             string            `json:"node_id"`
	MaxVolumes         int64             `json:"max_volumes"`
	AccessibleTopology *spec.Topology    `json:"accessible_topology"`
	Healthy            bool              `json:"healthy"`
	Ready              bool              `json:"ready"`
	Error              *string           `json:"error"`
	ProbeLatencyMS     float64           `json:"probe_latency_ms"`
	Capabilities       probeCapabilities `json:"capabilities"`
	Manifest           map[string]string `json:"manifest"`
}

type probeCapabilities struct {
	Plugin     []string `json:"plugin"`
	Controller []string `json:"controller"`
	Node       []string `json:"node"`
}

// socketFlags reads socket flags: each PATH, unix:///PATH or unix:/PATH (spec.SocketEndpoint),
// as CSI_ENDPOINT and plugin docs write it; an empty flag is "". An endpoint that names no
// socket path (tcp://, host:port, a relative unix:// URL) is a usage error saying why.
func socketFlags(command string, flags ...socketFlag) error {
	for _, f := range flags {
		if *f.value == "" {
			continue
		}
		path, problem := spec.SocketEndpoint("--"+f.name, *f.value)
		if problem != "" {
			return usageError("%s: %s", command, strings.TrimSuffix(problem, "."))
		}
		*f.value = path
	}
	return nil
}

// socketFlag is a socket flag's name and value, for socketFlags to read.
type socketFlag struct {
	name  string
	value *string
}

// sockets returns the controller and node socket paths the flags name.
func (o *PluginProbeOptions) sockets() (controller, node string, err error) {
	sock, ctrlSock, nodeSock := o.Socket, o.ControllerSocket, o.NodeSocket
	if err := socketFlags("plugin probe", socketFlag{"socket", &sock}, socketFlag{"controller-socket", &ctrlSock}, socketFlag{"node-socket", &nodeSock}); err != nil {
		return "", "", err
	}
	switch {
	case sock != "" && (ctrlSock != "" || nodeSock != ""):
		return "", "", usageError("plugin probe: --socket is for a monolith; give a split plugin's sockets with --controller-socket and --node-socket only")
	case sock != "":
		controller, node = sock, sock
	case ctrlSock == "" && nodeSock == "":
		return "", "", usageError("plugin probe: --socket is required (or --controller-socket and/or --node-socket for a split plugin)")
	default:
		controller, node = ctrlSock, nodeSock
	}
	// A path no socket can have (too long for sun_path) is said as plugin register says it,
	// not left to the dial, whose "does not exist (is the plugin running?)" cannot be helped.
	for _, s := range []string{controller, node} {
		if s == "" {
			continue
		}
		abs, err := filepath.Abs(s)
		if err != nil {
			return "", "", fmt.Errorf("plugin probe: socket %s: %w", spec.QuoteName(s), err)
		}
		if problem := spec.SocketPathProblem("socket "+spec.QuoteName(s), abs); problem != "" {
			return "", "", usageError("plugin probe: %s", problem)
		}
	}
	return controller, node, nil
}

// pluginProbeRun probes first (the health verdict), then fingerprints, and prints both.
func pluginProbeRun(ctx context.Context, opts *PluginProbeOptions) error {
	ctrlSock, nodeSock, err := opts.sockets()
	if err != nil {
		return err
	}
	if opts.Timeout <= 0 {
		return usageError("plugin probe: --timeout must be positive, got %s", opts.Timeout)
	}
	var known *engine.Engine
	if opts.State != nil {
		known = opts.State(ctx)
	}
	cfg := csi.Config{
		ControllerSocket: ctrlSock,
		NodeSocket:       nodeSock,
		Timeouts:         csi.Timeouts{Short: opts.Timeout, Long: opts.Timeout},
		Logger:           opts.Logger,
	}
	if known != nil {
		cfg.Redact = known.SecretValues // the plugin's messages
		// The -v trace logs the plugin's answers, which only a scrubbing logger scrubs, as
		// the engine's own clients log through one.
		cfg.Logger = known.RedactLogger(opts.Logger)
	}
	client, err := csi.New(cfg)
	if err != nil {
		return fmt.Errorf("plugin probe: %w", err)
	}
	defer client.Close()

	start := time.Now()
	ready, probeErr := client.Probe(ctx)
	latency := time.Since(start)
	if csi.IsUnreachable(probeErr) {
		return fmt.Errorf("plugin probe: %w", probeErr) // nobody there: nothing to show
	}
	fp, err := client.Fingerprint(ctx)
	if err != nil {
		if probeErr != nil {
			return fmt.Errorf("plugin probe: unhealthy: %w", probeErr)
		}
		return fmt.Errorf("plugin probe: %w", err)
	}

	res := pluginProbeResult{
		Provider:           fp.Provider,
		Version:            fp.Version,
		ControllerSocket:   ctrlSock,
		NodeSocket:         nodeSock,
		NodeID:             fp.NodeID,
		MaxVolumes:         fp.MaxVolumes,
		AccessibleTopology: fp.AccessibleTopology,
		Healthy:            probeErr == nil,
		Ready:              probeErr == nil && ready,
		ProbeLatencyMS:     float64(latency.Microseconds()) / 1000,
		Capabilities: probeCapabilities{
			Plugin:     fp.Capabilities.Plugin.Names(),
			Controller: fp.Capabilities.Controller.Names(),
			Node:       fp.Capabilities.Node.Names(),
		},
		Manifest: fp.Manifest,
	}
	if res.Manifest == nil {
		res.Manifest = map[string]string{}
	}
	if probeErr != nil {
		msg := probeErr.Error()
		res.Error = &msg
	}
	if known != nil {
		// The data the plugin returned (its version, manifest, node ID, topology); the final
		// error is scrubbed by main (Factory.RedactError), through the same engine.
		if err := known.RedactValue(ctx, &res); err != nil {
			return fmt.Errorf("plugin probe: reading the state to keep secrets out of what the plugin said: %w", err)
		}
	}
	if opts.Exporter.Enabled() {
		err = opts.Exporter.Write(ctx, opts.IO.Out, res)
	} else {
		err = writeProbeTable(opts.IO.Out, res, fp, latency)
	}
	if err != nil {
		return err
	}
	if probeErr != nil {
		return fmt.Errorf("plugin probe: plugin %q is unhealthy: %w", fp.Provider, probeErr)
	}
	return nil
}

func writeProbeTable(out io.Writer, res pluginProbeResult, fp *csi.Fingerprint, latency time.Duration) error {
	maxVolumes := ""
	if fp.Node {
		maxVolumes = display.MaxVolumes(fp.MaxVolumes)
	}
	pairs := [][2]string{
		{"Provider", res.Provider},
		{"Version", res.Version},
		{"Controller Socket", res.ControllerSocket},
		{"Node Socket", res.NodeSocket},
		{"Node ID", res.NodeID},
		{"Max Volumes", maxVolumes},
		{"Topology", topologyString(res.AccessibleTopology)},
		{"Health", engine.ProbeHealth(res.Healthy, res.Ready).String()},
		{"Probe Latency", display.Latency(latency)},
	}
	if res.Error != nil {
		pairs = append(pairs, [2]string{"Error", *res.Error})
	}
	if err := keyValues(out, pairs...); err != nil {
		return err
	}
	fmt.Fprintln(out)
	return writeCapabilityTable(out, res.Capabilities.Plugin, res.Capabilities.Controller, res.Capabilities.Node)
}

// topologyString renders segments as "k=v, k2=v2", sorted by key.
func topologyString(t *spec.Topology) string {
	if t == nil {
		return ""
	}
	return segmentsString(t.Segments)
}
