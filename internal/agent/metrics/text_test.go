package metrics

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestFormatFloat: values are written as Prometheus's Go client writes them: the shortest
// form that reads back, with an exponent from 1e+06 up and below 1e-04, and +Inf, -Inf, NaN.
func TestFormatFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{0.25, "0.25"},
		{1e-05, "1e-05"},
		{0.0001, "0.0001"},
		{0.0005, "0.0005"},
		{123456, "123456"},
		{999999, "999999"},
		{1e6, "1e+06"},
		{1234567, "1.234567e+06"},
		{1795857670.9591558, "1.7958576709591558e+09"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{5e-324, "5e-324"},
		{math.Inf(+1), "+Inf"},
		{math.Inf(-1), "-Inf"},
		{math.NaN(), "NaN"},
	} {
		if got := formatFloat(c.v); got != c.want {
			t.Errorf("formatFloat(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestTextEscaping: label values escape backslash, double quote and newline; HELP escapes
// backslash and newline (not quotes); Prometheus's parser reads back what was set; a value
// that is not UTF-8 has its bad bytes replaced rather than breaking the scrape.
func TestTextEscaping(t *testing.T) {
	for _, c := range []struct {
		value, line, back string
	}{
		{`plain`, `x{l="plain"} 1`, `plain`},
		{``, `x{l=""} 1`, ``},
		{`a"b`, `x{l="a\"b"} 1`, `a"b`},
		{`back\slash`, `x{l="back\\slash"} 1`, `back\slash`},
		{"new\nline", `x{l="new\nline"} 1`, "new\nline"},
		{`\"` + "\n" + `\n`, `x{l="\\\"\n\\n"} 1`, `\"` + "\n" + `\n`},
		{"tab\there", "x{l=\"tab\there\"} 1", "tab\there"},
		{"ünïcode ☃", `x{l="ünïcode ☃"} 1`, "ünïcode ☃"},
		{"bad\xffbyte", `x{l="bad` + "\uFFFD" + `byte"} 1`, "bad\uFFFDbyte"},
	} {
		v := newVec(gaugeType, "x", "help with \\ and\nnewline and \"quotes\"", nil, "l")
		v.set(1, c.value)
		var buf bytes.Buffer
		writeText(&buf, []family{v.snapshot()})
		text := buf.String()
		wantText := "# HELP x help with \\\\ and\\nnewline and \"quotes\"\n# TYPE x gauge\n" + c.line + "\n"
		if text != wantText {
			t.Errorf("label value %q:\n%s\nwant\n%s", c.value, text, wantText)
			continue
		}
		mf := parse(t, text)["x"]
		if got := mf.GetMetric()[0].GetLabel()[0].GetValue(); got != c.back {
			t.Errorf("label value %q parses back as %q, want %q", c.value, got, c.back)
		}
		if got := mf.GetHelp(); got != "help with \\ and\nnewline and \"quotes\"" {
			t.Errorf("HELP parses back as %q", got)
		}
	}
}

// TestTextMatchesClientLibrary: the same metrics, fed the same way, are written byte for byte
// as Prometheus's Go client writes them: families by name, series by label values, labels by
// name, le and quantile last, buckets cumulative with +Inf, then _sum and _count, and the
// edge values of floats.
func TestTextMatchesClientLibrary(t *testing.T) {
	special := []float64{0, math.Copysign(0, -1), 1, -1, 1e-05, 0.25, 123456, 1234567, 1e6, 1795857670.9591558,
		math.Inf(+1), math.Inf(-1), math.NaN(), 5e-324, math.MaxFloat64}
	labelValues := []string{`a"b`, `back\slash`, "new\nline", `\"` + "\n", "ünï ☃", "", "z"}
	bounds := exponentialBuckets(0.001, 4, 9)
	observations := []float64{0.0005, 0.001, 0.0041, 0.016, 0.5, 10, 1000, 0}

	// Ours.
	var ours registry
	g := newVec(gaugeType, "t_gauge", "A gauge; help with \\ and\nnewline.", nil, "zeta", "alpha")
	single := newVec(gaugeType, "t_single", "An unlabelled gauge, never set.", nil)
	c := newVec(counterType, "t_events_total", "A counter.", nil, "kind")
	h := newVec(histogramType, "t_duration_seconds", "A histogram.", bounds, "plugin", "rpc")
	empty := newVec(counterType, "t_empty_total", "A vec nobody used: not written.", nil, "x")
	ours.register(g, single, c, h, empty)
	ours.registerCollector(func(context.Context) ([]family, error) {
		return []family{{name: "t_pauses_seconds", help: "A summary.", typ: summaryType, metrics: []sample{{
			sum: &summaryValue{quantiles: []quantile{{0, 1e-05}, {0.25, 0.0001}, {0.5, 0.00025}, {0.75, 0.001}, {1, 0.5}}, sum: 12.5, count: 1234567},
		}}}}, nil
	})

	// The client library's.
	reg := prometheus.NewRegistry()
	tg := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "t_gauge", Help: "A gauge; help with \\ and\nnewline."}, []string{"zeta", "alpha"})
	ts := prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_single", Help: "An unlabelled gauge, never set."})
	tc := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_events_total", Help: "A counter."}, []string{"kind"})
	th := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "t_duration_seconds", Help: "A histogram.", Buckets: bounds}, []string{"plugin", "rpc"})
	te := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_empty_total", Help: "A vec nobody used: not written."}, []string{"x"})
	reg.MustRegister(tg, ts, tc, th, te, constSummary{prometheus.NewDesc("t_pauses_seconds", "A summary.", nil, nil)})

	for i, v := range special {
		zeta, alpha := labelValues[i%len(labelValues)], labelValues[(i*3+1)%len(labelValues)]+string(rune('a'+i))
		g.set(v, zeta, alpha)
		tg.WithLabelValues(zeta, alpha).Set(v)
	}
	for i := range 7 {
		for _, k := range []string{"z", "a", `q"`, "m\n"}[:1+i%4] {
			c.inc(k)
			tc.WithLabelValues(k).Inc()
		}
	}
	for i, x := range observations {
		for _, l := range [][2]string{{"mem", "Probe"}, {"hp", "NodePublishVolume"}, {"hp", "Probe"}}[:1+i%3] {
			h.observe(x, l[0], l[1])
			th.WithLabelValues(l[0], l[1]).Observe(x)
		}
	}

	fams, err := ours.gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	writeText(&got, fams)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != want.String() {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(want.String(), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d differs from the client library's:\n got  %q\n want %q", i+1, g, w)
				break
			}
		}
		t.Errorf("exposition:\n%s\nclient library's:\n%s", got.String(), want.String())
	}
}

// constSummary is the client library's side of the summary case.
type constSummary struct{ d *prometheus.Desc }

func (c constSummary) Describe(ch chan<- *prometheus.Desc) { ch <- c.d }

func (c constSummary) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstSummary(c.d, 1234567, 12.5, map[float64]float64{0: 1e-05, 0.25: 0.0001, 0.5: 0.00025, 0.75: 0.001, 1: 0.5})
}

// TestValidName: metric names may hold colons, label names not; neither starts with a digit.
func TestValidName(t *testing.T) {
	for _, c := range []struct {
		s             string
		metric, label bool
	}{
		{"volctl_claims", true, true},
		{"_x", true, true},
		{"Ab9", true, true},
		{"a:b", true, false},
		{":a", true, false},
		{"9a", false, false},
		{"", false, false},
		{"a-b", false, false},
		{"a b", false, false},
		{"é", false, false},
	} {
		if got := validName(c.s, true); got != c.metric {
			t.Errorf("validName(%q, metric) = %t, want %t", c.s, got, c.metric)
		}
		if got := validName(c.s, false); got != c.label {
			t.Errorf("validName(%q, label) = %t, want %t", c.s, got, c.label)
		}
	}
}
