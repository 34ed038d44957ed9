package engine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// chaos31: two volctl processes racing on one state dir.

// pauseAtLog is a slog handler that holds the goroutine logging a record whose message holds
// text until proceed is closed, having closed reached: a test stops an operation at a warning it
// logs between two of its steps (another process acts meanwhile), then lets it go on.
type pauseAtLog struct {
	text             string
	reached, proceed chan struct{}
}

func (p *pauseAtLog) Enabled(context.Context, slog.Level) bool { return true }
func (p *pauseAtLog) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *pauseAtLog) WithGroup(string) slog.Handler            { return p }
func (p *pauseAtLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, p.text) {
		select {
		case <-p.reached:
		default:
			close(p.reached)
		}
		<-p.proceed
	}
	return nil
}

// snapshotRecordedAgain returns what records snapshot id of plugin "mem" again as it is recorded
// now, as a create answered with it records it (finishSnapshot: the record put, a delete
// recorded of it taken back): another volctl's create, played at a point a test chooses.
func (h *harness) snapshotRecordedAgain(id string) func() {
	h.t.Helper()
	var rec store.Snapshot
	h.update(func(tx *store.Tx) error {
		var err error
		rec, err = tx.Snapshots().Get("mem", id)
		return err
	})
	return func() {
		h.update(func(tx *store.Tx) error {
			if err := tx.Snapshots().Put(&rec); err != nil {
				return err
			}
			return tx.Snapshots().Undelete("mem", id)
		})
	}
}

// snapshotDeleteStoppedAtItsCheck runs, in another engine on h's state dir, a delete of snapshot
// id of plugin "mem" (by "delete": the user's; by "reconcile": reconcile finishing a recorded
// one, its first problem as its error), with the plugin's listing down, so that it warns that it
// could not check between its DeleteSnapshot and its last commit, and stops it there: the test
// closes pause.proceed to let it go on, and done has its error. On a failure to get there, stop
// is called (to let go what the test holds) before the test fails.
func (h *harness) snapshotDeleteStoppedAtItsCheck(id, by string, stop func()) (pause *pauseAtLog, done <-chan error) {
	h.t.Helper()
	return h.snapshotDeleteThroughStoppedAtItsCheck("mem", id, by, stop)
}

// snapshotDeleteThroughStoppedAtItsCheck is snapshotDeleteStoppedAtItsCheck through plugin ID
// pluginID (mem's socket mate, say) for the user's delete.
func (h *harness) snapshotDeleteThroughStoppedAtItsCheck(pluginID, id, by string, stop func()) (pause *pauseAtLog, done <-chan error) {
	h.t.Helper()
	h.faults.FailAlways(csi.RPCListSnapshots, codes.Unavailable)
	pause = &pauseAtLog{text: "could not be checked", reached: make(chan struct{}), proceed: make(chan struct{})}
	deleter, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts, Now: h.e.cfg.Now,
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second}, Logger: slog.New(pause)})
	if err != nil {
		stop()
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { deleter.Close() })
	ch := make(chan error, 1)
	go func() {
		if by == "reconcile" {
			rep, err := deleter.Reconcile(h.ctx)
			if len(rep.Problems) > 0 {
				err = errors.New(rep.Problems[0].Message)
			}
			ch <- err
			return
		}
		ch <- deleter.DeleteSnapshot(h.ctx, pluginID, id, nil)
	}()
	select {
	case <-pause.reached:
	case err := <-ch:
		close(pause.proceed)
		stop()
		h.t.Fatalf("the %s ended before its check's warning: %v", by, err)
	case <-time.After(30 * time.Second):
		close(pause.proceed)
		stop()
		h.t.Fatalf("the %s never got to its check's warning", by)
	}
	return pause, ch
}

