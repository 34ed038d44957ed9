package engine

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// The guards between a clone and its source (round 29's review): a clone's create recorded
// while its source is deleted, or the other way round, left the clone's CreateVolume answered
// NOT_FOUND for the source at every reconcile pass for good.

// reconcileClean runs reconcile n times and fails the test on an error or a problem.
func (h *harness) reconcileClean(n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
			h.t.Fatalf("reconcile pass %d: %v, problems %+v", i+1, err, rep.Problems)
		}
	}
}

// wantConflict fails the test unless err is a conflict saying each of wants.
func wantConflict(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("%s: %v; want a conflict", what, err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: the refusal %q does not say %q", what, err, want)
		}
	}
}

// sourceAndClone creates volume "src" and returns the spec of volume "clone", a clone of it,
// created too when created is set.
func (h *harness) sourceAndClone(created bool) spec.Volume {
	h.t.Helper()
	h.create(volume("src"))
	sv := volume("clone")
	sv.CloneID = "src"
	if created {
		h.create(sv)
	}
	return sv
}

// interrupted runs op with every call of rpc answered UNAVAILABLE (the plugin down), which must
// fail it, leaving its intent recorded, then lets rpc through again.
func (h *harness) interrupted(rpc, what string, op func() error) {
	h.t.Helper()
	h.faults.FailAlways(rpc, codes.Unavailable)
	if err := op(); err == nil {
		h.t.Fatalf("%s with its plugin unavailable succeeded", what)
	}
	h.faults.Clear()
}

// A clone naming its source by the source's storage ID (clone_id = its external ID) while the
// source's delete is recorded (DeleteVolume unanswered: the plugin unavailable). Before, only a
// source named by its volctl ID was refused: the clone was recorded, and reconcile, deleting the
// source first, left its CreateVolume NOT_FOUND for good.
func TestCloneByStorageIDOfAVolumeBeingDeletedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	src := h.create(volume("src"))
	h.interrupted(csi.RPCDeleteVolume, "delete", func() error { return h.e.DeleteVolume(h.ctx, "src") })
	if got := h.volumeInfo("src").State; got != string(store.VolumeDeleting) {
		t.Fatalf("source after the interrupted delete: %s; want deleting", got)
	}
	sv := volume("clone")
	sv.CloneID = src.ExternalID
	calls := h.mem.CallCount(csi.RPCCreateVolume)
	_, err := h.e.CreateVolume(h.ctx, sv)
	wantConflict(t, "clone by the storage ID of a volume being deleted", err, `volume "src"`, src.ExternalID, "being deleted", "volctl reconcile")
	if h.mem.CallCount(csi.RPCCreateVolume) != calls {
		t.Error("CreateVolume sent for the refused clone")
	}
	h.reconcileClean(2)
	if _, err := h.e.Volume(h.ctx, "clone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused clone is recorded: %v", err)
	}
}

// A clone of a volume whose own create was interrupted (no storage ID yet). Before, its volctl
// ID was recorded as if it were the storage ID: reconcile finished the source, and the clone's
// CreateVolume, sent with "a" for the source, was NOT_FOUND at every pass; and the source's
// delete was never refused for it (refuseCloneInFlight matches the storage ID).
func TestCloneOfAVolumeBeingCreatedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.interrupted(csi.RPCCreateVolume, "create", func() error { _, err := h.e.CreateVolume(h.ctx, volume("a")); return err })
	sv := volume("b")
	sv.CloneID = "a"
	calls := h.mem.CallCount(csi.RPCCreateVolume)
	_, err := h.e.CreateVolume(h.ctx, sv)
	wantConflict(t, "clone of a volume being created", err, `volume "a"`, `volume "b"`, "being created", "volctl reconcile")
	if h.mem.CallCount(csi.RPCCreateVolume) != calls {
		t.Error("CreateVolume sent for the refused clone")
	}
	h.reconcileClean(2)
	a := h.volumeInfo("a")
	b := h.create(sv) // finished, the source clones
	if req, _ := csitest.LastRequest[csi.CreateVolumeRequest](h.mem); req.CloneID != a.ExternalID || b.State != string(store.VolumeReady) {
		t.Fatalf("clone once its source is finished: sent clone source %q (want %q), state %s", req.CloneID, a.ExternalID, b.State)
	}
}

