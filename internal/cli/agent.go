package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/volctl/volctl/internal/store"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/agent/metrics"
	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
)

// AgentOptions are the inputs of `volctl agent`.
type AgentOptions struct {
	IO       *iostreams.IOStreams
	StateDir func() (string, error)
	LogLevel slog.Level // Factory.LogLevel's: info unless --verbose or VOLCTL_LOG says otherwise

	ConfigFile  string
	Settings    agent.Settings // from the flags; a zero field is unset (the config file's or the default)
	MetricsAddr string         // host:port for /metrics and /healthz; empty serves none
	LogFormat   string         // text (or empty) | json
}

func newCmdAgent(f *Factory, runF func(*AgentOptions) error) *cobra.Command {
	opts := &AgentOptions{IO: f.IO, StateDir: f.StateDir, LogFormat: "text"}
	cmd := &cobra.Command{
		Use:   "agent [--config FILE]",
		Short: "Supervise plugins, probe health, restore and GC claims",
		Long: `Run in the foreground until SIGTERM, SIGINT or SIGHUP, as a service manager runs a daemon, logging
to stderr (--verbose adds debug lines and RPC traces).

The agent starts every registered plugin that has an exec block, with CSI_ENDPOINT=unix://SOCKET
and its exec block's env in its environment, and of the agent's own environment only PATH, HOME,
USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TZ and TMPDIR (no NOMAD_TOKEN, no credentials), its
output appended to <state>/logs/<plugin>.log, and restarts it with
backoff (1s doubling to 1m) when it exits or stays unhealthy past --health-timeout, and at once
when its exec block changed (the config edited, a plugin register) while it ran; never while it
has mounts: then it runs as it was started until it has none, which it says. It probes
every registered plugin, fast (--probe-interval) until ready and slow (--probe-interval-ready)
after; health, readiness, latency and the last error go to the state, where volctl plugin status
and the dashboard read them, and every change of health is an event. A plugin that restarted is
reconnected and fingerprinted again.

At start it runs a reconcile pass (restoring mounts lost to a reboot); then it releases past
claims every --gc-interval and reconciles every --reconcile-interval (and soon after a plugin
restart). On SIGTERM, SIGINT or SIGHUP (the terminal it runs in closed) it stops its loops, then
its plugins, last, and only those without mounts: a plugin with mounts is left running, and the
next agent adopts it; it exits 0. Started with SIGHUP ignored (nohup), it keeps ignoring it. A
second signal during the stop is ignored: the stop takes at most twice --stop-timeout and 5 s
more (a publish under way in another process waited for, then each plugin's SIGTERM, then SIGKILL).
What reads its log dying (a killed tee, a restarted journald) does not stop it: the lines nobody
reads are dropped.
SIGQUIT dumps its goroutines and exits 2 without stopping anything, as SIGKILL would: its
plugins keep running and the next agent adopts them. One agent runs per state dir; a second one
exits 4.

--log-format json writes one JSON object per line (slog's JSON form) instead of key=value text;
records carry the volume, alloc, plugin and rpc they are about as fields, and never a secret.

--metrics-addr HOST:PORT serves Prometheus metrics on /metrics and the agent's status on
/healthz (503 until it is ready); port 0 picks a free one, which the log's "serving metrics"
line names. Off by default. Under systemd (Type=notify) the agent reports READY=1 once its
plugins were probed and a start-up reconcile looked at everything. See docs/metrics.md.

--config FILE may declare plugin "ID" { ... } blocks (the plugin spec format), registered at
start, and an agent { ... } block with probe_interval, probe_interval_ready, health_timeout,
gc_interval, reconcile_interval and stop_timeout. Flags override the file. Each duration has a
least and a most (probe intervals and reconcile_interval 100ms, health_timeout, gc_interval and
stop_timeout 1s; stop_timeout and probe_interval 1h, the others 24h): one outside them is refused.
A config, or a plugin's command (a script's #! interpreter included), that another user could
change (theirs, writable by them, or in a directory of theirs or that they may write) is refused:
the agent runs those commands as root.
See docs/agent.md for a systemd unit and containerized plugins.`,
		Example: `  volctl agent
  volctl agent --config /etc/volctl/agent.hcl
  volctl agent --probe-interval 1s --health-timeout 1m
  volctl agent --metrics-addr 127.0.0.1:9808 --log-format json`,
		Args: exactArgs(0),
		RunE: runOpts(opts, func([]string) { opts.LogLevel = f.LogLevel(slog.LevelInfo) }, runF, agentRun),
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.ConfigFile, "config", "c", "", "agent config file (HCL): plugin blocks and an agent block")
	fl.StringVar(&opts.MetricsAddr, "metrics-addr", "", "serve Prometheus /metrics and /healthz on HOST:PORT (off by default)")
	fl.StringVar(&opts.LogFormat, "log-format", "text", "log format: text or json")
	s := &opts.Settings
	for _, d := range []struct {
		p     *time.Duration
		name  string
		def   time.Duration
		usage string
	}{
		{&s.ProbeInterval, "probe-interval", agent.DefaultProbeInterval, "time between probes of a plugin until it is ready"},
		{&s.ProbeIntervalReady, "probe-interval-ready", agent.DefaultProbeIntervalReady, "time between probes of a ready plugin"},
		{&s.HealthTimeout, "health-timeout", agent.DefaultHealthTimeout, "how long a supervised plugin may stay unhealthy before it is restarted (never while it has mounts)"},
		{&s.GCInterval, "gc-interval", agent.DefaultGCInterval, "time between claim GC passes (releasing past claims)"},
		{&s.ReconcileInterval, "reconcile-interval", agent.DefaultReconcileInterval, "time between reconcile passes (re-drive claims, restore mounts)"},
		{&s.StopTimeout, "stop-timeout", agent.DefaultStopTimeout, "time a plugin gets to stop after SIGTERM before SIGKILL"},
	} {
		// The default is shown but not set, so that a flag not given leaves the config file's value.
		fl.Var(positiveDuration{d.p, d.def, strings.ReplaceAll(d.name, "-", "_")}, d.name, fmt.Sprintf("%s (default %s)", d.usage, d.def))
	}
	return cmd
}

