package metrics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/agent"
	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// fixture is an engine on a temp state dir whose RPCs the metrics observe, with a mem plugin
// registered and a volume claimed.
func fixture(t *testing.T) (*Metrics, *engine.Engine) {
	t.Helper()
	ctx := context.Background()
	m, e := observedMem(t, nil)
	if _, err := e.CreateVolume(ctx, spec.Volume{ID: "db", Name: "db", Type: "csi", PluginID: "mem", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Claim(ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		t.Fatal(err)
	}
	m.CollectState(e)
	return m, e
}

// observedMem is new metrics observing the RPCs of an engine on a temp state dir, with a mem
// plugin registered behind faults (nil: none).
func observedMem(t *testing.T, faults *csitest.Faults) (*Metrics, *engine.Engine) {
	t.Helper()
	ctx := context.Background()
	m := New()
	opts := []csitest.ServeOption{csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()))}
	if faults != nil {
		opts = append(opts, csitest.WithFaults(faults))
	}
	socket, stop := csitest.Serve(t, opts...)
	t.Cleanup(stop)
	e, err := engine.Open(ctx, engine.Config{StateDir: t.TempDir(), ObserveRPC: m.ObserveRPC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.RegisterPlugin(ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return m, e
}

// fedFixture is fixture's metrics fed one event of every kind, so every family has a series.
func fedFixture(t *testing.T) *Metrics {
	t.Helper()
	m, _ := fixture(t)
	m.PluginProbed("mem", true, true, 3*time.Millisecond)
	m.PluginRestarted("mem", "exited")
	m.Reconciled("start", engine.ReconcileReport{Actions: []engine.ReconcileAction{{Kind: "restored"}}}, nil)
	m.Ready()
	return m
}

// exposition is the text /metrics serves.
func exposition(t *testing.T, m *Metrics) string {
	t.Helper()
	fams, err := m.reg.gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	writeText(&buf, fams)
	return buf.String()
}

// parse reads an exposition with Prometheus's own text parser, as a scrape does.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, text)
	}
	return fams
}

func gather(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	return parse(t, exposition(t, m))
}

// sorted is fams ordered by name.
func sorted(fams map[string]*dto.MetricFamily) []*dto.MetricFamily {
	var out []*dto.MetricFamily
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		out = append(out, fams[name])
	}
	return out
}

// value is the sample of family name whose labels include want; ok is false without one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, ok bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsFollowConventions: every metric, fed once, passes the client library's linter
// (names, units, _total on counters, help), is volctl_-prefixed (or the Go runtime's), and
// is listed in docs/metrics.md.
func TestMetricsFollowConventions(t *testing.T) {
	m := fedFixture(t)

	mfs := sorted(gather(t, m))
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		name := mf.GetName()
		seen[name] = true
		switch {
		case !strings.HasPrefix(name, "volctl_") && !strings.HasPrefix(name, "go_"):
			t.Errorf("metric %s lacks the volctl_ prefix", name)
		case !strings.Contains(string(doc), "`"+name+"`"):
			t.Errorf("metric %s is not documented in docs/metrics.md", name)
		}
	}
	for _, want := range []string{"volctl_agent_ready", "volctl_plugin_healthy", "volctl_plugin_ready",
		"volctl_plugin_probe_duration_seconds", "volctl_plugin_restarts_total", "volctl_csi_rpcs_total",
		"volctl_csi_rpc_duration_seconds", "volctl_claims", "volctl_claims_releasing", "volctl_claims_degraded", "volctl_claims_needs_reconcile",
		"volctl_volumes", "volctl_reconcile_passes_total", "volctl_reconcile_outcomes_total", "volctl_reconcile_problems",
		"volctl_reconcile_last_pass_timestamp_seconds", "volctl_process_cpu_seconds_total", "go_goroutines"} {
		if !seen[want] {
			t.Errorf("metric %s is not exposed", want)
		}
	}
}

