// Package metrics is the agent's Prometheus metrics and its HTTP endpoint (/metrics and
// /healthz, `volctl agent --metrics-addr`). Metrics live in a registry of their own, never the
// client library's global one, so tests and the binary share no state. The names are
// documented in docs/metrics.md.
package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/store"
)

const namespace = "volctl"

// Outcomes every reconcile pass counts, present at zero from the start so an alert on their
// rate has a series to read.
var reconcileOutcomes = []string{"restored", "released", "failed"}

// Metrics implements agent.Observer and the engine's RPC observer over a private registry.
type Metrics struct {
	reg *prometheus.Registry

	pluginHealthy *prometheus.GaugeVec
	pluginReady   *prometheus.GaugeVec
	probeSeconds  *prometheus.HistogramVec
	restarts      *prometheus.CounterVec
	rpcs          *prometheus.CounterVec
	rpcSeconds    *prometheus.HistogramVec
	passes        *prometheus.CounterVec
	outcomes      *prometheus.CounterVec
	problems      prometheus.Gauge
	lastPass      prometheus.Gauge
	ready         prometheus.Gauge
}

var _ agent.Observer = (*Metrics)(nil)

// New builds the metrics. Claims and volumes are counted once CollectState names the engine.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.pluginHealthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "plugin_healthy",
		Help: "1 if the plugin's last probe succeeded, else 0."}, []string{"plugin"})
	m.pluginReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "plugin_ready",
		Help: "1 if the plugin's last probe reported it ready, else 0."}, []string{"plugin"})
	m.probeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "plugin_probe_duration_seconds",
		Help: "Latency of the agent's probes of a plugin (CSI Probe), successful ones.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9)},
		[]string{"plugin"})
	m.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "plugin_restarts_total",
		Help: "Restarts of a supervised plugin by the agent, by reason: exited, or unhealthy past the health timeout."},
		[]string{"plugin", "reason"})
	m.rpcs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "csi_rpcs_total",
		Help: "CSI RPCs the agent sent, by plugin, RPC and gRPC code (DeadlineExceeded includes volctl's own timeout)."},
		[]string{"plugin", "rpc", "code"})
	m.rpcSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "csi_rpc_duration_seconds",
		Help: "Latency of the CSI RPCs the agent sent, by plugin, RPC and gRPC code.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)},
		[]string{"plugin", "rpc", "code"})
	m.passes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "reconcile_passes_total",
		Help: "Reconcile passes, by trigger (start, timer, plugin_restart, redrive) and result: ok, problems (something left wrong), error."},
		[]string{"trigger", "result"})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "reconcile_outcomes_total",
		Help: "What reconcile passes did, by outcome: restored, released, failed (a problem left), and created, deleted, published, cleaned, orphan."},
		[]string{"outcome"})
	m.problems = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "reconcile_problems",
		Help: "Problems the last reconcile pass left (failed claims, orphan mounts)."})
	m.lastPass = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "reconcile_last_pass_timestamp_seconds",
		Help: "Unix time the last reconcile pass ended."})
	m.ready = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "agent_ready",
		Help: "1 once the agent's plugins were probed and its start-up reconcile ran (it then sent READY=1 to systemd)."})
	for _, o := range reconcileOutcomes {
		m.outcomes.WithLabelValues(o)
	}
	m.reg.MustRegister(m.pluginHealthy, m.pluginReady, m.probeSeconds, m.restarts, m.rpcs, m.rpcSeconds,
		m.passes, m.outcomes, m.problems, m.lastPass, m.ready,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: namespace}))
	return m
}

// CollectState counts e's claims and volumes at every scrape. Call it once, before serving.
func (m *Metrics) CollectState(e *engine.Engine) { m.reg.MustRegister(newStateCollector(e)) }

// ObserveRPC counts and times one CSI RPC (engine.Config.ObserveRPC).
func (m *Metrics) ObserveRPC(plugin, rpc, code string, d time.Duration) {
	m.rpcs.WithLabelValues(plugin, rpc, code).Inc()
	m.rpcSeconds.WithLabelValues(plugin, rpc, code).Observe(d.Seconds())
}

// PluginProbed implements agent.Observer.
func (m *Metrics) PluginProbed(plugin string, healthy, ready bool, latency time.Duration) {
	m.pluginHealthy.WithLabelValues(plugin).Set(b2f(healthy))
	m.pluginReady.WithLabelValues(plugin).Set(b2f(ready))
	if healthy && latency > 0 {
		m.probeSeconds.WithLabelValues(plugin).Observe(latency.Seconds())
	}
}

