package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// publishBarrier holds each NodePublishVolume until `want` of them are in flight at once (or
// a generous deadline passes), and records the most it saw in flight.
type publishBarrier struct {
	mu       sync.Mutex
	inFlight int
	max      int
	want     int
	reached  chan struct{}
}

func (p *publishBarrier) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != "/csi.v1.Node/NodePublishVolume" {
		return handler(ctx, req)
	}
	p.mu.Lock()
	p.inFlight++
	p.max = max(p.max, p.inFlight)
	if p.inFlight == p.want {
		close(p.reached)
	}
	p.mu.Unlock()
	select {
	case <-p.reached:
	case <-time.After(15 * time.Second):
	}
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
	return handler(ctx, req)
}

// A reconcile pass restores independent volumes at the same time: after a reboot, the
// published claims of three volumes are re-published concurrently, not one after the other.
// Each volume keeps its own rule: its staging is staged again once, however many claims it has.
func TestRestoreRunsVolumesInParallel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	vols := []string{"a", "b", "c"}
	var gone []string
	for _, id := range vols {
		h.create(volume(id, capab(spec.MultiNodeMultiWriter)))
		for _, alloc := range []string{"x", "y"} {
			cl := h.claim(ClaimRequest{VolumeID: id, Alloc: alloc})
			gone = append(gone, cl.TargetPath)
		}
		st, _ := h.staging(id)
		gone = append(gone, st.StagingPath)
	}
	for _, p := range gone {
		h.mounts.markGone(p)
	}
	barrier := &publishBarrier{want: len(vols), reached: make(chan struct{})}
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem), csitest.WithFaults(h.faults),
		csitest.WithInterceptor(barrier.intercept))
	h.open(Config{Timeouts: csi.Timeouts{Short: 30 * time.Second, Long: 60 * time.Second}})
	h.faults.ResetCounts()

	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile: %v (%+v)", err, rep)
	}
	if barrier.max < len(vols) {
		t.Errorf("at most %d NodePublishVolume in flight during the restore; want the %d volumes restored at once", barrier.max, len(vols))
	}
	var want []string
	for _, id := range vols {
		for _, alloc := range []string{"x", "y"} {
			want = append(want, fmt.Sprintf("restored %s/%s", id, alloc))
		}
	}
	var got []string
	for _, a := range rep.Actions {
		got = append(got, fmt.Sprintf("%s %s/%s", a.Kind, a.VolumeID, a.Alloc))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("actions = %v; want %v, in the listed order", got, want)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != len(vols) {
		t.Errorf("NodeStageVolume sent %d times; want once per volume (%d)", n, len(vols))
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 2*len(vols) {
		t.Errorf("NodePublishVolume sent %d times; want once per claim (%d)", n, 2*len(vols))
	}
}
