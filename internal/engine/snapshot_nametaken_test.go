package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
)

// A snapshot create cut short (the plugin down) leaves its intent for reconcile, which sends
// CreateSnapshot again. When the plugin answers ALREADY_EXISTS, the name is taken by a snapshot
// of another source volume (CSI: "already exists but is incompatible"): the plugin, whose
// snapshot names are unique, cannot have made this one under it, and no later pass ever will.
// The intent was kept as if the plugin might have made it, and every reconcile, the agent's
// every minute, failed on it again until someone ran `snapshot delete` by its name (found by
// the chaos run, whose workers name their snapshots s0-s3 on any of three volumes). It is
// forgotten, the pass saying why once.
func TestSnapshotIntentWhoseNameAnotherSourceTookIsForgotten(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.create(volume("other"))
	if _, err := h.e.CreateSnapshot(h.ctx, "other", "s1", nil); err != nil {
		t.Fatal(err)
	}
	h.faults.FailAlways(csi.RPCCreateSnapshot, codes.Unavailable)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil); err == nil || !strings.Contains(err.Error(), "it stays recorded as being created") {
		t.Fatalf("snapshot create with the plugin down: %v; want its intent kept", err)
	}
	h.faults.Clear(csi.RPCCreateSnapshot)
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "AlreadyExists") {
		t.Fatalf("reconcile of the intent whose name is taken: %+v, %v; want one problem saying so", rep.Problems, err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("the next reconcile: %+v, %v; want nothing left of the intent", rep.Problems, err)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Snapshots) != 1 || list.Snapshots[0].SourceVolumeID != "other" || list.Snapshots[0].Pending {
		t.Fatalf("snapshots: %+v; want other's s1 alone", list.Snapshots)
	}
}
