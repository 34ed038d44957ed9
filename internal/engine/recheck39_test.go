package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// recheck38's leftover: TestRestoreGivenItsDeletedSourcesFreedIDIsRecorded's restore, given
// deleted volume db's freed ID by a plugin that reuses IDs, killed once CreateVolume answered
// and before the answer was recorded (rpc:CreateVolume). Reconcile sends the restore again
// (CSI's idempotency by name: the plugin answers with the volume it made, under db's old ID).
// Before, the source was asked again before that send: the plugin listed db's old ID, the
// restore's own volume now, and the answer was refused as the snapshot's source, the restored
// volume left on the plugin recorded nowhere. The source found gone before the first
// CreateVolume stays gone for the sends that follow (the restore's record keeps it).
func TestRestoreGivenAFreedIDWhoseAnswerWasLostIsRecordedByReconcile(t *testing.T) {
	t.Parallel()
	for _, recorded := range []bool{true, false} {
		name := map[bool]string{true: "recorded", false: "plugins-own"}[recorded]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, db := snapshotHarness(t, func(c *csitest.MemConfig) { c.ReuseIDs = true })
			snapID := "provider-snap"
			if recorded {
				snapID = h.snapshot("nightly").ID
			} else {
				h.mem.AddSnapshot(csi.Snapshot{ID: snapID, SourceVolumeID: db.ExternalID, SizeBytes: db.CapacityBytes, ReadyToUse: true})
			}
			if err := h.e.DeleteVolume(h.ctx, "db"); err != nil {
				t.Fatal(err)
			}
			sv := volume("r")
			sv.SnapshotID = snapID
			killedAt(h, "rpc:CreateVolume", func() { _, _ = h.e.CreateVolume(h.ctx, sv) })
			if _, ok := h.mem.Volume(db.ExternalID); !ok {
				t.Fatalf("the plugin holds no volume under db's freed ID %q after the restore's CreateVolume", db.ExternalID)
			}
			_, rerr := h.e.Reconcile(h.ctx)
			r, err := h.e.Volume(h.ctx, "r")
			if err != nil {
				t.Fatalf("r after reconcile (%v): %v", rerr, err)
			}
			if r.ExternalID != db.ExternalID || r.State != string(store.VolumeReady) {
				t.Fatalf("restored volume r after reconcile sent its lost CreateVolume again = %s %q (reconcile: %v); want ready, %q: the plugin's restore under db's freed ID",
					r.State, r.ExternalID, rerr, db.ExternalID)
			}
			h.deletesAsItsOwn("r", r.ExternalID)
		})
	}
}

// hostile38's leftover: a plugin that answers NodeUnstageVolume OK and leaves the staging
// mounted. The release stops on it, and the staging is recorded not staged (the plugin
// disowned it), while the mount is still there. Before, `volume status` said "Staged: no" and
// nothing of the mount: the reader, told the volume is on no path of this host, had the
// claim's error alone to say otherwise. Now the view names the staging path still mounted
// (VolumeInfo.StagingLeft), read from the mount table only for a staging recorded unfinished;
// once it is unmounted and reconcile finishes the release, it is gone.
func TestStatusOfAStagingLeftMountedByNodeUnstageNamesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	staging, _ := h.staging("v")
	if v := h.volumeInfo("v"); !v.Staged || v.StagingLeft != "" {
		t.Fatalf("v claimed: staged %v, staging left %q; want staged, nothing left", v.Staged, v.StagingLeft)
	}
	heal := h.serveLeavingMounts(csi.RPCNodeUnstageVolume)
	if _, err := h.e.Release(h.ctx, "v", "a"); err == nil {
		t.Fatal("release through a plugin that leaves the staging mounted: succeeded")
	}
	v := h.volumeInfo("v")
	if v.Staged || v.StagingLeft != staging.StagingPath {
		t.Errorf("v after NodeUnstageVolume answered OK and left %s mounted: staged %v, staging left %q; want not staged, and that path named",
			staging.StagingPath, v.Staged, v.StagingLeft)
	}
	heal()
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the staging is unmounted: %v", err)
	}
	if v := h.volumeInfo("v"); v.Staged || v.StagingLeft != "" {
		t.Errorf("v after reconcile finished the release: staged %v, staging left %q; want neither", v.Staged, v.StagingLeft)
	}
}

