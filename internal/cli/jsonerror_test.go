package cli

import (
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestJSONOnFailurePrintsNothing: with --json (or --jq, -t), a command that fails prints no
// JSON, not a half object nor an error object: stdout stays empty, the error goes to stderr as
// text, and the exit code says what failed, as docs/json.md says. A script's
// `X=$(volctl ... --json) || exit` then never parses an error as data.
func TestJSONOnFailurePrintsNothing(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"volume", "status", "nope", "--json"}, ExitError},
		{[]string{"plugin", "status", "nope", "--json"}, ExitError},
		{[]string{"group", "status", "nope", "--jq", "."}, ExitError},
		{[]string{"volume", "claim", "nope", "--alloc", "a", "--json"}, ExitError},
		{[]string{"volume", "claim", "db", "--alloc", "a", "--access-mode", "multi-node-multi-writer", "--json"}, ExitUsage},
		{[]string{"volume", "snapshot", "list", "--plugin", "nope", "-t", "{{.}}"}, ExitError},
		{[]string{"volume", "status", "db", "-t", "{{.nope}}"}, ExitUsage},
	} {
		code, out, errOut := h.runReported(tt.args...)
		if code != tt.code || out != "" || errOut == "" {
			t.Errorf("volctl %q: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout and the error on stderr",
				tt.args, code, out, errOut, tt.code)
		}
	}
}
