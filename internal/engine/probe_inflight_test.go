package engine

import (
	"context"
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
	h := newHarness(t, nil)
	h.create(volume("db", capab("single-node-writer")))
	h.faults.Delay(csi.RPCNodeStageVolume, 300*time.Millisecond)
	h.faults.FailAlways(csi.RPCProbe, codes.Internal)
	claimed := make(chan error, 1)
	go func() {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
		claimed <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for h.faults.Calls(csi.RPCNodeStageVolume) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("NodeStageVolume was never sent")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if infos, err := h.e.PluginStatus(context.Background(), "mem"); err != nil || infos[0].Healthy {
		t.Fatalf("PluginStatus = %+v, %v; want the plugin probed unhealthy", infos, err)
	}
	if err := <-claimed; err != nil {
		t.Fatalf("the claim whose NodeStageVolume was in flight when a probe found the plugin unhealthy: %v", err)
	}
}
