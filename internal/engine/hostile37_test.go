package engine

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// A restore answered with the volume its snapshot was taken of: a plugin that "restores" by
// rolling its source back in place, or hands the source over, answers CreateVolume with the
// source's ID. The source is not recorded here any more (deregistered, which leaves the
// storage), so sameStorage does not see it. Before, the answer was recorded as the restored
// volume: its writes went to the source, and its `volume delete` deleted the source's data; an
// answer too small was deleted at once, the source with it. The source is known from volctl's
// record of the snapshot and from the plugin's own listing of it (a snapshot volctl did not
// make), and an answer naming it, or naming it spelled otherwise to a plugin that reads IDs
// so, is refused as a clone answered with its source is: neither recorded nor deleted.
func TestRestoreAnsweredWithItsSnapshotsSourceIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		recorded bool // the snapshot is volctl's (else the plugin's own, found by its listing)
		tooSmall bool // the answer is below capacity_min: before, deleted at once
		near     bool // answered with the source's ID in another case, to a plugin that folds IDs
		listing  bool // the plugin can list snapshots (LIST_SNAPSHOTS)
	}{
		{name: "recorded", recorded: true, listing: true},
		{name: "recorded-too-small", recorded: true, tooSmall: true, listing: true},
		{name: "recorded-near", recorded: true, near: true, listing: true},
		{name: "recorded-no-listing", recorded: true},
		{name: "plugins-own", listing: true},
		{name: "plugins-own-too-small", tooSmall: true, listing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, db := snapshotHarness(t, func(c *csitest.MemConfig) {
				c.FoldIDs = tc.near
				c.Controller.ListSnapshots = tc.listing
			})
			snapID := "provider-snap"
			if tc.recorded {
				snapID = h.snapshot("nightly").ID
			} else {
				h.mem.AddSnapshot(csi.Snapshot{ID: snapID, SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes, ReadyToUse: true})
			}
			if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
				t.Fatal(err)
			}
			answer := db.ExternalID
			if tc.near {
				answer = strings.ToUpper(answer)
			}
			h.mem.AnswerCreateWith(answer)
			h.mem.ResetCalls()
			sv := volume("r")
			sv.SnapshotID = snapID
			if tc.tooSmall {
				sv.CapacityMin = 2 * db.CapacityBytes
			}
			_, err := h.e.CreateVolume(h.ctx, sv)
			h.refusedCreate(err, "r", db.ExternalID, "the volume that snapshot was taken of", "restore from snapshot "+`"`+snapID+`"`)
			if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
				t.Errorf("DeleteVolume sent %d time(s): the answer is the snapshot's source %q", n, db.ExternalID)
			}
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Errorf("reconcile after the refused restore: %v, %+v", err, rep.Problems)
			}
			if _, ok := h.mem.Volume(db.ExternalID); !ok {
				t.Errorf("the source %q was deleted by reconcile", db.ExternalID)
			}

			// The honest plugin: a restore answered with a new volume is recorded.
			h.mem.AnswerCreateWith("")
			sv.CapacityMin = db.CapacityBytes
			r := h.create(sv)
			if r.ExternalID == db.ExternalID || r.SnapshotID != snapID {
				t.Errorf("honest restore recorded %+v", r)
			}
		})
	}
}

// The same lie met by a restore sent again: the first CreateVolume of a restore from the
// plugin's own snapshot (one volctl does not record, whose source only the plugin's listing
// names) failed retryably, and reconcile sends it again, answered with the source. Before, the
// readiness check that learned the source ran before the first send only, and reconcile
// recorded the source as the restored volume.
func TestRestoreSentAgainAnsweredWithItsSnapshotsSourceIsRefused(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, nil)
	h.mem.AddSnapshot(csi.Snapshot{ID: "provider-snap", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes, ReadyToUse: true})
	if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
		t.Fatal(err)
	}
	sv := volume("r")
	sv.SnapshotID = "provider-snap"
	h.faults.FailAlways(csi.RPCCreateVolume, codes.Unavailable)
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create answered UNAVAILABLE succeeded")
	}
	h.faults.Clear(csi.RPCCreateVolume)
	h.mem.AnswerCreateWith(db.ExternalID)
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %v, %+v", err, rep.Problems)
	if v, err := h.e.Volume(h.ctx, "r"); err == nil && v.ExternalID == db.ExternalID {
		t.Fatalf("reconcile recorded the restore as its snapshot's source %q: %+v", db.ExternalID, v)
	}
	if rep.OK() || !strings.Contains(fmt.Sprint(rep.Problems), "the volume that snapshot was taken of") {
		t.Errorf("reconcile's problems %+v; want the refused answer said", rep.Problems)
	}
	if _, ok := h.mem.Volume(db.ExternalID); !ok {
		t.Errorf("the source %q was deleted", db.ExternalID)
	}

	// The plugin honest again: reconcile finishes the restore with a new volume.
	h.mem.AnswerCreateWith("")
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile with an honest plugin: %v, %+v", err, rep.Problems)
	}
	if r := h.volumeInfo("r"); r.ExternalID == db.ExternalID || r.State != "ready" {
		t.Errorf("restore finished as %+v", r)
	}
}

