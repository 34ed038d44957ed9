package cli

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// PluginStatusOptions are the inputs of `volctl plugin status`.
type PluginStatusOptions struct {
	IO     *iostreams.IOStreams
	Engine func(context.Context) (*engine.Engine, error)
	Now    func() time.Time

	ID       string // one plugin; empty lists them all
	Exporter exportFlags
}

func newCmdPluginStatus(f *Factory, runF func(*PluginStatusOptions) error) *cobra.Command {
	opts := &PluginStatusOptions{IO: f.IO, Engine: f.Engine, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "status [ID]",
		Short: "Probe registered plugins and show their health and capabilities",
		Long: `Probe the registered plugins live: connect (fingerprinting again a plugin that restarted),
call Probe, record the result, and show it. Without an ID, a table of every plugin; with one,
its detail: provider, version, sockets, node ID, topology, health, probe latency, last error,
and its capabilities per service.

Exit status: the list exits 0 whatever the plugins' health. With an ID it exits 1 when that
plugin is unhealthy, so scripts can use it as a health check (a plugin that is healthy but
not ready yet exits 0).`,
		Example: `  volctl plugin status
  volctl plugin status hostpath
  volctl plugin status hostpath -t '{{.healthy}} {{.probe_latency_ms}}'`,
		Args: maximumArgs(1),
		RunE: runOpts(opts, idArg(&opts.ID), runF, pluginStatusRun),
	}
	addExportFlags(cmd, &opts.Exporter, opts.IO)
	return cmd
}

func pluginStatusRun(ctx context.Context, opts *PluginStatusOptions) error {
	check := checkReadTemplate[[]engine.PluginInfo]
	if opts.ID != "" {
		check = checkReadTemplate[engine.PluginInfo]
	}
	if err := check(&opts.Exporter); err != nil {
		return err
	}
	e, err := opts.Engine(ctx)
	if err != nil {
		return err
	}
	plugins, err := e.PluginStatus(ctx, opts.ID)
	if err == nil {
		err = redactOutput(ctx, e, nil, &plugins)
	}
	if err != nil {
		return fmt.Errorf("plugin status: %w", err)
	}
	out := bufio.NewWriter(opts.IO.Out)
	if opts.ID == "" {
		if plugins == nil {
			plugins = []engine.PluginInfo{} // [] in JSON, not null
		}
		if opts.Exporter.Enabled() {
			err = opts.Exporter.Write(ctx, out, plugins)
		} else if len(plugins) == 0 {
			fmt.Fprintln(opts.IO.ErrOut, "No plugins registered: start a CSI plugin and register it (volctl plugin register --id ID --socket PATH), or try volctl quickstart.")
		} else if err = writePluginTable(out, plugins); err == nil {
			writePluginProblems(out, plugins)
			writeProbedOnly(out, plugins, opts.Now())
			writeCapabilityChanges(out, plugins, opts.Now())
		}
		flush(out, &err)
		return err
	}
	p := plugins[0]
	if opts.Exporter.Enabled() {
		err = opts.Exporter.Write(ctx, out, p)
	} else {
		err = writePluginDetail(out, p, opts.Now())
	}
	flush(out, &err)
	if err != nil {
		return err
	}
	if !p.Healthy {
		return fmt.Errorf("plugin %q is unhealthy: %s", p.ID, p.HealthWhy())
	}
	return nil
}