// A snapshot delete (the user's, or reconcile finishing a recorded one) answered by the plugin,
// and before it forgets the record, another volctl takes the snapshot of the same name again (a
// plugin that names snapshots by their name, as most do, makes it anew under the same ID) and
// records it. The delete must not forget that record: the plugin has the snapshot the other
// volctl just made and said it made. Before, the delete's last commit deleted the record by ID,
// and the new snapshot was left on the plugin unrecorded, its create answered OK. (Since the
// create waits for a delete of the ID it is answered with, and asks again, it waits here for
// the delete to end; the delete's own check, which keeps the record, is for a delete recorded
// after the create looked for one: TestSnapshotDeleteRecordedAfterTheCreateLookedKeepsItsRecord.)
func TestSnapshotTakenAgainWhileItsDeleteIsAnsweredKeepsItsRecord(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"delete", "reconcile"} {
		t.Run(by, func(t *testing.T) {
			h, _ := snapshotHarness(t, nil)
			s := h.snapshot("nightly")
			if by == "reconcile" {
				h.unansweredSnapshotDelete(s.ID) // the plugin keeps it: nothing reached it
				h.faults.Clear()
			}
			// The check after the delete fails (the plugin's listing is down): the deleting
			// volctl warns that it could not check, between its DeleteSnapshot and its record.
			pause, done := h.snapshotDeleteStoppedAtItsCheck(s.ID, by, func() {})
			if got := h.mem.Snapshots(); len(got) != 0 {
				close(pause.proceed)
				t.Fatalf("the plugin still has %+v after the %s's DeleteSnapshot", got, by)
			}
			// Another volctl takes it again: the plugin makes it anew under the same ID. The
			// create, answered with a snapshot whose delete is recorded, may wait for the
			// delete (the snapshot's lock): the delete goes on then.
			ctx, waiting := whenWaitingForAnyLock(h.ctx)
			again, err := h.createNightlyLettingTheDeleteOn(ctx, waiting, pause.proceed)
			derr := <-done
			t.Logf("%s: %v", by, derr)
			if err != nil {
				t.Fatalf("snapshot %q taken again: %v", "nightly", err)
			}
			if again.ID != s.ID || len(h.mem.Snapshots()) != 1 {
				t.Fatalf("taken again as %q, plugin has %+v; want the plugin to make %q anew", again.ID, h.mem.Snapshots(), s.ID)
			}
			if !h.recordedSnapshot(s.ID) {
				t.Fatalf("the %s forgot snapshot %s's record, which the snapshot taken again meanwhile made (the plugin has it, volctl said it made it)", by, s.ID)
			}
			if derr != nil && (!strings.Contains(derr.Error(), "nightly") || !strings.Contains(derr.Error(), s.ID)) {
				t.Errorf("the %s says %v; want it to succeed (the create waited for it) or fail naming the snapshot taken again meanwhile (%q, %s)", by, derr, "nightly", s.ID)
			}
			if h.deletingRecorded(s.ID) {
				t.Errorf("a delete of %s is still recorded: reconcile would delete the snapshot taken again", s.ID)
			}
		})
	}
}

