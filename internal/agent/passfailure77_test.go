package agent

import (
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
)

// unreadableMounts is lostMounts whose table cannot be read while failing is set, as
// /proc/self/mountinfo cannot be opened by a process out of descriptors.
type unreadableMounts struct {
	*lostMounts
	failing atomic.Bool
}

// openOnMounts opens the fixture's engine again on mounts (a mount table the test controls),
// its retries quick, closed when the test ends.
func (f *fixture) openOnMounts(mounts engine.MountTable) {
	f.t.Helper()
	e, err := engine.Open(f.ctx, engine.Config{StateDir: f.dir, Mounts: mounts,
		Retry: engine.RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { e.Close() })
	f.e = e
}

var errTableUnreadable = errors.New("read mount table: open /proc/self/mountinfo: " + syscall.EMFILE.Error())

func (m *unreadableMounts) MountsUnder(dir string) (map[string]bool, error) {
	if m.failing.Load() {
		return nil, errTableUnreadable
	}
	return m.lostMounts.MountsUnder(dir)
}

// TestAgentIsNotReadyAfterAStartupPassThatLookedAtNothing: after a reboot, the agent's start-up
// reconcile is what restores the mounts, and the agent reports ready (READY=1, /healthz 200,
// "agent ready: plugins probed and the start-up reconcile done") only once it ran, so that units
// ordered after it start on a host whose mounts are back (docs/agent.md). A start-up pass that
// failed before it looked at anything (the mount table unreadable for a moment:
// ReconcileReport.Whole false) restored nothing, yet housekeeping sets ready after it all the
// same, and, no claim being marked held yet, no re-drive is scheduled: the mounts come back only
// at the next reconcile_interval, the host said ready meanwhile. Correct: the agent is not ready
// until a start-up pass has looked (a pass that is not whole is tried again soon, on the
// re-drive's backoff), and is ready once that pass restored the mounts.
// Found by helper review77 (agent).
func TestAgentIsNotReadyAfterAStartupPassThatLookedAtNothing(t *testing.T) {
	f := newFixture(t)
	mounts := &unreadableMounts{lostMounts: &lostMounts{f: f}}
	f.openOnMounts(mounts)
	f.claimOnMem(csitest.DefaultMemConfig())

	// A reboot: the claim's mount is gone. The mount table cannot be read when the agent
	// starts; the reconcile timer is an hour away.
	mounts.set(true)
	before := f.mem.CallCount(csi.RPCNodePublishVolume)
	mounts.failing.Store(true)
	s := testSettings
	s.ReconcileInterval = time.Hour
	a, stop := f.startAgentWith(func(c *Config) { c.Settings = s })
	waitFor(t, "the start-up reconcile to fail on the mount table", func() bool {
		return strings.Contains(f.logs.String(), "too many open files")
	})
	mounts.failing.Store(false) // readable again: a pass now would restore the mount

	deadline := time.Now().Add(2 * time.Second)
	for !a.Ready() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if a.Ready() && f.mem.CallCount(csi.RPCNodePublishVolume) == before {
		t.Fatalf("the agent reported ready (READY=1, start-up reconcile done) though its start-up pass failed before it looked at anything: "+
			"the claim's mount, lost at the reboot, was not restored, and the next pass is reconcile_interval (%s) away; log:\n%s", s.ReconcileInterval, f.logs)
	}
	waitFor(t, "the agent ready with the claim's mount restored", func() bool {
		return a.Ready() && f.mem.CallCount(csi.RPCNodePublishVolume) > before
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestClaimGCPassThatLookedAtNothingResolvesNoProblem: claim GC's problems are logged once and
// "resolved" once gone, as reconcile's (logProblemsOnce). Reconcile's were fixed not to be said
// resolved after a pass that did not look at everything (ReconcileReport.Whole,
// logFoundProblems), but claim GC's were not: Engine.ReleasePast returns an empty report with its
// error when it fails before it lists the claims (the state read failing, the mount view check),
// and Agent.gc hands that empty list to logProblemsOnce with resolve, which logs "claim GC:
// resolved: ..." of a claim still stuck releasing, whose release nothing tried; the next pass
// logs its problem again as new. Correct: a GC pass that failed before it looked logs no problem
// resolved (its report says it was not whole, and gc resolves nothing then).
// Found by helper review77 (agent).
func TestClaimGCPassThatLookedAtNothingResolvesNoProblem(t *testing.T) {
	f := newFixture(t)
	faults := f.releasingClaim()
	faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.FailedPrecondition)
	var logs iostreams.SyncBuffer
	a := &Agent{e: f.e, log: slog.New(slog.NewTextHandler(&logs, nil)), problems: map[string]loggedProblem{}}

	a.gc(f.ctx)
	const problem = `claim GC: claim \"db\" for alloc \"web-0\"`
	if !strings.Contains(logs.String(), problem) {
		t.Fatalf("the first GC pass did not log the stuck release's problem:\n%s", logs.String())
	}
	// The next pass cannot read the state: it fails before it looks at any claim.
	if err := f.e.Close(); err != nil {
		t.Fatal(err)
	}
	a.gc(f.ctx)
	if !strings.Contains(logs.String(), `msg="claim GC" err=`) {
		t.Fatalf("precondition: the second GC pass did not fail before it looked:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "resolved") {
		t.Errorf("a claim GC pass that failed before it looked at any claim logged the stuck claim's problem resolved (the claim is still stuck releasing, nothing tried its release):\n%s", logs.String())
	}
}

// TestReconcilePassThatCannotLookIsNotAWarningEveryPass: a reconcile problem is logged once, and
// again only if it went away and came back (logProblems), so that something wrong for days does
// not fill the agent's log: 1,440 identical warnings a day at the default reconcile_interval
// (TestClaimGCLogsAStuckClaimsProblemOnce). A pass that fails before it looks (the mount table
// unreadable, the state dir read-only) bypasses that: Agent.reconcile logs its error as a
// warning at every pass, the same words each minute for as long as it lasts, and each re-drive
// pass too. Correct: the same failure of a pass is logged once while it lasts (and again, or
// said resolved, once a pass gets past it).
// Found by helper review77 (agent).
func TestReconcilePassThatCannotLookIsNotAWarningEveryPass(t *testing.T) {
	f := newFixture(t)
	mounts := &unreadableMounts{lostMounts: &lostMounts{f: f}}
	mounts.failing.Store(true)
	e, err := engine.Open(f.ctx, engine.Config{StateDir: f.dir, Mounts: mounts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var logs iostreams.SyncBuffer
	a, err := New(Config{Engine: e, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		a.reconcile(f.ctx, "timer")
	}
	if n := strings.Count(logs.String(), "too many open files"); n != 1 {
		t.Errorf("three reconcile passes failing alike before they looked logged the failure %d times, want once:\n%s", n, logs.String())
	}
	mounts.failing.Store(false)
	a.reconcile(f.ctx, "timer")
	a.reconcile(f.ctx, "timer")
	if n := strings.Count(logs.String(), "reconcile: works again"); n != 1 {
		t.Errorf("passes that looked again after the failure logged %d \"works again\", want once:\n%s", n, logs.String())
	}
}
