package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
)

// TestLongTypedValueIsNotEchoedWhole: an ID (or a flag's value, a command name) of 10,000
// bytes, pasted or made by a script, was repeated in full by the error that refused it: "volume
// status: volume "aaaa…(10,000 bytes)…" not found", 20 KB for a --jq filter quoted twice.
// Every message on stderr (an error, a warning, a problem) goes through escapeLines, which now
// cuts a word past maxEchoedWord characters to its start and says how many bytes it left out;
// the exit status is the one the command gave.
func TestLongTypedValueIsNotEchoedWhole(t *testing.T) {
	h := newCLIHarness(t)
	long := strings.Repeat("a", 10_000)
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"volume", "status", long}, ExitError},
		{[]string{"plugin", "status", long}, ExitError},
		{[]string{"group", "status", long}, ExitError},
		{[]string{"volume", "status", "--jq", long}, ExitUsage},
		{[]string{"volume", "snapshot", "delete", "p", long}, ExitUsage},
		{[]string{long}, ExitUsage},
		{[]string{"volume", "status", "--" + long}, ExitUsage},
	} {
		code, _, errOut := h.runReported(tt.args...)
		name := strings.Join(tt.args, " ")[:20]
		if code != tt.code {
			t.Errorf("%s…: exit %d, want %d: %s", name, code, tt.code, errOut[:min(300, len(errOut))])
		}
		if len(errOut) > 2*maxEchoedWord || !strings.Contains(errOut, " more bytes)") {
			t.Errorf("%s…: %d bytes on stderr, want the 10,000-byte value cut, saying how much was left out: %s…", name, len(errOut), errOut[:min(300, len(errOut))])
		}
	}
}

// TestLogLinesCutLongWords: the logger every command and the agent log through wrote a value
// of 10,000 bytes (an ID a plugin gave, an error quoting it) whole; its words past
// maxEchoedWord are cut as an error's are, the rest of the line kept.
func TestLogLinesCutLongWords(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	long := strings.Repeat("v", 10_000)
	NewFactory(ios).Logger().Warn("volume "+long+" lost", "volume", long, "err", errors.New("plugin said "+long))
	if errOut.Len() > 4*maxEchoedWord || strings.Count(errOut.String(), " more bytes)") != 3 || !strings.Contains(errOut.String(), "plugin said") {
		t.Errorf("%d bytes logged, want each of the three 10,000-byte words cut, the rest kept: %s", errOut.Len(), errOut.String()[:min(400, errOut.Len())])
	}
}
