package engine

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// The adversary: a plugin that hangs NodeUnpublishVolume (a node service wedged on a dead
// backend) while several of its claims wait for reconcile on the release path, beside another
// plugin whose claim waits too. The pass drove each claim in turn and sent every one of the hung
// plugin's its RPC, one timeout (2 min) each, before it reached the other plugin's claim: the
// agent's pass, every minute, stuck for n timeouts behind one plugin, every other plugin's
// release and restore held up as long. Once one of a plugin's RPCs runs into volctl's own
// timeout for a second volume (one is that volume's: TestPassGoesOnWithAPluginHungForOneVolume),
// the pass sends that plugin nothing more: its other work is a problem of the pass, saying the
// plugin did not answer, left for the next pass, and the other plugins' work goes on. So in the
// claim GC's pass (ReleasePast), and for a plugin restarted and hung from its first RPC, whose
// fingerprint (no volume's: the plugin's) each volume's connection asked again, a short
// timeout each.
func TestReconcilePassLeavesAHungPluginsOtherWorkForTheNextPass(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	for _, pass := range []struct {
		name string
		run  func(e *Engine, ctx context.Context) (ReconcileReport, error)
	}{
		{"reconcile", (*Engine).Reconcile},
		{"claim GC", (*Engine).ReleasePast},
	} {
		for _, hang := range []struct {
			name string
			// rpc hangs from the pass on; timeout is what it runs into; sent is how many
			// times a pass may send it: two volumes' timeouts for an RPC of a volume.
			rpc     string
			timeout time.Duration
			restart bool // the plugin restarted (its socket made anew), to be fingerprinted again
			sent    int
		}{
			{"NodeUnpublishVolume", csi.RPCNodeUnpublishVolume, hungTimeout, false, 2},
			{"restarted hung", csi.RPCGetPluginInfo, hungConfig().Timeouts.Short, true, 1},
		} {
			t.Run(pass.name+"/"+hang.name, func(t *testing.T) {
				passLeavesAHungPluginsOtherWork(t, pass.run, hang.rpc, hang.timeout, hang.restart, hang.sent)
			})
		}
	}
}

