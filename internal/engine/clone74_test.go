package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// reusedSnapshotID is nightlySnapshot's state after its snapshot's ID came to name another
// snapshot: the plugin derives snapshot IDs from names (SnapshotIDPrefix, as many do), volume
// db's "nightly" (ID "snap-nightly") was deleted with the storage provider's tools, and another
// tool on the same plugin (Nomad's `volume snapshot create web nightly`) then snapshotted
// volume "ext-web", a volume volctl does not record, under the same name, so the same ID.
// docs/architecture.md acknowledges such plugins ("a plugin whose IDs derive from the name, the
// first one gone"), and finishSnapshot refuses a CreateSnapshot answer whose source_volume_id
// is not the recorded source as "another volume's" snapshot.
func reusedSnapshotID(t *testing.T) (*harness, SnapshotInfo, csi.Snapshot) {
	t.Helper()
	h, sn := nightlySnapshot(t)
	if sn.SourceExternalID == "" {
		t.Fatalf("no source external ID recorded: %+v", sn)
	}
	h.mem.AddVolume(csi.Volume{ID: "ext-web", CapacityBytes: 4 << 20})
	h.mem.DropSnapshot(sn.ID)
	other := csi.Snapshot{ID: sn.ID, SourceVolumeID: "ext-web", SizeBytes: 4 << 20, ReadyToUse: true,
		CreatedAt: time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond)}
	h.mem.AddSnapshot(other)
	return h, sn, other
}

// TestSnapshotListDoesNotGiveARecordToAnotherVolumesSnapshotUnderItsID: volctl records
// snapshot "snap-nightly" (NAME "nightly") of volume db; the plugin no longer has it, and lists
// a snapshot of another volume ("ext-web") under that ID. mergeSnapshots joins the record to
// whatever the plugin lists under the ID without comparing the listed source_volume_id with the
// recorded one: `snapshot list` shows web's snapshot as volctl's "nightly" of volume db, marked
// "db (gone)" though db is recorded and well, ready, and not missing. The user is told db's
// backup is there when it is gone, and a `snapshot delete mem nightly` or a restore from it acts
// on web's data. Correct: a listed snapshot whose source is not the recorded one (not
// spec.SameStorageID) is another snapshot: the record shows as missing, and the listed one as
// the plugin's own, not NAMEd "nightly" nor of volume db. Found by helper review74.
func TestSnapshotListDoesNotGiveARecordToAnotherVolumesSnapshotUnderItsID(t *testing.T) {
	t.Parallel()
	h, sn, _ := reusedSnapshotID(t)
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	recordMissing := false
	for _, s := range list.Snapshots {
		if s.ID != sn.ID {
			continue
		}
		t.Logf("listed: name %q, source %q (external %q), recorded %v, listed %v, missing %v, source gone %v",
			s.Name, s.SourceVolumeID, s.SourceExternalID, s.Recorded, s.Listed, s.Missing, s.SourceGone)
		if s.Listed && s.SourceExternalID == "ext-web" && (s.Name == sn.Name || s.SourceVolumeID == "db" || s.Recorded) {
			t.Errorf("the plugin's snapshot %q of volume \"ext-web\" is shown as volctl's record of it (name %q, volume %q, recorded %v): "+
				"volctl recorded snapshot %q of volume db (storage %q), which the plugin no longer lists",
				s.ID, s.Name, s.SourceVolumeID, s.Recorded, sn.ID, sn.SourceExternalID)
		}
		if s.Recorded && s.Missing && s.SourceVolumeID == "db" {
			recordMissing = true
		}
	}
	if !recordMissing {
		t.Errorf("volctl's record of snapshot %q of volume db is not shown missing, though the plugin lists no snapshot of db's storage %q under that ID",
			sn.ID, sn.SourceExternalID)
	}
}

