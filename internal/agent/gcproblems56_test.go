package agent

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
)

// A reconcile problem is logged once, and again only if it went away and came back
// (docs/architecture.md, Housekeeping; logProblems), so that a claim stuck for days does not
// fill the agent's log. Before, the claim GC, which by default runs as often as reconcile and
// re-drives the same releases, logged the same problem of the same claim at every pass: 1,440
// identical warnings a day per stuck claim. It logs it once, and that it was resolved once the
// release goes through.
func TestClaimGCLogsAStuckClaimsProblemOnce(t *testing.T) {
	f := newFixture(t)
	f.registerBroken() // holds the start-up reconcile back: only GC runs
	faults := f.releasingClaim()
	faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.FailedPrecondition)
	s := testSettings
	s.HealthTimeout, s.ReconcileInterval = time.Hour, time.Hour
	stop := f.startAgent(s)
	defer stop()
	waitFor(t, "five claim GC passes to fail the release", func() bool { return faults.Calls(csi.RPCNodeUnpublishVolume) >= 5 })
	const problem = `msg="claim GC: claim \"db\" for alloc \"web-0\"`
	if n := strings.Count(f.logs.String(), problem); n != 1 {
		t.Errorf("the claim GC logged the same problem of the same stuck claim %d times over %d passes, want once", n, faults.Calls(csi.RPCNodeUnpublishVolume))
	}
	faults.Clear()
	f.waitNoClaims("the stuck claim to be released once NodeUnpublishVolume passes")
	waitFor(t, "the claim GC to log the problem resolved", func() bool {
		return strings.Contains(f.logs.String(), `msg="claim GC: resolved: claim \"db\" for alloc \"web-0\"`)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
