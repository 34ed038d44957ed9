package agent

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestStuckSnapshotDeleteWhosePluginNamesEachRequestIsLoggedOnce: a recorded snapshot delete
// left for reconcile (reconcileSnapshotDeletes reports it with no volume and no alloc), its
// plugin failing DeleteSnapshot pass after pass with a new SDK request ID in each message. The
// agent logged it as a new warning at every pass, and the last pass's as "resolved" each time:
// a problem without a volume or alloc has the whole raw message as its subject
// (problemSubject), so the key logProblemsOnce builds from the subject and the masked words
// changed with every request ID. docs/architecture.md (Housekeeping) promises "A problem is the
// same one while its subject and its words, IDs, times and durations masked
// (`engine.FailureWords` ...), are", and "A reconcile problem is logged once, and again only if
// it went away and came back". Found by helper review73 (own1).
func TestStuckSnapshotDeleteWhosePluginNamesEachRequestIsLoggedOnce(t *testing.T) {
	var logs iostreams.SyncBuffer
	a := &Agent{log: slog.New(slog.NewTextHandler(&logs, nil)), problems: map[string]loggedProblem{}}
	pass := func(requestID string) []engine.ReconcileAction {
		return []engine.ReconcileAction{{Kind: "failed",
			Message: `delete snapshot "snap-1" of plugin "mem": DeleteSnapshot: Internal: backend busy (RequestID: ` + requestID +
				`) (` + "`volctl volume snapshot deregister mem snap-1`" + ` forgets the delete and leaves the snapshot)`}}
	}
	a.logProblems("timer", pass("5eed0001-7d1e-4c2b-9f3a-000000abc001"))
	a.logProblems("timer", pass("5eed0002-7d1e-4c2b-9f3a-000000abc002"))
	a.logProblems("timer", pass("5eed0003-7d1e-4c2b-9f3a-000000abc003"))
	out := logs.String()
	if n := strings.Count(out, `level=WARN msg="reconcile: delete snapshot`); n != 1 {
		t.Errorf("the same stuck snapshot delete, only its plugin's request ID changed, was logged %d times over 3 passes, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "resolved"); n != 0 {
		t.Errorf("the stuck snapshot delete, still failing, was logged resolved %d times, want never:\n%s", n, out)
	}
}
