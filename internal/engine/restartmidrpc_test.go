package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// chaos32: the agent restarts the plugin while one of a command's RPCs is in flight: the
// instance the RPC reached dies without answering (UNAVAILABLE), and a new one, on a new socket
// file (listening before the old one dies), serves what the plugin keeps on disk (the same MemPlugin's volumes, stagings and
// targets), with the capabilities edit gives it (none changed when edit is nil).

// restartingHarness is a harness whose plugin is restarted so the first time method (a gRPC
// full method name) reaches it once arm is called; initial edits its configuration before.
func restartingHarness(t *testing.T, method string, initial, edit func(*csitest.MemConfig)) (h *harness, arm func(), restarted <-chan struct{}) {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	if initial != nil {
		initial(&cfg)
	}
	mem := csitest.NewMemPlugin(cfg)
	var (
		mu     sync.Mutex
		armed  bool
		stop   func()
		socket string
	)
	done := make(chan struct{})
	hook := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		fire := armed && info.FullMethod == method
		armed = armed && !fire
		mu.Unlock()
		if !fire {
			return handler(ctx, req)
		}
		// The new instance listens (its socket file renamed over the old one's) before the old
		// one stops: the command, seeing its connection closed, reconnects to the new one, never
		// to an empty path ("nothing is listening"), however slowly this goroutine runs.
		if edit != nil {
			mem.Reconfigure(edit)
		}
		csitest.ServeAt(t, socket, csitest.WithServer(mem), csitest.ReplacingSocket())
		stop()
		close(done)
		return nil, status.Error(codes.Unavailable, "the plugin was killed")
	}
	socket, stop = csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(hook))
	h = &harness{t: t, ctx: context.Background(), mem: mem, faults: csitest.NewFaults(), socket: socket, dir: t.TempDir(), mounts: newFakeMounts(mem)}
	h.open(Config{})
	h.registerPlugin("mem", socket)
	return h, func() { mu.Lock(); armed = true; mu.Unlock() }, done
}

// The same plugin restarted, same capabilities, while a claim's NodeStageVolume and a release's
// NodeUnstageVolume are in flight: the command goes on with the new instance and finishes, the
// store matching the plugin.
func TestPluginRestartedMidRPCSameCapabilitiesFinishes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, op string }{
		{"/csi.v1.Node/NodeStageVolume", "claim"},
		{"/csi.v1.Node/NodePublishVolume", "claim"},
		{"/csi.v1.Node/NodeUnstageVolume", "release"},
		{"/csi.v1.Controller/ControllerUnpublishVolume", "release"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			h, arm, restarted := restartingHarness(t, tc.method, nil, nil)
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			var err error
			if tc.op == "claim" {
				arm()
				_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			} else {
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
				arm()
				_, err = h.e.Release(h.ctx, "v", "a")
			}
			waitFor(t, restarted, "the plugin's restart")
			if err != nil {
				t.Errorf("%s with the plugin restarted (same driver, same capabilities) during %s: %v", tc.op, tc.method, err)
			}
			h.storeMatchesPlugin(tc.op + " across the restart")
		})
	}
}

