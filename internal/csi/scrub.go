package csi

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// minScrubLen is the shortest value scrubbed. A value of one or two bytes is left alone: a
// mount flag that short ("ro", "rw") carries no credential, and a secret that short carries
// no secrecy (a few thousand guesses find it), while replacing every "ro" or "1" in a message
// would shred it past reading, and the markers' places would spell the value out anyway
// ("[REDACTED]l-1" for a secret "vo" in "vol-1"). Spec validation does not refuse such secrets:
// CSI allows them, and volctl still never prints them from its own records.
const minScrubLen = 3

// scrub replaces every sensitive value found in msg: longest first, so a value that contains
// another is not left half shown, and also as a plugin that prints its request would show it,
// quoted by Go, by protobuf's text form or by JSON (quotes, backslashes and control characters
// escaped).
func scrub(msg string, sensitive []string) string { return Scrubber(sensitive)(msg) }

// Scrubber is scrub with the forms of the values worked out once, for many texts: the engine
// scrubs with it what it prints of data a plugin returned (engine.Redactor).
func Scrubber(sensitive []string) func(string) string {
	var forms []string
	for _, s := range sensitive {
		if len(s) < minScrubLen {
			continue
		}
		forms = append(forms, s)
		for _, q := range []string{strconv.Quote(s), strconv.QuoteToASCII(s), jsonQuote(s), jsonQuoteNoHTML(s)} {
			if inner := q[1 : len(q)-1]; inner != s {
				forms = append(forms, inner)
			}
		}
	}
	slices.SortFunc(forms, func(a, b string) int {
		if d := len(b) - len(a); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	forms = slices.Compact(forms)
	return func(msg string) string {
		for _, f := range forms {
			if strings.Contains(msg, f) {
				msg = strings.ReplaceAll(msg, f, "[REDACTED]")
			}
		}
		return msg
	}
}

// jsonQuote is s as a JSON string, quotes included.
func jsonQuote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return strconv.Quote(s)
	}
	return string(b)
}

// jsonQuoteNoHTML is s as JSON without HTML escaping ('<', '>', '&' as they are), as protojson
// and volctl's own --json write it.
func jsonQuoteNoHTML(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return strconv.Quote(s)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
