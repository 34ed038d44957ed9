package csi_test

// mend33a: a tab moves the cursor to the next tab stop (every 8 columns) without writing over
// what it passes, and what it passes at the line's end shows as blanks. The shown view kept it
// as one character, so a tab after a carriage return wrote over what a terminal keeps, and a
// tab at the end took one column where a terminal leaves several.

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

func TestScrubDrawsATabAsATerminalMovesTheCursor(t *testing.T) {
	t.Parallel()
	const s = "hunter2-s3cret"
	for _, c := range []struct{ name, echoed string }{
		// The tab after the carriage return passes "hunter2-" (8 columns), kept: s3cret is
		// written over XXXXXX, and the line shows hunter2-s3cret.
		{"tab over what is written", "hunter2-XXXXXX\r\ts3cret"},
		// XXX, then a tab to column 8, s3cret there; the carriage return's hunter2- fills 0..7.
		{"tab past the end, then written over", "XXX\ts3cret\rhunter2-"},
		{"tab after a move back", "hunter2-s3XX\x1b[12D\ts3cret"},
	} {
		msg := "stage failed:\n" + c.echoed + "\n rejected"
		got := csi.Scrubber([]string{s})(msg)
		if strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") {
			t.Errorf("%s: scrubbed %+q\n to %+q: a part of the secret is left", c.name, msg, got)
		}
		if !strings.Contains(got, "[REDACTED]") || !strings.HasPrefix(got, "stage failed:\n") || !strings.HasSuffix(got, "\n rejected") {
			t.Errorf("%s: scrubbed %+q\n to %+q; want the secret masked, the words around it kept", c.name, msg, got)
		}
	}
	// Honest tables and logs with tabs (and a carriage return, which builds the view) show no
	// secret: kept as they are.
	for _, msg := range []string{
		"name\tsize\x1b[0m\nhunter2\ts3cret\n",
		"progress 10%\rhunter2\t-s3cret",
		strings.Repeat("x", 300) + "\rhunter2\t-s3cret\t",
	} {
		if got := csi.Scrubber([]string{s})(msg); got != msg {
			t.Errorf("scrubbed %+q\n to %+q, which shows no secret", msg, got)
		}
	}
}
