package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestClaimGCLogsAStuckClaimWhosePluginNamesEachRequestOnce: a claim stuck releasing on a
// plugin whose every error names its request (an SDK's "RequestID: <uuid>"), the same failure
// each pass. The agent logged the claim GC's problem again at every pass, the message told
// apart from the last by the request ID alone. docs/architecture.md (Housekeeping) promises "A
// reconcile problem is logged once, and again only if it went away and came back", claim GC's
// problems going the same way; and (Bounds) that a failure whose message differs only by "an
// ID or a time" (`sameFailure`, `failureWords`) is the same failure, which the event log
// honours and the agent's log did not. Found by helper review73.
func TestClaimGCLogsAStuckClaimWhosePluginNamesEachRequestOnce(t *testing.T) {
	f := newFixture(t)
	f.registerBroken() // holds the start-up reconcile back: only GC runs
	faults := f.releasingClaim()
	for i := range 500 {
		faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.FailedPrecondition, Times: 1,
			Message: fmt.Sprintf("target is busy (RequestID: %08x-7d1e-4c2b-9f3a-%012x)", 0x5eed0000+i, 0xabc000+i)})
	}
	s := testSettings
	s.HealthTimeout, s.ReconcileInterval = time.Hour, time.Hour
	stop := f.startAgent(s)
	defer stop()
	before := faults.Calls(csi.RPCNodeUnpublishVolume) // the release's own attempts
	waitFor(t, "five claim GC passes to fail the release", func() bool { return faults.Calls(csi.RPCNodeUnpublishVolume) >= before+5 })
	const problem = `msg="claim GC: claim \"db\" for alloc \"web-0\"`
	if n := strings.Count(f.logs.String(), problem); n != 1 {
		t.Errorf("the claim GC logged the same problem of the same stuck claim %d times over %d passes (its plugin's request ID the only change), want once",
			n, faults.Calls(csi.RPCNodeUnpublishVolume)-before)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileProblemThatOnlyTookLongerIsLoggedOnce: a claim left for reconcile by a plugin
// failing slowly, pass after pass, whose problem (the engine's slowFailure) says how long the
// plugin took to answer, and an SDK's request ID, each pass other numbers. The agent logged it
// as a new problem at every pass. docs/architecture.md (Housekeeping): "A reconcile problem is
// logged once, and again only if it went away and came back"; the same failure "once what looks
// like an ID or a time is taken as one" (Bounds, `sameFailure`) is one event, and was a warning a
// pass in the log. Found by helper review73.
func TestReconcileProblemThatOnlyTookLongerIsLoggedOnce(t *testing.T) {
	var logs iostreams.SyncBuffer
	a := &Agent{log: slog.New(slog.NewTextHandler(&logs, nil)), problems: map[string]loggedProblem{}}
	pass := func(took, requestID string) []engine.ReconcileAction {
		return []engine.ReconcileAction{{Kind: "failed", VolumeID: "db", Alloc: "web-0",
			Message: `restore claim "db" for alloc "web-0": NodeStageVolume: Unavailable: backend busy (RequestID: ` + requestID +
				`) (not tried again: plugin "mem" took ` + took + ` to answer it, and another attempt as long would run past the RPC's 2m0s timeout) (the claim stays held; each reconcile pass tries it again)`}}
	}
	a.logProblems("timer", pass("1m7.012s", "5eed0001-7d1e-4c2b-9f3a-000000abc001"))
	a.logProblems("timer", pass("1m6.481s", "5eed0002-7d1e-4c2b-9f3a-000000abc002"))
	a.logProblems("redrive", pass("1m9.3s", "5eed0003-7d1e-4c2b-9f3a-000000abc003"))
	if n := strings.Count(logs.String(), `level=WARN msg="reconcile: restore claim \"db\"`); n != 1 {
		t.Errorf("the same stuck restore, only its timing and request ID changed, was logged %d times over 3 passes, want once:\n%s", n, logs.String())
	}
}
