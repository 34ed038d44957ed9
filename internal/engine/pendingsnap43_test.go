package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// pendingSnapshotMade leaves snapshot name of volume v being created: every CreateSnapshot the
// create sends fails UNAVAILABLE, the first having made the snapshot when made is true (its
// answer lost, as a timeout's is), so that the create stays recorded for reconcile.
func pendingSnapshotMade(t *testing.T, h *harness, name string, made bool) {
	t.Helper()
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Lost: made, Times: 1})
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Code: codes.Unavailable, Times: 10})
	if _, err := h.e.CreateSnapshot(h.ctx, "v", name, nil); err == nil || !strings.Contains(err.Error(), "stays recorded as being created") {
		t.Fatalf("snapshot create with every CreateSnapshot unanswered: %v; want it left for reconcile", err)
	}
	h.faults.Clear()
	if held := len(h.mem.Snapshots()) > 0; held != made {
		t.Fatalf("the plugin holds a snapshot: %v; want %v", held, made)
	}
}

// A delete of a snapshot still being created finishes its create first, CreateSnapshot under
// its name being the only way to learn its ID. Refused for good (UNIMPLEMENTED, INTERNAL),
// the create was forgotten and the delete said "deleted", the plugin taken at its word that
// it holds nothing under the name (CSI's CreateSnapshot answers OK for a snapshot it made).
// But an earlier CreateSnapshot under the name went unanswered, and may have made the
// snapshot: a plugin that refuses the name now (one that checks something else first, or
// keeps to CSI less than it says) left it on the storage, tracked by nothing, under a
// "deleted". Found by TestFaultSequencesTimeouts (seed 200290: a CreateSnapshot that hung
// having made the snapshot, then a delete whose CreateSnapshot was UNIMPLEMENTED). Now the
// plugin is asked for the volume's snapshots: one volctl records nothing of keeps the create
// recorded, and the delete fails, naming it and what to do. Where the plugin lists none, or
// cannot list, the create is forgotten as before, an event saying whether it could be checked.
func TestDeleteOfAPendingSnapshotRefusedAgainKeepsItWhereThePluginListsAnUnrecordedSnapshot(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.Unimplemented, codes.Internal} {
		t.Run(code.String(), func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.SnapshotIDPrefix = "snap-" })
			h.create(volume("v"))
			pendingSnapshotMade(t, h, "nightly", true)
			made := h.mem.Snapshots()[0].ID
			h.faults.FailOnce(csi.RPCCreateSnapshot, code)
			_, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", made)) || !strings.Contains(err.Error(), `"nightly"`) ||
				!strings.Contains(err.Error(), "volctl volume snapshot delete mem "+made) || !strings.Contains(err.Error(), "volctl volume snapshot deregister mem nightly") {
				t.Fatalf("delete of the pending snapshot, its CreateSnapshot refused %s, the plugin holding snapshot %s: %v\n"+
					"want it refused, naming the snapshot listed and the commands", code, made, err)
			}
			if _, creates := snapshotsKnown(h, "v"); !slices.Equal(creates, []string{"nightly"}) {
				t.Errorf("creates recorded after the refused delete: %v; want nightly kept", creates)
			}
			// Once the plugin answers, reconcile finishes the create, and the delete deletes it.
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Fatalf("reconcile: %v %+v", err, rep.Problems)
			}
			if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil); err != nil {
				t.Fatal(err)
			}
			if msg := snapshotHeld(h, made, false); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// The honest cases of the same delete behave as before: the plugin lists no snapshot of the
// volume that volctl does not record (the unanswered CreateSnapshot made none), or cannot be
// asked (no LIST_SNAPSHOTS, or the listing fails): the create is forgotten, the delete
// succeeds, and the event says whether the plugin's snapshots could be checked.
func TestDeleteOfAPendingSnapshotRefusedAgainForgetsItWhereNoListingContradicts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		made  bool
		mem   func(*csitest.MemConfig)
		fault func(*harness)
		event string
	}{
		{name: "none made", event: "lists no snapshot of the volume that volctl records nothing of"},
		{name: "recorded snapshot listed", event: "lists no snapshot of the volume that volctl records nothing of", fault: func(h *harness) {
			if _, err := h.e.CreateSnapshot(h.ctx, "v", "weekly", nil); err != nil {
				h.t.Fatal(err)
			}
		}},
		{name: "no listing", made: true, mem: func(c *csitest.MemConfig) { c.Controller.ListSnapshots = false }, event: "cannot list snapshots"},
		{name: "listing fails", made: true, fault: func(h *harness) { h.faults.FailOnce(csi.RPCListSnapshots, codes.Internal) }, event: "could not be listed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.mem)
			h.create(volume("v"))
			pendingSnapshotMade(t, h, "nightly", tt.made)
			if tt.fault != nil {
				tt.fault(h)
			}
			h.faults.FailOnce(csi.RPCCreateSnapshot, codes.Unimplemented)
			if _, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", "nightly", nil); err != nil {
				t.Fatalf("delete of the pending snapshot, nothing contradicting the plugin: %v", err)
			}
			if _, creates := snapshotsKnown(h, "v"); len(creates) != 0 {
				t.Errorf("creates recorded after the delete: %v; want none", creates)
			}
			evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "snapshot-delete"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(evs, func(ev EventInfo) bool {
				return strings.Contains(ev.Message, `snapshot "nightly" forgotten`) && strings.Contains(ev.Message, tt.event)
			}) {
				t.Errorf("events %+v; want one saying nightly was forgotten and %q", evs, tt.event)
			}
		})
	}
}
