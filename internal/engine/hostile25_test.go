package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// The adversary: a plugin that hangs NodeUnpublishVolume (a node service wedged on a dead
// backend) while several of its claims wait for reconcile on the release path, beside another
// plugin whose claim waits too. The pass drove each claim in turn and sent every one of the hung
// plugin's its RPC, one timeout (2 min) each, before it reached the other plugin's claim: the
// agent's pass, every minute, stuck for n timeouts behind one plugin, every other plugin's
// release and restore held up as long. Once one of a plugin's RPCs runs into volctl's own
// timeout, the pass sends that plugin nothing more: its other work is a problem of the pass,
// saying the plugin did not answer, left for the next pass, and the other plugins' work goes on.
// So in the claim GC's pass (ReleasePast), and for a plugin restarted and hung from its first
// RPC, whose fingerprint each volume's connection asked again, a short timeout each.
func TestReconcilePassLeavesAHungPluginsOtherWorkForTheNextPass(t *testing.T) {
	for _, pass := range []struct {
		name string
		run  func(e *Engine, ctx context.Context) (ReconcileReport, error)
	}{
		{"reconcile", (*Engine).Reconcile},
		{"claim GC", (*Engine).ReleasePast},
	} {
		for _, hang := range []struct {
			name string
			// rpc hangs from the pass on; timeout is what it runs into.
			rpc     string
			timeout time.Duration
			restart bool // the plugin restarted (its socket made anew), to be fingerprinted again
		}{
			{"NodeUnpublishVolume", csi.RPCNodeUnpublishVolume, hungTimeout, false},
			{"restarted hung", csi.RPCGetPluginInfo, hungConfig().Timeouts.Short, true},
		} {
			t.Run(pass.name+"/"+hang.name, func(t *testing.T) {
				passLeavesAHungPluginsOtherWork(t, pass.run, hang.rpc, hang.timeout, hang.restart)
			})
		}
	}
}

func passLeavesAHungPluginsOtherWork(t *testing.T, pass func(e *Engine, ctx context.Context) (ReconcileReport, error),
	rpc string, timeout time.Duration, restart bool) {
	h := newHarness(t, nil)
	okFaults := csitest.NewFaults()
	okMem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	okSocket, _ := csitest.Serve(t, csitest.WithServer(okMem), csitest.WithFaults(okFaults))
	h.mounts.plugins = append(h.mounts.plugins, okMem)
	h.registerPlugin("ok", okSocket)
	hung := []string{"a1", "a2", "a3"}
	for _, id := range hung {
		h.create(volume(id))
		h.claim(ClaimRequest{VolumeID: id, Alloc: "web"})
	}
	other := volume("b")
	other.PluginID = "ok"
	h.create(other)
	h.claim(ClaimRequest{VolumeID: "b", Alloc: "web"})

	// Every release left for reconcile by a plugin that is down.
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	okFaults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	for _, id := range append(hung, "b") {
		if _, err := h.e.Release(h.ctx, id, "web"); err == nil {
			t.Fatalf("release of %s with NodeUnpublishVolume unavailable succeeded", id)
		}
	}
	h.faults.Clear()
	okFaults.Clear()
	h.open(hungConfig())
	if restart {
		h.stopServe()
		h.serveAgain(t)
		h.faults.Hang(csi.RPCNodeUnpublishVolume)
	}
	h.faults.ResetCounts()
	h.faults.Hang(rpc)

	rep, err := pass(h.e, h.ctx)
	if err == nil {
		t.Fatal("pass with a hung plugin reported no problem")
	}
	if n := h.callsAfterIdle(t, rpc); n != 1 {
		t.Errorf("%s sent %d times to the hung plugin in one pass, want once: the pass waits a timeout for each", rpc, n)
	}
	if live := h.liveClaims("b"); len(live) != 0 {
		t.Errorf("plugin ok's claim not released by the pass: %+v", live)
	}
	for _, id := range hung {
		if live := h.liveClaims(id); len(live) != 1 || !live[0].NeedsReconcile {
			t.Errorf("claim of %s after the pass = %+v, want it held for the next pass", id, live)
		}
	}
	problems := map[string]string{}
	for _, p := range rep.Problems {
		problems[p.VolumeID] = p.Message
	}
	for _, id := range hung {
		msg, ok := problems[id]
		if !ok {
			t.Errorf("no problem reported for %s: %+v", id, rep.Problems)
			continue
		}
		for _, want := range []string{rpc, `"mem"`, timeout.String()} {
			if !strings.Contains(msg, want) {
				t.Errorf("problem of %s %q does not name %s (the RPC, the plugin and the timeout)", id, msg, want)
			}
		}
	}

	// Once the plugin answers, the next pass finishes what was left.
	h.faults.Clear()
	h.open(Config{})
	if rep, err := pass(h.e, h.ctx); err != nil {
		t.Fatalf("pass once the plugin answers: %v %+v", err, rep.Problems)
	}
	for _, id := range hung {
		if live := h.liveClaims(id); len(live) != 0 {
			t.Errorf("claim of %s not released once the plugin answers: %+v", id, live)
		}
	}
}

