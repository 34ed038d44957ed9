package engine

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// An operation under WithProgress reports each RPC as it is sent, a retry after a retryable
// failure, and a wait for another operation's lock on the volume.
func TestProgressReportsRPCsRetriesAndLockWaits(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	var (
		mu    sync.Mutex
		steps []string
	)
	ctx := WithProgress(h.ctx, func(step string) {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, step)
	})
	h.faults.FailOnce(csi.RPCNodeStageVolume, codes.Unavailable)
	if _, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatal(err)
	}
	want := []string{csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume,
		"NodeStageVolume failed with Unavailable, retrying (attempt 2 of 3)",
		csi.RPCNodeStageVolume, csi.RPCNodePublishVolume}
	mu.Lock()
	got := steps
	steps = nil
	mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("claim steps = %q\nwant %q", got, want)
	}

	// Another operation holds the volume's lock: the release says it is waiting for it.
	unlock, err := h.e.locks.volume(h.ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	var once sync.Once
	ctx = WithProgress(h.ctx, func(step string) {
		if step == `waiting for the lock on volume "v" (another volctl is working on it)` {
			once.Do(func() { close(waiting) })
		}
	})
	done := make(chan error, 1)
	go func() { _, err := h.e.Release(ctx, "v", "a"); done <- err }()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		unlock()
		<-done
		t.Fatal("the release waiting for the volume's lock reported no step saying so")
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