// The same driver restarted without STAGE_UNSTAGE_VOLUME while a claim's NodeStageVolume is in
// flight, and with it while a claim's NodePublishVolume is (a volume never staged): the claim's
// steps were chosen by the capabilities before, so it sends nothing more, stops saying the
// plugin restarted with other capabilities, which (it said "other capabilities or another node
// ID", not which), and what to run; reconcile then publishes it by the new capabilities, the
// store matching the plugin.
func TestPluginRestartedMidRPCWithOtherCapabilities(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method string
		stage        bool   // the plugin's STAGE_UNSTAGE_VOLUME before the restart
		change       string // what the claim's error says changed
	}{
		{"lost-stage", "/csi.v1.Node/NodeStageVolume", true, "lost STAGE_UNSTAGE_VOLUME"},
		{"gained-stage", "/csi.v1.Node/NodePublishVolume", false, "gained STAGE_UNSTAGE_VOLUME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, arm, restarted := restartingHarness(t, tc.method,
				func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = tc.stage },
				func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = !tc.stage })
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			arm()
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			waitFor(t, restarted, "the plugin's restart")
			t.Logf("claim: %v", err)
			if err == nil {
				t.Fatalf("the claim succeeded by the capabilities of the plugin before its restart")
			}
			for _, want := range []string{`"v"`, "`volctl reconcile`", tc.change} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("claim: %v\nwant it to say %q: the volume, what to run, what changed", err, want)
				}
			}
			rep, rerr := h.e.Reconcile(h.ctx)
			if rerr != nil || !rep.OK() {
				t.Fatalf("reconcile after the restart: %v, problems %+v", rerr, rep.Problems)
			}
			h.storeMatchesPlugin("reconcile after the restart")
			if live := h.liveClaims("v"); len(live) != 1 {
				t.Errorf("live claims %+v, want a's, published by reconcile", live)
			}
		})
	}
}

// A snapshot's DeleteSnapshot hangs at the plugin while another volctl deletes the snapshot's
// source volume: both finish (or the volume delete says what it waited for or refused, naming
// the volume), and the store's volumes and snapshots match the plugin's after.
func TestSourceVolumeDeletedWhileItsSnapshotsDeleteHangs(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	other := h.otherProcess()
	derr, verr := h.whileHeld(csi.RPCDeleteSnapshot, "volume delete", false,
		func() error { return h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil) },
		func(ctx context.Context) error { return other.DeleteVolume(ctx, "db") })
	if derr != nil {
		t.Errorf("the snapshot delete: %v", derr)
	}
	saysWhatItWaitedFor(t, "the volume delete", verr, "db")
	h.storeMatchesPlugin("after both")
	h.snapshotsMatch("after both")
	if verr == nil && len(h.mem.Volumes()) != 0 {
		t.Errorf("the volume delete succeeded and the plugin still has %+v", h.mem.Volumes())
	}
}

// A snapshot delete's lock file is removed (by hand, a cleanup of the state dir) once the
// delete is recorded and before its DeleteSnapshot is sent, and another volctl creates a
// snapshot of the same name meanwhile, answered with the snapshot being deleted (a plugin's
// CreateSnapshot is idempotent by name). The create waits for a delete in flight by the
// snapshot's lock: on the new file, it does not, and records the snapshot as made. The delete
// must not go on to delete it: before, it sent DeleteSnapshot, the plugin deleted the snapshot
// the create had just said it made, and the store kept a record of a snapshot nobody has. It
// stops, as a volume operation whose lock file is removed does (stillHeld), sending nothing and
// naming the lock file and the snapshot.
func TestSnapshotLockFileRemovedBeforeTheDeleteIsSentStopsTheDelete(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	other := h.otherProcess()
	p := pauseAtFailpoint(t, h.e, "snapshot:deleting")
	delDone := make(chan error, 1)
	go func() { delDone <- h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil) }()
	waitFor(t, p.reached, "the delete to record itself")
	lockPath := filepath.Join(h.dir, lockDir, "snapshot-"+lockHash("mem\x00"+s.ID)+".lock")
	if err := os.Remove(lockPath); err != nil {
		p.release()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	made, cerr := other.CreateSnapshot(ctx, "db", "nightly", nil)
	p.release()
	derr := <-delDone
	if cerr == nil {
		found := false
		for _, ps := range h.mem.Snapshots() {
			found = found || ps.ID == made.ID
		}
		if !found {
			t.Errorf("the create said it made snapshot %s, and the delete whose lock file was removed deleted it (the delete returned %v)", made.ID, derr)
		}
	}
	if derr == nil {
		t.Errorf("the delete whose lock file was removed before its DeleteSnapshot went on and said it deleted snapshot %s", s.ID)
	} else {
		wantSays(t, "the delete", derr, lockPath, "removed", s.ID)
	}
	h.snapshotsMatch("after the create and the delete")
}