// What an older volctl recorded of such a lie: a restore, or a clone of a provider's volume,
// recorded with its source's storage as its own. Its `volume delete` sent DeleteVolume of the
// source, which volctl no longer records (deregistered) or never did (a provider's volume
// named by clone_id), deleting its data. The delete is refused, a conflict naming the source
// and the deregister that forgets the record; nothing is sent. A restore and a clone of their
// own storage still delete.
func TestDeleteOfARestoreRecordedAsItsSourceIsRefused(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"restore", "clone"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			h, db := snapshotHarness(t, func(c *csitest.MemConfig) { c.Controller.CloneVolume = true })
			sv := volume("r")
			source := db.ExternalID
			if kind == "restore" {
				sv.SnapshotID = h.snapshot("nightly").ID
				if _, err := h.e.DeregisterVolume(h.ctx, "db", false); err != nil {
					t.Fatal(err)
				}
			} else {
				source = "provider-src"
				h.mem.AddVolume(csi.Volume{ID: source, CapacityBytes: 1 << 20})
				sv.CloneID = source
			}
			// The honest answer, a volume of its own, deletes.
			h.create(sv)
			if err := h.e.DeleteVolume(h.ctx, "r"); err != nil {
				t.Fatalf("delete of an honest %s: %v", kind, err)
			}
			// An older volctl's record of the source as the new volume.
			h.create(sv)
			sdb, err := sql.Open("sqlite", "file:"+filepath.Join(h.dir, store.FileName))
			if err != nil {
				t.Fatal(err)
			}
			defer sdb.Close()
			if _, err := sdb.Exec(`UPDATE volumes SET external_id = ? WHERE id = 'r'`, source); err != nil {
				t.Fatal(err)
			}
			h.mem.ResetCalls()
			err = h.e.DeleteVolume(h.ctx, "r")
			t.Logf("delete: %v", err)
			if !errors.Is(err, ErrConflict) {
				t.Errorf("delete of a %s recorded as its source %q: %v, want a conflict", kind, source, err)
			}
			for _, want := range []string{`"r"`, `"` + source + `"`, "volctl volume deregister r"} {
				if err != nil && !strings.Contains(err.Error(), want) {
					t.Errorf("delete: %v; want it to say %s", err, want)
				}
			}
			if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
				t.Errorf("DeleteVolume sent %d time(s) for the source %q", n, source)
			}
			if _, ok := h.mem.Volume(source); !ok {
				t.Fatalf("the source %q was deleted", source)
			}
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Errorf("reconcile: %v", err)
			} else if _, ok := h.mem.Volume(source); !ok {
				t.Fatalf("the source %q was deleted by reconcile: %+v", source, rep.Problems)
			}
			if _, err := h.e.DeregisterVolume(h.ctx, "r", false); err != nil {
				t.Errorf("the way out, deregister: %v", err)
			}
			if _, ok := h.mem.Volume(source); !ok {
				t.Errorf("the source %q was deleted by the deregister", source)
			}
		})
	}
}

// A listing that names a snapshot twice, ready and not ready (TestRestoreCheckedByASnapshotListingThatDisagreesWithItself's
// plugin): the restore is refused as not ready, the safe answer, and its error advises
// `snapshot list` to see when the plugin says it is ready. Before, that listing showed the
// first entry, ready, so the command advised showed the snapshot ready while the restore said
// it was not; now it shows what the restore's check reads, not ready.
func TestSnapshotListingThatDisagreesWithItselfShowsItNotReady(t *testing.T) {
	t.Parallel()
	h, db := snapshotHarness(t, nil)
	h.mem.AddSnapshot(csi.Snapshot{ID: "snap-uploading", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes})
	h.mem.AddSnapshot(csi.Snapshot{ID: "snap-done", SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes, ReadyToUse: true})
	listEachSnapshotReadyThenAsItIs(h.faults)
	sv := volume("restored")
	sv.SnapshotID = "snap-uploading"
	if _, err := h.e.CreateVolume(h.ctx, sv); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volctl volume snapshot list") {
		t.Fatalf("restore from a snapshot listed ready and not ready: %v; want the conflict advising the listing", err)
	}
	l, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range l.Snapshots {
		got[s.ID] = s.ReadyToUse
	}
	if ready, ok := got["snap-uploading"]; !ok || ready {
		t.Errorf("the listing the refusal advises shows snap-uploading ready=%v (listed %v): the restore was refused as not ready", ready, ok)
	}
	if !got["snap-done"] {
		t.Errorf("snap-done, listed ready twice, shows not ready: %+v", l.Snapshots)
	}
	if len(l.Snapshots) != 2 {
		t.Errorf("listing %+v, want each snapshot once", l.Snapshots)
	}
}