// A create in one volctl, answered with snapshot X, finds no delete of X recorded and goes on to
// record it, holding the source volume's lock, not X's; a delete of X in another volctl (the
// user's, or reconcile finishing one recorded then) records itself meanwhile, sends its
// DeleteSnapshot, and before its last commit the create records X (finishSnapshot: the record
// put, the delete's record taken back). The delete must keep that record, and fail as a
// conflict naming the snapshot and its volume without advising a deregister: the create said it
// made X, and the plugin may have made it again after the DeleteSnapshot. Before round 31 its
// last commit forgot the record by ID (deleteSnapshotStored's takenAgain check; reconcile's
// report of it: reconcileSnapshotDeletes's case for a recorded delete gone). The user's delete
// runs against a real create stopped between its check and its record
// (testHookSnapshotDeleteLookedFor); reconcile's plays the create's record, since reconcile
// finishes the stopped create's own intent first and waits for the source volume's lock it holds.
// (found by review31f)
func TestSnapshotDeleteRecordedAfterTheCreateLookedKeepsItsRecord(t *testing.T) {
	for _, by := range []string{"delete", "reconcile"} {
		t.Run(by, func(t *testing.T) {
			h, _ := snapshotHarness(t, nil)
			s := h.snapshot("nightly")
			recordAgain := h.snapshotRecordedAgain(s.ID)
			// The create (the user's delete case): answered with s.ID (the plugin's snapshot of
			// that name), it found no delete of it recorded, and stops before its record.
			var createDone <-chan error
			proceedCreate := make(chan struct{})
			if by == "delete" {
				createDone = h.createStoppedOnceItLooked(s.ID, proceedCreate)
			} else {
				h.unansweredSnapshotDelete(s.ID)
				h.faults.Clear()
			}
			// The delete: its check after the DeleteSnapshot fails (the plugin's listing is down),
			// so it warns, between its DeleteSnapshot and its last commit, and stops there.
			pause, done := h.snapshotDeleteStoppedAtItsCheck(s.ID, by, func() { close(proceedCreate) })
			// The create records s.ID now.
			if by == "delete" {
				close(proceedCreate)
				if err := <-createDone; err != nil {
					close(pause.proceed)
					t.Fatalf("the create: %v", err)
				}
			} else {
				// Reconcile's: another volctl's create, answered with s.ID before this
				// DeleteSnapshot and past its look for a delete, records it as finishSnapshot does.
				recordAgain()
			}
			close(pause.proceed)
			derr := <-done
			t.Logf("%s: %v", by, derr)
			if !h.recordedSnapshot(s.ID) {
				t.Fatalf("the %s forgot snapshot %s's record, which a create recorded meanwhile (volctl said it made it)", by, s.ID)
			}
			if derr == nil || !strings.Contains(derr.Error(), "nightly") || !strings.Contains(derr.Error(), `"db"`) {
				t.Errorf("the %s says %v; want a conflict naming the snapshot recorded again meanwhile and its volume", by, derr)
			}
			if derr != nil && strings.Contains(derr.Error(), "deregister") {
				t.Errorf("the %s advises a deregister, which forgets the record of the snapshot the create made (no delete is left to forget): %v", by, derr)
			}
			// The plugin lists snapshots (it has LIST_SNAPSHOTS): the advice is `snapshot list`,
			// which shows the snapshot the delete took missing, then the delete again, which
			// forgets its record.
			h.faults.Clear()
			list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(list.Snapshots, func(sn SnapshotInfo) bool { return sn.ID == s.ID }); i < 0 || !list.Snapshots[i].Missing {
				t.Errorf("`snapshot list` does not show %s, which the delete took, missing: %+v (warnings %q)", s.ID, list.Snapshots, list.Warnings)
			}
			if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err != nil {
				t.Fatalf("the advised delete again: %v", err)
			}
			if h.recordedSnapshot(s.ID) || h.deletingRecorded(s.ID) {
				t.Errorf("after the advised delete, snapshot %s is still recorded or its delete is", s.ID)
			}
		})
	}
}