// TestMetricsValues: the state collector counts the store's claims and volumes, the RPC
// observer counts the engine's RPCs by plugin, RPC and code, reconcile outcomes add up, and a
// deregistered plugin's series go.
func TestMetricsValues(t *testing.T) {
	m, e := fixture(t)
	fams := gather(t, m)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"volctl_claims", map[string]string{"state": "published"}, 1},
		{"volctl_claims", map[string]string{"state": "taken"}, 0},
		{"volctl_claims_releasing", nil, 0},
		{"volctl_claims_degraded", nil, 0},
		{"volctl_claims_needs_reconcile", nil, 0},
		{"volctl_volumes", map[string]string{"plugin": "mem", "schedulable": "true"}, 1},
		{"volctl_csi_rpcs_total", map[string]string{"plugin": "mem", "rpc": "NodePublishVolume", "code": "OK"}, 1},
		{"volctl_csi_rpc_duration_seconds", map[string]string{"plugin": "mem", "rpc": "NodePublishVolume", "code": "OK"}, 1},
		{"volctl_reconcile_outcomes_total", map[string]string{"outcome": "restored"}, 0},
		{"volctl_reconcile_outcomes_total", map[string]string{"outcome": "released"}, 0},
		{"volctl_reconcile_outcomes_total", map[string]string{"outcome": "failed"}, 0},
		{"volctl_agent_ready", nil, 0},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %t), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, s := range store.ClaimStates {
		if _, ok := value(fams, "volctl_claims", map[string]string{"state": string(s)}); !ok {
			t.Errorf("volctl_claims has no series for state %s", s)
		}
	}

	if _, err := e.Release(context.Background(), "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	m.Reconciled("timer", engine.ReconcileReport{
		Actions:  []engine.ReconcileAction{{Kind: "restored"}, {Kind: "released"}},
		Problems: []engine.ReconcileAction{{Kind: "failed"}, {Kind: "failed"}},
	}, errors.New("2 problems"))
	m.PluginProbed("mem", false, false, 0)
	fams = gather(t, m)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"volctl_claims", map[string]string{"state": "published"}, 0},
		{"volctl_csi_rpcs_total", map[string]string{"plugin": "mem", "rpc": "NodeUnpublishVolume", "code": "OK"}, 1},
		{"volctl_reconcile_outcomes_total", map[string]string{"outcome": "restored"}, 1},
		{"volctl_reconcile_outcomes_total", map[string]string{"outcome": "released"}, 1},
		{"volctl_reconcile_outcomes_total", map[string]string{"outcome": "failed"}, 2},
		{"volctl_reconcile_passes_total", map[string]string{"trigger": "timer", "result": "problems"}, 1},
		{"volctl_reconcile_problems", nil, 2},
		{"volctl_plugin_healthy", map[string]string{"plugin": "mem"}, 0},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("after a release: %s%v = %v (present %t), want %v", c.name, c.labels, got, ok, c.want)
		}
	}

	m.PluginGone("mem")
	fams = gather(t, m)
	for _, name := range []string{"volctl_plugin_healthy", "volctl_csi_rpcs_total", "volctl_csi_rpc_duration_seconds"} {
		if _, ok := value(fams, name, map[string]string{"plugin": "mem"}); ok {
			t.Errorf("%s still has a series for the deregistered plugin", name)
		}
	}
}

// TestHealthz: /healthz answers the agent's status, 503 until it is ready and 200 after;
// /metrics serves the registry.
func TestHealthz(t *testing.T) {
	m := New()
	srv, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var ready atomic.Bool
	status := func() agent.Status {
		return agent.Status{Ready: ready.Load(), Plugins: []agent.PluginStatus{{ID: "hp", Supervised: true, Pid: 7, Health: "healthy"}}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, m, status, nil) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	get := func(path string) (int, string) {
		t.Helper()
		resp, body := httpGet(t, "http://"+srv.Addr()+path)
		return resp.StatusCode, body
	}
	code, body := get("/healthz")
	var st agent.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != http.StatusServiceUnavailable || st.Ready || len(st.Plugins) != 1 {
		t.Errorf("/healthz before ready: %d %v\n%s", code, err, body)
	}
	ready.Store(true)
	if code, body := get("/healthz"); code != http.StatusOK || !strings.Contains(body, `"ready": true`) || !strings.Contains(body, `"id": "hp"`) {
		t.Errorf("/healthz when ready: %d\n%s", code, body)
	}
	m.Ready()
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "\nvolctl_agent_ready 1\n") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
}

