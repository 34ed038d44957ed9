package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/shellquote"
)

// Given --state-dir, a refusal advising `NOMAD_ADDR=ADDR volctl nomad release db` is left bare
// when ADDR holds a single quote (a unix:// socket under /home/o'brien, whose path volctl shows
// whole): shellquote.Arg writes it in single quotes, its own quote as close-quote, backslash,
// quote, open-quote, and envPrefix reads each quote as opening or closing a quoted run, so the
// escaped quote (backslash-quote) opens one that never closes where the setting ends; it stops
// before the setting and the volctl command after it gets no --state-dir. Pasted, the release takes back (or says "not found" of) the volume of the
// same ID in the default state dir, while the volume the user meant stays handed over. Correct:
// envPrefix reads a setting as the shell does (a backslash outside quotes escapes the next
// byte), and the volctl command carries the state dir given.
// Found by helper review76 (own3).
func TestAdviceAfterASettingHoldingAQuoteCarriesTheStateDirGiven(t *testing.T) {
	state, code, errOut := releaseRefusedForAnotherCluster(t, "unix:///home/o'brien/nomad.sock")
	setting := "NOMAD_ADDR=" + shellquote.Arg("unix:///home/o'brien/nomad.sock")
	if code == ExitOK || !strings.Contains(errOut, "`"+setting+" volctl") {
		t.Fatalf("nomad release db against another cluster: exit %d, stderr:\n%s\nwant the refusal advising %s before the release", code, errOut, setting)
	}
	abs, _ := filepath.Abs(state)
	want := setting + " volctl --state-dir " + shellquote.Arg(abs) + " nomad release db"
	if !strings.Contains(errOut, want) {
		t.Errorf("given --state-dir, nomad release refused with:\n%s\nits advice, pasted, acts on the volume db of the default state dir; want it to read %q", errOut, want)
	}
}

// The same defect on the writer alone (stateDirAdvice.rewrite, envPrefix): the volctl command
// after a setting whose value shellquote wrote with an escaped single quote (a Nomad region
// "eu'1", as RegisterAgain writes NOMAD_REGION) is left without the state dir. Correct: it
// carries it, as after a setting without a quote.
// Found by helper review76 (own3).
func TestStateDirAdviceReadsAnEscapedQuoteInASetting(t *testing.T) {
	var buf strings.Builder
	w := withStateDirAdvice(&buf, "/s")
	line := "run `NOMAD_REGION=" + shellquote.Arg("eu'1") + " volctl nomad release db`\n"
	if _, err := w.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	want := "run `NOMAD_REGION=" + shellquote.Arg("eu'1") + " volctl --state-dir /s nomad release db`\n"
	if got := buf.String(); got != want {
		t.Errorf("rewritten = %q, want %q", got, want)
	}
}
