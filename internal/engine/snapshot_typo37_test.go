package engine

import (
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestDeleteSnapshotOfATypoSaysNothingWasDeleted: `volctl volume snapshot delete mem nightyl`
// for the snapshot named "nightly" (the README's tour deletes it by name). "nightyl", which
// volctl records nothing of, goes to the plugin as a snapshot ID nobody has, and the plugin
// answers OK (a snapshot it does not know counts as deleted). Before, volctl recorded a
// snapshot-delete event `snapshot "nightyl" deleted` and said "deleted", exit 0, the snapshot
// meant still there. Now the plugin, which lists snapshots, is asked under the same controller
// lock whether it has the ID: it has not, so the event and the result say nothing was deleted,
// and the result names the snapshot likely meant. The delete itself is sent and recorded as
// before (a delete of what is not there is done).
func TestDeleteSnapshotOfATypoSaysNothingWasDeleted(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
	s := h.snapshot("nightly")
	if err := h.e.DeleteSnapshot(h.ctx, "mem", "nightyl", nil); err != nil {
		t.Fatalf("delete of a snapshot nobody has: %v; want done, nothing to delete", err)
	}
	if said := h.eventsOf("snapshot-delete", "", `"nightyl" deleted`); len(said) != 0 {
		t.Errorf("the event log says %q of a snapshot neither volctl nor the plugin had", said)
	}
	if said := h.eventsOf("snapshot-delete", "", `snapshot "nightyl" not found, nothing deleted`); len(said) != 1 {
		t.Errorf("events saying nightyl was not found: %q; want one", said)
	}
	if !h.recordedSnapshot(s.ID) {
		t.Errorf("snapshot %s (nightly) lost its record", s.ID)
	}
	res, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightyl", nil)
	if err != nil || !res.Absent || res.Unchecked || !slices.Equal(res.Near, []string{"nightly"}) {
		t.Errorf("DeleteSnapshotNoted(nightyl) = %+v, %v; want Absent, near [nightly]", res, err)
	}
	// The snapshot's ID mistyped is offered its ID.
	typo := s.ID[:len(s.ID)-1] + "x"
	if s.ID[len(s.ID)-1] == 'x' {
		typo = s.ID[:len(s.ID)-1] + "y"
	}
	if res, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", typo, nil); err != nil || !res.Absent || !slices.Equal(res.Near, []string{s.ID}) {
		t.Errorf("DeleteSnapshotNoted(%s) = %+v, %v; want Absent, near [%s]", typo, res, err, s.ID)
	}
	listed, err := h.pluginClient().ListSnapshots(h.ctx, csi.ListSnapshotsRequest{SnapshotID: s.ID})
	if err != nil || len(listed.Snapshots) != 1 {
		t.Errorf("the plugin lists snapshot %s %d times (%v); want once", s.ID, len(listed.Snapshots), err)
	}
}

// TestDeleteSnapshotVolctlDoesNotRecordStillDeletesThePlugins: the honest case beside the typo.
// A snapshot made on the plugin by another orchestrator, which volctl records nothing of, is
// deleted by its ID: the plugin lists it, so it is sent, and gone.
func TestDeleteSnapshotVolctlDoesNotRecordStillDeletesThePlugins(t *testing.T) {
	t.Parallel()
	h, v := snapshotHarness(t, nil)
	made, err := h.pluginClient().CreateSnapshot(h.ctx, csi.CreateSnapshotRequest{SourceVolumeID: v.ExternalID, Name: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", made.ID, nil)
	if err != nil || res.Absent || res.Unchecked {
		t.Fatalf("delete of the plugin's snapshot %s: %+v, %v; want deleted", made.ID, res, err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteSnapshot); n != 1 {
		t.Errorf("DeleteSnapshot sent %d times; want once", n)
	}
	listed, err := h.pluginClient().ListSnapshots(h.ctx, csi.ListSnapshotsRequest{SnapshotID: made.ID})
	if err != nil || len(listed.Snapshots) != 0 {
		t.Errorf("the plugin still lists snapshot %s (%v) after volctl said it deleted it", made.ID, err)
	}
}

// TestDeleteSnapshotUnrecordedOnAPluginThatCannotListIsSentAndSaysSo: a plugin without
// LIST_SNAPSHOTS (or GET_SNAPSHOT) cannot be asked, so a snapshot volctl records nothing of is
// not refused (it may be the plugin's own): DeleteSnapshot is sent, and the result says its OK
// proves nothing, naming the recorded snapshot likely meant.
func TestDeleteSnapshotUnrecordedOnAPluginThatCannotListIsSentAndSaysSo(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) {
		c.SnapshotIDPrefix = "snap-"
		c.Controller.ListSnapshots, c.Controller.GetSnapshot = false, false
	})
	h.snapshot("nightly")
	res, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightyl", nil)
	if err != nil || res.Absent || !res.Unchecked || !slices.Equal(res.Near, []string{"nightly"}) {
		t.Errorf("DeleteSnapshotNoted(nightyl) = %+v, %v; want sent, Unchecked, near [nightly]", res, err)
	}
	if n := h.mem.CallCount(csi.RPCDeleteSnapshot); n != 1 {
		t.Errorf("DeleteSnapshot sent %d times; want once", n)
	}
}
