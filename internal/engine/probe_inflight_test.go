package engine

import (
	"context"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
)

// A probe that finds a plugin unhealthy drops the engine's connection to it, so that the next
// use dials and fingerprints again. An RPC another goroutine of the same process has in flight
// on that connection (the agent's reconcile or claim GC, while its runner probes) must not be
// cut short by it: a NodeStageVolume that takes longer than the probe interval never
// succeeded through a plugin whose Probe fails, and the claim was left for reconcile again
// and again.
func TestAnUnhealthyProbeDoesNotCancelAnRPCInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab("single-node-writer")))
	h.faults.Delay(csi.RPCNodeStageVolume, 300*time.Millisecond)
	claimed := h.claimWithStageInFlight("db", "web-0")
	// The plugin turns unhealthy once the claim, admitted while it was healthy, is sending
	// NodeStageVolume (a claim's own probe refuses a plugin unhealthy before admission).
	h.faults.FailAlways(csi.RPCProbe, codes.Internal)
	if infos, err := h.e.PluginStatus(context.Background(), "mem"); err != nil || infos[0].Healthy {
		t.Fatalf("PluginStatus = %+v, %v; want the plugin probed unhealthy", infos, err)
	}
	if err := <-claimed; err != nil {
		t.Fatalf("the claim whose NodeStageVolume was in flight when a probe found the plugin unhealthy: %v", err)
	}
}

// A probe that finds a plugin's socket file changed (a restart, as far as a stat can tell)
// replaces the engine's connection to it. It closed the connection it replaced at once, though
// another goroutine of the same process (the agent's reconcile or claim GC, while its runner
// probes) had an RPC in flight on it: the RPC was cut short (Canceled), and the retries on the
// closed connection failed too, leaving the claim for reconcile. The replaced connection is
// closed once its last user is done with it.
func TestAProbeReplacingTheConnectionDoesNotCancelAnRPCInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab("single-node-writer")))
	h.faults.Delay(csi.RPCNodeStageVolume, 500*time.Millisecond)
	claimed := h.claimWithStageInFlight("db", "web-0")
	// The hook between the RPC and the probe: the socket file's change time moves, as for a
	// plugin that made its socket anew; the same plugin answers on it.
	if err := os.Chmod(h.socket, 0o700); err != nil {
		t.Fatal(err)
	}
	if infos, err := h.e.PluginStatus(context.Background(), "mem"); err != nil || !infos[0].Healthy {
		t.Fatalf("PluginStatus = %+v, %v; want the plugin probed healthy on a new connection", infos, err)
	}
	if err := <-claimed; err != nil {
		t.Fatalf("the claim whose NodeStageVolume was in flight when a probe replaced the connection: %v", err)
	}
	// Its last user done, the replaced connection is closed, not kept open.
	h.e.mu.Lock()
	left := len(h.e.retired)
	h.e.mu.Unlock()
	if left != 0 {
		t.Errorf("%d replaced connections still open after their last user was done", left)
	}
}

// claimWithStageInFlight claims vol for alloc in the background and returns once its
// NodeStageVolume has been sent (the test delays it); the claim's error comes on the channel.
func (h *harness) claimWithStageInFlight(vol, alloc string) <-chan error {
	h.t.Helper()
	claimed := make(chan error, 1)
	go func() {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: vol, Alloc: alloc})
		claimed <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for h.faults.Calls(csi.RPCNodeStageVolume) == 0 {
		if time.Now().After(deadline) {
			h.t.Fatal("NodeStageVolume was never sent")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return claimed
}
