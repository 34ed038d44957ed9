package cli

import (
	"testing"

	"github.com/volctl/volctl/internal/iostreams"
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
		ios, _, out, errOut := iostreams.Test()
		f := NewFactory(ios)
		root := NewRootCmd(f)
		root.SetArgs(append([]string{"--state-dir", h.state}, tt.args...))
		err := root.Execute()
		code := f.Report(f.RedactError(h.ctx, err))
		f.Close()
		if code != tt.code || out.Len() > 0 || errOut.Len() == 0 {
			t.Errorf("volctl %q: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout and the error on stderr",
				tt.args, code, out, errOut, tt.code)
		}
	}
}
