// Package metrics is the agent's Prometheus metrics and its HTTP endpoint (/metrics and
// /healthz, `volctl agent --metrics-addr`). Each Metrics has a registry of its own (registry.go;
// no global one), so tests and the binary share no state, and the package writes the text
// format itself (text.go) rather than link the Prometheus client library into every volctl
// process. The names are documented in docs/metrics.md.
package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/store"
)

const namespace = "volctl"

// Outcomes every reconcile pass counts, present at zero from the start so an alert on their
// rate has a series to read.
var reconcileOutcomes = []string{"restored", "released", "failed"}

// reconcileTriggers and reconcileResults are the labels of every reconcile pass counted
// (agent.Observer's Reconciled), present at zero from the start too: an alert on the rate of
// failed passes (result "error") had no series to read until the first one failed
// (TestReconcilePassesArePresentBeforeTheFirstPass).
var (
	reconcileTriggers = []string{"start", "timer", "plugin_restart", "redrive"}
	reconcileResults  = []string{"ok", "problems", "error"}
)

// Metrics implements agent.Observer and the engine's RPC observer over a private registry.
type Metrics struct {
	reg registry
	// stateFile says whether the state database is still the file the agent opened
	// (engine.CheckStateFile), set by CollectState: nil before.
	stateFile func() error

	pluginHealthy *vec
	pluginReady   *vec
	probeSeconds  *vec
	restarts      *vec
	rpcs          *vec
	rpcSeconds    *vec
	passes        *vec
	outcomes      *vec
	problems      *vec
	lastPass      *vec
	ready         *vec
}

var _ agent.Observer = (*Metrics)(nil)

// New builds the metrics. Claims and volumes are counted once CollectState names the engine.
func New() *Metrics {
	m := &Metrics{}
	g := func(name, help string, labels ...string) *vec {
		return newVec(gaugeType, namespace+"_"+name, help, nil, labels...)
	}
	c := func(name, help string, labels ...string) *vec {
		return newVec(counterType, namespace+"_"+name, help, nil, labels...)
	}
	h := func(name, help string, bounds []float64, labels ...string) *vec {
		return newVec(histogramType, namespace+"_"+name, help, bounds, labels...)
	}
	m.pluginHealthy = g("plugin_healthy", "1 if the plugin's last probe succeeded, else 0.", "plugin")
	m.pluginReady = g("plugin_ready", "1 if the plugin's last probe reported it ready, else 0.", "plugin")
	m.probeSeconds = h("plugin_probe_duration_seconds", "Latency of the agent's probes of a plugin (CSI Probe), successful ones.",
		exponentialBuckets(0.0005, 4, 9), "plugin")
	m.restarts = c("plugin_restarts_total", "Restarts of a supervised plugin by the agent, by reason: exited, unhealthy past the health timeout, or exec_changed (it ran another exec block than the declared one).",
		"plugin", "reason")
	m.rpcs = c("csi_rpcs_total", "CSI RPCs the agent sent, by plugin, RPC and gRPC code (DeadlineExceeded includes volctl's own timeout).",
		"plugin", "rpc", "code")
	m.rpcSeconds = h("csi_rpc_duration_seconds", "Latency of the CSI RPCs the agent sent, by plugin, RPC and gRPC code.",
		exponentialBuckets(0.001, 4, 9), "plugin", "rpc", "code")
	m.passes = c("reconcile_passes_total", "Reconcile passes, by trigger (start, timer, plugin_restart, redrive) and result: ok, problems (something left wrong), error.",
		"trigger", "result")
	m.outcomes = c("reconcile_outcomes_total", "What reconcile passes did, by outcome: restored, released, failed (a problem left), and created, deleted, published, cleaned, orphan, expanded, snapshotted.",
		"outcome")
	m.problems = g("reconcile_problems", "Problems the last reconcile pass left (failed claims, orphan mounts); a pass that failed before it looked leaves it as it was.")
	m.lastPass = g("reconcile_last_pass_timestamp_seconds", "Unix time the last reconcile pass ended that looked at what is wrong (not one that failed before it could).")
	m.ready = g("agent_ready", "1 once the agent's plugins were probed and a start-up reconcile looked at everything (it then sent READY=1 to systemd); 0 again once it begins to stop (STOPPING=1).")
	for _, o := range reconcileOutcomes {
		m.outcomes.touch(o)
	}
	for _, t := range reconcileTriggers {
		for _, r := range reconcileResults {
			m.passes.touch(t, r)
		}
	}
	m.reg.register(m.pluginHealthy, m.pluginReady, m.probeSeconds, m.restarts, m.rpcs, m.rpcSeconds,
		m.passes, m.outcomes, m.problems, m.lastPass, m.ready)
	m.reg.registerCollector(goCollector)
	m.reg.registerCollector((&processCollector{}).collect)
	return m
}

