package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestCloneOfAVolumeThePluginDoesNotHaveIsNotSaidCreated: `volume create` of a spec whose
// clone_id is a storage ID volctl does not record and the plugin does not hold (a typo, or a
// volume deleted with the provider's tools). A plugin that ignores volume_content_source makes
// an empty volume and answers CreateVolume OK, naming no content source (optional in the
// answer). volctl asks the plugin nothing about a clone's source, records the empty volume as
// the clone of that volume and says "created", exit 0: the data the user expected is not
// there. The restore case is guarded (restoreReady asks the plugin, SnapshotUnlisted refuses
// such an answer: TestRestoreFromASnapshotThePluginSaysItHasNotIsNotSaidCreated); the clone,
// the same promise, is not. Correct: a clone whose source the plugin says it does not hold
// (ListVolumes/ControllerGetVolume, complete), answered with a volume naming no content
// source, is refused naming the clone_id, and the volume made for it deleted again.
// Found by helper review83 (clone).
func TestCloneOfAVolumeThePluginDoesNotHaveIsNotSaidCreated(t *testing.T) {
	t.Parallel()
	h := newHarnessServing(t, csitest.WithInterceptor(ignoringContentSource()))
	sv := volume("copy")
	sv.CloneID = "vol-never-made"
	v, err := h.e.CreateVolume(h.ctx, sv)
	// Refused before anything is sent: the plugin, asked, holds no such volume.
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != 0 || !errors.Is(err, ErrInvalid) {
		t.Errorf("clone of %q: %d CreateVolume sent, %v; want it refused as invalid before any is sent", sv.CloneID, n, err)
	}
	if err == nil {
		t.Fatalf("clone of %q, a volume the plugin does not hold and volctl does not record, answered with volume %q naming no content source: "+
			"recorded as volume %q (state %s, clone_id %q), nothing said; want it refused, naming the source the plugin does not have",
			sv.CloneID, v.ExternalID, v.ID, v.State, v.CloneID)
	}
	if !strings.Contains(err.Error(), "vol-never-made") {
		t.Errorf("refused clone: %v; want it to name clone_id %q", err, sv.CloneID)
	}
	if got, gerr := h.e.Volume(h.ctx, "copy"); gerr == nil && got.State == "ready" {
		t.Errorf("volume copy is recorded ready after the refusal: %+v", got)
	}
	if vols := h.mem.Volumes(); len(vols) != 0 {
		t.Errorf("the plugin holds %d volume(s) after the refusal (%+v); want the empty one made for the clone deleted again", len(vols), vols)
	}
}

// TestRestoreOfAnotherPluginsSnapshotNamesItsPlugin: `volume create` of a spec on plugin "mem"
// whose snapshot_id is "nightly", a snapshot volctl records through plugin "other" (another
// socket, another storage; `volctl volume snapshot list` shows it there, ready). restoreReady
// asks mem, which says it has no such snapshot, and volctl sends CreateVolume anyway: the command
// fails with mem's NOT_FOUND and the hint "the snapshot or clone source does not exist; check
// snapshot_id or clone_id". The user checks, and the snapshot is there, by that very ID: the
// refusal names the wrong cause, its advice leads nowhere, and the request went to a plugin
// volctl knew does not hold the snapshot. It is the snapshot counterpart of
// TestCloneOfAnotherPluginsVolumeNamesItsPlugin, which refuses a clone_id that is another
// plugin's volume. Correct: refused before CreateVolume is sent, naming snapshot "nightly" as
// plugin "other"'s and that a restore is made through the snapshot's own plugin
// (plugin_id = "other").
// Found by helper review83 (clone).
func TestRestoreOfAnotherPluginsSnapshotNamesItsPlugin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	sock2, _ := csitest.Serve(t, csitest.WithServer(other))
	h.registerPlugin("other", sock2)
	src := volume("src")
	src.PluginID = "other"
	h.create(src)
	snap, err := h.e.CreateSnapshot(h.ctx, "src", "nightly", nil)
	if err != nil {
		t.Fatalf("snapshot of src through plugin other: %v", err)
	}
	r := volume("restored")
	r.SnapshotID = snap.ID
	v, err := h.e.CreateVolume(h.ctx, r)
	if err == nil {
		t.Fatalf("restore through plugin mem from snapshot %q, plugin other's: created %q (%s)", snap.ID, v.ExternalID, v.State)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n > 0 {
		t.Errorf("CreateVolume sent to plugin mem %d time(s) (err: %v); want none: mem said it has no snapshot %q, and volctl records it as plugin other's", n, err, snap.ID)
	}
	if !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("restore through plugin mem from snapshot %q, which volctl records through plugin \"other\": %v; "+
			"want the refusal to name the snapshot as plugin other's (a restore is made through its snapshot's plugin), not the plugin's NOT_FOUND of a snapshot that \"does not exist\"", snap.ID, err)
	}
}

// TestCloneOfAnUnrecordedVolumeThePluginHoldsIsCreated: the check before a clone of a storage ID
// volctl records no volume by (cloneSourceHeld) refuses only a source the plugin does not hold:
// one it lists is cloned.
func TestCloneOfAnUnrecordedVolumeThePluginHoldsIsCreated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-src", CapacityBytes: mib})
	sv := volume("copy")
	sv.CloneID = "ext-src"
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("clone of ext-src, a volume the plugin holds: %v; want it created", err)
	}
	if n := h.mem.CallCount(csi.RPCCreateVolume); n != 1 {
		t.Errorf("%d CreateVolume sent; want 1", n)
	}
}
