package metrics

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The agent's metrics are kept by the few types below rather than by the Prometheus client
// library: every volctl process initialises every package linked into the binary, and the
// library's (its default registry, its Go and process collectors, procfs) cost about a
// millisecond of each command's start-up (issue 16). Only `volctl agent --metrics-addr` serves
// metrics, and it needs gauges, counters and histograms with labels, deletion by label, and
// the text exposition format (text.go).

type metricType string

const (
	counterType   metricType = "counter"
	gaugeType     metricType = "gauge"
	histogramType metricType = "histogram"
	summaryType   metricType = "summary"
)

// family is one metric family as a scrape exposes it.
type family struct {
	name, help string
	typ        metricType
	metrics    []sample
}

// sample is one series of a family: its labels in the family's order, and its value (gauge,
// counter), histogram or summary.
type sample struct {
	labels []labelPair
	value  float64
	hist   *histogramValue
	sum    *summaryValue
}

type labelPair struct{ name, value string }

// histogramValue has the count of observations at or below each bound (cumulative, +Inf
// excluded: it is count).
type histogramValue struct {
	bounds     []float64
	cumulative []uint64
	sum        float64
	count      uint64
}

type summaryValue struct {
	quantiles []quantile
	sum       float64
	count     uint64
}

type quantile struct{ q, v float64 }

// validName says whether s is a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), or with colon false a
// label name ([a-zA-Z_][a-zA-Z0-9_]*). Not a regexp: package-level ones compile in every volctl
// process.
func validName(s string, colon bool) bool {
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || colon && r == ':' || i > 0 && r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return s != ""
}

// vec is a family whose series the agent updates as things happen: one series per
// combination of label values, created at first use. A vec without labels has its one series
// from the start, at 0.
type vec struct {
	name, help string
	typ        metricType
	labels     []string
	bounds     []float64 // histograms: the buckets' upper bounds, increasing

	mu     sync.Mutex
	series map[string]*series
}

type series struct {
	values []string
	value  float64
	counts []uint64 // histograms: observations per bucket (not cumulative), len(bounds)
	sum    float64
	count  uint64
}

// newVec checks what a scrape would otherwise expose broken: a bad name is a programming error.
func newVec(typ metricType, name, help string, bounds []float64, labels ...string) *vec {
	if !validName(name, true) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	for _, l := range labels {
		if !validName(l, false) || strings.HasPrefix(l, "__") || (typ == histogramType && l == "le") {
			panic(fmt.Sprintf("metrics: %s: invalid label name %q", name, l))
		}
	}
	for i := 1; i < len(bounds); i++ {
		if !(bounds[i] > bounds[i-1]) {
			panic(fmt.Sprintf("metrics: %s: bucket bounds %v are not increasing", name, bounds))
		}
	}
	v := &vec{name: name, help: help, typ: typ, labels: labels, bounds: bounds, series: map[string]*series{}}
	if len(labels) == 0 {
		v.with()
	}
	return v
}

// with is the series for values, created if new; v.mu is held (or v is not shared yet).
func (v *vec) with(values ...string) *series {
	if len(values) != len(v.labels) {
		panic(fmt.Sprintf("metrics: %s has labels %v, got %d values", v.name, v.labels, len(values)))
	}
	key := seriesKey(values)
	s := v.series[key]
	if s == nil {
		s = &series{values: slices.Clone(values)}
		if v.typ == histogramType {
			s.counts = make([]uint64, len(v.bounds))
		}
		v.series[key] = s
	}
	return s
}

// seriesKey is the series map's key for label values: each value after its length, so that
// no two lists of values share a key (joined with a separator, ["a\xffb", "c"] and
// ["a", "b\xffc"] would, a label value being any bytes).
func seriesKey(values []string) string {
	var b []byte
	for _, v := range values {
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(append(b, ':'), v...)
	}
	return string(b)
}

// set sets a gauge's series.
func (v *vec) set(x float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.with(values...).value = x
}

// inc adds 1 to a counter's series, creating it at 1.
func (v *vec) inc(values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.with(values...).value++
}

// touch creates a series at 0, so an alert on its rate has a series before the first event.
func (v *vec) touch(values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.with(values...)
}

// observe counts x in a histogram's series: in the first bucket whose bound is >= x.
func (v *vec) observe(x float64, values ...string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.with(values...)
	if i := sort.SearchFloat64s(v.bounds, x); i < len(v.bounds) {
		s.counts[i]++
	}
	s.sum += x
	s.count++
}

// deleteWhere removes every series whose label name has value; a vec without that label keeps
// all of its series.
func (v *vec) deleteWhere(name, value string) {
	i := slices.Index(v.labels, name)
	if i < 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, s := range v.series {
		if s.values[i] == value {
			delete(v.series, k)
		}
	}
}

// snapshot is v's family as it stands; a vec with no series yet has none.
func (v *vec) snapshot() family {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := family{name: v.name, help: v.help, typ: v.typ, metrics: make([]sample, 0, len(v.series))}
	for _, s := range v.series {
		m := sample{labels: make([]labelPair, len(v.labels)), value: s.value}
		for i, l := range v.labels {
			m.labels[i] = labelPair{l, s.values[i]}
		}
		if v.typ == histogramType {
			h := &histogramValue{bounds: v.bounds, cumulative: make([]uint64, len(v.bounds)), sum: s.sum, count: s.count}
			var n uint64
			for i, c := range s.counts {
				n += c
				h.cumulative[i] = n
			}
			m.hist = h
		}
		f.metrics = append(f.metrics, m)
	}
	return f
}