// positiveDuration is an agent's duration flag. Its zero is "not given" (the config file's
// value, or the default), so a zero given was that, silently: `--gc-interval 0` or
// `--health-timeout 0`, read as "never", ran every minute, or every 30 s, where the config
// file refuses a zero (TestAgentFlags). A duration given must be more than zero, and within
// the bounds the config file holds the setting to (spec.CheckAgentSetting).
type positiveDuration struct {
	d       *time.Duration
	def     time.Duration
	setting string // the config file's name for it
}

func (v positiveDuration) String() string { return v.d.String() }
func (v positiveDuration) Type() string   { return "duration" }

func (v positiveDuration) Set(s string) error {
	d, err := spec.ParseDuration(s)
	if err != nil {
		return err
	}
	if err := spec.CheckAgentSetting(v.setting, d); err != nil {
		return fmt.Errorf("%w (leave the flag out for the default, %s)", err, v.def)
	}
	*v.d = d
	return nil
}

// replaceableConfig refuses an agent config another user may change (pathtrust.Replaceable):
// theirs, writable by them, or in a directory on the way they own or may write. Its plugin
// blocks say what the agent runs, as its own user, root most often, at every start: such a user
// could give one an exec block of their choosing, run as root at the agent's next start (a
// reboot), while nothing the agent says would have changed. Stdin ("-") is the caller's.
func replaceableConfig(path string) error {
	if path == "-" {
		return nil
	}
	pr := pathtrust.Replaceable(path)
	if pr == nil {
		return nil
	}
	return fmt.Errorf("agent: --config %s: %s %s, so another user could change the plugins the agent runs, and their commands, which it runs as uid %d; "+
		"the agent did not start: make the file and every directory on the way root's and writable by root alone (chown root, chmod go-w), "+
		"or keep the config where only root may write, such as /etc/volctl",
		spec.QuoteName(path), spec.QuoteName(pr.Path), pr.Why, os.Geteuid())
}

