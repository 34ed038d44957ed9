package engine

import (
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestOwedNodeExpansionPastTheLimitIsPaidByTheExpandAdvised: an expand with --limit whose
// ControllerExpandVolume answers above the limit (the storage is that size now, recorded with
// capacity_max at the limit) and whose NodeExpandVolume then fails owes the node expansion, and
// says to run `volctl volume expand ID --size <answered>`. That size is above capacity_max, and
// the advised command was refused ("pass --limit to raise it"), as it would raise the limit:
// an expand to the size the volume has grows nothing, pays the node expansion, and leaves
// capacity_max as it is.
func TestOwedNodeExpansionPastTheLimitIsPaidByTheExpandAdvised(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a")) // 1 MiB
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web-0"})
	h.mem.AnswerExpandWith(8 * mib)
	h.faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	_, err := h.e.ExpandVolume(h.ctx, "a", 2*mib, 4*mib)
	if err == nil {
		t.Fatal("an expand answered above its limit, its node expansion failing, succeeded")
	}
	h.faults.Clear()
	h.mem.AnswerExpandWith(0)
	m := regexp.MustCompile("`(volctl volume expand [^`]*)`").FindAllStringSubmatch(err.Error(), -1)
	if len(m) == 0 {
		t.Fatalf("no expand advised: %v", err)
	}
	advised := m[len(m)-1][1]
	words := strings.Fields(advised)
	var size, limit int64
	for i, w := range words {
		switch w {
		case "--size":
			size, _ = spec.ParseSize(strings.Trim(words[i+1], "'"))
		case "--limit":
			limit, _ = spec.ParseSize(strings.Trim(words[i+1], "'"))
		}
	}
	v, err2 := h.e.ExpandVolume(h.ctx, "a", size, limit)
	if err2 != nil {
		t.Fatalf("the advised `%s`: %v\n(advised by: %v)", advised, err2, err)
	}
	if got := h.owed("a"); got != 0 {
		t.Errorf("node expansion owed after the advised expand = %d, want none", got)
	}
	if reqs := csitest.Requests[csi.NodeExpandVolumeRequest](h.mem); len(reqs) != 1 {
		t.Errorf("NodeExpandVolume requests the plugin served = %+v, want the advised expand's one", reqs)
	}
	if v.RequestedMax != 4*mib {
		t.Errorf("capacity_max after the advised expand = %d, want the limit given before, %d", v.RequestedMax, 4*mib)
	}
	// A size that grows the volume past capacity_max is still refused.
	if _, err := h.e.ExpandVolume(h.ctx, "a", 9*mib, 0); err == nil || !strings.Contains(err.Error(), "above its capacity_max") {
		t.Errorf("expand past capacity_max and the size the volume has, without --limit: %v; want it refused", err)
	}
}
