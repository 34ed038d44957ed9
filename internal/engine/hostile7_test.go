package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A read claim an older volctl published read-write, claimed again by its alloc (its task
// restarted): the claim path must not hand the path back as if it were read-only. It says so,
// a conflict naming the target and the way out, and leaves the mount and the claim as they are.
func TestClaimAgainOfAReadClaimMountedReadWriteSaysSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r := writerAndReader(h)
	h.mounts.mountReadWrite(r.TargetPath)
	h.mem.ResetCalls()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "mounted read-write at "+r.TargetPath) ||
		!strings.Contains(err.Error(), "`volctl volume release v --alloc r`") {
		t.Fatalf("claim again of a read claim mounted read-write: %v; want a conflict naming the target and the way out", err)
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("the claim again sent %v: the mount is under a running alloc, and must be left", rpcs)
	}
	live := h.liveClaims("v")
	if len(live) != 2 {
		t.Fatalf("claims after the claim again = %+v, want both held", live)
	}
	// A writer's claim again is no problem, nor a read claim's once released and claimed again.
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "w"})
	h.release("v", "r")
	h.mounts.mu.Lock()
	h.mounts.readWrite = nil // the next publish honours readonly
	h.mounts.mu.Unlock()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
}

// republishedMounts is the fake table after a reboot, with what the plugin published or
// staged since (successful NodePublishVolume and NodeStageVolume calls from call index since
// on) mounted again: fakeMounts keeps a path gone once marked.
type republishedMounts struct {
	*fakeMounts
	mem   *csitest.MemPlugin
	since int
}

func (r *republishedMounts) MountsUnder(dir string) (map[string]bool, error) {
	out, err := r.fakeMounts.MountsUnder(dir)
	for _, c := range r.mem.Calls()[r.since:] {
		if c.Code != codes.OK {
			continue
		}
		switch req := c.Request.(type) {
		case csi.NodePublishVolumeRequest:
			out[req.TargetPath] = true
		case csi.NodeStageVolumeRequest:
			out[req.StagingPath] = true
		}
	}
	return out, err
}

// Two reconcile passes at once after a reboot (the agent's and a `volctl reconcile`), both
// having read the mount table and listed the claim as published with its target gone: the
// first restores it; the second, once it has the volume's lock, must not publish it again
// from its stale table. Against a plugin that answers a repeated NodePublishVolume with
// ALREADY_EXISTS, that would leave a claim that is mounted and in use recorded node-staged,
// degraded, for a reconcile that gets the same answer every pass.
func TestReconcileDoesNotRestoreAClaimRestoredMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	table := &republishedMounts{fakeMounts: h.mounts, mem: h.mem, since: len(h.mem.Calls())}
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Times: 1})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Code: codes.AlreadyExists, Message: "already published"})
	h.reconcileTwiceAtOnce(table, "v")
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() || live[0].Degraded {
		t.Fatalf("claims = %+v, want the one claim published, as it is", live)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 1 {
		t.Errorf("NodePublishVolume sent %d times, want once: the second pass published a claim restored meanwhile", n)
	}
}

// The same for a claim a failed restore left degraded, which reconcile re-drives (not
// restores), its volume's staging gone too: the first pass stages and publishes it; the
// second, from its stale table, must not mark the staging the first made unstaged. Else the
// staging row says unstaged while the plugin holds it staged for the published claim: state that
// disagrees with the host (`volume status`), and the publish path of the volume's next claim
// sends NodeStageVolume again. The claim's release still undoes the staging.
func TestReconcileDoesNotUnstageAStagingRestagedMeanwhile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	h.update(func(tx *store.Tx) error {
		cl := h.liveClaims("v")[0]
		cl.State, cl.Degraded, cl.NeedsReconcile = store.ClaimNodeStaged, true, true
		return tx.Claims().Update(&cl)
	})
	table := &republishedMounts{fakeMounts: h.mounts, mem: h.mem, since: len(h.mem.Calls())}
	h.reconcileTwiceAtOnce(table, "v")
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].AtRest() || live[0].Degraded {
		t.Fatalf("claims = %+v, want the one claim published", live)
	}
	if st, ok := h.staging("v"); !ok || !st.Staged {
		t.Errorf("staging of v = %+v (found %v), want staged: the plugin holds it staged for the published claim", st, ok)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != 1 {
		t.Errorf("NodeStageVolume sent %d times, want once", n)
	}
	h.release("v", "a")
	if _, staged := h.mem.StagingPath(h.externalID("v")); staged {
		t.Errorf("the release left the volume staged at the plugin")
	}
}

// reconcileTwiceAtOnce runs two reconcile passes at once, each in a process of its own with
// mount table table (the agent's and a `volctl reconcile`), both having read the table and
// listed the claims before either has vol's lock, which the test holds until both wait for it.
// Neither may report a problem. Fault counts start from zero.
func (h *harness) reconcileTwiceAtOnce(table MountTable, vol string) {
	h.t.Helper()
	agent, cli := h.processWith(table), h.processWith(table)
	h.faults.ResetCounts()
	unlock := h.lockVolume(vol)
	type result struct {
		rep ReconcileReport
		err error
	}
	done := make(chan result, 2)
	for _, e := range []*Engine{agent, cli} {
		ctx, waiting := whenWaitingForLock(h.ctx, vol)
		go func() { rep, err := e.Reconcile(ctx); done <- result{rep, err} }()
		select {
		case <-waiting:
		case r := <-done:
			unlock()
			h.t.Fatalf("a reconcile returned before waiting for the volume's lock: %+v, %v", r.rep, r.err)
		case <-time.After(10 * time.Second):
			unlock()
			h.t.Fatal("a reconcile never waited for the volume's lock")
		}
	}
	unlock()
	for range 2 {
		if r := <-done; r.err != nil || len(r.rep.Problems) != 0 {
			h.t.Errorf("reconcile: %+v, %v; want no problem", r.rep.Problems, r.err)
		}
	}
}

