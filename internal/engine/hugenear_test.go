package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin answering CreateVolume with a huge ASCII ID (past csi.MaxObjectID, refused for it)
// while another volume is recorded: the unusable answer must still be deleted, as it was
// before the near-spelling check (TestCreateAnsweredWithAHugeIDIsRefusedAndTheVolumeDeleted,
// which has no other volume recorded). NearExternalIDs builds a LIKE pattern of the whole ID,
// past SQLite's LIKE pattern limit (50,000 bytes).
func TestHugeIDAnswerAmongOtherVolumesIsStillDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a"))
	huge := strings.Repeat("v", 60000)
	h.mem.AddVolume(csi.Volume{ID: huge, CapacityBytes: 1 << 30})
	h.mem.AnswerCreateWith(huge)
	_, err := h.e.CreateVolume(h.ctx, volume("big"))
	if err == nil {
		t.Fatal("a create answered with a volume ID of 60,000 bytes was recorded")
	}
	if _, ok := h.mem.Volume(huge); ok {
		t.Errorf("the volume answered with an ID of 60,000 bytes was not deleted: %v", spec0(err.Error()))
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 1 {
		t.Errorf("DeleteVolume sent %d time(s), want 1", n)
	}
}

func spec0(s string) string {
	if len(s) > 600 {
		return s[:300] + " … " + s[len(s)-300:]
	}
	return s
}