// user38's nothingRecorded, on a registration of a volume registered already (an update: a
// new capacity, context or capability): interrupted in ValidateVolumeCapabilities, it said
// "nothing is registered; run the register again", while the volume is registered, as it was.
// Now it says that the volume stays registered as it was; a first registration still says
// nothing is registered (the honest case, as TestInterruptedOperationsRecordTheSignal holds).
func TestInterruptedReRegisterSaysTheVolumeStaysRegistered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	h.mem.AddVolume(csi.Volume{ID: "ext-2", CapacityBytes: 1 << 30})
	sv := registered("v", "ext-1")
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	interrupted := func(sv spec.Volume) error {
		t.Helper()
		gate := make(chan struct{})
		h.faults.Inject(csi.RPCValidateVolumeCapabilities, csitest.Fault{Gate: gate, Times: 1})
		ctx, cancel := context.WithCancelCause(h.ctx)
		done := make(chan error, 1)
		go func() {
			_, err := h.e.RegisterVolume(ctx, sv)
			done <- err
		}()
		h.waitInFlight(gate, done)
		cancel(errors.New("SIGTERM received"))
		err := <-done
		close(gate)
		for h.faults.Held() > 0 { // the held call's end, seen by the server after the client's
			time.Sleep(time.Millisecond)
		}
		return err
	}
	again := sv
	again.Context = map[string]string{"endpoint": "10.0.0.2"}
	err := interrupted(again)
	if err == nil || strings.Contains(err.Error(), "nothing is registered") || !strings.Contains(err.Error(), `volume "v" stays registered as it was`) {
		t.Errorf("register again of registered volume v, interrupted in ValidateVolumeCapabilities: %v\nwant it to say v stays registered as it was, not that nothing is registered", err)
	}
	if got := h.volumeInfo("v"); got.Context["endpoint"] != "10.0.0.1" {
		t.Errorf("v after the interrupted register again: context %v; want the old one", got.Context)
	}
	if err := interrupted(registered("w", "ext-2")); err == nil || !strings.Contains(err.Error(), "nothing is registered; run the register again") {
		t.Errorf("first register of w, interrupted: %v; want it to say nothing is registered", err)
	}
}

// recheck38's leftover: TestCreateCleanupWhoseQuestionFailsSendsNoDeleteVolume's plugin, whose
// listing never comes back: w stays marked deleting with v's storage, state dir A's volume
// published to node-1, which the plugin (mapping two names onto one volume) answered w's create
// with. The cleanup's error names `volume deregister` to forget it, and the deregistration's
// warning said the storage "may still exist: if plugin "mem" still holds it, delete it with the
// storage provider's tools": A's data, deleted by hand on volctl's word. Now the warning of a
// create's cleanup says that storage may be another's, and to check before deleting it.
func TestDeregisterOfAnUnfinishedCreateCleanupDoesNotAdviseDeletingAnothersStorage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	a := h.otherStateDir()
	v, err := a.CreateVolume(h.ctx, volume("v"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err != nil {
		t.Fatal(err)
	}
	h.mem.AnswerCreateWith(v.ExternalID)
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Code: codes.Unavailable})
	sv := volume("w")
	sv.CapacityMin = 1 << 40 // more than v's storage holds: the answer is unusable
	_, err = h.e.CreateVolume(h.ctx, sv)
	if err == nil || !strings.Contains(err.Error(), "`volctl volume deregister w`") {
		t.Fatalf("create of w answered with v's storage, its cleanup's question failing: %v; want it to name volume deregister", err)
	}
	warnings, err := h.e.DeregisterVolume(h.ctx, "w", false)
	if err != nil {
		t.Fatalf("deregister of w, its create's cleanup unfinished, as the create's error advises: %v", err)
	}
	said := strings.Join(warnings, "\n")
	if strings.Contains(said, "still holds it, delete it") || !strings.Contains(said, "may be another's") {
		t.Errorf("deregister of w, whose create's cleanup holds %q (state dir A's volume, published to node-1):\n%s\nwant it to say that storage may be another's, not to delete it", v.ExternalID, said)
	}
	if _, ok := h.mem.Volume(v.ExternalID); !ok {
		t.Fatalf("the plugin deleted volume %q, state dir A's", v.ExternalID)
	}
}
