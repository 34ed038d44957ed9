package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// What volctl owes that no claim drives (Owed), each left the way a user meets it: a create,
// delete, expansion and snapshot create and delete whose RPC went unanswered, a staging a forced
// detach could not undo, and an attachment owed through a plugin that lost
// PUBLISH_UNPUBLISH_VOLUME. Before, `volctl status` counted only claims: "0 not at rest" while
// reconcile had each of these to do, the last one a problem it reports until the plugin has the
// capability again. Once reconcile has done them, nothing is owed.
func TestOwedListsTheWorkNoClaimDrives(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("exp"))
	h.create(volume("gone"))
	h.create(volume("snapsrc"))
	h.create(volume("staged"))
	h.create(volume("attached"))

	h.interrupted(csi.RPCCreateVolume, "create", func() error { _, err := h.e.CreateVolume(h.ctx, volume("new")); return err })
	h.interrupted(csi.RPCDeleteVolume, "delete", func() error { return h.e.DeleteVolume(h.ctx, "gone") })
	h.interrupted(csi.RPCControllerExpandVolume, "expand", func() error {
		_, err := h.e.ExpandVolume(h.ctx, "exp", 4<<20, 0)
		return err
	})
	h.interrupted(csi.RPCCreateSnapshot, "snapshot create", func() error {
		_, err := h.e.CreateSnapshot(h.ctx, "snapsrc", "snap1", nil)
		return err
	})
	snap, err := h.e.CreateSnapshot(h.ctx, "snapsrc", "snap2", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.interrupted(csi.RPCDeleteSnapshot, "snapshot delete", func() error {
		_, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", snap.ID, nil)
		return err
	})
	// A NodeStageVolume whose answer was lost with its claim (a release cut short in a way the
	// claim state machine did not foresee, or an older volctl's): a staging row no claim uses,
	// which reconcile unstages (cleanStagings).
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "staged", PluginID: "mem",
			StagingPath: filepath.Join(h.e.cfg.StateDir, "staging", "mem", "staged")})
	}); err != nil {
		t.Fatal(err)
	}
	h.claim(ClaimRequest{VolumeID: "attached", Alloc: "a2"})
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.release("attached", "a2")

	owed, err := h.e.Owed(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range owed {
		got = append(got, strings.Join([]string{w.Kind, w.VolumeID, w.Snapshot}, " ")+": "+w.What)
		if w.PluginID != "mem" {
			t.Errorf("%s %s%s: plugin %q, want mem", w.Kind, w.VolumeID, w.Snapshot, w.PluginID)
		}
		if w.Since.IsZero() {
			t.Errorf("%s %s%s: no time", w.Kind, w.VolumeID, w.Snapshot)
		}
	}
	want := []string{
		`unpublish attached : attached to node "node-1", and no claim holds the attachment (ControllerUnpublishVolume owed)`,
		`expand exp : a ControllerExpandVolume to 4MiB was sent and its answer is not recorded`,
		`delete gone : its delete is under way or was cut short`,
		`create new : its create is under way or was cut short`,
		`unstage staged : a NodeStageVolume or NodeUnstageVolume at ` + filepath.Join(h.e.cfg.StateDir, "staging", "mem", "staged") + ` is not recorded done, and no claim uses it`,
		`snapshot-create snapsrc snap1: snapshot "snap1" of volume "snapsrc": its create is under way or was cut short`,
		`snapshot-delete  ` + snap.ID + `: snapshot "` + snap.ID + `": its delete is under way or was cut short`,
	}
	if len(got) != len(want) {
		t.Fatalf("owed:\n%s\nwant %d of them:\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("owed[%d] = %s\nwant it to start %s", i, got[i], want[i])
		}
	}

	// Reconcile does them all, but the attachment, until the plugin can detach again.
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = true })
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v: %+v", err, rep.Problems)
	}
	if owed, err := h.e.Owed(h.ctx); err != nil || len(owed) != 0 {
		t.Fatalf("owed after reconcile: %+v, %v; want nothing", owed, err)
	}
}

// A staging a claim still uses, and an attachment a claim still holds, are the claim's to
// undo: not owed.
func TestOwedLeavesOutWhatAClaimHolds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a1"})
	h.interrupted(csi.RPCNodeUnstageVolume, "release", func() error { _, err := h.e.Release(h.ctx, "v", "a1"); return err })
	if owed, err := h.e.Owed(h.ctx); err != nil || len(owed) != 0 {
		t.Fatalf("owed with the claim left for reconcile: %+v, %v; want nothing (the claim drives it)", owed, err)
	}
}

// An attachment a forced detach could not undo is owed; once the volume is handed over to
// Nomad it waits for the volume to be taken back (keptForNomad), which reconcile leaves alone,
// and so does Owed. So is a pending expansion of a volume handed over.
func TestOwedLeavesOutWhatWaitsForNomad(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	owed, err := h.e.Owed(h.ctx)
	if err != nil || len(owed) != 1 || owed[0].Kind != OwedUnpublish || owed[0].VolumeID != "v" {
		t.Fatalf("owed after a forced detach whose ControllerUnpublishVolume failed: %+v, %v; want the attachment", owed, err)
	}
	h.create(volume("w"))
	h.interrupted(csi.RPCControllerExpandVolume, "expand", func() error {
		_, err := h.e.ExpandVolume(h.ctx, "w", 4<<20, 0)
		return err
	})
	for _, id := range []string{"v", "w"} {
		if _, err := h.e.HandOver(h.ctx, id, HandoverTarget{Address: "http://127.0.0.1:4646"}, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	if owed, err := h.e.Owed(h.ctx); err != nil || len(owed) != 0 {
		t.Fatalf("owed once handed over: %+v, %v; want nothing (it waits for the take-back)", owed, err)
	}
}