// agentRun reads the config, opens the engine with the agent's retry policy and runs the agent
// until ctx ends.
func agentRun(ctx context.Context, opts *AgentOptions) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"--probe-interval", opts.Settings.ProbeInterval}, {"--probe-interval-ready", opts.Settings.ProbeIntervalReady},
		{"--health-timeout", opts.Settings.HealthTimeout}, {"--gc-interval", opts.Settings.GCInterval},
		{"--reconcile-interval", opts.Settings.ReconcileInterval}, {"--stop-timeout", opts.Settings.StopTimeout},
	} {
		if f.d < 0 {
			return usageError("agent: %s must be positive, got %s", f.name, f.d)
		}
	}
	if opts.LogFormat != "" && opts.LogFormat != "text" && opts.LogFormat != "json" { // "": text
		return usageError("agent: --log-format must be text or json, got %q", opts.LogFormat)
	}
	if opts.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(opts.MetricsAddr); err != nil {
			return usageError("agent: --metrics-addr %q: want HOST:PORT, such as 127.0.0.1:9808", opts.MetricsAddr)
		}
	}
	var file agent.File
	if opts.ConfigFile != "" {
		if err := replaceableConfig(opts.ConfigFile); err != nil {
			return withCode(ExitUsage, err)
		}
		srcs, err := readSpecSources(ctx, opts.IO, nil, []string{opts.ConfigFile})
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("agent: --config: %w", err))
		}
		parser := spec.NewParser()
		c, diags := parser.ParseAgentConfig(srcs[0].Name, srcs[0].Src)
		if c != nil {
			diags = append(diags, exposedSecrets(srcs[0], heldSecrets(nil, c.Plugins, nil))...)
		}
		if len(diags) > 0 {
			width, color := diagnosticStyle(opts.IO)
			if err := parser.DiagnosticWriter(opts.IO.ErrOut, width, color).WriteDiagnostics(diags); err != nil {
				return err
			}
		}
		if c == nil {
			return withCode(ExitUsage, fmt.Errorf("agent: config %s is invalid; the agent did not start", srcs[0].Name))
		}
		file = *agent.NewFile(c)
		notePluginSecrets(file.Plugins)
	}

	level := opts.LogLevel
	log := slog.New(logHandler(opts.IO.ErrOut, opts.LogFormat == "json", level))
	defer outliveLogReader()()
	dir, err := opts.StateDir()
	if err != nil {
		return err
	}
	ecfg := engine.Config{StateDir: dir, Logger: log, Retry: agent.Retry, PassLockWait: agent.PassLockWait}
	acfg := agent.Config{Logger: log, Plugins: file.Plugins, Settings: file.Settings.Merge(opts.Settings)}
	var (
		m   *metrics.Metrics
		srv *metrics.Server
	)
	if opts.MetricsAddr != "" {
		if srv, err = metrics.Listen(opts.MetricsAddr); err != nil {
			// Taken by the agent already running on this state dir (the unit's own
			// --metrics-addr), the port is not what to report: that agent is, as without
			// --metrics-addr, exit 4 naming it (TestSecondAgentWithTheSameMetricsAddrExits4NamingTheFirst).
			if errors.Is(err, syscall.EADDRINUSE) {
				if held := agentHeld(ctx, ecfg); held != nil {
					return held
				}
			}
			return withCode(ExitUsage, fmt.Errorf("agent: %w", err))
		}
		m = metrics.New()
		ecfg.ObserveRPC, acfg.Observer = m.ObserveRPC, m
	}
	e, err := engine.Open(ctx, ecfg)
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		return stateDirError(dir, err)
	}
	// Closed after a normal return only (withEngine): a panic's report is scrubbed with it open.
	return withEngine(opts.IO, e, func() error {
		acfg.Engine = e
		a, err := agent.New(acfg)
		if err != nil {
			if srv != nil {
				srv.Close()
			}
			return err
		}
		if srv == nil {
			return a.Run(ctx)
		}
		m.CollectState(e)
		sctx, stopServing := context.WithCancel(ctx)
		served := make(chan error, 1)
		crash.Go(func() { served <- srv.Serve(sctx, m, a.Status, log) })
		log.Info("serving metrics", "addr", srv.Addr(), "metrics", "http://"+srv.Addr()+"/metrics", "healthz", "http://"+srv.Addr()+"/healthz")
		runErr := a.Run(ctx)
		stopServing()
		if err := <-served; err != nil && runErr == nil {
			runErr = err
		}
		return runErr
	})
}

// agentHeld is the conflict of another agent holding the agent lock of cfg's state dir (exit 4,
// naming it), nil when none does or the state cannot be opened to tell. A state dir without a
// database has no agent, and is not made: the agent that fails to start leaves none behind,
// and reads it only, migrating nothing (TestAgentOnATakenMetricsAddrMakesNoStateDir).
func agentHeld(ctx context.Context, cfg engine.Config) error {
	if _, err := os.Stat(filepath.Join(cfg.StateDir, store.FileName)); err != nil {
		return nil
	}
	cfg.Reading = true
	e, err := engine.Open(ctx, cfg)
	if err != nil {
		return nil
	}
	defer e.Close()
	release, _, err := e.LockAgent()
	if err != nil {
		if errors.Is(err, engine.ErrConflict) {
			return err
		}
		return nil
	}
	release()
	return nil
}