func passLeavesAHungPluginsOtherWork(t *testing.T, pass func(e *Engine, ctx context.Context) (ReconcileReport, error),
	rpc string, timeout time.Duration, restart bool, sent int) {
	h := newHarness(t, nil)
	okFaults := csitest.NewFaults()
	okMem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	okSocket, _ := csitest.Serve(t, csitest.WithServer(okMem), csitest.WithFaults(okFaults))
	h.mounts.plugins = append(h.mounts.plugins, okMem)
	// Its own timeout, a minute: its RPCs answer, however slowly a loaded machine gets them
	// there, where the engine's 500ms (hungConfig) ran out on its NodeUnpublishVolume at load 25.
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "ok", Type: spec.PluginMonolith, Socket: okSocket, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	hung := []string{"a1", "a2", "a3", "a4"}
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
	// What the pass tries to send the hung plugin, counted by the client: one whose deadline
	// ran out before the plugin got it (a new connection's handshake slower than 500ms on a
	// loaded machine) was tried all the same, and cost the pass its timeout.
	var mu sync.Mutex
	tried := 0
	cfg := hungConfig()
	cfg.ObserveRPC = func(plugin, r, code string, d time.Duration) {
		if plugin == "mem" && r == rpc {
			mu.Lock()
			tried++
			mu.Unlock()
		}
	}
	h.open(cfg)
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
	mu.Lock()
	n := tried
	mu.Unlock()
	if n != sent {
		t.Errorf("%s tried %d times on the hung plugin in one pass, want %d: the pass waits a timeout for each", rpc, n, sent)
	}
	if got := h.callsAfterIdle(t, rpc); got > n {
		t.Errorf("%s received %d times by the hung plugin, more than the %d times it was tried", rpc, got, n)
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
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	for _, tc := range []struct {
		name string
		rpc  string
		// setup runs before the hang; act is the command that meets it.
		setup func(h *harness)
		act   func(h *harness) error
	}{
		{"group run", csi.RPCNodeStageVolume, func(h *harness) {},
			func(h *harness) error { _, err := h.e.RunGroup(h.ctx, dbGroup(4)); return err }},
		{"group stop", csi.RPCNodeUnpublishVolume, func(h *harness) {
			if _, err := h.e.RunGroup(h.ctx, dbGroup(4)); err != nil {
				h.t.Fatal(err)
			}
		}, func(h *harness) error { _, err := h.e.StopGroup(h.ctx, "db"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.createDBVolumes(4)
			err := h.againstAHang(tc.setup, tc.rpc, tc.act)
			if err == nil {
				t.Fatalf("%s against a plugin hanging %s succeeded", tc.name, tc.rpc)
			}
			if n := h.callsAfterIdle(t, tc.rpc); n != 2 {
				t.Errorf("%s sent %d times by one %s against a hung plugin, want twice (two volumes' timeouts)", tc.rpc, n, tc.name)
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
	t.Parallel()
	const timeout = 10 * time.Second
	h := newHarness(t, nil)
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		h.create(volume(id))
		h.claim(ClaimRequest{VolumeID: id, Alloc: "web"})
	}
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
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
	if n := h.callsAfterIdle(t, csi.RPCNodeUnpublishVolume); n != 2 {
		t.Errorf("NodeUnpublishVolume sent %d times in one pass to a plugin answering %s after %s each time, want twice (two volumes')",
			n, codes.Unavailable, timeout*7/10)
	}
	if len(rep.Problems) != 4 {
		t.Errorf("problems = %+v, want one for each claim", rep.Problems)
	}
	h.faults.Clear()
	clock.slow.Store(false)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the plugin answers: %v %+v", err, rep.Problems)
	}
}

// A plugin hung for one volume only (its backend dead: an NFS server gone, the unmount of its
// share hanging) is not taken for hung as a whole: the pass sends nothing more for that volume
// (its second claim's release waits for the next pass, not another timeout), and goes on with
// the plugin's other volumes. Taken for hung at the first timeout, that volume, first in every
// pass, would have left the plugin's other volumes' releases and restores for the next pass,
// every pass, until the dead backend came back.
func TestPassGoesOnWithAPluginHungForOneVolume(t *testing.T) {
	// Serial: its hung-RPC timeout (hungTimeout, 500 ms) bounds the dial and handshake too,
	// which tests running beside it on a loaded machine made it miss.
	h := newHarness(t, nil)
	h.create(volume("a1", capab(spec.MultiNodeMultiWriter)))
	for _, alloc := range []string{"web", "api"} {
		h.claim(ClaimRequest{VolumeID: "a1", Alloc: alloc})
	}
	for _, id := range []string{"a2", "a3"} {
		h.create(volume(id))
		h.claim(ClaimRequest{VolumeID: id, Alloc: "web"})
	}
	h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	for _, rel := range [][2]string{{"a1", "web"}, {"a1", "api"}, {"a2", "web"}, {"a3", "web"}} {
		if _, err := h.e.Release(h.ctx, rel[0], rel[1]); err == nil {
			t.Fatalf("release of %s with NodeUnpublishVolume unavailable succeeded", rel[0])
		}
	}
	h.faults.Clear()
	dead := h.volumeInfo("a1").ExternalID
	var deadCalls atomic.Int32
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*csipb.NodeUnpublishVolumeRequest); ok && r.GetVolumeId() == dead {
				deadCalls.Add(1)
				<-ctx.Done() // a1's unmount hangs on its dead backend
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			return handler(ctx, req)
		}))
	h.open(hungConfig())
	h.faults.ResetCounts()

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil {
		t.Fatal("reconcile with a1's unmount hanging reported no problem")
	}
	if n := h.callsAfterIdle(t, csi.RPCNodeUnpublishVolume); n != 2 {
		t.Errorf("NodeUnpublishVolume answered %d times in the pass, want 2: for a2 and a3", n)
	}
	if n := deadCalls.Load(); n != 1 {
		t.Errorf("NodeUnpublishVolume for a1 sent %d times in the pass, want once: its second claim not sent after its timeout", n)
	}
	for _, id := range []string{"a2", "a3"} {
		if live := h.liveClaims(id); len(live) != 0 {
			t.Errorf("claim of %s, whose plugin answers for it, not released: %+v (problems %+v)", id, live, rep.Problems)
		}
	}
	if live := h.liveClaims("a1"); len(live) != 2 {
		t.Errorf("claims of a1 after the pass = %+v, want both held for the next pass", live)
	}
}