// The same in the commands that act on many volumes at once: `group run` of a group whose
// plugin hangs NodeStageVolume tried each alloc's claim in turn, one timeout each (and its
// undo), and `group stop` released each claim in turn, one timeout each: a group of ten allocs
// held the command for 20 minutes and more. Once one of the command's RPCs to a plugin runs
// into the timeout, it sends that plugin nothing more; what is left is said and left for
// reconcile, which finishes it once the plugin answers.
func TestGroupCommandsLeaveAHungPluginsOtherWorkToReconcile(t *testing.T) {
	for _, tc := range []struct {
		name string
		rpc  string
		// setup runs before the hang; act is the command that meets it.
		setup func(h *harness)
		act   func(h *harness) error
	}{
		{"group run", csi.RPCNodeStageVolume, func(h *harness) {},
			func(h *harness) error { _, err := h.e.RunGroup(h.ctx, dbGroup(3)); return err }},
		{"group stop", csi.RPCNodeUnpublishVolume, func(h *harness) {
			if _, err := h.e.RunGroup(h.ctx, dbGroup(3)); err != nil {
				h.t.Fatal(err)
			}
		}, func(h *harness) error { _, err := h.e.StopGroup(h.ctx, "db"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.createDBVolumes(3)
			tc.setup(h)
			h.open(hungConfig())
			h.faults.ResetCounts()
			h.faults.Hang(tc.rpc)
			err := tc.act(h)
			if err == nil {
				t.Fatalf("%s against a plugin hanging %s succeeded", tc.name, tc.rpc)
			}
			if n := h.callsAfterIdle(t, tc.rpc); n != 1 {
				t.Errorf("%s sent %d times by one %s against a hung plugin, want once", tc.rpc, n, tc.name)
			}
			for _, want := range []string{tc.rpc, `"mem"`, hungTimeout.String(), "not sent", "reconcile"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s's error %q does not name %s", tc.name, err, want)
				}
			}
			h.faults.Clear()
			h.open(Config{})
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile once the plugin answers: %v %+v", err, rep.Problems)
			}
		})
	}
}

// A plugin that answers a retryable code only near the timeout (its backend given the deadline
// gRPC passes on) costs a pass as much as one that hangs: the command's rule (slowFailure: not
// tried again) left every claim of it one such wait in each pass. It is taken as hung by the
// pass: its other work is not sent, left for the next pass.
func TestReconcilePassLeavesAPluginFailingSlowlyForTheNextPass(t *testing.T) {
	const timeout = 10 * time.Second
	h := newHarness(t, nil)
	for _, id := range []string{"a1", "a2", "a3"} {
		h.create(volume(id))
		h.claim(ClaimRequest{VolumeID: id, Alloc: "web"})
	}
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	for _, id := range []string{"a1", "a2", "a3"} {
		if _, err := h.e.Release(h.ctx, id, "web"); err == nil {
			t.Fatalf("release of %s with NodeUnpublishVolume unavailable succeeded", id)
		}
	}
	clock := &slowClock{rpc: csi.RPCNodeUnpublishVolume, step: timeout * 7 / 10}
	h.open(Config{
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: timeout},
		Retry:    RetryPolicy{Attempts: DefaultRetry.Attempts, Base: time.Millisecond, Max: 2 * time.Millisecond},
		Now:      clock.now, ObserveRPC: clock.observe,
	})
	h.faults.ResetCounts()
	clock.slow.Store(true)
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil {
		t.Fatal("reconcile against a plugin failing slowly reported no problem")
	}
	if n := h.callsAfterIdle(t, csi.RPCNodeUnpublishVolume); n != 1 {
		t.Errorf("NodeUnpublishVolume sent %d times in one pass to a plugin answering %s after %s each time, want once",
			n, codes.Unavailable, timeout*7/10)
	}
	if len(rep.Problems) != 3 {
		t.Errorf("problems = %+v, want one for each claim", rep.Problems)
	}
	h.faults.Clear()
	clock.slow.Store(false)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the plugin answers: %v %+v", err, rep.Problems)
	}
}
