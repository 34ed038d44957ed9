package metrics

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// textContentType is the Prometheus text exposition format, version 0.0.4: every Prometheus
// server and agent accepts it, whatever else its Accept header offers.
const textContentType = "text/plain; version=0.0.4; charset=utf-8"

var (
	// In label values a backslash, a double quote and a newline are escaped; in HELP, a
	// backslash and a newline.
	labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper       = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// writeText writes fams (as gather sorts them) in the text format: per family its HELP and
// TYPE lines, then a line per sample; a histogram's buckets with le (+Inf last), _sum and
// _count; a summary's quantiles, _sum and _count.
func writeText(buf *bytes.Buffer, fams []family) {
	for _, f := range fams {
		if f.help != "" {
			buf.WriteString("# HELP ")
			buf.WriteString(f.name)
			buf.WriteByte(' ')
			buf.WriteString(helpEscaper.Replace(f.help))
			buf.WriteByte('\n')
		}
		buf.WriteString("# TYPE ")
		buf.WriteString(f.name)
		buf.WriteByte(' ')
		buf.WriteString(string(f.typ))
		buf.WriteByte('\n')
		for _, m := range f.metrics {
			switch {
			case m.hist != nil:
				for i, b := range m.hist.bounds {
					writeLine(buf, f.name, "_bucket", m.labels, labelPair{"le", formatFloat(b)}, float64(m.hist.cumulative[i]))
				}
				writeLine(buf, f.name, "_bucket", m.labels, labelPair{"le", "+Inf"}, float64(m.hist.count))
				writeLine(buf, f.name, "_sum", m.labels, labelPair{}, m.hist.sum)
				writeLine(buf, f.name, "_count", m.labels, labelPair{}, float64(m.hist.count))
			case m.sum != nil:
				for _, q := range m.sum.quantiles {
					writeLine(buf, f.name, "", m.labels, labelPair{"quantile", formatFloat(q.q)}, q.v)
				}
				writeLine(buf, f.name, "_sum", m.labels, labelPair{}, m.sum.sum)
				writeLine(buf, f.name, "_count", m.labels, labelPair{}, float64(m.sum.count))
			default:
				writeLine(buf, f.name, "", m.labels, labelPair{}, m.value)
			}
		}
	}
}

// writeLine writes name+suffix{labels,extra} value; extra (le, quantile) comes last, as
// Prometheus's own clients write it.
func writeLine(buf *bytes.Buffer, name, suffix string, labels []labelPair, extra labelPair, v float64) {
	buf.WriteString(name)
	buf.WriteString(suffix)
	if len(labels) > 0 || extra.name != "" {
		buf.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeLabel(buf, l)
		}
		if extra.name != "" {
			if len(labels) > 0 {
				buf.WriteByte(',')
			}
			writeLabel(buf, extra)
		}
		buf.WriteByte('}')
	}
	buf.WriteByte(' ')
	buf.WriteString(formatFloat(v))
	buf.WriteByte('\n')
}

// writeLabel writes name="value". The format is UTF-8: a value that is not (a plugin ID is
// checked, a volume's plugin read back from the state may not be) has its bad bytes replaced
// with U+FFFD rather than making the whole scrape unparseable.
func writeLabel(buf *bytes.Buffer, l labelPair) {
	v := l.value
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	buf.WriteString(l.name)
	buf.WriteString(`="`)
	buf.WriteString(labelValueEscaper.Replace(v))
	buf.WriteByte('"')
}

// formatFloat writes v as Prometheus's Go client does: the shortest representation that reads
// back as v ('g': 1e-05, 0.25, 123456, 1.234567e+06), +Inf, -Inf, NaN, and 0 for -0.
func formatFloat(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, +1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