// TestSnapshotDeleteByNameDoesNotDeleteAnotherVolumesSnapshotUnderItsID: the same state;
// `volctl volume snapshot delete mem nightly` (the NAME volctl recorded for db's snapshot)
// sends DeleteSnapshot of "snap-nightly", which the plugin now holds as a snapshot of volume
// "ext-web" made by another tool: that snapshot (someone else's backup) is deleted and the
// command says "deleted", exit 0. No check is made of a recorded snapshot before its
// DeleteSnapshot (only one volctl records nothing of is asked about), where the plugin's
// listing, which a delete asks anyway afterwards, says the ID is another volume's snapshot.
// Correct: when the plugin lists the recorded ID with a source other than the one recorded, the
// delete sends nothing and fails, naming the snapshot and the other source (the record being
// forgotten with `snapshot deregister`); the other volume's snapshot is left alone.
// Found by helper review74.
func TestSnapshotDeleteByNameDoesNotDeleteAnotherVolumesSnapshotUnderItsID(t *testing.T) {
	t.Parallel()
	h, sn, other := reusedSnapshotID(t)
	_, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", sn.Name, nil)
	still := pluginStillHolds(h, other)
	if !still {
		t.Errorf("`snapshot delete mem %s` (volume db's snapshot as recorded) deleted snapshot %q of volume %q, another volume's, which the plugin listed under the recorded ID (delete answered %v)",
			sn.Name, other.ID, other.SourceVolumeID, err)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(fmt.Sprint(err), `"ext-web"`) {
		t.Fatalf("`snapshot delete mem %s`: %v; want a conflict naming snapshot %q as volume %q's, not db's", sn.Name, err, other.ID, other.SourceVolumeID)
	}
	// The refusal's way out: the deregister it names forgets the record, and leaves the
	// plugin's snapshot.
	want := "volctl volume snapshot deregister mem " + sn.ID + " --id"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("the refusal names no `%s`: %v", want, err)
	}
	if _, err := h.e.DeregisterSnapshotByID(h.ctx, "mem", sn.ID); err != nil {
		t.Fatalf("the advised deregister: %v", err)
	}
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Snapshots {
		if s.Recorded {
			t.Errorf("after the advised deregister, still recorded: %+v", s)
		}
	}
	if len(h.mem.Snapshots()) != 1 {
		t.Errorf("the plugin's snapshots after the deregister: %+v, want ext-web's alone", h.mem.Snapshots())
	}
}

// A delete of the snapshot cut short (recorded deleting) and finished by reconcile after the
// plugin gave its ID to another volume's snapshot sends nothing either: reconcile reports the
// refusal, and the other volume's snapshot stays. Found by helper review74 (the delete's case).
func TestReconcileFinishingASnapshotDeleteSparesAnotherVolumesSnapshotUnderItsID(t *testing.T) {
	t.Parallel()
	h, sn, other := reusedSnapshotID(t)
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		_, err := tx.Snapshots().MarkDeleting("mem", sn.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %+v, %v", rep, err)
	still := pluginStillHolds(h, other)
	if !still {
		t.Errorf("reconcile finishing db's snapshot delete deleted snapshot %q of volume %q, which the plugin listed under the recorded ID", other.ID, other.SourceVolumeID)
	}
}

// A restore (`volume create` with snapshot_id) of the recorded ID that the plugin now lists as
// another volume's snapshot is refused, nothing created: restored, the volume would hold the
// other volume's data where the user asked for the recorded snapshot's. The refusal names
// both sources and the listing that shows what the plugin has. The knock-on the clone review
// named beside the delete's (found by helper review74).
func TestRestoreFromARecordedIDListedAsAnotherVolumesSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	h, sn, _ := reusedSnapshotID(t)
	before := len(h.mem.Volumes())
	sv := volume("restored")
	sv.SnapshotID = sn.ID
	_, err := h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrConflict) || !strings.Contains(fmt.Sprint(err), `"ext-web"`) || !strings.Contains(fmt.Sprint(err), `volume "db"'s storage`) {
		t.Fatalf("restore of %q, listed as volume ext-web's snapshot, recorded as db's: %v; want a conflict naming both", sn.ID, err)
	}
	if n := len(h.mem.Volumes()); n != before {
		t.Errorf("the refused restore left the plugin with %d volumes, had %d", n, before)
	}
	if _, err := h.e.Volume(h.ctx, "restored"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused restore recorded volume restored: %v", err)
	}
}

// The refusal of a delete of a recorded ID the plugin lists as another source's quotes that
// source as the plugin listed it: scrubbed of the secrets the listing was sent (a delete's
// --secret, which the state does not hold), which a hostile plugin echoed there. Found by the
// reading of the round's whole change again.
func TestAnotherSourcesSnapshotRefusalShowsNoSecretTheListingWasSent(t *testing.T) {
	t.Parallel()
	const secret = "listing-cred-9Qz"
	h, sn := nightlySnapshot(t)
	h.mem.AddVolume(csi.Volume{ID: "ext-" + secret, CapacityBytes: 4 << 20})
	h.mem.DropSnapshot(sn.ID)
	h.mem.AddSnapshot(csi.Snapshot{ID: sn.ID, SourceVolumeID: "ext-" + secret, SizeBytes: 4 << 20, ReadyToUse: true,
		CreatedAt: time.Now().UTC().Add(time.Hour).Truncate(time.Microsecond)})
	_, err := h.e.DeleteSnapshotNoted(h.ctx, "mem", sn.Name, spec.Secrets{"token": secret})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("delete of the recorded ID listed as another source's: %v, want the conflict", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the refusal shows the --secret the plugin echoed into the listed source: %v", err)
	}
}
