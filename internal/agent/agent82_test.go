package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
)

// TestPluginLogWhoseDirectoryWasRemovedStaysBoundedAndIsNotAWarningEveryCheck: the agent keeps
// a supervised plugin's output within maxLogSize, also when the log's path no longer names the
// file the plugin writes to: it trims that file through the plugin's own descriptor
// (trimOrphanedLog, "trimming it through the plugin's descriptor"). An operator freeing space on
// the state dir's file system removes <state>/logs while the agent runs (rm -rf). The plugin
// writes on to its unlinked log, and the agent's rotation opens <log>.1 in the directory that
// is gone: ENOENT, which trimOpen takes for a passing failure ("the next check rotates it once
// the cause is gone"). Nothing makes the directory again while the plugin runs, so the cause
// never goes: the unlinked file grows without bound, out of sight (du finds it nowhere), while
// the agent's log says it is being trimmed, and a "rotating a plugin's log" warning is logged
// at every check, each second, for as long as the plugin runs. Correct: the output stays
// bounded (the logs directory made again, or the file emptied as on a full disk), and a
// standing failure is warned of once, not at every check.
// Found by helper review82 (agent).
func TestPluginLogWhoseDirectoryWasRemovedStaysBoundedAndIsNotAWarningEveryCheck(t *testing.T) {
	f := newFixture(t)
	f.register(f.execPlugin("hp", "hostpath"))
	pid := f.leftPlugin("hp")
	stop := f.startAgent(adoptSettings())
	defer func() { _ = stop() }()
	waitFor(t, "the agent to adopt the plugin", func() bool { return strings.Contains(f.logs.String(), "adopted the running plugin") })

	// The logs directory removed under the running agent and plugin, then the plugin floods.
	if err := os.RemoveAll(filepath.Join(f.dir, "logs")); err != nil {
		t.Fatal(err)
	}
	flood(t, pid, 3*int(maxLogSize)/2)
	if outputBounded(t, pid) {
		t.Fatalf("precondition: the plugin's output is within %d bytes after the flood", maxLogSize)
	}
	// Twenty checks of the logs (logCheckInterval is 100ms in these tests).
	deadline := time.Now().Add(20 * logCheckInterval)
	for time.Now().Before(deadline) && !outputBounded(t, pid) {
		time.Sleep(logCheckInterval / 2)
	}
	time.Sleep(10 * logCheckInterval)
	if !outputBounded(t, pid) {
		st, _ := os.Stat("/proc/" + strconv.Itoa(pid) + "/fd/1")
		t.Errorf("the plugin's output, its logs directory removed, is %d bytes after %s of checks; want it kept within %d bytes (it is an unlinked file on the state dir's file system, never freed while the plugin runs)",
			st.Size(), 30*logCheckInterval, maxLogSize)
	}
	if n := strings.Count(f.logs.String(), "rotating a plugin's log"); n > 1 {
		t.Errorf("the same rotation failure was logged %d times in %s; want a standing failure warned of once:\n%s", n, 30*logCheckInterval, tail(f.logs.String(), 3000))
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// TestClaimGCPassCutShortByTheStopStillLogsWhatItReleased: a reconcile pass cut short by the
// agent's stop logs what it did before the stop ("what a pass cut short by shutdown left undone
// is the next agent's", but what it did is listed: Agent.reconcile logs rep.Actions before it
// looks at ctx). Claim GC does not: Agent.gc returns as soon as its context is done, before it
// logs its report's actions, so a GC pass that released one past claim (its volume's
// NodeUnpublishVolume and ControllerUnpublishVolume sent, the claim freed) and was then cut
// short by SIGTERM mid-RPC on the next claim leaves no "claim GC: released claim ..." line:
// the agent's log, the journal an operator reads, never says that claim was released, nor by
// whom. Correct: a GC pass cut short logs the releases it did, as a cut-short reconcile pass
// does; what it did not get to is the next agent's.
// Found by helper review82 (agent).
func TestClaimGCPassCutShortByTheStopStillLogsWhatItReleased(t *testing.T) {
	f := newFixture(t)
	f.releasingClaim() // "db" for "web-0", on plugin mem: its release goes through now

	// A second past claim, on another plugin whose NodeUnpublishVolume hangs: the GC pass is
	// there when the stop comes.
	faults := csitest.NewFaults()
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())), csitest.WithFaults(faults))
	f.register(spec.Plugin{ID: "mem2", Type: spec.PluginMonolith, Socket: socket})
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "web", Name: "web", PluginID: "mem2", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "web", Alloc: "web-1"}); err != nil {
		t.Fatal(err)
	}
	faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	if _, err := f.e.Release(f.ctx, "web", "web-1"); err == nil {
		t.Fatal("precondition: the release of web for web-1 succeeded despite NodeUnpublishVolume failing")
	}
	faults.Clear()
	faults.Hang(csi.RPCNodeUnpublishVolume)

	var logs iostreams.SyncBuffer
	a := &Agent{e: f.e, log: slog.New(slog.NewTextHandler(&logs, nil)), problems: map[string]loggedProblem{}}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); a.gc(ctx) }()
	waitFor(t, "the GC pass to be in the hanging NodeUnpublishVolume of web", func() bool { return faults.InFlight() > 0 })
	cancel() // SIGTERM
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the GC pass did not end after its context was cancelled")
	}
	cs, err := f.e.Claims(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.VolumeID == "db" {
			t.Fatalf("precondition: claim db for web-0 is still there (%+v); want it released by the GC pass before the stop", c)
		}
	}
	if !strings.Contains(logs.String(), `released claim \"db\" for alloc \"web-0\"`) {
		t.Errorf("a claim GC pass cut short by the stop released claim db for web-0 and the agent's log does not say so; want its release logged as a cut-short reconcile pass logs what it did:\n%s", logs.String())
	}
}
