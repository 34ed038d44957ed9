package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
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
	// Round 33: what HFS+ ignores in names, and what ZFS's normalization=formKC composes.
	{"a zero width joiner", "", func(id string) string { return id[:1] + "\u200d" + id[1:] }},
	{"full-width forms", "", func(id string) string {
		return strings.Map(func(r rune) rune {
			if '!' <= r && r <= '~' {
				return r + 0xfee0
			}
			return r
		}, id)
	}},
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
	t.Parallel()
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
					t.Errorf("create of b answered with %+q, volume a's %+q spelled otherwise, was recorded (delete of b: %v)", near, a.ExternalID, err)
				}
				if _, ok := h.mem.Volume(a.ExternalID); !ok {
					t.Fatalf("volume a's storage %+q was deleted through %+q", a.ExternalID, near)
				}
				if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
					t.Errorf("DeleteVolume sent %d time(s): %+q may be volume a's storage", n, near)
				}
				if err == nil {
					return
				}
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "a"`) || !strings.Contains(err.Error(), fmt.Sprintf("%+q", near)) {
					t.Errorf("create of b: %v, want a conflict naming volume a and the ID answered", err)
				}
				// The ways out: a case-sensitive plugin that made a distinct volume has it
				// registered as b (register is not held to the rule); its provider's tools
				// would delete a's data on a folding backend.
				if way := fmt.Sprintf("`volctl volume register` of volume %q's spec with external_id = %+q added", "b", near); !strings.Contains(err.Error(), way) ||
					!strings.Contains(err.Error(), `deletes "a"'s data on a backend that folds IDs`) {
					t.Errorf("create of b: %v, want the way out for a case-sensitive plugin (%s) and the provider's tools' danger", err, way)
				}
				if _, err := h.e.Volume(h.ctx, "b"); !errors.Is(err, ErrNotFound) {
					t.Errorf("b's create is still recorded: %v", err)
				}
			})
		}
	}
}

// The same of CreateSnapshot: a plugin answering snapshot "two" of volume db with "ONE", its
// snapshot "one" spelled otherwise, and finding snapshots by IDs so spelled. Before, the answer
// was recorded as a second snapshot (only the ID exactly as recorded was taken for another's),
// and `snapshot delete mem ONE` deleted snapshot one. Now it is refused as the same snapshot
// under another name is, naming "one" and the ID answered, and nothing is recorded.
func TestCreateSnapshotAnsweredWithANearSpellingOfAnotherSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range nearIDs {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
			first := cmp.Or(tc.external, "one")
			if _, err := h.e.CreateSnapshot(h.ctx, "db", first, nil); err != nil {
				t.Fatal(err)
			}
			near := tc.answer(first)
			h.mem.AnswerSnapshotWith(near)
			_, err := h.e.CreateSnapshot(h.ctx, "db", "two", nil)
			if err == nil {
				h.mem.AnswerSnapshotWith("")
				derr := h.e.DeleteSnapshot(h.ctx, "mem", near, nil)
				t.Errorf("snapshot two answered with %+q, snapshot %+q spelled otherwise, was recorded (its delete: %v)", near, first, derr)
			} else if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("%q", first)) || !strings.Contains(err.Error(), fmt.Sprintf("%+q", near)) {
				t.Errorf("snapshot two: %v, want a conflict naming snapshot %q and the ID answered", err, first)
			} else if way := fmt.Sprintf("by that exact ID with the storage provider's tools, which on a backend that folds IDs deletes snapshot %+q too", first); !strings.Contains(err.Error(), way) {
				t.Errorf("snapshot two: %v, want the way out for a case-sensitive plugin and its danger (%s)", err, way)
			}
			if !slices.ContainsFunc(h.mem.Snapshots(), func(s csi.Snapshot) bool { return s.ID == first }) {
				t.Fatalf("snapshot %+q was deleted through %+q", first, near)
			}
			list, lerr := h.e.ListSnapshots(h.ctx, "mem", nil)
			if lerr != nil {
				t.Fatal(lerr)
			}
			for _, s := range list.Snapshots {
				if s.ID == near || s.Name == "two" {
					t.Errorf("snapshot two is recorded: %+v", s)
				}
			}
		})
	}
}