// A plugin registered under two IDs on one socket (one process, one storage) answers
// CreateSnapshot of volume db, through the first ID, with a snapshot volctl recorded under the
// second as another volume's, leaving source_volume_id out so that the answer's source says
// nothing. It is refused as a lookup under the one ID refuses it: two records of one snapshot
// would let deleting either delete the other's, and db's snapshot would be another volume's.
func TestCreateSnapshotAnsweredWithASocketMatesSnapshotIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	h.registerPlugin("mem2", h.socket)
	sv := volume("other")
	sv.PluginID = "mem2"
	h.create(sv)
	theirs, err := h.e.CreateSnapshot(h.ctx, "other", "theirs", nil)
	if err != nil {
		t.Fatal(err)
	}
	h.mem.AnswerSnapshotWithoutSource(true)
	h.createSnapshotAnsweredWith(theirs.ID, `volume "other"`, `"mem2"`)
}

// `plugin register` from another process registers the plugin ID again, for another driver,
// while `volume register` waits for the first driver's ValidateVolumeCapabilities (no volume
// uses the plugin yet, so nothing refuses the re-registration): on another socket, or on the
// same socket path, where another driver now answers (the path a link, moved to the other
// driver's socket). The register must not then record the volume as validated on the plugin
// ID, which now names a driver that never saw it: it loses, a conflict naming the plugin, and
// records nothing.
func TestVolumeRegisterOvertakenByPluginReregisteredForAnotherDriver(t *testing.T) {
	t.Parallel()
	for _, samePath := range []bool{false, true} {
		t.Run(map[bool]string{false: "another socket", true: "another driver on the socket path"}[samePath], func(t *testing.T) {
			h := newHarness(t, nil)
			d := h.anotherDriver(samePath)
			other, gate, done := h.registersHeld(1)
			go func() { _, err := h.e.RegisterVolume(h.ctx, registered("v", "ext-1")); done <- err }()
			h.waitInFlight(gate, done)
			rerr := d.reregister(h, other)
			close(gate)
			d.overtaken(h, "register", <-done, rerr)
		})
	}
}

// otherDriver is another driver served beside the harness's plugin, for plugin mem to be
// registered again as (anotherDriver).
type otherDriver struct {
	name     string // its GetPluginInfo name
	path     string // where mem is registered again: its socket, or the link mem was registered through
	socket   string
	samePath bool
	faults   *csitest.Faults
}

// anotherDriver serves another driver. With samePath, plugin mem is registered through a link to
// the harness's socket, which reregister moves to the other driver's: another driver answering
// on the socket path mem was registered on.
func (h *harness) anotherDriver(samePath bool) *otherDriver {
	h.t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.Name, cfg.NodeID = "other.csi.volctl.test", "node-1"
	d := &otherDriver{name: cfg.Name, samePath: samePath, faults: csitest.NewFaults()}
	d.socket, _ = csitest.Serve(h.t, csitest.WithServer(csitest.NewMemPlugin(cfg)), csitest.WithFaults(d.faults))
	d.path = d.socket
	if samePath {
		d.path = filepath.Join(h.t.TempDir(), "plugin.sock")
		if err := os.Symlink(h.socket, d.path); err != nil {
			h.t.Fatal(err)
		}
		h.registerPlugin("mem", d.path)
	}
	return d
}

// reregister registers plugin mem again as driver d, from other (another process), moving the
// link first with samePath; it returns the registration's error.
func (d *otherDriver) reregister(h *harness, other *Engine) error {
	h.t.Helper()
	if d.samePath {
		if err := os.Remove(d.path); err != nil {
			h.t.Fatal(err)
		}
		if err := os.Symlink(d.socket, d.path); err != nil {
			h.t.Fatal(err)
		}
	}
	_, err := other.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: d.path})
	return err
}

// overtaken checks that a command (verb) on volume v that mem's registration again as d (rerr)
// overtook lost: a conflict saying so (err), and v not recorded.
func (d *otherDriver) overtaken(h *harness, verb string, err, rerr error) {
	h.t.Helper()
	if rerr != nil {
		h.t.Fatalf("register the plugin again, with no volume recorded yet: %v", rerr)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "mem" was registered again by another volctl meanwhile`) {
		h.t.Errorf("%s = %v, want a conflict saying plugin \"mem\" was registered again meanwhile", verb, err)
	}
	if v, verr := h.e.Volume(h.ctx, "v"); verr == nil {
		h.t.Errorf("volume v is recorded on plugin %q, now driver %q, which never saw it: %+v", v.PluginID, d.name, v)
	}
}

// Registered again meanwhile as it was (the same driver on the same socket, as a configuration
// run that applies every plugin's registration does), the plugin is the one that validated the
// volume: the register goes through.
func TestVolumeRegisterNotOvertakenByPluginRegisteredAgainAsItWas(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, gate, done := h.registersHeld(1)
	go func() { _, err := h.e.RegisterVolume(h.ctx, registered("v", "ext-1")); done <- err }()
	h.waitInFlight(gate, done)
	_, rerr := other.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket})
	close(gate)
	if err := <-done; rerr != nil || err != nil {
		t.Fatalf("register the plugin again as it was: %v; the volume's register: %v; want both to succeed", rerr, err)
	}
}
