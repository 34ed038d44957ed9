package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// TestGroupStopPurgeForgetsTheGroupOnceItsClaimsAreReleased: a stopped group was kept for good,
// listed by `group status` with its lock file beside it, so a state dir running a group per CI
// job grew by one of each per job. `group stop --purge` (PurgeGroup) forgets it, but only once
// it holds no claim: claim GC finds a stopped group's claims by its record, and a claim of a
// group forgotten would never be released. A stop whose release failed keeps the group
// recorded, stopped, and says so; the reconcile releases its claims, the same purge then
// forgets it, and a run of its name makes a new group.
func TestGroupStopPurgeForgetsTheGroupOnceItsClaimsAreReleased(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(2)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(2)); err != nil {
		t.Fatal(err)
	}
	lockFile := filepath.Join(h.dir, lockDir, groupLockName("db")+".lock")
	if _, err := os.Lstat(lockFile); err != nil {
		t.Fatalf("group db's lock file after its run: %v", err)
	}
	h.failUnpublishOf("data[1]")
	_, err := h.e.PurgeGroup(h.ctx, "db")
	if err == nil || !strings.Contains(err.Error(), "not purged") || !strings.Contains(err.Error(), "volctl group stop --purge db") {
		t.Fatalf("purge of a group whose release failed = %v; want an error saying it is not purged and what forgets it later", err)
	}
	infos, err := h.e.Groups(h.ctx, "db")
	if err != nil || len(infos) != 1 || infos[0].State != "stopped" {
		t.Fatalf("group db after a purge whose release failed = %+v, %v; want it kept, stopped", infos, err)
	}
	if live := h.groupLiveClaims("db"); len(live) != 1 {
		t.Fatalf("group db holds %d claims after the failed release; want the one left for reconcile: %+v", len(live), live)
	}
	h.faults.Clear(csi.RPCNodeUnpublishVolume)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	info, err := h.e.PurgeGroup(h.ctx, "db")
	if err != nil || !info.Purged {
		t.Fatalf("purge once the claims are released = %+v, %v; want it purged", info, err)
	}
	if infos, err := h.e.Groups(h.ctx, ""); err != nil || len(infos) != 0 {
		t.Errorf("groups after the purge = %+v, %v; want none", infos, err)
	}
	if _, err := os.Lstat(lockFile); !os.IsNotExist(err) {
		t.Errorf("group db's lock file after its purge: %v; want it removed", err)
	}
	if _, err := h.e.PurgeGroup(h.ctx, "db"); !errors.Is(err, ErrNotFound) {
		t.Errorf("purge of a group purged = %v; want not found", err)
	}
	info, err = h.e.RunGroup(h.ctx, dbGroup(1))
	if err != nil || len(info.Allocs) != 1 || len(info.Allocs[0].Claims) != 2 {
		t.Fatalf("run of the purged group's name = %+v, %v; want a new group with its claims", info, err)
	}
	info, err = h.e.PurgeGroup(h.ctx, "db")
	if err != nil || !info.Purged || len(info.Released) != 2 {
		t.Fatalf("purge of a running group = %+v, %v; want its 2 claims released and the group purged", info, err)
	}
	if live := h.groupLiveClaims("db"); len(live) != 0 {
		t.Errorf("claims of the purged group: %+v; want none", live)
	}
}

// purgeOvertaken runs group db (one alloc), then purges it while another volctl runs it again
// at failpoint at, and returns the purge's error once the group is checked kept, running.
func purgeOvertaken(t *testing.T, at string) (*harness, error) {
	t.Helper()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
		t.Fatal(err)
	}
	other := h.otherProcess()
	var runErr error
	h.e.failpointHook = func(name string) {
		if name == at {
			h.e.failpointHook = nil
			_, runErr = other.RunGroup(h.ctx, dbGroup(1))
		}
	}
	_, err := h.e.PurgeGroup(h.ctx, "db")
	h.e.failpointHook = nil
	if runErr != nil {
		t.Fatalf("the run beside the purge: %v", runErr)
	}
	if infos, ierr := h.e.Groups(h.ctx, "db"); ierr != nil || len(infos) != 1 || infos[0].State != "running" {
		t.Fatalf("group db after the purge a run overtook (%v) = %+v, %v; want it kept, running", err, infos, ierr)
	}
	return h, err
}

// TestGroupPurgeOvertakenByARunKeepsTheGroup: a `group run` of the group made between the stop's
// releases and the purge has handed out claims the purge must not orphan: the group is kept,
// running, with them, and the purge is a conflict naming it.
func TestGroupPurgeOvertakenByARunKeepsTheGroup(t *testing.T) {
	t.Parallel()
	h, err := purgeOvertaken(t, "group:purging")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "run again") {
		t.Fatalf("purge overtaken by a run = %v; want a conflict saying the group was run again", err)
	}
	if live := h.groupLiveClaims("db"); len(live) != 2 {
		t.Errorf("group db holds %d claims; want the run's 2", len(live))
	}
}

// TestGroupPurgeWhoseStopARunOvertookSaysOnlyNotPurged: a run of the group made once the stop
// recorded it stopped, before its releases, overtakes the stop (a conflict naming the run's
// claims); the purge then says it is not purged, and not that the group stays stopped for a
// reconcile: it runs again, holding what the run handed out.
func TestGroupPurgeWhoseStopARunOvertookSaysOnlyNotPurged(t *testing.T) {
	t.Parallel()
	_, err := purgeOvertaken(t, "group:stopped")
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "not purged") || strings.Contains(err.Error(), "stays recorded, stopped") {
		t.Fatalf("purge whose stop a run overtook = %v; want a conflict saying it is not purged, not that it stays stopped", err)
	}
}