// exponentialBuckets is n bucket bounds from start, each factor times the one before.
func exponentialBuckets(start, factor float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// CollectState counts e's claims and volumes at every scrape, and scrubs every label of the
// secrets e's state holds. Call it once, before serving.
func (m *Metrics) CollectState(e *engine.Engine) {
	m.stateFile = e.CheckStateFile
	m.reg.registerCollector(stateCollector(e))
	m.reg.setRedactor(func(ctx context.Context) (func(string) string, error) { return e.Redactor(ctx) })
}

// ObserveRPC counts and times one CSI RPC (engine.Config.ObserveRPC).
func (m *Metrics) ObserveRPC(plugin, rpc, code string, d time.Duration) {
	m.rpcs.inc(plugin, rpc, code)
	m.rpcSeconds.observe(d.Seconds(), plugin, rpc, code)
}

// PluginProbed implements agent.Observer.
func (m *Metrics) PluginProbed(plugin string, healthy, ready bool, latency time.Duration) {
	m.pluginHealthy.set(b2f(healthy), plugin)
	m.pluginReady.set(b2f(ready), plugin)
	if healthy && latency > 0 {
		m.probeSeconds.observe(latency.Seconds(), plugin)
	}
}

// PluginGone implements agent.Observer: a deregistered plugin's series go.
func (m *Metrics) PluginGone(plugin string) {
	for _, v := range []*vec{m.pluginHealthy, m.pluginReady, m.probeSeconds, m.restarts, m.rpcs, m.rpcSeconds} {
		v.deleteWhere("plugin", plugin)
	}
}

// PluginRestarted implements agent.Observer.
func (m *Metrics) PluginRestarted(plugin, reason string) {
	m.restarts.inc(plugin, reason)
}

// Reconciled implements agent.Observer.
func (m *Metrics) Reconciled(trigger string, rep engine.ReconcileReport, err error) {
	result := "ok"
	switch {
	case len(rep.Problems) > 0:
		result = "problems"
	case err != nil:
		result = "error"
	}
	m.passes.inc(trigger, result)
	for _, a := range rep.Actions {
		m.outcomes.inc(a.Kind)
	}
	for _, p := range rep.Problems {
		m.outcomes.inc(p.Kind)
	}
	if err != nil && len(rep.Problems) == 0 {
		// The pass failed before it looked at what is wrong (the mount table unreadable, the
		// state dir read-only): the problems the last pass left are still there, as far as
		// anyone knows, and it did not end as a pass does. Before, the gauge went to 0, and an
		// alert on it resolved the moment reconcile stopped working at all
		// (TestAFailedPassKeepsTheProblemsLeft).
		return
	}
	m.problems.set(float64(len(rep.Problems)))
	m.lastPass.set(float64(time.Now().UnixNano()) / 1e9)
}

// Ready implements agent.Observer.
func (m *Metrics) Ready() { m.ready.set(1) }

// Stopping reports that the agent began to stop: not ready from then on.
func (m *Metrics) Stopping() { m.ready.set(0) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// stateCollector reads claims and volumes from the store at each scrape: they change through
// any volctl command, not only the agent, so the store is the one place to count them.
func stateCollector(e *engine.Engine) collector {
	return func(ctx context.Context) ([]family, error) {
		// A state database replaced under the agent (a backup restored over it): SQLite reads
		// the file it opened, which no volctl writes any more, and its counts were served as
		// the state's until the next reconcile pass stopped the agent; a read does not check
		// the file, a write does. Failed here, as any read that fails: Prometheus sees the
		// target down (TestScrapeOfAReplacedStateDatabaseDoesNotServeTheOldFilesCounts).
		if err := e.CheckStateFile(); err != nil {
			return nil, err
		}
		// Each published target looked at, as `volctl status` counts them (claims.covered): an
		// alloc writing into what covers its target, or the host's disk, is what an alert is
		// for (TestMetricsCountAPublishedTargetCoveredOrLost).
		claims, err := e.ClaimsLooked(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the claims from the state: %w", err)
		}
		vols, err := e.Volumes(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the volumes from the state: %w", err)
		}
		byState := map[string]int{}
		for _, s := range store.ClaimStates {
			byState[string(s)] = 0
		}
		releasing, deg, needs, covered := 0, 0, 0, 0
		for _, cl := range claims {
			if cl.Covered != "" {
				covered++
			}
			byState[cl.State]++
			if cl.Releasing {
				releasing++
			}
			if cl.Degraded {
				deg++
			}
			if cl.NeedsReconcile {
				needs++
			}
		}
		byStateF := family{name: namespace + "_claims", help: "Live claims by state (the claim state machine's).", typ: gaugeType}
		for s, n := range byState {
			byStateF.metrics = append(byStateF.metrics, sample{labels: []labelPair{{"state", s}}, value: float64(n)})
		}
		type key struct {
			plugin      string
			schedulable bool
		}
		n := map[key]int{}
		for _, v := range vols {
			n[key{v.PluginID, v.Schedulable}]++
		}
		volumes := family{name: namespace + "_volumes", help: "Volumes by plugin and schedulability.", typ: gaugeType}
		for k, c := range n {
			volumes.metrics = append(volumes.metrics, sample{
				labels: []labelPair{{"plugin", k.plugin}, {"schedulable", strconv.FormatBool(k.schedulable)}}, value: float64(c)})
		}
		return []family{
			byStateF,
			gauge(namespace+"_claims_releasing", "Live claims whose release was asked for and has not finished.", float64(releasing)),
			gauge(namespace+"_claims_degraded", "Live claims held degraded: published, and their restore failed (see docs/metrics.md).", float64(deg)),
			gauge(namespace+"_claims_needs_reconcile", "Live claims left for reconcile after an RPC failed (see docs/metrics.md).", float64(needs)),
			gauge(namespace+"_claims_covered", "Published claims whose target no longer shows the volume: covered by another mount since, or nothing mounted there (see docs/metrics.md).", float64(covered)),
			volumes,
		}, nil
	}
}

// Server serves /metrics and /healthz.
type Server struct {
	srv *http.Server
	lis *limitedListener
}

// Listen binds addr (host:port; port 0 picks a free one) and returns the server to Serve.
// Nothing is served before Serve.
func Listen(addr string) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--metrics-addr %s: %w (is another agent or exporter on that port?)", addr, err)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		// Not a port someone holds: the host part names no address of this host's
		// (TestListenHintsAnotherHolderOnlyWhenTheAddressIsInUse).
		return nil, fmt.Errorf("--metrics-addr %s: %w (no interface of this host has that address)", addr, err)
	case err != nil:
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	return &Server{lis: limitConns(lis, maxConns)}, nil
}

// maxConns bounds the connections the endpoint holds at a time. Each held a descriptor and a
// goroutine of the agent's, for up to its header or read timeout even when it sent nothing,
// and whoever reaches the endpoint could open them faster than they time out, until the agent
// had no descriptor left for its plugins' sockets and its store
// (TestConnectionsTheAgentHoldsAreBounded). Past the bound, a connection waits, unaccepted but
// one, until one held closes or goes idle: a scraper or two, each with a connection kept alive,
// are far below it.
const maxConns = 32

// limitedListener accepts a connection only while fewer than max accepted ones are open. With
// all of them open, the one accepted next takes the slot of the connection idle the longest
// (kept alive between two requests: http.Server.ConnState, track), which it closes: an idle
// connection held its slot for up to idleTimeout, and maxConns of them, one request each per
// idleTimeout, kept every scrape and /healthz waiting (TestIdleConnectionsGiveWayToAScrape).
// Without an idle one, it waits for a slot, and the rest wait in the kernel's backlog.
type limitedListener struct {
	net.Listener
	max int

	mu   sync.Mutex
	open int
	// idle is the accepted connections idle between two requests, and since when.
	idle map[*slotConn]time.Time
	// freed says a slot may be free, or a connection idle (one signal kept: it is not lost
	// between Accept's look and its wait).
	freed     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func limitConns(lis net.Listener, n int) *limitedListener {
	return &limitedListener{Listener: lis, max: n, idle: map[*slotConn]time.Time{}, freed: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		admitted, victim := l.admit()
		if admitted {
			return &slotConn{Conn: c, l: l}, nil
		}
		if victim != nil {
			_ = victim.Close() // gives its slot back
			continue
		}
		select {
		case <-l.freed:
		case <-l.closed:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// admit takes a slot for a connection accepted, or names the connection idle the longest, to
// close for it, or neither: wait.
func (l *limitedListener) admit() (admitted bool, victim *slotConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open < l.max {
		l.open++
		return true, nil
	}
	var since time.Time
	for c, at := range l.idle {
		if victim == nil || at.Before(since) {
			victim, since = c, at
		}
	}
	delete(l.idle, victim)
	return false, victim
}

// track is the server's ConnState: which accepted connections are idle, and since when.
func (l *limitedListener) track(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*slotConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if state != http.StateIdle || c.released {
		delete(l.idle, c)
		return
	}
	l.idle[c] = time.Now()
	l.signal()
}

// signal wakes an Accept waiting for a slot. Under l.mu.
func (l *limitedListener) signal() {
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

func (l *limitedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// slotConn gives its listener's slot back when it is closed, once.
type slotConn struct {
	net.Conn
	l        *limitedListener
	released bool // under l.mu
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if !c.released {
		c.released = true
		c.l.open--
		delete(c.l.idle, c)
		c.l.signal()
	}
	return err
}

// Close releases the address of a server that will not Serve.
func (s *Server) Close() error { return s.lis.Close() }

// Addr is the address bound, with the port chosen.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Serve serves m's metrics on /metrics and status on /healthz (200 with the agent's Status as
// JSON once it is ready, 503 with it before) until ctx ends.
func (s *Server) Serve(ctx context.Context, m *Metrics, status func() agent.Status, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.handler(log))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		st := status()
		// Scrubbed as the labels are (registry.redactor): a plugin ID holding a secret was shown
		// whole here, one path from /metrics, which masks it (TestHealthzShowsNoSecretInThePluginID).
		redactWaiting := func(s string) string { return s }
		if redactor := m.reg.redactorOf(); redactor != nil {
			ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout)
			redact, err := redactor(ctx)
			cancel()
			if err != nil {
				log.Warn("healthz: reading the state's secrets failed", "err", err)
				http.Error(w, "reading the state's secrets to keep them out of the status: "+err.Error(), http.StatusInternalServerError)
				return
			}
			// The plugin IDs alone: the rest is volctl's own words (health is "healthy", "not
			// ready", "unhealthy"), which a secret of the same value made "[REDACTED]", failing
			// health checks and telling the secret (TestHealthzHealthWordIsNotScrubbed). Tagged
			// as the metrics' plugin label is: two plugins the scrub makes alike stay two, each
			// its series' (TestHealthzTellsApartPluginsTheScrubMakesAlikeAsMetricsDo).
			for i := range st.Plugins {
				if id, shown := st.Plugins[i].ID, redact(st.Plugins[i].ID); shown != id {
					st.Plugins[i].ID = shown + " #" + m.reg.labelTag("plugin", id)
				}
			}
			redactWaiting = redact
		}
		if m.stateFile != nil {
			if err := m.stateFile(); err != nil {
				// Not ready over a state no volctl writes any more, as /metrics fails then, and
				// saying so: the 503 said no more than the ready status it replaced
				// (TestHealthzOfAReplacedStateDatabaseSaysWhy). The agent stops at its next pass.
				log.Warn("healthz: the state database cannot be used", "err", err)
				st.Ready = false
				// Its error names the state database's path, which a secret may be part of (a
				// state dir named after one), scrubbed as the plugin IDs are.
				st.WaitingFor = "the agent's restart, which its next reconcile pass asks for by stopping it: " + redactWaiting(err.Error())
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if !st.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout,
		WriteTimeout: scrapeTimeout + 20*time.Second, IdleTimeout: idleTimeout, ConnState: s.lis.track}
	done := make(chan struct{})
	crash.Go(func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(sctx)
	})
	err := s.srv.Serve(s.lis)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("metrics endpoint %s: %w", s.Addr(), err)
}

// idleTimeout closes a kept-alive connection with no request for this long. Without one, every
// connection a client opened and left idle held a descriptor and a goroutine of the agent's for
// good: the endpoint may listen beyond loopback, for Prometheus on another host, and anyone who
// reaches it could pile them up. Prometheus scrapes far more often than this.
var idleTimeout = 2 * time.Minute

// readTimeout bounds the reading of a whole request, body included. A scrape has no body, but
// the server reads one that a client announces, after the handler, to reuse the connection;
// without a bound, a client that never sends it held a connection of the agent's for good.
var readTimeout = 30 * time.Second

// scrapeTimeout bounds a scrape's reads of the state, as Prometheus's own scrape_timeout
// (10s by default) bounds its wait.
const scrapeTimeout = 10 * time.Second

// handler serves the metrics in the text format. A collector that fails (the state could not
// be read) fails the scrape, as the client library's handler does: the agent logs the error
// and answers 500 naming what failed, so Prometheus marks the target down (up == 0) rather
// than let the state's series vanish while the rest look fine.
func (m *Metrics) handler(log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout)
		defer cancel()
		fams, err := m.reg.gather(ctx)
		if err != nil {
			log.Warn("metrics: scrape failed", "err", err)
			http.Error(w, "collecting metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		var buf bytes.Buffer
		writeText(&buf, fams)
		w.Header().Set("Content-Type", textContentType)
		w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
		_, _ = buf.WriteTo(w)
	})
}
