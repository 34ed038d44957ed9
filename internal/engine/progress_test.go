package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
	t.Parallel()
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
	// Probe first: the claim asks the plugin whether it is ready before admitting it.
	want := []string{csi.RPCProbe, csi.RPCListVolumes, csi.RPCControllerPublishVolume, csi.RPCNodeStageVolume,
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
	unlock := h.lockVolume("v")
	ctx, waiting := whenWaitingForLock(h.ctx, "v")
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

// A claim interrupted by its caller (Ctrl-C) says exactly what is left and what reconcile will
// do with it, and that is what reconcile does: it finishes publishing the claim. The release
// the message offers instead undoes it.
func TestInterruptedClaimSaysWhatReconcileDoes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	for _, alloc := range []string{"a", "b"} {
		ctx, cancel := context.WithCancel(h.ctx)
		// Interrupt as NodeStageVolume is sent.
		ctx = WithProgress(ctx, func(step string) {
			if step == csi.RPCNodeStageVolume {
				cancel()
			}
		})
		_, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: alloc})
		cancel()
		want := fmt.Sprintf("interrupted: the claim is left controller-published, not published; `volctl reconcile` will finish publishing it, "+
			"or `volctl volume release v --alloc %s` will undo it", alloc)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("interrupted claim: err = %v\nwant it to say %q", err, want)
		}
		if strings.Contains(err.Error(), "rolled back") {
			t.Fatalf("interrupted claim says it was rolled back: %v", err)
		}
	}
	h.release("v", "b")
	if _, err := h.e.ClaimInfo(h.ctx, "v", "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the release the message offers left the claim: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := h.e.ClaimInfo(h.ctx, "v", "a")
	if err != nil || cl.State != "published" || !cl.AtRest() {
		t.Fatalf("after reconcile the interrupted claim is %+v, %v; want it published as the message said", cl, err)
	}
}
