package csi_test

// secrets37: the line breaks the byte view joins a secret's halves across.

import (
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// The adversary: a plugin that writes a secret's halves with two carriage returns between
// them, raw or as a quoting escapes them, or a CRLF text's ends written again as CRLF (CR CR
// LF, held before). A terminal draws the second half over the first ("s3cret2-"), but --json, the event log
// and a log file carry the bytes, where a reader reads "hunter2-" and "s3cret" as across one
// return. Before, the byte view joined one break only, and each of these was shown.
func TestScrubJoinsARunOfCarriageReturns(t *testing.T) {
	t.Parallel()
	drawsWhole(t, []struct{ name, echoed string }{
		{"CR CR", "hunter2-\r\rs3cret"},
		{"CR CR quoted", `hunter2-\r\rs3cret`},
		{"CR, blank, CR", "hunter2- \r \rs3cret"},
		{"three CRs", "hunter2-\r\r\rs3cret"},
		// Held before (the drawn view), and still.
		{"CR CR LF", "hunter2-\r\r\ns3cret"},
		{"CR CR LF quoted", `hunter2-\r\r\ns3cret`},
		{"LF CR", "hunter2-\n\rs3cret"},
		{"LF CR quoted", `hunter2-\n\rs3cret`},
		{"CR LF CR", "hunter2-\r\n\rs3cret"},
	})
	drawsOtherwise(t, []struct{ msg, shown string }{
		// Honest progress redrawn over returns, no secret in the bytes.
		{"copying 50%\r\rcopying 100%", "copying 100%"},
		{"hunter2-XXX\r\rdone", "done2-XXX"},
	})
	// The words around a masked secret are kept, a honest run of returns among them.
	msg := "step 1\r\rstep 2: hunter2-\r\rs3cret rejected"
	if got, want := csi.Scrubber([]string{shownSecret34})(msg), "step 1\r\rstep 2: [REDACTED] rejected"; got != want {
		t.Errorf("scrubbed %+q\n to %+q, want %+q", msg, got, want)
	}
}
