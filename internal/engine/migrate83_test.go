package engine

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// migratedNodeOnlyDebt makes volume v, published for web-0 through a plugin that expands on
// the node alone (cfg), owe a node-only expansion to 4MiB as a schema-33 volctl recorded it:
// migration 0034 leaves its size before unknown (node_only_from NULL, made here by clearing the
// columns as the migration leaves them). Its NodeExpandVolume is then refused for good.
func migratedNodeOnlyDebt(t *testing.T, cfg func(*csitest.MemConfig)) *harness {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = false
		if cfg != nil {
			cfg(c)
		}
	})
	h.create(volume("v")) // 1 MiB
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	owesNodeOnlyDebt(t, h, "v")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE volumes SET node_only_from_capacity = NULL, node_only_from_min = NULL WHERE id = 'v'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := h.volumeRow("v"); got.NodeExpandMin != 4*mib || got.NodeExpandControllerDone || got.NodeOnlyFrom != nil {
		t.Fatalf("premise: no migrated node-only debt to 4MiB: owed %s, controller done %v, from %v",
			spec.FormatSize(got.NodeExpandMin), got.NodeExpandControllerDone, got.NodeOnlyFrom)
	}
	h.faults.Inject(csi.RPCNodeExpandVolume, csitest.Fault{Code: codes.OutOfRange, Message: "size not supported"})
	return h
}

// problemOf is reconcile's problem for volume id, "" for none.
func problemOf(rep ReconcileReport, id string) string {
	for _, p := range rep.Problems {
		if p.VolumeID == id {
			return p.Message
		}
	}
	return ""
}

// TestMigratedNodeOnlyDebtRefusedForGoodDoesNotAdviseTheSameRefusal: a node-only debt an older
// volctl recorded (its size before unknown) refused for good by the plugin was left owed, every
// failure advising "run `volctl volume expand v --size 4MiB` again or `volctl reconcile`", each
// refused alike for good: a loop, a smaller expand refused as a shrink. Where the plugin lists
// the volume's size, the record is put back at it, nothing owed; where it cannot, no size is
// guessed, and the way out that ends the debt is said (the volume recorded anew).
// Found by helper review83 (migrate).
func TestMigratedNodeOnlyDebtRefusedForGoodDoesNotAdviseTheSameRefusal(t *testing.T) {
	t.Parallel()
	h := migratedNodeOnlyDebt(t, nil) // lists its volumes, their sizes
	rep, _ := h.e.Reconcile(h.ctx)
	if msg := problemOf(rep, "v"); !strings.Contains(msg, "recorded back at 1MiB") {
		t.Errorf("reconcile of the refused migrated debt: problem %q; want it put back at the size the plugin lists", msg)
	}
	if row := h.volumeRow("v"); row.CapacityBytes != mib || row.NodeExpandMin != 0 {
		t.Errorf("after the refusal: v recorded at %s, owed %s; want 1MiB, as listed, nothing owed",
			spec.FormatSize(row.CapacityBytes), spec.FormatSize(row.NodeExpandMin))
	}
	if rep, _ := h.e.Reconcile(h.ctx); problemOf(rep, "v") != "" {
		t.Errorf("reconcile again: %q; want nothing left to report", problemOf(rep, "v"))
	}
	h.faults.Clear(csi.RPCNodeExpandVolume) // a size the plugin takes
	if _, err := h.e.ExpandVolume(h.ctx, "v", 2*mib, 0); err != nil {
		t.Errorf("expand to 2MiB after the put-back: %v; want it sent", err)
	}
}

// TestMigratedNodeOnlyDebtThePluginCannotSizeNamesTheWayOut: the same debt through a plugin that
// neither lists nor gets volumes: no size to put back; the refusal says so and names the way out
// (the volume recorded anew), not the same expand again.
// Found by helper review83 (migrate).
func TestMigratedNodeOnlyDebtThePluginCannotSizeNamesTheWayOut(t *testing.T) {
	t.Parallel()
	h := migratedNodeOnlyDebt(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false })
	rep, _ := h.e.Reconcile(h.ctx)
	msg := problemOf(rep, "v")
	if strings.Contains(msg, "run `volctl volume expand v --size 4MiB` again") || !strings.Contains(msg, "`volctl volume deregister v --force --yes`") ||
		!strings.Contains(msg, "without the size before it") {
		t.Errorf("reconcile of the refused migrated debt through a plugin that cannot size it: %q; want no expand again advised, the record anew named", msg)
	}
	if row := h.volumeRow("v"); row.CapacityBytes != 4*mib || row.NodeExpandMin != 4*mib {
		t.Errorf("v recorded at %s, owed %s; want it left as it was (no size guessed)", spec.FormatSize(row.CapacityBytes), spec.FormatSize(row.NodeExpandMin))
	}
}
