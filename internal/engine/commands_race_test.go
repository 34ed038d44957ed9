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

// otherProcess opens a second engine on the harness's state dir: another volctl process, with
// its own lock files open, its own connections and its own store handle.
func (h *harness) otherProcess() *Engine {
	h.t.Helper()
	return h.processWith(h.mounts)
}

// processWith opens an engine on the harness's state dir, another process's, whose mount table
// is table.
func (h *harness) processWith(table MountTable) *Engine {
	h.t.Helper()
	e, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: table,
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { e.Close() })
	return e
}

// waitInFlight waits until an RPC is held at the plugin (at a Fault's Gate: Faults.Held, not
// merely in flight, which an RPC passing through to the plugin is too), failing the test if
// none arrives in time; done is the operation's result, read to report why it never came.
func (h *harness) waitInFlight(gate chan struct{}, done <-chan error) {
	h.t.Helper()
	h.waitHeld(1, gate, done)
}

// waitHeld is waitInFlight for n RPCs held at once, of n operations reporting to done.
func (h *harness) waitHeld(n int, gate chan struct{}, done <-chan error) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.faults.Held() < n {
		select {
		case err := <-done:
			close(gate)
			h.t.Fatalf("the operation returned before its RPC was held: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			close(gate)
			h.t.Fatalf("fewer than %d RPCs were held at the plugin at once", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitFor waits for ch to close, failing the test after a bound.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// groupLiveClaims returns the live claims of a group, on any volume.
func (h *harness) groupLiveClaims(group string) []store.Claim {
	h.t.Helper()
	var out []store.Claim
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		all, err := tx.Claims().ListAll()
		for _, c := range all {
			if c.Group == group {
				out = append(out, c)
			}
		}
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// A `group stop` from another process lands while `group run` is publishing the alloc's first
// volume: the stop has marked the group stopped and listed its claims (the first one only) and
// waits for that volume's lock. The run must not go on to claim the alloc's other volume for a
// group that is now stopped: nothing would release that claim (the stop listed its claims
// already) but claim GC, which would pull the mount from under an alloc the run reported as
// having it. The run loses, a conflict naming the stopped group, and leaves nothing claimed.
func TestGroupStoppedWhileRunningLeavesNoClaim(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.createDBVolumes(1)
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1}) // data[0]'s publish
	runDone := make(chan error, 1)
	go func() { _, err := h.e.RunGroup(h.ctx, dbGroup(1)); runDone <- err }()
	h.waitInFlight(gate, runDone)

	stopCtx, waiting := whenWaitingForLock(h.ctx, "data[0]")
	stopDone := make(chan error, 1)
	go func() { _, err := other.StopGroup(stopCtx, "db"); stopDone <- err }()
	waitFor(t, waiting, "the stop to wait for data[0]'s lock")
	close(gate)

	runErr, stopErr := <-runDone, <-stopDone
	if stopErr != nil {
		t.Errorf("stop: %v", stopErr)
	}
	if !errors.Is(runErr, ErrConflict) || !strings.Contains(runErr.Error(), `group "db" was stopped`) {
		t.Errorf("run = %v, want a conflict saying group \"db\" was stopped meanwhile", runErr)
	}
	if live := h.groupLiveClaims("db"); len(live) != 0 {
		t.Errorf("group db is stopped and still holds %d claim(s): %+v", len(live), live)
	}
	for _, v := range []string{"data[0]", "shared"} {
		ext := h.externalID(v)
		if tg := h.mem.Targets(ext); len(tg) > 0 {
			t.Errorf("volume %s still published at %v", v, tg)
		}
	}
}

// runOvertaking runs group db with count allocs, then starts op (a stop or a scale-down of the
// group) and, once op waits for vol's lock (held meanwhile by a third process's operation), runs
// the group again with count from another process. It returns that run's result and error, and
// op's error.
func (h *harness) runOvertaking(count int, vol string, op func(ctx context.Context) error) (GroupInfo, error, error) {
	h.t.Helper()
	h.createDBVolumes(count)
	if _, err := h.e.RunGroup(h.ctx, dbGroup(count)); err != nil {
		h.t.Fatal(err)
	}
	other := h.otherProcess()
	unlock := h.lockVolume(vol)
	ctx, waiting := whenWaitingForLock(h.ctx, vol)
	opDone := make(chan error, 1)
	go func() { opDone <- op(ctx) }()
	waitFor(h.t, waiting, "the operation to wait for "+vol+"'s lock")
	info, runErr := other.RunGroup(h.ctx, dbGroup(count))
	unlock()
	return info, runErr, <-opDone
}

// A `group stop`, or a `group run` with a smaller count scaling the group down, has recorded
// the group (stopped, or the new count) and listed the claims it releases, and waits for one of
// their volumes' lock, when a `group run` from another process records the group running with
// the larger count again and gets those allocs' claims (held already, so returned at once). The
// stop or scale-down must not then release claims that the later run handed out: it loses, a
// conflict saying the group was run again, and the claims stay.
func TestGroupStopOrScaleDownOvertakenByRunKeepsTheRunsClaims(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		count int    // the group's count, and the overtaking run's
		vol   string // the volume whose lock the stop or scale-down waits for: alloc count-1's
		op    func(e *Engine, ctx context.Context) error
	}{
		{"stop", 1, "data[0]", func(e *Engine, ctx context.Context) error { _, err := e.StopGroup(ctx, "db"); return err }},
		{"scale-down", 2, "data[1]", func(e *Engine, ctx context.Context) error { _, err := e.RunGroup(ctx, dbGroup(1)); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			info, runErr, opErr := h.runOvertaking(tc.count, tc.vol, func(ctx context.Context) error { return tc.op(h.e, ctx) })
			if runErr != nil {
				t.Fatalf("run: %v", runErr)
			}
			last := tc.count - 1
			if len(info.Allocs) != tc.count || len(info.Allocs[last].Claims) != 2 {
				t.Fatalf("run = %+v, want alloc db[%d] with its two claims", info, last)
			}
			if !errors.Is(opErr, ErrConflict) || !strings.Contains(opErr.Error(), `group "db" was run again`) {
				t.Errorf("%s = %v, want a conflict saying group \"db\" was run again meanwhile", tc.name, opErr)
			}
			if live := h.groupLiveClaims("db"); len(live) != 2*tc.count {
				t.Errorf("group db, run again, holds %d claim(s), want %d: %+v", len(live), 2*tc.count, live)
			}
			for _, c := range info.Allocs[last].Claims {
				if tg := h.mem.Targets(h.externalID(c.VolumeID)); len(tg) == 0 {
					t.Errorf("volume %s, which the run handed out, is not published", c.VolumeID)
				}
			}
			gs, err := h.e.Groups(h.ctx, "db")
			if err != nil || gs[0].State != string(store.GroupRunning) || gs[0].Count != tc.count {
				t.Errorf("group db = %+v %v, want running with count %d", gs, err, tc.count)
			}
		})
	}
}

// registersHeld readies n registers of the plugin's volume "ext-1" to be held at their
// ValidateVolumeCapabilities until gate is closed, their errors sent to done; other is a second
// process to run one of them, or what races them, in.
func (h *harness) registersHeld(n int) (other *Engine, gate chan struct{}, done chan error) {
	h.t.Helper()
	h.mem.AddVolume(csi.Volume{ID: "ext-1", CapacityBytes: 1 << 30})
	gate = make(chan struct{})
	h.faults.Inject(csi.RPCValidateVolumeCapabilities, csitest.Fault{Gate: gate, Times: n})
	return h.otherProcess(), gate, make(chan error, n)
}

// `plugin deregister` from another process lands while `volume register` waits for the plugin's
// ValidateVolumeCapabilities: the deregistration finds no volume using the plugin and goes
// through. The register must not then record a volume on a plugin that is no longer registered
// (which the deregistration refuses to leave behind without --force): it loses, a conflict
// naming the plugin, and records nothing.
func TestVolumeRegisterOvertakenByPluginDeregister(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, gate, done := h.registersHeld(1)
	go func() { _, err := h.e.RegisterVolume(h.ctx, registered("v", "ext-1")); done <- err }()
	h.waitInFlight(gate, done)
	derr := other.DeregisterPlugin(h.ctx, "mem", false)
	close(gate)
	err := <-done
	if derr != nil {
		t.Fatalf("deregister, with no volume recorded yet: %v", derr)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "mem" was deregistered by another volctl meanwhile`) {
		t.Errorf("register = %v, want a conflict saying plugin \"mem\" was deregistered meanwhile", err)
	}
	if v, verr := h.e.Volume(h.ctx, "v"); verr == nil {
		t.Errorf("volume v is recorded on plugin %q, which is not registered: %+v", v.PluginID, v)
	}
}

// Two processes register one storage volume (one external ID) under two volume IDs at once,
// both past ValidateVolumeCapabilities before either records: exactly one records it, and the
// other is a conflict naming the one that did (the check and the record are one write
// transaction), never two volumes on one storage.
func TestConcurrentRegistersOfOneExternalIDUnderTwoIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, gate, done := h.registersHeld(2)
	go func() { _, err := h.e.RegisterVolume(h.ctx, registered("a", "ext-1")); done <- err }()
	go func() { _, err := other.RegisterVolume(h.ctx, registered("b", "ext-1")); done <- err }()
	h.waitHeld(2, gate, done)
	close(gate)
	var errs []error
	for range 2 {
		if err := <-done; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrConflict) || !strings.Contains(errs[0].Error(), `external ID "ext-1" on plugin "mem" is already registered as volume`) {
		t.Fatalf("errors = %v, want exactly one register refused as a conflict naming the other", errs)
	}
	vols, err := h.e.Volumes(h.ctx)
	if err != nil || len(vols) != 1 {
		t.Fatalf("volumes = %+v %v, want one", vols, err)
	}
}

// An alloc claims again a claim a failed publish left for reconcile, while the agent's reconcile
// is re-driving it: the claim waits for the volume's lock, and the reconcile's NodeStageVolume
// fails for good, which rolls the claim back. The claim command must say that its publish
// failed, with the plugin's error, as a runtime error (exit 1): not that another volctl
// released the claim (a conflict, exit 4, which would send the user looking for a release
// nobody ran).
func TestClaimRolledBackByReconcileMeanwhileSaysWhy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailNext(csi.RPCNodeStageVolume, codes.Unavailable, fastRetry.Attempts)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"}); err == nil {
		t.Fatal("claim succeeded through a NodeStageVolume failing UNAVAILABLE")
	}
	if live := h.liveClaims("v"); len(live) != 1 {
		t.Fatalf("live claims = %+v, want the one left for reconcile", live)
	}
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeStageVolume, csitest.Fault{Gate: gate, Code: codes.InvalidArgument, Message: "bad fs_type", Times: 1})
	recDone := make(chan error, 1)
	go func() { _, err := other.Reconcile(h.ctx); recDone <- err }()
	h.waitInFlight(gate, recDone)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	claimDone := make(chan error, 1)
	go func() { _, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"}); claimDone <- err }()
	waitFor(t, waiting, "the claim to wait for v's lock")
	close(gate)
	<-recDone
	err := <-claimDone
	if err == nil {
		t.Fatal("the claim succeeded, its publish rolled back")
	}
	if errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "bad fs_type") {
		t.Errorf("claim = %v, want a runtime error carrying the plugin's NodeStageVolume error", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("live claims = %+v, want none (rolled back)", live)
	}
}

// A claim admitted while `volume expand` holds the volume (admitted without its lock, so that a
// refusal is immediate) fixes the volume's access mode as the first live claim; the expand,
// answered after that, must not write back the modes it read before its
// ControllerExpandVolume: a volume whose claim holds it single-node-writer but whose record says
// no mode would admit a second writer asking for another mode.
func TestExpandKeepsTheModesOfAClaimAdmittedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter), capab(spec.MultiNodeMultiWriter)))
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Gate: gate, Times: 1})
	expDone := make(chan error, 1)
	go func() { _, err := h.e.ExpandVolume(h.ctx, "v", 2<<20, 0); expDone <- err }()
	h.waitInFlight(gate, expDone)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	claimDone := make(chan error, 1)
	go func() {
		_, err := other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0", AccessMode: spec.SingleNodeWriter})
		claimDone <- err
	}()
	waitFor(t, waiting, "the claim to wait for v's lock")
	close(gate)
	if err := <-expDone; err != nil {
		t.Fatalf("expand: %v", err)
	}
	if err := <-claimDone; err != nil {
		t.Fatalf("claim: %v", err)
	}
	if v := h.volumeInfo("v"); v.AccessMode != spec.SingleNodeWriter {
		t.Errorf("volume v, claimed single-node-writer by web-0, records access mode %q", v.AccessMode)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-1", AccessMode: spec.MultiNodeMultiWriter})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("a second writer (multi-node-multi-writer) on v, held single-node-writer by web-0: %v, want a conflict", err)
	}
}

// A reconcile (the agent's, every minute) lists a volume while a `volume delete` has it marked
// deleting, and waits for its lock; the plugin refuses the delete (FAILED_PRECONDITION: it has
// snapshots, say), and the delete puts the volume back to ready, telling the user it is kept.
// The reconcile must not then finish a delete from its stale list: it would send DeleteVolume
// for a volume nobody is deleting any more, and forget it.
func TestReconcileDoesNotFinishADeleteThatWasRefusedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	ext := h.externalID("v")
	other := h.otherProcess()

	gate := make(chan struct{})
	h.faults.Inject(csi.RPCDeleteVolume, csitest.Fault{Gate: gate, Code: codes.FailedPrecondition, Message: "volume has snapshots", Times: 1})
	delDone := make(chan error, 1)
	go func() { delDone <- h.e.DeleteVolume(h.ctx, "v") }()
	h.waitInFlight(gate, delDone)

	ctx, waiting := whenWaitingForLock(h.ctx, "v")
	recDone := make(chan error, 1)
	go func() { _, err := other.Reconcile(ctx); recDone <- err }()
	waitFor(t, waiting, "the reconcile to wait for v's lock")
	close(gate)
	if err := <-delDone; err == nil || !strings.Contains(err.Error(), "the volume is kept, ready") {
		t.Fatalf("delete = %v, want it refused with the volume kept", err)
	}
	if err := <-recDone; err != nil {
		t.Errorf("reconcile: %v", err)
	}
	if n := h.faults.Calls(csi.RPCDeleteVolume); n != 1 {
		t.Errorf("DeleteVolume sent %d times, want once (the refused delete's)", n)
	}
	if _, ok := h.mem.Volume(ext); !ok {
		t.Error("the plugin no longer has the volume the refused delete kept")
	}
	if v, err := h.e.Volume(h.ctx, "v"); err != nil || v.State != string(store.VolumeReady) {
		t.Errorf("volume v = %+v, %v; want it kept, ready", v, err)
	}
}

// The same for a create: a reconcile lists the volume while a `volume create` has it creating,
// and waits for its lock while the create's CreateVolume is held; the create records it ready.
// The reconcile must not send CreateVolume again from its stale list, nor write back the stale
// record over what the create recorded.
func TestReconcileDoesNotFinishACreateFinishedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	create := func() error { _, err := h.e.CreateVolume(h.ctx, volume("v")); return err }
	createErr, err, rep := h.reconcileBeside(h.otherProcess(), csi.RPCCreateVolume, create, "v")
	if createErr != nil {
		t.Fatalf("create: %v", createErr)
	}
	if err != nil {
		t.Errorf("reconcile: %v", err)
	}
	if n := h.faults.Calls(csi.RPCCreateVolume); n != 1 {
		t.Errorf("CreateVolume sent %d times, want once (the create's)", n)
	}
	for _, a := range rep.Actions {
		if a.VolumeID == "v" {
			t.Errorf("reconcile reports %q for a create it did not finish", a.Message)
		}
	}
}
