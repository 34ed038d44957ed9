package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
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
	h, other, ext := claimedInAnotherStateDir(t)
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

// An expand whose ControllerExpandVolume to 6MiB failed UNAVAILABLE at every attempt stays pending, recorded with the
// limit it was sent with (the volume's capacity_max then, 16MiB). A registration again lowers
// capacity_max to 4MiB, below the pending size, or to 8MiB, below the pending limit. Before,
// the registration was taken and left the pending expansion as it was: reconcile sent it
// again with the old 16MiB limit and recorded that limit as the volume's capacity_max, the
// registration's undone, and through the 4MiB one grew the volume past the capacity_max the
// user had set since. Now the registration below the pending size is refused, naming it and
// reconcile, and one at or above it is the pending expansion's limit; reconcile keeps it.
func TestRegisterLoweringCapacityMaxUnderAPendingExpansion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		lowered int64
		refused bool
	}{
		{"below the pending size", 4 * mib, true},
		{"below the pending limit", 8 * mib, false},
		{"above the pending limit", 32 * mib, false}, // honest: raised, and kept
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) { c.Node.ExpandVolume = false })
			sv := volume("v")
			sv.CapacityMax = 16 * mib
			ext := h.create(sv).ExternalID
			h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Code: codes.Unavailable, Times: fastRetry.Attempts})
			if _, err := h.e.ExpandVolume(h.ctx, "v", 6*mib, 0); err == nil {
				t.Fatal("expand whose ControllerExpandVolume failed UNAVAILABLE at every attempt succeeded")
			}
			if p := h.volumeInfo("v").ExpansionPending; p != 6*mib {
				t.Fatalf("expansion pending %d, want 6MiB", p)
			}
			re := registered("v", ext)
			re.CapacityMin, re.CapacityMax = sv.CapacityMin, tc.lowered
			_, err := h.e.RegisterVolume(h.ctx, re)
			if tc.refused {
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "6MiB") || !strings.Contains(err.Error(), "volctl reconcile") {
					t.Errorf("registration with capacity_max 4MiB under an expansion to 6MiB pending: %v; want a conflict naming the 6MiB and reconcile", err)
				}
			} else if err != nil {
				t.Fatalf("registration with capacity_max %d under an expansion to 6MiB pending: %v", tc.lowered, err)
			}
			if _, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatal(err)
			}
			v := h.volumeInfo("v")
			want := tc.lowered
			if tc.refused {
				want = 16 * mib // the registration was not taken
			}
			if v.RequestedMax != want {
				t.Errorf("capacity_max %d after reconcile finished the expansion; want %d", v.RequestedMax, want)
			}
			if mv, _ := h.mem.Volume(ext); mv.CapacityBytes > want || v.CapacityBytes != 6*mib {
				t.Errorf("the plugin holds the volume at %d, volctl records %d; want 6MiB, within capacity_max %d", mv.CapacityBytes, v.CapacityBytes, want)
			}
			reqs := csitest.Requests[csi.ControllerExpandVolumeRequest](h.mem)
			if last := reqs[len(reqs)-1]; last.CapacityMax > want {
				t.Errorf("ControllerExpandVolume sent again with limit_bytes %d, above the capacity_max %d", last.CapacityMax, want)
			}
		})
	}
}

// State dir A claims volume v (published to node-1); state dir B, which registered the same
// storage as w, deletes it. B's question of which nodes hold the volume fails (ListVolumes
// INTERNAL), which is not held against the delete, so DeleteVolume is sent; it fails
// UNAVAILABLE (a plugin that did nothing), and the retry asks again, learning node-1. The
// refusal said "DeleteVolume not sent", though one was: now it says the earlier attempt sent
// it once, and with what answer. The volume is kept, ready, the plugin still holding it.
func TestDeleteRetriedAfterAFailedQuestionSaysItSentOne(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	other := h.registeredElsewhere("w", ext)
	h.mem.ResetCalls()
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Times: 1, Code: codes.Internal})
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Times: 1, Code: codes.Unavailable})

	err := other.DeleteVolume(h.ctx, "w")
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("delete of w, published to node-1 by state dir A: %v; want a conflict", err)
	}
	if n := h.faults.Calls(csi.RPCDeleteVolume); n != 1 {
		t.Errorf("DeleteVolume sent %d time(s); want the one before the question could be asked", n)
	}
	if strings.Contains(err.Error(), "DeleteVolume not sent (") || !strings.Contains(err.Error(), "sent it once") {
		t.Errorf("err = %v\nwant it to say the earlier attempt sent DeleteVolume once, not that none was sent", err)
	}
	if _, ok := h.mem.Volume(ext); !ok {
		t.Fatalf("the plugin deleted volume %q, published to node-1", ext)
	}
	if info, verr := other.Volume(h.ctx, "w"); verr != nil || info.State != string(store.VolumeReady) {
		t.Errorf("w after the refused delete: %+v, %v; want it kept, ready", info.State, verr)
	}
}

// claimedInAnotherStateDir is a harness whose state dir, A, holds volume v claimed by alloc a
// (its plugin publishes it to node-1, and refuses to delete it in use), an engine of another
// state dir, B, on the same plugin, and v's external ID: what a plugin mapping two names onto
// one volume answers B's creates with, once told to (AnswerCreateWith).
func claimedInAnotherStateDir(t *testing.T) (*harness, *Engine, string) {
	t.Helper()
	h := newHarness(t, deleteInUse)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	return h, h.otherStateDir(), ext
}
