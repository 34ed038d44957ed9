package engine

import (
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// answerCreateVolumeAt makes the plugin's next CreateVolume answer OK with capacity_bytes n,
// whatever size it made: a plugin that restores (or clones) into a volume smaller than its
// source, or says so.
func answerCreateVolumeAt(h *harness, n int64) {
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
		m.(*csipb.CreateVolumeResponse).Volume.CapacityBytes = n
	}})
}

// madeSmallerThanItsSource creates sv, whose source volctl records (or the plugin lists) at 8
// MiB, answered at 1 MiB,
// and checks that the create is refused, saying both sizes, nothing recorded, and the volume the
// plugin made deleted again, as one below capacity_min is.
func madeSmallerThanItsSource(t *testing.T, h *harness, sv spec.Volume, source string) {
	t.Helper()
	before := len(h.mem.Volumes())
	answerCreateVolumeAt(h, 1*mib)
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatalf("%s (8 MiB) answered OK with a volume of 1 MiB: recorded %s at %d bytes, no error", source, v.State, v.CapacityBytes)
	}
	for _, want := range []string{"with 1MiB", "the 8MiB its source has", "deleted that volume again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if _, gerr := h.e.Volume(h.ctx, sv.ID); !errors.Is(gerr, ErrNotFound) {
		t.Errorf("volume %q after the refused create: %v; want no record", sv.ID, gerr)
	}
	if n := len(h.mem.Volumes()); n != before {
		t.Errorf("the plugin holds %d volumes after the refused create, %d before: the volume it made was not deleted again", n, before)
	}
}

// The CSI spec, Snapshot.size_bytes: a volume restored from a snapshot MUST NOT be smaller
// than it (and CreateVolume's OUT_OF_RANGE: "trying to create a volume smaller than the source
// snapshot"). A restore answered OK with a volume an eighth of its snapshot, as volctl records
// it, is refused and the volume deleted again (csi.CreateVolumeRequest.SourceSize). Before, it
// was recorded ready at 1 MiB without a word: a truncated restore, or a size that lies. Found
// by helper review61.
func TestRestoreAnsweredSmallerThanItsSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	h, s := eightMiBSnapshot(t, nil)
	sv := volume("restored")
	sv.CapacityMin = 0 // as large as the snapshot: the plugin's to choose
	sv.SnapshotID = s.ID
	madeSmallerThanItsSource(t, h, sv, "restore from snapshot "+s.ID)
}

// The same for a clone: a clone of an 8 MiB volume answered at 1 MiB cannot hold its data.
func TestCloneAnsweredSmallerThanItsSourceIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createBig()
	sv := volume("clone")
	sv.CapacityMin = 0
	sv.CloneID = "big"
	madeSmallerThanItsSource(t, h, sv, "clone of volume big")
}

// A restore or clone answered at its source's size, or larger, or with no size (0: not known,
// which the spec allows), is recorded.
func TestRestoreAnsweredAtItsSourcesSizeIsRecorded(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{8 * mib, 16 * mib, 0} {
		h := newHarness(t, nil)
		h.createBig()
		sv := volume("clone")
		sv.CapacityMin, sv.CloneID = 0, "big"
		answerCreateVolumeAt(h, n)
		if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
			t.Errorf("clone of an 8 MiB volume answered at %d bytes: %v", n, err)
		}
	}
}

// eightMiBSnapshot is a snapshot harness (its plugin as cfg sets it, when not nil) with volume
// "big" of 8 MiB and snapshot s1 of it, recorded at 8 MiB.
func eightMiBSnapshot(t *testing.T, cfg func(*csitest.MemConfig)) (*harness, SnapshotInfo) {
	t.Helper()
	h, _ := snapshotHarness(t, cfg)
	h.createBig()
	s, err := h.e.CreateSnapshot(h.ctx, "big", "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.SizeBytes != 8*mib {
		t.Fatalf("snapshot recorded at %d bytes, want %d", s.SizeBytes, 8*mib)
	}
	return h, s
}

// createBig creates volume "big", of 8 MiB at least: a source an answer of 1 MiB cannot hold.
func (h *harness) createBig() VolumeInfo {
	h.t.Helper()
	src := volume("big")
	src.CapacityMin = 8 * mib
	return h.create(src)
}
