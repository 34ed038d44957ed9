package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// State dir A claims volume v (the plugin publishes it to node-1). State dir B creates w, which
// asks more than v holds, and a plugin that maps two names onto one storage volume answers
// B's CreateVolume with v's: the answer is unusable (too small), and B's create deletes it
// again. B records nothing of v's storage, so refuseSharedStorage lets the DeleteVolume go,
// and a plugin that deletes a published volume deleted A's data from under its claim: the
// harm the delete's check of the nodes holding a volume (publishedNodes) keeps `volume delete`
// from. The cleanup asks too: v's storage, published to node-1, is not deleted, and B's create
// fails naming it; w's intent is forgotten.
func TestCreateCleanupOfAnUnusableAnswerPublishedElsewhereKeepsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	other := h.otherStateDir()
	h.mem.AnswerCreateWith(ext)
	h.mem.ResetCalls()

	sv := volume("w")
	sv.CapacityMin = 1 << 40 // more than v's storage holds: the answer is unusable
	_, err := other.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatal("create of w answered with v's storage, too small: succeeded")
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s) for volume %q, published to node-1 by another state dir", n, ext)
	}
	if _, ok := h.mem.Volume(ext); !ok {
		t.Fatalf("the plugin deleted volume %q, published to node-1 by state dir A: its data is gone (B's create: %v)", ext, err)
	}
	for _, want := range []string{ext, "node-1", "not sent"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %s", err, want)
		}
	}
	if _, verr := other.Volume(h.ctx, "w"); !errors.Is(verr, ErrNotFound) {
		t.Errorf("w after its refused create: %v; want its intent forgotten", verr)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != "published" {
		t.Errorf("state dir A's claims = %+v, want its one claim published", live)
	}
}

// The honest case beside it: an unusable answer that is a volume the create made (published
// nowhere) is deleted again, as before, and the check before it costs the create nothing else.
func TestCreateCleanupOfAnUnusableNewVolumeStillDeletesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 1 << 30 })
	sv := volume("w")
	sv.CapacityMax = 1 << 20 // the plugin allocates 1 GiB whatever the limit: unusable
	_, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatal("create answered past its capacity_max: succeeded")
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 1 {
		t.Errorf("DeleteVolume sent %d time(s) for the unusable volume the create made; want 1", n)
	}
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin still holds %+v after the create removed its unusable answer", vols)
	}
	if _, verr := h.e.Volume(h.ctx, "w"); !errors.Is(verr, ErrNotFound) {
		t.Errorf("w after its failed create: %v; want its intent forgotten", verr)
	}
}
