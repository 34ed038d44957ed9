package csi_test

// recheck33a's second reading of the shown view (scrubshown.go): what a terminal does that the
// view did not model: a string sequence cut short by CAN, SUB or another ESC, the C1
// introducers as UTF-8 (U+009B CSI, U+009D OSC, U+0090 DCS, U+009C ST), a C0 control inside a
// CSI, and the cursor moved back over what was written (a carriage return, CUB, CHA, EL,
// DECSC/DECRC), and a right-to-left override showing the text after it reversed.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// The adversary: a plugin that writes a secret so that an xterm-like terminal (the user's, or
// the one a --json or a log is read in) shows it whole while no byte stretch of the message,
// nor the view the scrubber made of it, spells it. Before, each was left as it was.
func TestScrubFindsAValueAsATerminalDrawsIt(t *testing.T) {
	const s = "hunter2-s3cret"
	const prefix = `stage failed: token "`
	for _, c := range []struct{ name, echoed string }{
		{"CAN ends an OSC", "hunter2\x1b]0;title\x18-s3cret"},
		{"SUB ends a DCS", "hunter2\x1bPq#0\x1a-s3cret"},
		{"ESC ends an OSC and begins a CSI", "hunter2\x1b]0;title\x1b[m-s3cret"},
		{"C1 CSI as UTF-8", "hunter2\u009b31m-s3cret"},
		{"C1 OSC as UTF-8, to C1 ST", "hunter2\u009d0;title\u009c-s3cret"},
		{"C1 OSC as UTF-8, to BEL", "hunter2\u009d8;;http://x/\x07-s3cret"},
		{"C1 DCS as UTF-8", "hunter2\u0090q#0\u009c-s3cret"},
		{"C1 CSI quoted", `hunter2\u009b31m-s3cret`},
		{"NUL inside a CSI", "hunter2\x1b[3\x001m-s3cret"},
		{"carriage return, the start written over", "XXXXXXX-s3cret\r" + prefix + "hunter2\x1b[7C"}, // then on past what is left
		{"cursor back (CUB)", "hunter2-XXXXXX\x1b[6Ds3cret"},
		{"cursor back quoted", `hunter2-XXXXXX\u001b[6Ds3cret`},
		{"cursor back, then erase to the end (EL)", "hunter2-s3XXXXXXXXX\x1b[9D\x1b[Kcret"},
		{"cursor to a column (CHA)", fmt.Sprintf("hunXXXX-s3cret\x1b[%dGter2\x1b[%dG", len(prefix)+4, len(prefix)+15)},
		{"cursor saved and restored (DECSC, DECRC)", "hun\x1b7XXXX-s3cret\x1b8ter2\x1b[7C"},
		{"cursor saved and restored (CSI s, u)", "hun\x1b[sXXXX-s3cret\x1b[uter2\x1b[7C"},
		{"right-to-left override", "\u202eterc3s-2retnuh\u202c"},
	} {
		msg := prefix + c.echoed + `" rejected`
		got := csi.Scrubber([]string{s})(msg)
		if strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") || strings.Contains(got, "2retnuh") || strings.Contains(got, "terc3s") {
			t.Errorf("%s: scrubbed %+q\n to %+q: a part of the secret is left", c.name, msg, got)
		}
		if !strings.Contains(got, "[REDACTED]") || !strings.HasPrefix(got, "stage failed: token") || !strings.HasSuffix(got, `" rejected`) {
			t.Errorf("%s: scrubbed %+q\n to %+q; want the secret masked, the words around it kept", c.name, msg, got)
		}
	}
	// Honest text that uses the same controls, with no secret as it shows: kept as it is.
	for _, msg := range []string{
		"XXXXXXX-s3cret\r\nhunter2 on the next line (CRLF)",
		"hunter2-\x1b[5Cs3cret: moved forward past the end, blanks between",
		"progress 10%\rprogress 100%\r\ndone hunter2 s3cret",
		"hunter2\t-s3cret",
		"\x1b]8;;http://x/\x1b\\hunter2 s3cret\x1b]8;;\x1b\\",
		"\u202ehunter2-s3cret\u202c shown reversed",
	} {
		want := msg
		if strings.Contains(msg, "hunter2-s3cret") {
			want = strings.Replace(msg, "hunter2-s3cret", "[REDACTED]", 1) // its bytes spell it
		}
		if got := csi.Scrubber([]string{s})(msg); got != want {
			t.Errorf("scrubbed %+q\n to %+q, which shows no secret", msg, got)
		}
	}
}
