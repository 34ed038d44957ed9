package cli

import (
	"strings"
	"testing"
)

// TestNotFoundNamesTheStateDirLookedIn: a volume, plugin or group not found is, for a new user,
// most often one made in another state dir (with sudo, or another VOLCTL_STATE_DIR) or a typo.
// The error names the state dir it looked in and how to list what that one holds, rather than
// a bare `volume "dta" not found`.
func TestNotFoundNamesTheStateDirLookedIn(t *testing.T) {
	h := newCLIHarness(t)
	for _, args := range [][]string{
		{"volume", "status", "dta"},
		{"volume", "claim", "dta", "--alloc", "web-0"},
		{"volume", "release", "dta", "--alloc", "web-0"},
		{"plugin", "status", "hostpth"},
		{"group", "status", "wbe"},
	} {
		code, _, errOut := h.runReported(args...)
		if code != ExitError || !strings.Contains(errOut, "not found") && !strings.Contains(errOut, "not registered") {
			t.Fatalf("volctl %q: exit %d, stderr %q; want a not-found error, exit 1", args, code, errOut)
		}
		for _, want := range []string{"state dir " + h.state, "`volctl status`", "VOLCTL_STATE_DIR"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("volctl %q: stderr %q does not say %q", args, errOut, want)
			}
		}
	}
}
