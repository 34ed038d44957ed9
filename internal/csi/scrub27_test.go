package csi_test

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// The adversary: a plugin in Python or C++ whose error quotes its request as protobuf's text
// format writes it there (Python's str(request), C++'s DebugString, a log line turned into an
// error): each string C-escaped, an apostrophe as \', and each control or non-ASCII byte as a
// three-digit octal escape (\303\244 for "ä"; C++'s UTF-8-safe printer keeps "ä" as it is). A
// secret with an apostrophe or a non-ASCII letter was echoed so in full: the scrubber knew Go's
// and JSON's quoting, which write neither \' nor octal. So was one a Python plugin encoded and
// quoted with repr (b'p\xc3\xa4ss'), its non-ASCII bytes as \xNN.
func TestScrubEscapesOfOtherLanguages(t *testing.T) {
	for _, c := range []struct{ name, secret, echoed string }{
		{"apostrophe", "it's-my-pass", `it\'s-my-pass`},
		{"non-ASCII as octal", "p\u00e4ssw\u00f6rd", `p\303\244ssw\303\266rd`},
		{"non-ASCII kept, apostrophe escaped", "p\u00e4ss'w\u00f6rd", `p` + "\u00e4" + `ss\'w` + "\u00f6" + `rd`},
		{"control byte as octal", "pass\x01word", `pass\001word`},
		{"quote and backslash", `pa"ss\word`, `pa\"ss\\word`},
		// Python's repr of the secret encoded (an f-string of password.encode(): b'...').
		{"Python bytes", "p\u00e4ssword", `p\xc3\xa4ssword`},
		{"Python bytes, apostrophe", "p\u00e4ss'word", `p\xc3\xa4ss'word`},
		{"Python bytes, quote and control", "pa\"ss\x01", `pa"ss\x01`},
	} {
		msg := `NodeStageVolume failed for request: volume_id: "v1" secrets { key: "password" value: "` + c.echoed + `" }`
		got := csi.Scrubber([]string{c.secret})(msg)
		if strings.Contains(got, c.echoed) || !strings.Contains(got, `value: "[REDACTED]" }`) {
			t.Errorf("%s: scrubbed %q\n to %q, want the value redacted", c.name, msg, got)
		}
	}
}
