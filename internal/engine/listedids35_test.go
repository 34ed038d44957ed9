package engine

import (
	"strings"
	"testing"
	"unicode/utf8"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// nearSpellings are IDs a plugin may list that are not id but read as it, by case, white
// space, a prefix either way, or Unicode that NFKC or a reader folds onto it (a fullwidth first
// letter, a zero-width space inside).
func nearSpellings(id string) []string {
	r, n := utf8.DecodeRuneInString(id)
	out := []string{strings.ToUpper(id), id + " ", " " + id, id[:len(id)-1], id + "0", id + "\u200b"}
	if r >= '!' && r <= '~' {
		out = append(out, string(r-'!'+'\uff01')+id[n:]) // fullwidth: NFKC gives id
	}
	if lower := strings.ToLower(id); lower != id {
		out = append(out, lower)
	}
	return out
}

// listsNearSpellings makes the plugin's ListVolumes list, before each entry, its ID spelled
// each near way (nearSpellings), with nodes as published_node_ids.
func listsNearSpellings(h *harness, nodes []string) {
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Answer: func(m proto.Message) {
		resp := m.(*csipb.ListVolumesResponse)
		var out []*csipb.ListVolumesResponse_Entry
		for _, en := range resp.GetEntries() {
			for _, id := range nearSpellings(en.GetVolume().GetVolumeId()) {
				near := proto.Clone(en).(*csipb.ListVolumesResponse_Entry)
				near.Volume.VolumeId = id
				near.Status = &csipb.ListVolumesResponse_VolumeStatus{PublishedNodeIds: nodes}
				out = append(out, near)
			}
			out = append(out, en)
		}
		resp.Entries = out
	}})
}

// TestListedVolumeIsOnlyItsOwnExactID: a plugin whose ListVolumes also lists, beside each
// volume, IDs that read as its own (case, a trailing or leading space, a prefix either way, a
// fullwidth letter, a zero-width space) published to this node. volctl compares a listed ID
// byte for byte with the one the plugin gave it: no near entry is taken for its volume. The
// claim's check (attachedAlready) does not refuse an honest claim as attached by another, the
// release's check (listsPublished) records the detach the plugin made, and the delete's
// (listsVolume) the volume gone; and the volume's own entry, listed after the near ones, is not
// missed: published to the node by another state dir, the claim from there is still refused.
// Held before this round: none of these failed on the code before it.
func TestListedVolumeIsOnlyItsOwnExactID(t *testing.T) {
	t.Parallel()
	t.Run("near entries are not its own", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		h.create(volume("v", capab(spec.SingleNodeWriter)))
		listsNearSpellings(h, []string{"node-1"})
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
		if n := h.mem.CallCount(csi.RPCControllerPublishVolume); n != 1 {
			t.Errorf("ControllerPublishVolume sent %d times; want 1", n)
		}
		h.release("v", "a")
		if st, ok := h.staging("v"); ok && st.ControllerPublished {
			t.Errorf("staging after the release = %+v; want the detach recorded", st)
		}
		if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
			t.Errorf("delete once the plugin no longer has the volume, listing near IDs: %v", err)
		}
	})
	t.Run("its own entry is found after near ones", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil)
		claimAttachedByAnotherStateDir(t, h, func() { listsNearSpellings(h, nil) })
	})
}
