package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// nearIDs are spellings of a stored external ID that a plugin on a case-insensitive backend,
// or one that trims and normalises what it is sent, takes for that ID.
var nearIDs = []struct {
	name     string
	external string // the stored volume's external ID
	answer   func(string) string
}{
	{"another case", "", strings.ToUpper},
	{"a trailing space", "", func(id string) string { return id + " " }},
	{"another Unicode normal form", "caf\u00e9-1", func(string) string { return "cafe\u0301-1" }},
}

// nearHarness is a harness whose plugin finds volumes by IDs spelled otherwise (FoldIDs), with
// volume "a" recorded: created, or registered on the external ID given.
func nearHarness(t *testing.T, external string) (*harness, VolumeInfo) {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	if external == "" {
		return h, h.create(volume("a")) // 1 MiB
	}
	h.mem.AddVolume(csi.Volume{ID: external, CapacityBytes: 1 << 20})
	a, err := h.e.RegisterVolume(h.ctx, registered("a", external))
	if err != nil {
		t.Fatal(err)
	}
	return h, a
}

// A plugin that answers CreateVolume with an ID that differs from another volctl volume's
// external ID only in case, Unicode normalisation or a trailing space, and finds volumes by
// IDs so spelled: the storage is that volume's. Before, only the ID exactly as recorded was
// taken for another volume's storage: an answer volctl could not use (too small) was deleted
// again, DeleteVolume of the near ID deleting volume a's data; and a usable one was recorded as
// volume b, one storage under two volctl volumes, whose `volume delete b` deleted a's data.
// Now the answer is refused as another volume's storage is: nothing sent to delete it, nothing
// recorded, the error naming the volume whose ID it is near and the ID answered.
func TestCreateAnsweredWithANearSpellingOfAnotherVolumesStorageDeletesNothing(t *testing.T) {
	for _, tc := range nearIDs {
		for _, unusable := range []bool{true, false} {
			name := tc.name + "/usable"
			if unusable {
				name = tc.name + "/too small"
			}
			t.Run(name, func(t *testing.T) {
				h, a := nearHarness(t, tc.external)
				near := tc.answer(a.ExternalID)
				h.mem.AnswerCreateWith(near)
				sv := volume("b")
				if unusable {
					sv.CapacityMin = 1 << 30
				}
				_, err := h.e.CreateVolume(h.ctx, sv)
				if err == nil {
					// Recorded as b: its delete is what reaches a's storage.
					h.mem.AnswerCreateWith("")
					err = h.e.DeleteVolume(h.ctx, "b")
					t.Errorf("create of b answered with %q, volume a's %q spelled otherwise, was recorded (delete of b: %v)", near, a.ExternalID, err)
				}
				if _, ok := h.mem.Volume(a.ExternalID); !ok {
					t.Fatalf("volume a's storage %q was deleted through %q", a.ExternalID, near)
				}
				if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
					t.Errorf("DeleteVolume sent %d time(s): %q may be volume a's storage", n, near)
				}
				if err == nil {
					return
				}
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "a"`) || !strings.Contains(err.Error(), fmt.Sprintf("%+q", near)) {
					t.Errorf("create of b: %v, want a conflict naming volume a and the ID answered", err)
				}
				if _, err := h.e.Volume(h.ctx, "b"); !errors.Is(err, ErrNotFound) {
					t.Errorf("b's create is still recorded: %v", err)
				}
			})
		}
	}
}