// TestListenNamesTheAddress: a taken port is refused with the address and a hint.
func TestListenNamesTheAddress(t *testing.T) {
	a, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := Listen(a.Addr()); err == nil || !strings.Contains(err.Error(), a.Addr()) || !strings.Contains(err.Error(), "another agent or exporter") {
		t.Errorf("Listen on a taken port: %v", err)
	}
}

// TestMetricsDocAlertsUseRealLabels: each alert in docs/metrics.md queries a metric the agent
// exposes, and every $labels.X its annotations name is a label of that metric, a label the
// doc's scrape config attaches to the target (node), or one Prometheus adds (instance, job).
func TestMetricsDocAlertsUseRealLabels(t *testing.T) {
	m, _ := fixture(t)
	m.PluginProbed("mem", true, true, 3*time.Millisecond)
	m.PluginRestarted("mem", "exited")
	m.Reconciled("start", engine.ReconcileReport{}, nil)
	mfs := sorted(gather(t, m))
	labels := map[string]map[string]bool{}
	for _, mf := range mfs {
		labels[mf.GetName()] = map[string]bool{}
		for _, mm := range mf.GetMetric() {
			for _, l := range mm.GetLabel() {
				labels[mf.GetName()][l.GetName()] = true
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	target := map[string]bool{"instance": true, "job": true}
	if _, after, ok := strings.Cut(doc, "scrape_configs:"); ok {
		scrape, _, _ := strings.Cut(after, "```")
		if _, ls, ok := strings.Cut(scrape, "labels:"); ok {
			for _, line := range strings.Split(ls, "\n") {
				if k, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k != "" {
					target[k] = true
				}
			}
		}
	}
	alerts := strings.Split(doc, "- alert: ")[1:]
	if len(alerts) < 3 {
		t.Fatalf("docs/metrics.md has %d alerts, want the three of issue 19", len(alerts))
	}
	for _, a := range alerts {
		name, _, _ := strings.Cut(a, "\n")
		_, expr, _ := strings.Cut(a, "expr: ")
		metric := strings.FieldsFunc(expr, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })[0]
		have, ok := labels[metric]
		if !ok {
			t.Errorf("alert %s queries %s, which the agent does not expose", name, metric)
			continue
		}
		for _, part := range strings.Split(a, "$labels.")[1:] {
			l := strings.FieldsFunc(part, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z') })[0]
			if !have[l] && !target[l] {
				t.Errorf("alert %s names $labels.%s, but %s has no such label and the scrape config adds none", name, l, metric)
			}
		}
	}
}

// docRow is a row of docs/metrics.md's table of metrics.
type docRow struct {
	typ    string
	labels []string
}

// docTable reads docs/metrics.md's table: metric, type, labels.
func docTable(t *testing.T) map[string]docRow {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "\n## Metrics\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]docRow{}
	for line := range strings.Lines(section) {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 5 {
			t.Fatalf("docs/metrics.md: table row with %d columns: %s", len(cols), line)
		}
		name := strings.Trim(strings.TrimSpace(cols[1]), "`")
		var labels []string
		for l := range strings.SplitSeq(cols[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		rows[name] = docRow{typ: strings.TrimSpace(cols[2]), labels: labels}
	}
	if len(rows) < 20 {
		t.Fatalf("docs/metrics.md's table has %d metrics: the table's format changed", len(rows))
	}
	return rows
}

// serve runs m's endpoint on loopback until the test ends and returns its address.
func serve(t *testing.T, m *Metrics, log *slog.Logger) string {
	t.Helper()
	srv, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, m, func() agent.Status { return agent.Status{} }, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	return srv.Addr()
}

func httpGet(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// TestServedMetricsMatchTheDoc: /metrics, fed every kind of event, is the text format 0.0.4
// that Prometheus's own parser reads, and serves exactly the families docs/metrics.md's table
// lists, each with its type, a HELP, and every series with exactly the table's labels.
func TestServedMetricsMatchTheDoc(t *testing.T) {
	m := fedFixture(t)
	resp, body := httpGet(t, "http://"+serve(t, m, nil)+"/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain || !strings.Contains(ct, "version=0.0.4") {
		t.Errorf("/metrics Content-Type %q, want the text format 0.0.4", ct)
	}
	fams := parse(t, body)
	doc := docTable(t)
	for name, mf := range fams {
		row, ok := doc[name]
		if !ok {
			t.Errorf("%s is served but not in docs/metrics.md's table", name)
			continue
		}
		if got := strings.ToLower(mf.GetType().String()); got != row.typ {
			t.Errorf("%s is served as a %s, the doc says %s", name, got, row.typ)
		}
		if mf.GetHelp() == "" {
			t.Errorf("%s has no HELP", name)
		}
		for _, s := range mf.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName())
			}
			slices.Sort(labels)
			if !slices.Equal(labels, row.labels) {
				t.Errorf("%s has a series with labels %v, the doc says %v", name, labels, row.labels)
			}
		}
	}
	for name := range doc {
		if fams[name] == nil {
			t.Errorf("docs/metrics.md lists %s, which /metrics does not serve", name)
		}
	}
}

// TestScrapeFailureAnswers500: a scrape that cannot read the state answers 500 naming what
// failed, and the agent logs it, as the client library's handler did: Prometheus then sees the
// target down rather than the state's series gone.
func TestScrapeFailureAnswers500(t *testing.T) {
	m, e := fixture(t)
	var logs bytes.Buffer
	addr := serve(t, m, slog.New(slog.NewTextHandler(&logs, nil)))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	resp, body := httpGet(t, "http://"+addr+"/metrics")
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "collecting metrics: reading the claims from the state") {
		t.Errorf("/metrics with the state closed: %d\n%s", resp.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "reading the claims from the state") {
		t.Errorf("the failed scrape is not logged as a warning:\n%s", logs.String())
	}
}

// TestPluginGoneKeepsOtherPlugins: a deregistered plugin's series go from every family
// labelled by plugin; another plugin's stay.
func TestPluginGoneKeepsOtherPlugins(t *testing.T) {
	m := New()
	for _, p := range []string{"a", "b"} {
		m.PluginProbed(p, true, true, time.Millisecond)
		m.PluginRestarted(p, "exited")
		m.ObserveRPC(p, "Probe", "OK", time.Millisecond)
	}
	m.PluginGone("a")
	fams := gather(t, m)
	for _, name := range []string{"volctl_plugin_healthy", "volctl_plugin_ready", "volctl_plugin_probe_duration_seconds",
		"volctl_plugin_restarts_total", "volctl_csi_rpcs_total", "volctl_csi_rpc_duration_seconds"} {
		if _, ok := value(fams, name, map[string]string{"plugin": "a"}); ok {
			t.Errorf("%s still has a series for the deregistered plugin a", name)
		}
		if v, ok := value(fams, name, map[string]string{"plugin": "b"}); !ok || v != 1 {
			t.Errorf("%s{plugin=\"b\"} = %v (present %t), want 1", name, v, ok)
		}
	}
}

// TestConcurrentUpdatesAndScrapes: observers and scrapes run at once (under -race, this is
// the registry's locking).
func TestConcurrentUpdatesAndScrapes(t *testing.T) {
	m := New()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				p := fmt.Sprint("p", (i+j)%3)
				m.ObserveRPC(p, "Probe", "OK", time.Duration(j)*time.Microsecond)
				m.PluginProbed(p, true, j%2 == 0, time.Millisecond)
				if j%50 == 0 {
					m.PluginGone(p)
				}
			}
		})
	}
	for range 20 {
		_ = exposition(t, m)
	}
	wg.Wait()
	total := 0.0
	for _, s := range gather(t, m)["volctl_csi_rpcs_total"].GetMetric() {
		total += s.GetCounter().GetValue()
	}
	if total == 0 || total > 800 {
		t.Errorf("volctl_csi_rpcs_total sums to %v after 800 RPCs, some deleted", total)
	}
}