// The conflict of a delete that kept a record a create made meanwhile advised `snapshot list`,
// which shows the snapshot missing if the delete took it, then `snapshot delete`. A plugin
// without LIST_SNAPSHOTS is never listed: the list shows volctl's records alone, never missing,
// so the user could not tell the snapshot the delete took from one the plugin made again, and
// the advised delete would delete the latter, which the create said it made. The advice is the
// storage's own tools, and a deregister (sending nothing) of one they show gone; never the delete.
// (found by review31f)
func TestSnapshotTakenAgainAdviceWithoutListSnapshots(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, func(c *csitest.MemConfig) { c.Controller.ListSnapshots = false })
	s := h.snapshot("nightly")
	recordAgain := h.snapshotRecordedAgain(s.ID)
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Gate: gate, Times: 1})
	deleter, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts, Now: h.e.cfg.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer deleter.Close()
	done := make(chan error, 1)
	go func() { done <- deleter.DeleteSnapshot(h.ctx, "mem", s.ID, nil) }()
	for deadline := time.Now().Add(30 * time.Second); h.faults.Held() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("DeleteSnapshot never reached the plugin")
		}
	}
	// Another volctl's create, answered with s.ID before this DeleteSnapshot and past its look
	// for a delete, records it (finishSnapshot's record).
	recordAgain()
	close(gate)
	derr := <-done
	t.Logf("delete: %v", derr)
	if derr == nil {
		t.Fatal("the delete succeeded; want the conflict")
	}
	if !h.recordedSnapshot(s.ID) {
		t.Fatalf("the delete forgot snapshot %s's record, which a create recorded meanwhile", s.ID)
	}
	if len(h.mem.Snapshots()) != 0 {
		t.Fatalf("the plugin still has %+v", h.mem.Snapshots())
	}
	msg := derr.Error()
	if strings.Contains(msg, "snapshot list") || strings.Contains(msg, "`volctl volume snapshot delete") {
		t.Errorf("the conflict advises `snapshot list`, which never shows a snapshot of a plugin without LIST_SNAPSHOTS missing, or the delete again, which would delete a snapshot made again: %v", derr)
	}
	for _, want := range []string{"LIST_SNAPSHOTS", "storage provider's own tools", "`volctl volume snapshot deregister mem nightly`", `"db"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the conflict does not say %q: %v", want, derr)
		}
	}
	// What the list shows: volctl's record, not missing (the reason the advice is not the list).
	list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sn := range list.Snapshots {
		if sn.ID == s.ID && sn.Missing {
			t.Errorf("`snapshot list` shows %s missing from a plugin it cannot list: %+v", s.ID, sn)
		}
	}
	// The storage shows it gone (the delete took it): the advised deregister forgets the record.
	if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID); err != nil {
		t.Fatalf("the advised deregister: %v", err)
	}
	if h.recordedSnapshot(s.ID) || h.deletingRecorded(s.ID) {
		t.Errorf("after the advised deregister, snapshot %s is still recorded or its delete is", s.ID)
	}
}

// A user's `snapshot delete` in flight (its DeleteSnapshot not answered yet) and, in another
// volctl, `snapshot deregister` of the same snapshot: told the snapshot is left on the plugin,
// the user must not have it deleted by the delete in flight. Before, only reconcile's finishing
// of a recorded delete held the snapshot's lock across its DeleteSnapshot
// (TestReview30fDeregisterDuringReconcilesDelete); the user's delete did not, the deregister
// went ahead at once saying the snapshot was left, and the delete then deleted it.
func TestDeregisterDuringAnotherVolctlsSnapshotDeleteDoesNotSayItIsLeft(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	var dereg struct {
		warnings []string
		err      error
	}
	derr := h.duringOthersSnapshotDelete(s.ID, "deregister", func(ctx context.Context) {
		dereg.warnings, dereg.err = h.e.DeregisterSnapshot(ctx, "mem", s.ID)
	})
	t.Logf("delete: %v; deregister: %v %v", derr, dereg.warnings, dereg.err)
	if dereg.err == nil && len(h.mem.Snapshots()) == 0 {
		t.Fatalf("the deregister succeeded saying %q, and the delete in flight in another volctl deleted the snapshot", dereg.warnings)
	}
	if derr != nil {
		t.Errorf("the delete, which the deregister waited for: %v", derr)
	}
	// The deregister read the record before it waited: the snapshot it finds forgotten then is
	// gone meanwhile, not one to look for in another state dir (a plain not-found's advice).
	if dereg.err != nil && (!errors.Is(dereg.err, ErrNotFound) || !IsGoneMeanwhile(dereg.err)) {
		t.Errorf("the deregister that waited for the delete: %v; want it gone meanwhile (IsGoneMeanwhile)", dereg.err)
	}
}

// duringOthersSnapshotDelete runs op (what, in messages) in this volctl while another volctl's
// `snapshot delete` of snapshot id of plugin mem is in flight (whileHeld), and returns the
// delete's error.
func (h *harness) duringOthersSnapshotDelete(id, what string, op func(ctx context.Context)) error {
	h.t.Helper()
	deleter := h.otherProcess()
	derr, _ := h.whileHeld(csi.RPCDeleteSnapshot, what, false,
		func() error { return deleter.DeleteSnapshot(h.ctx, "mem", id, nil) },
		func(ctx context.Context) error { op(ctx); return nil })
	return derr
}

// whileHeld runs first until its rpc is held at the plugin, then second (what, in messages),
// with a context that says when it waits for a lock another volctl holds; once second waits
// (or returns, unless mustWait, which fails the test then), the rpc goes on. It returns what
// each returned.
func (h *harness) whileHeld(rpc, what string, mustWait bool, first func() error, second func(ctx context.Context) error) (firstErr, secondErr error) {
	h.t.Helper()
	gate := make(chan struct{})
	h.faults.Inject(rpc, csitest.Fault{Gate: gate, Times: 1})
	firstDone := make(chan error, 1)
	go func() { firstDone <- first() }()
	h.waitInFlight(gate, firstDone)
	ctx, waiting := whenWaitingForAnyLock(h.ctx)
	secondDone := make(chan error, 1)
	go func() { secondDone <- second(ctx) }()
	select {
	case <-waiting: // it waits for first: let first go on
		close(gate)
		secondErr = <-secondDone
	case secondErr = <-secondDone:
		close(gate)
		if mustWait {
			h.t.Fatalf("the %s returned before waiting for a lock: %v", what, secondErr)
		}
	case <-time.After(30 * time.Second):
		close(gate)
		h.t.Fatalf("the %s neither waited for a lock nor returned", what)
	}
	return <-firstDone, secondErr
}

// deleteHeldOnceRecorded starts another volctl's `snapshot delete` of snapshot id of plugin mem
// and returns once it is held at the first lock it takes after its delete is recorded (its
// controller lock, for DeleteSnapshot: past its check, nothing sent); closing gate lets it go
// on, and done says how it ended.
func (h *harness) deleteHeldOnceRecorded(id string) (gate chan struct{}, done <-chan error) {
	h.t.Helper()
	var armed atomic.Bool
	reached := make(chan struct{})
	gate = make(chan struct{})
	var once sync.Once
	deleter, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts, BeforeLock: func() {
		if armed.Load() && h.deletingRecorded(id) {
			once.Do(func() { close(reached); <-gate })
		}
	}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { deleter.Close() })
	armed.Store(true)
	delDone := make(chan error, 1)
	go func() { delDone <- deleter.DeleteSnapshot(h.ctx, "mem", id, nil) }()
	select {
	case <-reached:
	case err := <-delDone:
		h.t.Fatalf("the snapshot's delete returned before it took a lock with its delete recorded: %v", err)
	case <-time.After(30 * time.Second):
		h.t.Fatal("the snapshot's delete never took a lock with its delete recorded")
	}
	return gate, delDone
}

// whenWaitingForAnyLock returns ctx with a progress watcher that closes waiting once the
// operation run with it says it waits for a lock another volctl holds.
func whenWaitingForAnyLock(ctx context.Context) (_ context.Context, waiting <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	return WithProgress(ctx, func(step string) {
		if strings.HasPrefix(step, "waiting for the lock on ") {
			once.Do(func() { close(ch) })
		}
	}), ch
}

// Two reconciles at once (the agent's pass and a user's), each its own process on one state
// dir, with a volume create and a volume delete interrupted, a snapshot whose CreateSnapshot
// was never answered and a snapshot delete recorded, and a plugin slow to answer each of them:
// each is finished once, by one of the two, and nothing is sent twice (a second DeleteVolume or
// DeleteSnapshot may reach an ID the plugin gave since to another); neither reports a problem.
func TestTwoReconcilesAtOnceFinishEachThingOnce(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	newVol := volume("newvol")
	h.interrupted(csi.RPCCreateVolume, "create", func() error { _, err := h.e.CreateVolume(h.ctx, newVol); return err })
	h.create(volume("oldvol"))
	h.interrupted(csi.RPCDeleteVolume, "delete", func() error { return h.e.DeleteVolume(h.ctx, "oldvol") })
	h.interrupted(csi.RPCCreateSnapshot, "snapshot", func() error { _, err := h.e.CreateSnapshot(h.ctx, "db", "pending", nil); return err })
	gone := h.snapshot("gone")
	h.unansweredSnapshotDelete(gone.ID)
	h.faults.Clear()
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCDeleteVolume, csi.RPCCreateSnapshot, csi.RPCDeleteSnapshot} {
		h.faults.Delay(rpc, 150*time.Millisecond)
	}
	before := map[string]int{}
	for _, rpc := range []string{csi.RPCCreateVolume, csi.RPCDeleteVolume, csi.RPCCreateSnapshot, csi.RPCDeleteSnapshot} {
		before[rpc] = h.mem.CallCount(rpc)
	}
	engines := []*Engine{h.e, h.otherProcess()}
	reps := make([]ReconcileReport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Add(1)
		go func() { defer wg.Done(); reps[i], errs[i] = e.Reconcile(h.ctx) }()
	}
	wg.Wait()
	h.faults.Clear()
	for i := range engines {
		if errs[i] != nil || len(reps[i].Problems) != 0 {
			t.Errorf("reconcile %d: %v, problems %+v", i, errs[i], reps[i].Problems)
		}
	}
	for rpc, n := range before {
		if got := h.mem.CallCount(rpc) - n; got != 1 {
			t.Errorf("%s sent %d times by the two reconciles; want once", rpc, got)
		}
	}
	if got := h.volumeInfo("newvol").State; got != string(store.VolumeReady) {
		t.Errorf("volume newvol after the two reconciles: %s; want ready", got)
	}
	if _, err := h.e.Volume(h.ctx, "oldvol"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume oldvol after the two reconciles: %v; want it gone", err)
	}
	if h.recordedSnapshot(gone.ID) || h.deletingRecorded(gone.ID) {
		t.Errorf("snapshot %s after the two reconciles: still recorded or its delete still recorded", gone.ID)
	}
	if !h.recordedSnapshot("pending") {
		t.Errorf("snapshot %q after the two reconciles: not recorded", "pending")
	}
	h.reconcileClean(1)
}

// The other order: a snapshot delete in flight in another volctl (its DeleteSnapshot sent, not
// answered yet), and a snapshot create of the same name, which the plugin would answer with
// the snapshot being deleted (CreateSnapshot is idempotent by name). The create must not say it
// made a snapshot the delete then deletes. It holds: the create's CreateSnapshot waits for the
// plugin's controller lock, which the delete holds across its DeleteSnapshot, and the plugin
// makes the snapshot anew after the delete.
func TestSnapshotCreateDuringAnotherVolctlsDeleteOfItWaitsForIt(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	var created struct {
		info SnapshotInfo
		err  error
	}
	derr := h.duringOthersSnapshotDelete(s.ID, "create", func(ctx context.Context) {
		created.info, created.err = h.e.CreateSnapshot(ctx, "db", "nightly", nil)
	})
	h.createOutlivedTheDelete(created.info.ID, created.err, derr, "in flight")
}

// `volctl nomad register` of a volume (its registration on its way to Nomad, slow) and, in
// another volctl, a local claim of the same volume: the claim is refused at once, naming the
// handover, not admitted and not held until the registration ends; and once Nomad refuses the
// registration (the mark taken back), a claim again is admitted and published. It holds: the
// mark is committed before the registration is sent, and admission checks it in its
// transaction whether or not it has the volume's lock.
func TestLocalClaimDuringANomadRegistrationIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	other := h.otherProcess()
	sent, nomad := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := h.e.HandOver(h.ctx, "db", HandoverTarget{Address: "http://nomad.example:4646"}, false,
			func(context.Context, bool, VolumeInfo) (Registered, error) {
				close(sent)
				<-nomad
				return Registered{Undo: true}, errors.New("nomad refused the registration")
			})
		done <- err
	}()
	select {
	case <-sent:
	case err := <-done:
		t.Fatalf("the handover ended before its registration was sent: %v", err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	_, err := other.Claim(ctx, ClaimRequest{VolumeID: "db", Alloc: "local-0"})
	cancel()
	close(nomad)
	if herr := <-done; herr == nil {
		t.Fatal("the handover Nomad refused succeeded")
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "handed over to Nomad") {
		t.Fatalf("a local claim during the registration: %v; want a conflict naming the handover", err)
	}
	if cls := h.liveClaims("db"); len(cls) != 0 {
		t.Fatalf("claims after the refused claim: %+v; want none", cls)
	}
	if c := h.claim(ClaimRequest{VolumeID: "db", Alloc: "local-0"}); c.State != string(store.ClaimPublished) {
		t.Fatalf("the claim again once Nomad refused the registration: %+v; want published", c)
	}
}

// `volume expand` of a claimed volume (its ControllerExpandVolume held at the plugin) and, in
// another volctl, the release of the volume's only claim: the NodeExpandVolume the expand owes
// is never sent to the target or staging the release takes away. It holds: the expand holds
// the volume's lock from before its ControllerExpandVolume to after its NodeExpandVolume, and
// the release waits for it; the node expansion reaches the target while it is published, and
// every NodeExpandVolume the plugin got found its path.
func TestReleaseDuringAnExpandWaitsForItsNodeExpansion(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	other := h.otherProcess()
	expErr, relErr := h.whileHeld(csi.RPCControllerExpandVolume, "release", true,
		func() error { _, err := h.e.ExpandVolume(h.ctx, "db", 4<<20, 0); return err },
		func(ctx context.Context) error { _, err := other.Release(ctx, "db", "web-0"); return err })
	if expErr != nil {
		t.Fatalf("expand: %v", expErr)
	}
	if relErr != nil {
		t.Fatalf("release after the expand: %v", relErr)
	}
	n := 0
	for _, c := range h.mem.Calls() {
		if c.RPC == csi.RPCNodeExpandVolume {
			n++
			if c.Code != codes.OK {
				t.Errorf("NodeExpandVolume %+v answered %s: sent to a path the release took away", c.Request, c.Code)
			}
		}
	}
	if n != 1 {
		t.Errorf("NodeExpandVolume sent %d times; want once, to the published target", n)
	}
	if v := h.volumeInfo("db"); v.NodeExpansionOwed != 0 || v.CapacityBytes < 4<<20 {
		t.Errorf("volume after the expand and the release: %+v; want expanded, nothing owed", v)
	}
}

// A snapshot delete in another volctl that has recorded its delete and not yet sent
// DeleteSnapshot (the plugin's controller lock free), and a snapshot create of the same name
// answered then by the plugin with the snapshot about to be deleted (CreateSnapshot is
// idempotent by name). The create must not say it made a snapshot the delete then deletes: it
// waits for the delete (the snapshot's lock, which a delete holds from its record to its end)
// and asks the plugin again, which makes the snapshot anew. Before, it recorded the answer at
// once, taking the delete's record back, said it made the snapshot, and the delete deleted it.
func TestSnapshotCreateAnsweredWithOneAboutToBeDeletedAsksAgainAfterTheDelete(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	gate, delDone := h.deleteHeldOnceRecorded(s.ID)
	ctx, waiting := whenWaitingForAnyLock(h.ctx)
	info, err := h.createNightlyLettingTheDeleteOn(ctx, waiting, gate)
	derr := <-delDone
	h.createOutlivedTheDelete(info.ID, err, derr, "it answered beside")
}

// createOutlivedTheDelete holds a snapshot create that waited for another volctl's delete of
// the snapshot it was answered with (the delete what: "in flight"): a create that said it made
// the snapshot (id; cerr nil) left it on the plugin and recorded, the delete ended without an
// error (derr), and a reconcile then finds nothing to do.
func (h *harness) createOutlivedTheDelete(id string, cerr, derr error, what string) {
	h.t.Helper()
	h.t.Logf("delete: %v; create: %+v %v", derr, id, cerr)
	if cerr == nil && len(h.mem.Snapshots()) == 0 {
		h.t.Fatalf("the create said it made snapshot %q, and the delete %s deleted it", id, what)
	}
	if cerr == nil && !h.recordedSnapshot(id) {
		h.t.Errorf("the create's snapshot %q is not recorded", id)
	}
	if derr != nil {
		h.t.Errorf("the delete, which the create waited for: %v", derr)
	}
	h.reconcileClean(1)
}

// createNightlyLettingTheDeleteOn creates snapshot nightly of volume db with ctx, and closes
// gate, which holds a delete of it in another volctl, once the create waits for a lock
// (waiting: for the delete's) or has returned, whichever comes first; it returns the create's
// answer.
func (h *harness) createNightlyLettingTheDeleteOn(ctx context.Context, waiting <-chan struct{}, gate chan struct{}) (SnapshotInfo, error) {
	h.t.Helper()
	type result struct {
		info SnapshotInfo
		err  error
	}
	createDone := make(chan result, 1)
	go func() { info, err := h.e.CreateSnapshot(ctx, "db", "nightly", nil); createDone <- result{info, err} }()
	var created result
	select {
	case <-waiting: // it waits for the delete: let the delete go on
		close(gate)
		created = <-createDone
	case created = <-createDone:
		close(gate)
	case <-time.After(30 * time.Second):
		close(gate)
		h.t.Fatal("the create neither waited for a lock nor returned")
	}
	return created.info, created.err
}

// createStoppedOnceItLooked runs a create of snapshot "nightly" of volume db, answered with
// snapshot id, and stops it once it looked for a recorded delete of id (found none) and before
// its record, until proceed is closed; done has its error. The caller must not be parallel (it
// swaps testHookSnapshotDeleteLookedFor).
func (h *harness) createStoppedOnceItLooked(id string, proceed chan struct{}) (done <-chan error) {
	t := h.t
	t.Helper()
	looked := make(chan struct{})
	var once sync.Once
	swapsGlobals(t, "testHookSnapshotDeleteLookedFor")
	old := testHookSnapshotDeleteLookedFor
	t.Cleanup(func() { testHookSnapshotDeleteLookedFor = old })
	testHookSnapshotDeleteLookedFor = func(_, got string) {
		if got == id {
			once.Do(func() { close(looked); <-proceed })
		}
	}
	ch := make(chan error, 1)
	go func() { _, err := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil); ch <- err }()
	select {
	case <-looked:
	case err := <-ch:
		t.Fatalf("the create ended before its record: %v", err)
	case <-time.After(30 * time.Second):
		close(proceed)
		t.Fatal("the create never looked for a delete of its snapshot")
	}
	return ch
}
