package engine

import (
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// agent38: a `group run` every alloc of which failed (its plugin refused the stage) recorded the
// group "running" and left it so, group status and the dashboard saying "running, 0/1 ready"
// with no reason, until a `group stop`. It reads GroupFailed, each alloc with the error its run
// failed with, as group status and the dashboard read it; a run that gives the allocs their
// volumes makes it running again, the errors gone. The honest cases: a run one alloc of which
// failed is still running, that alloc's error shown; a stopped group is stopped.
func TestGroupEveryAllocOfWhichFailedReadsFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.Internal)
	info, err := h.e.RunGroup(h.ctx, dbGroup(2))
	if err == nil {
		t.Fatal("group run whose every stage fails: no error")
	}
	if info.State != GroupFailed {
		t.Errorf("the run's own answer: state %q; want %q", info.State, GroupFailed)
	}
	read := func() GroupInfo {
		t.Helper()
		gs, err := h.e.Groups(h.ctx, "db")
		if err != nil || len(gs) != 1 {
			t.Fatalf("groups: %+v, %v", gs, err)
		}
		d, err := h.e.Dashboard(h.ctx, 0)
		if err != nil || len(d.Groups) != 1 || d.Groups[0].State != gs[0].State {
			t.Fatalf("the dashboard's groups %+v (%v); group status's state %q", d.Groups, err, gs[0].State)
		}
		return gs[0]
	}
	g := read()
	if g.State != GroupFailed || len(g.Allocs) != 2 {
		t.Fatalf("group status after a run every alloc of which failed: state %q, allocs %+v; want %q", g.State, g.Allocs, GroupFailed)
	}
	for _, a := range g.Allocs {
		if !strings.Contains(a.Error, "NodeStageVolume") || len(a.Claims) != 0 {
			t.Errorf("alloc %s: error %q, claims %+v; want the run's error, naming the RPC that failed", a.Name, a.Error, a.Claims)
		}
	}

	// One alloc's volume gets its stage: running, the other's error shown.
	h.faults.Clear(csi.RPCNodeStageVolume)
	v1, err := h.e.Volume(h.ctx, spec.AllocName("data", 1))
	if err != nil {
		t.Fatal(err)
	}
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Code: codes.Internal, When: func(req proto.Message) bool {
		return req.(*csipb.NodeStageVolumeRequest).GetVolumeId() == v1.ExternalID
	}})
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err == nil {
		t.Fatal("group run whose second alloc's stage fails: no error")
	}
	g = read()
	if g.State != "running" || g.Allocs[0].Error != "" || len(g.Allocs[0].Claims) != 2 || !strings.Contains(g.Allocs[1].Error, "NodeStageVolume") {
		t.Errorf("one alloc served, one failed: state %q, allocs %+v; want running, the failed one's error", g.State, g.Allocs)
	}

	// Every alloc served: running, no error left.
	h.faults.Clear(csi.RPCNodeStageVolume)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
	if g = read(); g.State != "running" || g.Allocs[0].Error != "" || g.Allocs[1].Error != "" {
		t.Errorf("every alloc served: state %q, allocs %+v; want running, no error", g.State, g.Allocs)
	}
	if _, err := h.e.StopGroup(h.ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if g = read(); g.State != "stopped" {
		t.Errorf("stopped: state %q", g.State)
	}
}