// collector computes families at scrape time (state read from the store, the process's
// figures). An error names what could not be read.
type collector func(ctx context.Context) ([]family, error)

// registry is the agent's families: the vecs it updates and the collectors it runs per scrape.
type registry struct {
	mu         sync.Mutex
	vecs       []*vec
	collectors []collector
	// redactor, once set, gives at each scrape what scrubs the state's secrets from the label
	// values (a plugin ID holding one), as every volctl list is scrubbed: the endpoint has no
	// authentication (TestMetricsVolumesFamilyShowsNoSecretInThePluginID).
	redactor func(ctx context.Context) (func(string) string, error)
	tagOnce  sync.Once // draws tagKey, labelTag's key
	tagKey   []byte
}

// redactorOf is the registry's redactor, nil before one is set.
func (r *registry) redactorOf() func(ctx context.Context) (func(string) string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.redactor
}

// setRedactor sets the registry's redactor.
func (r *registry) setRedactor(fn func(ctx context.Context) (func(string) string, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.redactor = fn
}

func (r *registry) register(vs ...*vec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.vecs = append(r.vecs, vs...)
}

func (r *registry) registerCollector(c collector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
}

// gather is every family with at least one series, sorted by name, each family's series sorted
// by their labels, the labels by name: the same scrape gives the same text. The families of a
// collector that failed are left out and its error returned (joined with any other).
func (r *registry) gather(ctx context.Context) ([]family, error) {
	r.mu.Lock()
	vecs, collectors, redactor := slices.Clone(r.vecs), slices.Clone(r.collectors), r.redactor
	r.mu.Unlock()
	var fams []family
	for _, v := range vecs {
		fams = append(fams, v.snapshot())
	}
	var errs []error
	for _, c := range collectors {
		fs, err := c(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fams = append(fams, fs...)
	}
	if redactor != nil {
		redact, err := redactor(ctx)
		if err != nil {
			// After what failed before it: a closed state fails both, and the scrape's answer
			// names the collectors' reads first (TestScrapeFailureAnswers500).
			return nil, errors.Join(append(errs, fmt.Errorf("reading the state's secrets to keep them out of the labels: %w", err))...)
		}
		for _, f := range fams {
			r.redactLabels(f, redact)
		}
	}
	out := fams[:0]
	seen := map[string]bool{}
	for _, f := range fams {
		if len(f.metrics) == 0 {
			continue
		}
		if seen[f.name] {
			errs = append(errs, fmt.Errorf("metric family %s is collected twice", f.name))
			continue
		}
		seen[f.name] = true
		for _, m := range f.metrics {
			slices.SortFunc(m.labels, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
		}
		slices.SortFunc(f.metrics, func(a, b sample) int {
			for i := range min(len(a.labels), len(b.labels)) {
				if c := strings.Compare(a.labels[i].value, b.labels[i].value); c != 0 {
					return c
				}
			}
			return len(a.labels) - len(b.labels)
		})
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b family) int { return strings.Compare(a.name, b.name) })
	return out, errors.Join(errs...)
}

// gauge is a family of one unlabelled gauge sample, for collectors.
func gauge(name, help string, v float64) family {
	return family{name: name, help: help, typ: gaugeType, metrics: []sample{{value: v}}}
}

// redactLabels scrubs f's label values with redact, and marks each value the scrub changed
// with a tag of what it was (labelTag): two plugins "cifs-alice" and "cifs-bobby" whose volumes'
// secrets hold the user names are "cifs-[REDACTED] #1f2e3d4c" and "cifs-[REDACTED] #9a8b7c6d",
// not two series of one label set, which the text format forbids and of which Prometheus keeps
// one (TestScrubbedLabelsDoNotMakeDuplicateSeries); and each plugin's tag is the same in every
// family and at every scrape of this agent, however many others come and go, as a number by
// their order was not (TestScrubbedPluginLabelNamesOnePluginInEveryFamily,
// TestScrubbedPluginLabelKeepsItsNumberWhenAPluginIsAdded).
//
// Only the labels whose values are names the user or a plugin gave (scrubbedLabels): the
// others hold volctl's own words (a claim's state, "true", an outcome), of which every one is
// always shown, so one masked for a secret of that value told the secret by elimination, and
// broke the series it named (TestVocabularyLabelsAreNotScrubbedIntoASecretsTell).
func (r *registry) redactLabels(f family, redact func(string) string) {
	for _, m := range f.metrics {
		for i, l := range m.labels {
			if !scrubbedLabels[l.name] {
				continue
			}
			if v := redact(l.value); v != l.value {
				m.labels[i].value = v + " #" + r.labelTag(l.name, l.value)
			}
		}
	}
}

// scrubbedLabels are the labels whose values are names given to volctl (a plugin's ID), not
// its own vocabulary (rpc, code, state, schedulable, reason, trigger, result, outcome).
var scrubbedLabels = map[string]bool{"plugin": true}

// labelTag is 8 hex digits of an HMAC of a label's value under a key this process drew at
// random (tagKey): the same for the same value all the agent's life, and no hash of the value
// alone, which a scraper could test guesses of a short secret against.
func (r *registry) labelTag(name, value string) string {
	r.tagOnce.Do(func() {
		r.tagKey = make([]byte, 32)
		_, _ = rand.Read(r.tagKey)
	})
	h := hmac.New(sha256.New, r.tagKey)
	h.Write([]byte(name + "\x00" + value))
	return hex.EncodeToString(h.Sum(nil)[:4])
}
