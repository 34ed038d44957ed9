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

// TestForcedDeregisterSaysWhichClaimsItReleased: `volume deregister --force` releases the
// volume's claims first, their mounts gone from under the allocs, and said only "deregistered".
// It now says which it released, and when a release fails (the deregistration with it), which
// it had released before the failure.
func TestForcedDeregisterSaysWhichClaimsItReleased(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "a1"})
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "a2"})
	h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: codes.Internal, When: func(req proto.Message) bool {
		return strings.Contains(req.(*csipb.NodeUnpublishVolumeRequest).GetTargetPath(), "/a2/")
	}})
	released, _, err := h.e.DeregisterVolumeReleasing(h.ctx, "db", true)
	if err == nil {
		t.Fatal("deregister --force with a release failing succeeded")
	}
	if len(released) != 1 || released[0].Alloc != "a1" {
		t.Errorf("released %+v, want a1's claim, released before a2's failed", released)
	}
	h.faults.Clear()
	released, _, err = h.e.DeregisterVolumeReleasing(h.ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(released) != 1 || released[0].Alloc != "a2" || released[0].Mode != "write" {
		t.Errorf("released %+v, want a2's write claim", released)
	}
	if _, err := h.e.Volume(h.ctx, "db"); err == nil {
		t.Error("the volume is still registered")
	}
}
