package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestCreateAgainGrowingACloneSourceIsRefusedWhileTheCloneIsInFlight: growsNoCloneSource
// refuses `volume expand` and a registration's expansion of volume "src" while a clone of it is
// in flight, but `volume create` of src again with a larger capacity_min grows it through
// createVolume's expandLockedSaying with no such check. The clone's CreateVolume, sent again by
// reconcile, is then answered with the clone the plugin made at src's old size, which
// finishCreate, reading src's size now, refuses as too small, deletes and forgets: the defect
// 592efb80 fixed, still reached by the create. Correct: the create's growth is refused as the
// expand's is (a conflict naming the clone and the reconcile), nothing sent.
// Found by helper review79 (ownb), in this round's own change.
func TestCreateAgainGrowingACloneSourceIsRefusedWhileTheCloneIsInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("src"))
	made := cloneCutShort(t, h)
	grown := volume("src")
	grown.CapacityMin = 4 * mib
	_, err := h.e.CreateVolume(h.ctx, grown)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume "copy" is being created as a clone of volume "src"`) {
		t.Errorf("create again of src with capacity_min 4MiB while its clone is in flight: %v; want a conflict naming the clone, as expand's", err)
	}
	if v := h.volumeInfo("src"); v.CapacityBytes != 1*mib {
		t.Errorf("src after the create again: %d bytes; want 1MiB, nothing sent", v.CapacityBytes)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	if _, ok := h.mem.Volume(made); !ok {
		t.Errorf("reconcile deleted clone %q (problems: %+v)", made, rep.Problems)
	}
	if v, err := h.e.Volume(h.ctx, "copy"); err != nil || v.ExternalID != made {
		t.Errorf("after reconcile, volume copy: %+v, %v; want it recorded as clone %q", v, err, made)
	}
}

// TestAmbiguousCloneIDAdviceWorksForASocketMatesVolume: clone_id "vol-1" through plugin "mem"
// is volume "vol-1"'s volctl ID (plugin mem) and volume "a"'s storage ID, "a" being recorded
// through "mem2", a plugin ID on mem's socket (socketMates: one storage; sameStorage finds it).
// cloneSource refuses it as ambiguous and advises `clone_id = "a"` to clone volume "a". Followed,
// that advice does not clone "a": cloneSource resolves a volctl ID only for the clone's own
// plugin, so "a" (plugin mem2) is sent to the plugin as a storage ID, "a", which names nothing
// (or another volume's storage). Correct: the advice, followed, clones volume "a"'s storage (say
// its storage ID for a socket mate's volume, or resolve a mate's volctl ID).
// Found by helper review79 (ownb), in this round's own change.
func TestAmbiguousCloneIDAdviceWorksForASocketMatesVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.registerPlugin("mem2", h.socket)
	sa := volume("a")
	sa.PluginID = "mem2"
	a := h.create(sa)
	named := h.create(volume(a.ExternalID)) // volume "vol-1" through mem, storage vol-2
	if named.ExternalID == a.ExternalID {
		t.Fatalf("both volumes on one storage %q", a.ExternalID)
	}
	sv := volume("copy")
	sv.CloneID = a.ExternalID
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("clone_id %q naming volume %q and volume %q's storage: %v; want the ambiguity refused", sv.CloneID, named.ID, a.ID, err)
	}
	advice := `write clone_id = "a" to clone volume "a"`
	if !strings.Contains(err.Error(), advice) {
		t.Fatalf("refusal %v; want it to advise %s (the advice under test)", err, advice)
	}
	sv.CloneID = "a"
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err != nil || v.CloneID != a.ExternalID {
		t.Errorf("clone_id = \"a\", as the refusal advised to clone volume \"a\" (storage %q): %+v, %v; want a clone of storage %q",
			a.ExternalID, v.CloneID, err, a.ExternalID)
	}
}

// TestReconcileDoesNotGrowACloneSourceWhileTheCloneIsInFlight: `volume expand src --size 4MiB`
// is killed once its intent is written (pending, nothing sent: the storage still 1MiB). A clone
// of src is then made, its every CreateVolume answer lost: the plugin made the clone at 1MiB, a
// copy of src as it is. cloneSource takes a source with an expansion pending, and
// reconcilePendingExpansions replays that expansion with no growsNoCloneSource check: a pass in
// which the clone's CreateVolume is refused (UNAVAILABLE, a plugin's backend out of reach for a
// moment) still grows src to 4MiB, and the next pass's replay of the clone is answered with the
// 1MiB clone, refused as "smaller than the 4MiB its source has", deleted and forgotten: the
// data loss 592efb80 meant to stop. Correct: a pending expansion of a source whose clone is in
// flight waits for the clone (or the clone of a source with a pending expansion is refused), so
// the clone the plugin made is recorded.
// Found by helper review79 (ownb), in this round's own change.
func TestReconcileDoesNotGrowACloneSourceWhileTheCloneIsInFlight(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("src"))
	expansionPendingAfterKill(t, h, "src")
	if v := h.volumeInfo("src"); v.ExpansionPending != 4*mib || v.CapacityBytes != 1*mib {
		t.Fatalf("src after the killed expand: %d bytes, pending %d; want 1MiB, 4MiB pending", v.CapacityBytes, v.ExpansionPending)
	}
	sv := volume("copy")
	sv.CloneID = "src"
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `has an expansion to 4MiB pending`) || !strings.Contains(err.Error(), "`volctl reconcile`") {
		t.Fatalf("clone of a source whose expansion is pending: %v; want it refused, naming the reconcile that finishes the expansion", err)
	}
	for id := range h.mem.VolumeNames() {
		if vol, ok := h.mem.Volume(id); ok && vol.CloneID != "" {
			t.Errorf("the refused clone made volume %q", id)
		}
	}
	// Followed: reconcile finishes the expansion, then the clone is made of src at 4MiB.
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile, as advised: %v (%+v)", err, rep.Problems)
	}
	if v := h.volumeInfo("src"); v.ExpansionPending != 0 || v.CapacityBytes != 4*mib {
		t.Fatalf("src after reconcile: %d bytes, pending %d; want 4MiB, nothing pending", v.CapacityBytes, v.ExpansionPending)
	}
	sv.CapacityMin = 4 * mib // a clone holds its source, 4MiB now
	if v, err := h.e.CreateVolume(h.ctx, sv); err != nil || v.CloneID == "" {
		t.Errorf("the clone created again, as advised: %+v, %v", v, err)
	}
}

// TestCloneIDNamingOneVolumeAndAnothersStorageInAnotherCaseIsNotSilentlyResolved: on a plugin
// that reads volume IDs regardless of case (FoldIDs), clone_id "VOL-1" is volume "VOL-1"'s volctl
// ID (storage vol-2) and, to the plugin, volume "a"'s storage ID "vol-1" (what Nomad's clone_id
// means). cloneSource's ambiguity check (592efb80) looks for the word as another volume's storage
// ID byte for byte (sameStorage), so it misses this spelling, which volctl takes for that storage
// everywhere else (spec.SameStorageID: refuseCloneInFlight, cloneSource's deleting check), and
// silently clones vol-2. Correct: refused as the exact spelling is, naming both volumes.
// Found by helper review79 (ownb), in this round's own change.
func TestCloneIDNamingOneVolumeAndAnothersStorageInAnotherCaseIsNotSilentlyResolved(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.FoldIDs = true })
	a := h.create(volume("a"))
	named := h.create(volume(strings.ToUpper(a.ExternalID)))
	if named.ExternalID == a.ExternalID || named.ID == a.ExternalID {
		t.Fatalf("setup: volume %q (storage %q) beside a (storage %q)", named.ID, named.ExternalID, a.ExternalID)
	}
	sv := volume("copy")
	sv.CloneID = named.ID
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err == nil {
		t.Fatalf("clone_id %q (volume %q's volctl ID, and volume %q's storage ID %q to this plugin): created, cloned from storage %q, nothing said; want a conflict naming both",
			sv.CloneID, named.ID, a.ID, a.ExternalID, v.CloneID)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `write clone_id = "a" to clone volume "a"`) {
		t.Fatalf("clone_id naming two volumes: %v; want a conflict naming both, and how to say each", err)
	}
	// Followed: clone_id = "a" clones a's storage.
	sv.CloneID = "a"
	if v, err := h.e.CreateVolume(h.ctx, sv); err != nil || v.CloneID != a.ExternalID {
		t.Errorf("clone_id = \"a\", as advised: %+v, %v; want a clone of storage %q", v, err, a.ExternalID)
	}
}

// TestCreateKeptForAFoldedTopologyKeyIsClaimableOnTheNodeInIt: the plugin's node states
// {zone=a}; the user's spec requires {zone=a}; the plugin answers CreateVolume accessible from
// {Zone=a}, the same topology (CSI: topology keys are case-insensitive). Since 0d766a17 the
// create's requisite check folds keys (csi topologiesOverlap) and keeps the volume, exit 0, but
// admission (topologyMatch, spec.SegmentsWithin) compares keys byte for byte: every claim on this
// node, which is in zone a, is refused as outside {Zone=a}, its advice to restart the plugin
// "with a topology the volume is accessible from" naming the one it has. Before, the create
// failed and deleted the volume; now a created volume is never claimable here. Correct: the
// create check and admission agree; a volume kept as within the requisite is claimable on a
// node in it (keys folded in admission too).
// Found by helper review79 (ownb), in this round's own change.
func TestCreateKeptForAFoldedTopologyKeyIsClaimableOnTheNodeInIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Topology = &spec.Topology{Segments: map[string]string{"zone": "a"}}
		c.CreateTopology = &spec.Topology{Segments: map[string]string{"Zone": "a"}}
	})
	sv := volume("v")
	sv.TopologyRequest = &spec.TopologyRequest{Required: []spec.Topology{{Segments: map[string]string{"zone": "a"}}}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("create requiring {zone=a} answered {Zone=a}: %v (kept since 0d766a17: the precondition)", err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"}); err != nil {
		t.Errorf("claim of volume v, created in {zone=a} (answered {Zone=a}) on a node in {zone=a}: %v; want it admitted, as the create took the answer as within the requisite", err)
	}
}