// review32f: a snapshot create answered with a snapshot whose delete is recorded takes the
// snapshot's lock and asks again (finishSnapshot). Its lock file removed while it holds it,
// another volctl's delete of the snapshot takes the lock on a new file, deletes the snapshot and
// forgets it. Before, the create, which checked only the source volume's lock before recording,
// then recorded the snapshot as made and said it made it, and the plugin had none. It stops,
// naming the lock file, recording nothing, its intent kept for reconcile.
func TestSnapshotCreateThatWaitedForADeleteStopsOnALostSnapshotLock(t *testing.T) {
	t.Parallel()
	h, s, other, lockPath := snapshotWithAnUnansweredDelete(t)
	var derr error
	ran, calls := false, 0
	marked := make(chan struct{})
	onFailpoints(t, func(n string) {
		if n == "snapshot:deleting" {
			close(marked)
		}
	}, h.e, other)
	delDone := make(chan struct{})
	// The second CreateSnapshot (the one asked again under the snapshot's lock) answered, before
	// the create reads the answer: the lock file removed, another volctl's delete takes the lock
	// on a new file and records itself (it then waits for the controller lock this create holds).
	h.faults.Inject(csi.RPCCreateSnapshot, csitest.Fault{Times: 2, Answer: func(proto.Message) {
		if calls++; calls != 2 {
			return // the first answer: the create has not taken the snapshot's lock yet
		}
		ran = true
		if err := os.Remove(lockPath); err != nil {
			t.Error(err)
			close(delDone)
			return
		}
		go func() { defer close(delDone); derr = other.DeleteSnapshot(context.Background(), "mem", s.ID, nil) }()
		select {
		case <-marked:
		case <-delDone:
		}
	}})
	made, cerr := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if !ran {
		t.Fatalf("the create never asked again under the snapshot's lock (it returned %v)", cerr)
	}
	<-delDone
	t.Logf("the other volctl's delete: %v; the create: %v", derr, cerr)
	if cerr == nil {
		found := false
		for _, ps := range h.mem.Snapshots() {
			found = found || ps.ID == made.ID
		}
		if !found {
			t.Errorf("the create said it made snapshot %s (its snapshot lock file removed while it held it), and another volctl's delete had deleted it: the plugin has %+v", made.ID, h.mem.Snapshots())
		}
	} else {
		wantSays(t, "the create", cerr, lockPath, "removed", "nightly", "volctl reconcile")
	}
	h.snapshotsMatch("after the create and the other volctl's delete")
}

// review32f: as above, the lock file removed after the create checked its snapshot's lock
// (failpoint snapshot:asked-again), before it records the answer; another volctl's delete takes
// the lock on a new file, deletes the snapshot and forgets it meanwhile. A check before the
// transaction alone let the create record the snapshot (and Undelete wipe a delete's mark
// recorded in between): it is checked again inside the record's transaction.
func TestSnapshotCreateThatWaitedForADeleteChecksItsLockWhenRecording(t *testing.T) {
	t.Parallel()
	h, s, other, lockPath := snapshotWithAnUnansweredDelete(t)
	var derr error
	ran := false
	onFailpoints(t, func(n string) {
		if n != "snapshot:asked-again" || ran {
			return
		}
		ran = true
		if err := os.Remove(lockPath); err != nil {
			t.Error(err)
			return
		}
		derr = other.DeleteSnapshot(context.Background(), "mem", s.ID, nil)
	}, h.e, other)
	made, cerr := h.e.CreateSnapshot(h.ctx, "db", "nightly", nil)
	if !ran {
		t.Fatalf("the create never passed snapshot:asked-again (it returned %v)", cerr)
	}
	t.Logf("the other volctl's delete: %v; the create: %v", derr, cerr)
	if derr != nil {
		t.Fatalf("the other volctl's delete, on a new lock file: %v", derr)
	}
	if cerr == nil {
		t.Errorf("the create said it made snapshot %s after another volctl's delete, on a new lock file, deleted it: the plugin has %+v", made.ID, h.mem.Snapshots())
	} else if !strings.Contains(cerr.Error(), lockPath) {
		t.Errorf("the create: %v\nwant it to name the lock file %s", cerr, lockPath)
	}
	h.snapshotsMatch("after the create and the other volctl's delete")
}