// The source's delete while a clone's create deletes an answer it cannot use (a replay answered
// with a volume of 1 byte): the clone's record is marked deleting meanwhile (createFailed), then
// goes back to being created, and is forgotten once the answer is deleted. Before, refuseCloneInFlight looked at records being created only:
// the source's delete went through, and the clone's create, recorded still, was NOT_FOUND for
// the source at every pass.
func TestSourceDeleteRefusedDuringACloneCleanup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := h.sourceAndClone(false)
	h.interrupted(csi.RPCCreateVolume, "create", func() error { _, err := h.e.CreateVolume(h.ctx, sv); return err })
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
		m.(*csipb.CreateVolumeResponse).Volume.CapacityBytes = 1
	}})
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Times: 1, Gate: gate})
	createErr := make(chan error, 1)
	go func() { _, err := h.e.CreateVolume(h.ctx, sv); createErr <- err }()
	h.waitInFlight(gate, createErr) // the cleanup's DeleteVolume, the clone's record deleting
	if got := h.volumeInfo("clone").State; got != string(store.VolumeDeleting) {
		close(gate)
		t.Fatalf("clone while its cleanup is held: %s; want deleting", got)
	}
	// The source's delete either returns (refused) or, past the check, records its delete and
	// waits for the controller lock the clone's create holds.
	deleteErr := make(chan error, 1)
	go func() { deleteErr <- h.e.DeleteVolume(h.ctx, "src") }()
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for waiting := true; waiting; {
		select {
		case err = <-deleteErr:
			waiting = false
		default:
			if h.volumeInfo("src").State == string(store.VolumeDeleting) || time.Now().After(deadline) {
				close(gate)
				err = <-deleteErr
				<-createErr
				t.Fatalf("the source's delete was recorded while its clone's cleanup was held (delete: %v)", err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	close(gate)
	if cerr := <-createErr; cerr == nil {
		t.Error("the clone's create answered with a volume of 1 byte succeeded")
	}
	wantConflict(t, "source delete during its clone's cleanup", err, `volume "clone"`, `volume "src"`, "volctl reconcile")
	h.reconcileClean(2)
	// The unusable answer deleted, nothing is left under the clone's name: its create is
	// forgotten, as a first answer's is (TestCreateSentAgainAnsweredAboveTheLimitIsForgottenOnceDeleted).
	if _, err := h.e.Volume(h.ctx, "clone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("clone after its unusable answer was deleted: %v; want its create forgotten", err)
	}
	if vols := h.mem.Volumes(); len(vols) != 1 {
		t.Fatalf("the plugin holds %+v; want the source alone", vols)
	}
	if err := h.e.DeleteVolume(h.ctx, "src"); err != nil {
		t.Fatalf("source delete once its clone's create is over: %v", err)
	}
}

// The false refusal matching deleting clones brings: a finished clone whose own delete was
// interrupted keeps its source from being deleted until reconcile finishes that delete (a clone
// cleaning up an answer it could not use looks the same in the state), as documented in
// docs/architecture.md. The refusal says so, and the way on works.
func TestSourceDeleteWaitsForAnInterruptedDeleteOfItsClone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.sourceAndClone(true)
	h.interrupted(csi.RPCDeleteVolume, "delete", func() error { return h.e.DeleteVolume(h.ctx, "clone") })
	wantConflict(t, "source delete while its clone's delete is interrupted", h.e.DeleteVolume(h.ctx, "src"),
		`volume "clone"`, "being deleted", "volctl reconcile")
	h.reconcileClean(1)
	if err := h.e.DeleteVolume(h.ctx, "src"); err != nil {
		t.Fatalf("source delete once its clone's delete is finished: %v", err)
	}
}

// The same create of a finished clone again once its source is deleted (which a finished clone
// allows). Before, the spec's clone_id (the source's volctl ID) was compared with the storage
// ID recorded, which no volume resolves to any more: refused as a change of clone_id.
func TestSameCloneCreateAfterItsSourceIsDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := h.sourceAndClone(true)
	if err := h.e.DeleteVolume(h.ctx, "src"); err != nil {
		t.Fatal(err)
	}
	calls := h.mem.CallCount(csi.RPCCreateVolume)
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("the same create of clone again, its source deleted: %v", err)
	}
	if h.mem.CallCount(csi.RPCCreateVolume) != calls {
		t.Error("CreateVolume sent for a clone that exists with this spec")
	}
	other := sv
	other.CloneID = "elsewhere"
	if _, err := h.e.CreateVolume(h.ctx, other); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrConflict) {
		t.Fatalf("create of the clone with another clone_id: %v; want it refused", err)
	}
}

// A clone an older volctl created records no clone_id as written (clone_spec NULL): the same
// create again is compared as before, by resolving the spec's clone_id again, which finds the
// same source while it is there.
func TestSameCloneCreateOfAnOlderVolctlsClone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := h.sourceAndClone(true)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE volumes SET clone_spec = NULL WHERE id = 'clone'`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("the same create of an older volctl's clone, its source there: %v", err)
	}
	if err := h.e.DeleteVolume(h.ctx, "src"); err != nil {
		t.Fatal(err)
	}
	_, err = h.e.CreateVolume(h.ctx, sv)
	if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrConflict) {
		t.Fatalf("the same create of an older volctl's clone, its source gone: %v; want today's refusal (nothing recorded says what the spec named)", err)
	}
	// The refusal says why (an older volctl recorded only the storage ID, and the spec's source
	// is gone) and the way on that keeps the clone, not "delete the volume and create it again",
	// which would destroy it for a change nobody made.
	clone, verr := h.e.Volume(h.ctx, "clone")
	if verr != nil {
		t.Fatal(verr)
	}
	for _, want := range []string{`volume "clone"`, "older volctl", `"src"`, `clone_id = "` + clone.CloneID + `"`, "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "delete the volume") {
		t.Errorf("the refusal %q tells the user to delete the clone, whose spec changed nothing", err)
	}
	sv.CloneID = clone.CloneID
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatalf("the same create naming the source by the storage ID recorded: %v", err)
	}
}

// A clone whose create the plugin refused for good is forgotten, and does not keep its source
// from being deleted: the guards match only a clone's record still there.
func TestSourceOfACloneRefusedForGoodDeletes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	sv := h.sourceAndClone(false)
	h.faults.FailOnce(csi.RPCCreateVolume, codes.InvalidArgument)
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("a clone refused by its plugin was created")
	}
	if err := h.e.DeleteVolume(h.ctx, "src"); err != nil {
		t.Fatalf("the source of a clone refused for good: %v", err)
	}
}
