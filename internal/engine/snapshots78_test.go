package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// answersSnapshotsNotReady rewrites every CreateSnapshot answer to say ready_to_use false: a
// plugin that cuts the snapshot and goes on processing it (an upload) after it answered.
func answersSnapshotsNotReady(h *harness) {
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Answer: func(m proto.Message) {
		m.(*csipb.CreateSnapshotResponse).GetSnapshot().ReadyToUse = false
	}})
}

// A plugin that can neither list snapshots nor get one (no LIST_SNAPSHOTS, no GET_SNAPSHOT)
// answers CreateSnapshot with ready_to_use false, and volctl records the snapshot so ("not ready
// to use yet", `snapshot list` READY false). A restore from it (`volume create` with its
// snapshot_id) is then sent at once and said created: restoreReady asks only a plugin that can
// be asked, and never reads volctl's own record, which is the last word the plugin gave of the
// snapshot and says it is not ready "to create new volumes" (the CSI spec). The volume handed
// over may miss what the processing had not done. The restore should be refused, a conflict
// sending no CreateVolume and recording nothing, naming the snapshot as not ready by the
// plugin's last answer and the way to ask again (the same `snapshot create` of its NAME, which
// CreateSnapshot's idempotency answers with the snapshot's readiness now). So too where the
// plugin lists snapshots but the check's listing fails: a warning, and CreateVolume sent, the
// record's "not ready" unread.
// Found by helper review78 (snapshots).
func TestRestoreFromASnapshotRecordedNotReadyThroughAPluginThatCannotBeAskedIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*csitest.MemConfig)
		after  func(*harness) // once the snapshot is recorded, before the restore
	}{
		{name: "no LIST_SNAPSHOTS nor GET_SNAPSHOT", mutate: func(c *csitest.MemConfig) {
			c.Controller.ListSnapshots = false
			c.Controller.GetSnapshot = false
		}},
		// The same where the plugin lists snapshots but its listing fails for the check: the
		// check's warning, then CreateVolume, as if volctl knew nothing of the snapshot.
		{name: "listing fails", after: func(h *harness) { h.faults.FailAlways(csi.RPCListSnapshots, codes.Unavailable) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := snapshotHarness(t, tc.mutate)
			answersSnapshotsNotReady(h)
			snap := h.snapshot("uploading")
			if snap.ReadyToUse {
				t.Fatalf("snapshot recorded %+v: want it recorded not ready, as the plugin answered", snap)
			}
			if tc.after != nil {
				tc.after(h)
			}
			h.mem.ResetCalls()
			sv := volume("restored")
			sv.SnapshotID = snap.ID
			_, err := h.e.CreateVolume(h.ctx, sv)
			if slices.Contains(h.rpcs(), csi.RPCCreateVolume) {
				t.Errorf("RPCs = %v: CreateVolume was sent for a restore from a snapshot volctl records as not ready to use", h.rpcs())
			}
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"uploading"`) || !strings.Contains(err.Error(), "not ready") {
				t.Fatalf("restore from snapshot %q, recorded ready_to_use false, the plugin not asked again = %v; "+
					"want a conflict naming it as not ready", snap.ID, err)
			}
			if _, err := h.e.Volume(h.ctx, "restored"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume after the refused restore: %v, want not recorded", err)
			}
			// The advice followed: the plugin done processing (it answers ready now), the same
			// snapshot create asks it again and records that; the restore then goes.
			if want := "volctl volume snapshot create db uploading"; !strings.Contains(err.Error(), want) {
				t.Fatalf("the refusal does not advise %q: %v", want, err)
			}
			h.faults.Clear()
			if again := h.snapshot("uploading"); !again.ReadyToUse || again.ID != snap.ID {
				t.Fatalf("snapshot create again of %q: %+v; want the same snapshot, recorded ready now", "uploading", again)
			}
			if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
				t.Fatalf("restore once the snapshot is recorded ready: %v", err)
			}
		})
	}
}