// TestSeriesOfDistinctLabelValuesStayApart: label values are any bytes, and two lists of them
// that a separator would join into the same key ("p\xffq","r" and "p","q\xffr" with \xff)
// are two series, as they were with the client library.
func TestSeriesOfDistinctLabelValuesStayApart(t *testing.T) {
	v := newVec(counterType, "x_total", "h", nil, "a", "b")
	for _, vals := range [][]string{{"p\xffq", "r"}, {"p", "q\xffr"}, {"p:", "q"}, {"p", ":q"}, {"1:p", ""}, {"", "1:p"}} {
		v.inc(vals...)
	}
	f := v.snapshot()
	if len(f.metrics) != 6 {
		t.Fatalf("6 distinct label value lists make %d series: %+v", len(f.metrics), f.metrics)
	}
	for _, m := range f.metrics {
		if m.value != 1 {
			t.Errorf("series %v counted %v, want 1", m.labels, m.value)
		}
	}
}

// A plugin may answer with any gRPC code number, not only the 17 gRPC defines: the code label
// takes the defined names only, and any other number counts as Unknown (as grpc-java reads
// one), so a plugin cannot make the agent keep a series per number it makes up.
func TestRPCCodeLabelIsBounded(t *testing.T) {
	ctx := context.Background()
	faults := csitest.NewFaults()
	m, e := observedMem(t, faults)
	for i := range 50 {
		faults.FailOnce(csi.RPCProbe, codes.Code(1000+i))
		_, _ = e.PluginStatus(ctx, "mem")
	}
	faults.FailOnce(csi.RPCProbe, codes.NotFound)
	_, _ = e.PluginStatus(ctx, "mem")
	fams := gather(t, m)
	codesSeen := map[string]float64{}
	for _, s := range fams["volctl_csi_rpcs_total"].GetMetric() {
		lbl := map[string]string{}
		for _, l := range s.GetLabel() {
			lbl[l.GetName()] = l.GetValue()
		}
		if lbl["rpc"] == csi.RPCProbe {
			codesSeen[lbl["code"]] += s.GetCounter().GetValue()
		}
	}
	delete(codesSeen, "OK") // the registration's probe
	want := map[string]float64{"Unknown": 50, "NotFound": 1}
	if !maps.Equal(codesSeen, want) {
		t.Errorf("Probe's series by code = %v, want %v", codesSeen, want)
	}
}