// PluginGone implements agent.Observer: a deregistered plugin's series go.
func (m *Metrics) PluginGone(plugin string) {
	l := prometheus.Labels{"plugin": plugin}
	m.pluginHealthy.DeletePartialMatch(l)
	m.pluginReady.DeletePartialMatch(l)
	m.probeSeconds.DeletePartialMatch(l)
	m.restarts.DeletePartialMatch(l)
	m.rpcs.DeletePartialMatch(l)
	m.rpcSeconds.DeletePartialMatch(l)
}

// PluginRestarted implements agent.Observer.
func (m *Metrics) PluginRestarted(plugin, reason string) {
	m.restarts.WithLabelValues(plugin, reason).Inc()
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
	m.passes.WithLabelValues(trigger, result).Inc()
	for _, a := range rep.Actions {
		m.outcomes.WithLabelValues(a.Kind).Inc()
	}
	for _, p := range rep.Problems {
		m.outcomes.WithLabelValues(p.Kind).Inc()
	}
	m.problems.Set(float64(len(rep.Problems)))
	m.lastPass.SetToCurrentTime()
}

// Ready implements agent.Observer.
func (m *Metrics) Ready() { m.ready.Set(1) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// stateCollector reads claims and volumes from the store at each scrape: they change through
// any volctl command, not only the agent, so the store is the one place to count them.
type stateCollector struct {
	e                                           *engine.Engine
	claims, releasing, degraded, needsReconcile *prometheus.Desc
	volumes                                     *prometheus.Desc
}

func newStateCollector(e *engine.Engine) *stateCollector {
	return &stateCollector{
		e: e,
		claims: prometheus.NewDesc(namespace+"_claims", "Live claims by state (the claim state machine's).",
			[]string{"state"}, nil),
		releasing: prometheus.NewDesc(namespace+"_claims_releasing", "Live claims whose release was asked for and has not finished.", nil, nil),
		degraded: prometheus.NewDesc(namespace+"_claims_degraded",
			"Live claims held degraded: published, and their restore failed (see docs/metrics.md).", nil, nil),
		needsReconcile: prometheus.NewDesc(namespace+"_claims_needs_reconcile",
			"Live claims left for reconcile after an RPC failed (see docs/metrics.md).", nil, nil),
		volumes: prometheus.NewDesc(namespace+"_volumes", "Volumes by plugin and schedulability.",
			[]string{"plugin", "schedulable"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.claims
	ch <- c.releasing
	ch <- c.degraded
	ch <- c.needsReconcile
	ch <- c.volumes
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	claims, err := c.e.Claims(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.claims, fmt.Errorf("reading the claims from the state: %w", err))
	} else {
		byState := map[string]int{}
		for _, s := range store.ClaimStates {
			byState[string(s)] = 0
		}
		releasing, deg, needs := 0, 0, 0
		for _, cl := range claims {
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
		for s, n := range byState {
			ch <- prometheus.MustNewConstMetric(c.claims, prometheus.GaugeValue, float64(n), s)
		}
		ch <- prometheus.MustNewConstMetric(c.releasing, prometheus.GaugeValue, float64(releasing))
		ch <- prometheus.MustNewConstMetric(c.degraded, prometheus.GaugeValue, float64(deg))
		ch <- prometheus.MustNewConstMetric(c.needsReconcile, prometheus.GaugeValue, float64(needs))
	}
	vols, err := c.e.Volumes(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.volumes, fmt.Errorf("reading the volumes from the state: %w", err))
		return
	}
	type key struct {
		plugin      string
		schedulable bool
	}
	n := map[key]int{}
	for _, v := range vols {
		n[key{v.PluginID, v.Schedulable}]++
	}
	for k, v := range n {
		ch <- prometheus.MustNewConstMetric(c.volumes, prometheus.GaugeValue, float64(v), k.plugin, strconv.FormatBool(k.schedulable))
	}
}

// Server serves /metrics and /healthz.
type Server struct {
	srv *http.Server
	lis net.Listener
}

// Listen binds addr (host:port; port 0 picks a free one) and returns the server to Serve.
// Nothing is served before Serve.
func Listen(addr string) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w (is another agent or exporter on that port?)", addr, err)
	}
	return &Server{lis: lis}, nil
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
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorLog: slogErrorLog{log}}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		st := status()
		w.Header().Set("Content-Type", "application/json")
		if !st.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(sctx)
	}()
	err := s.srv.Serve(s.lis)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("metrics endpoint %s: %w", s.Addr(), err)
}

// slogErrorLog routes promhttp's errors (a failed collection) to the agent's log.
type slogErrorLog struct{ log *slog.Logger }

func (l slogErrorLog) Println(v ...any) { l.log.Warn("metrics: " + fmt.Sprint(v...)) }
