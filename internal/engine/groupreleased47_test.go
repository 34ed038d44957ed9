package engine

import (
	"fmt"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A group run that scales a group down, and a group stop, say which claims they released
// (GroupInfo.Released). Before, a run from 12 allocs to 1 returned the one alloc left and
// nothing of the 22 claims it let go of; a stop of a group that held nothing looked like one
// that released everything. A release that fails leaves its claim out of the list, and the
// claims released before it in.
func TestGroupRunAndStopNameTheClaimsTheyRelease(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(12)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(12)); err != nil {
		t.Fatal(err)
	}
	info, err := h.e.RunGroup(h.ctx, dbGroup(1))
	if err != nil {
		t.Fatal(err)
	}
	// Each alloc past the count, in index order (db[2] before db[10]), its volumes by ID.
	var want []string
	for i := 1; i < 12; i++ {
		want = append(want, fmt.Sprintf("%s:%s", spec.AllocName("data", i), spec.AllocName("db", i)), "shared:"+spec.AllocName("db", i))
	}
	if got := releasedNames(info.Released); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("scale-down from 12 to 1 released\n%v\nwant\n%v", got, want)
	}
	if len(info.Allocs) != 1 || len(info.Allocs[0].Claims) != 2 {
		t.Errorf("allocs after the scale-down = %+v, want db[0] with its two claims", info.Allocs)
	}

	// The same count again: nothing past it, nothing released.
	if info, err = h.e.RunGroup(h.ctx, dbGroup(1)); err != nil || info.Released != nil {
		t.Errorf("group run again at its count released %v (%v), want nothing", info.Released, err)
	}

	// A scale-down one of whose releases fails: the claims released are named, the one that
	// failed is not (it is still held, for reconcile), and the run fails naming it.
	if _, err := h.e.RunGroup(h.ctx, dbGroup(3)); err != nil {
		t.Fatal(err)
	}
	h.failUnpublishOf(spec.AllocName("data", 2))
	info, err = h.e.RunGroup(h.ctx, dbGroup(1))
	if err == nil || !strings.Contains(err.Error(), `release "data[2]" for alloc "db[2]"`) {
		t.Errorf("scale-down whose release of data[2] fails: error %v, want it named", err)
	}
	want = []string{"data[1]:db[1]", "shared:db[1]", "shared:db[2]"}
	if got := releasedNames(info.Released); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("scale-down whose release of data[2] fails released %v, want %v", got, want)
	}
	if cls := h.liveClaims("data[2]"); len(cls) != 1 {
		t.Fatalf("data[2]'s claims after its release failed = %+v, want it held", cls)
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)

	// A stop names every claim it released (the one the failed scale-down left too); a
	// second stop releases nothing and says so.
	stopped, err := h.e.StopGroup(h.ctx, "db")
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"data[0]:db[0]", "shared:db[0]", "data[2]:db[2]"}
	if got := releasedNames(stopped.Released); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("group stop released %v, want %v", got, want)
	}
	if stopped, err = h.e.StopGroup(h.ctx, "db"); err != nil || stopped.Released != nil {
		t.Errorf("group stop again released %v (%v), want nothing", stopped.Released, err)
	}
	// A stop one of whose releases fails names the claims it did release in its error.
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
	h.failUnpublishOf(spec.AllocName("data", 1))
	_, err = h.e.StopGroup(h.ctx, "db")
	for _, want := range []string{`release "data[1]" for alloc "db[1]"`, `; it released "data[0]" for alloc "db[0]", "shared" for alloc "db[0]", "shared" for alloc "db[1]" (`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("group stop whose release of data[1] fails: error %v, want it to say %s", err, want)
		}
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)

	// Group status never says a claim was released.
	gs, err := h.e.Groups(h.ctx, "db")
	if err != nil || len(gs) != 1 || gs[0].Released != nil {
		t.Errorf("group status = %+v, %v; want no claims released", gs, err)
	}
}

// failUnpublishOf makes the plugin fail every NodeUnpublishVolume of volume id (Internal)
// until its faults are cleared.
func (h *harness) failUnpublishOf(id string) {
	h.t.Helper()
	v, err := h.e.Volume(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.Internal, When: func(req proto.Message) bool {
		return req.(*csipb.NodeUnpublishVolumeRequest).GetVolumeId() == v.ExternalID
	}})
}

func releasedNames(rs []ReleasedClaim) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.VolumeID+":"+r.Alloc)
	}
	return out
}