// dialServed serves empty metrics on a loopback port until the test ends and returns a
// connection to it.
func dialServed(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", serve(t, New(), nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// A connection a client keeps alive and leaves idle is closed after idleTimeout: the endpoint
// may listen beyond loopback, and idle connections must not pile up in the agent.
func TestIdleConnectionsAreClosed(t *testing.T) {
	defer func(d time.Duration) { idleTimeout = d }(idleTimeout)
	idleTimeout = 100 * time.Millisecond
	conn := dialServed(t)
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The deadline only ends a test of a server that keeps the connection forever.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("idle kept-alive connection: read %d, %v; want it closed by the agent (EOF)", n, err)
	}
}

// A client that sends a request's headers, announces a small body and then sends it a byte at a
// time, or never, held a connection, a descriptor and a goroutine of the agent's for good: the
// server reads such a body after the handler (to reuse the connection) with no deadline but
// the request's read timeout, which was unset. Many of them exhaust the agent's descriptors,
// which it needs for its plugins' sockets and its store.
func TestASlowRequestBodyIsCutOff(t *testing.T) {
	defer func(d time.Duration) { readTimeout = d }(readTimeout)
	readTimeout = 200 * time.Millisecond
	conn := dialServed(t)
	if _, err := io.WriteString(conn, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nx"); err != nil {
		t.Fatal(err)
	}
	// The deadline only ends a test of a server that keeps the connection forever.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("a request whose body never comes: %v; want the connection closed by the agent", err)
	}
}