// review32f: a snapshot deregister holds the snapshot's lock, and its lock file is removed
// meanwhile (failpoint snapshot:deregistering); another volctl's delete of the snapshot takes
// the lock on a new file and records itself, its DeleteSnapshot not sent yet. Before, the
// deregister, which never checked its lock, wiped that delete's mark and the record and said the
// snapshot was left on the plugin, and the delete then deleted it. It stops, naming the lock
// file, forgetting nothing; the delete finishes.
func TestSnapshotDeregisterStopsOnALostSnapshotLock(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	other := h.otherProcess()
	lockPath := filepath.Join(h.dir, lockDir, "snapshot-"+lockHash("mem\x00"+s.ID)+".lock")
	var derr error
	ran := false
	marked, proceed, delDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	onFailpoints(t, func(n string) {
		switch {
		case n == "snapshot:deleting":
			close(marked)
			<-proceed // the other delete's DeleteSnapshot waits for the deregister's end
		case n == "snapshot:deregistering" && !ran:
			ran = true
			if err := os.Remove(lockPath); err != nil {
				t.Error(err)
				return
			}
			go func() { defer close(delDone); derr = other.DeleteSnapshot(context.Background(), "mem", s.ID, nil) }()
			select {
			case <-marked:
			case <-delDone:
			}
		}
	}, h.e, other)
	warnings, err := h.e.DeregisterSnapshot(h.ctx, "mem", s.ID)
	close(proceed)
	if !ran {
		t.Fatalf("the deregister never passed snapshot:deregistering (it returned %v)", err)
	}
	<-delDone
	t.Logf("the other volctl's delete: %v; the deregister: %v %q", derr, err, warnings)
	if err == nil {
		if len(h.mem.Snapshots()) == 0 {
			t.Errorf("the deregister, its snapshot lock file removed, said %q, and another volctl's delete, on a new lock file, deleted the snapshot", warnings)
		}
	} else if !strings.Contains(err.Error(), lockPath) {
		t.Errorf("the deregister: %v\nwant it to name the lock file %s", err, lockPath)
	}
	if derr != nil {
		t.Errorf("the other volctl's delete, on a new lock file: %v", derr)
	}
	h.snapshotsMatch("after the deregister and the other volctl's delete")
}

// snapshotWithAnUnansweredDelete makes snapshot nightly of volume db and a delete of it the
// plugin never answered (its mark recorded, the snapshot kept), and returns another volctl
// process and the path of the snapshot's lock file.
func snapshotWithAnUnansweredDelete(t *testing.T) (*harness, SnapshotInfo, *Engine, string) {
	t.Helper()
	h, _ := snapshotHarness(t, nil)
	s := h.snapshot("nightly")
	h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Code: codes.Unavailable})
	if err := h.e.DeleteSnapshot(h.ctx, "mem", s.ID, nil); err == nil {
		t.Fatal("the unanswered delete succeeded")
	}
	h.faults.Clear(csi.RPCDeleteSnapshot)
	return h, s, h.otherProcess(), filepath.Join(h.dir, lockDir, "snapshot-"+lockHash("mem\x00"+s.ID)+".lock")
}

// wantSays fails the test unless err's message says each of wants.
func wantSays(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant it to say %q", what, err, want)
		}
	}
}