// Whoever reaches the endpoint opens connections and sends nothing: each held a descriptor and
// a goroutine of the agent's until its header timeout, and a client opening them faster than
// they time out took every descriptor the agent may have, which it needs for its plugins'
// sockets and its store. The agent serves at most maxConns at a time; the rest wait in the
// kernel's backlog, no descriptor of the agent's, and a scrape still gets its answer once a
// slot frees.
func TestConnectionsTheAgentHoldsAreBounded(t *testing.T) {
	addr := serve(t, New(), nil)
	fds := func() int {
		t.Helper()
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	const idle = 4 * maxConns
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range idle {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond) // for the server to accept what it will
	// The test's own idle connections are in its count; what is left is the agent's.
	if held := fds() - before - idle; held > maxConns+4 {
		t.Errorf("%d idle connections: the agent holds %d descriptors for them, more than its %d at a time", idle, held, maxConns)
	}
	// All but maxConns-1 of them closed, a scrape has a slot.
	for _, c := range conns[:idle-maxConns+1] {
		c.Close()
	}
	resp, body := httpGet(t, "http://"+addr+"/metrics")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "volctl_agent_ready") {
		t.Errorf("a scrape beside %d idle connections: %d\n%s", maxConns-1, resp.StatusCode, body)
	}
}

// A connection kept alive after one request holds a slot while it idles, for up to idleTimeout
// (2 min): whoever reaches the endpoint kept maxConns of them, one request each per idleTimeout,
// and every scrape and /healthz waited unaccepted behind them. With its slots full, the endpoint
// closes the connection idle the longest for the next one; the ones it closed are the oldest,
// and a request in flight keeps its connection (its scrape is answered).
func TestIdleConnectionsGiveWayToAScrape(t *testing.T) {
	m := New()
	inFlight, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	m.reg.registerCollector(func(context.Context) ([]family, error) {
		if first.CompareAndSwap(false, true) { // the first scrape only (a sync.Once would hold the rest too)
			close(inFlight)
			<-release
		}
		return nil, nil
	})
	addr := serve(t, m, nil)
	var unblock sync.Once
	t.Cleanup(func() { unblock.Do(func() { close(release) }) }) // before serve's, which waits for the scrape
	request := func(c net.Conn, path string) (*http.Response, error) {
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// A scrape in flight: its connection is active, not idle.
	scraping := dial()
	scraped := make(chan error, 1)
	go func() {
		resp, err := request(scraping, "/metrics")
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		scraped <- err
	}()
	<-inFlight
	// Twice as many kept-alive connections as the endpoint holds, each one request, then idle.
	var idle []net.Conn
	for i := range 2 * maxConns {
		c := dial()
		if _, err := request(c, "/healthz"); err != nil {
			t.Fatalf("a request on connection %d, beside %d idle kept-alive ones and a scrape in flight: %v", i+1, i, err)
		}
		idle = append(idle, c)
	}
	resp, body := httpGet(t, "http://"+addr+"/metrics")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "volctl_agent_ready") {
		t.Errorf("a scrape beside %d idle kept-alive connections: %d\n%s", 2*maxConns, resp.StatusCode, body)
	}
	// The oldest idle ones were closed by the agent.
	_ = idle[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := idle[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the connection idle the longest, its slot needed: read %d, %v; want it closed by the agent (EOF)", n, err)
	}
	unblock.Do(func() { close(release) })
	if err := <-scraped; err != nil {
		t.Errorf("the scrape in flight while the slots were full: %v; want its answer, its connection kept", err)
	}
}
