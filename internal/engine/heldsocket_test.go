package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// heldHarness is newHarness with plugin mem registered on a socket something else holds
// (csitest.HoldSocket), forwarding to the in-memory plugin: the plugin behind it can be
// replaced without the socket file changing.
func heldHarness(t *testing.T) (h *harness, held *csitest.HeldSocket, backend string) {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	h = &harness{t: t, ctx: t.Context(), mem: csitest.NewMemPlugin(cfg), faults: csitest.NewFaults(), dir: t.TempDir()}
	backend, stop := csitest.Serve(t, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
	held = csitest.HoldSocket(t, backend)
	h.socket, h.stopServe = held.Path(), stop
	h.mounts = newFakeMounts(h.mem)
	h.open(Config{})
	h.registerPlugin("mem", h.socket)
	return h, held, backend
}

// driverBehind serves, behind held, another driver than mem's holding a volume of its own
// under each of ids (the sequential IDs many drivers give): what a replaced plugin behind a
// held socket answers with.
func driverBehind(t *testing.T, held *csitest.HeldSocket, ids ...string) *csitest.MemPlugin {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.Name, cfg.NodeID = "other.csi.example", "node-1"
	other := csitest.NewMemPlugin(cfg)
	for _, id := range ids {
		other.AddVolume(csi.Volume{ID: id, CapacityBytes: 1 << 20})
	}
	socket, _ := csitest.Serve(t, csitest.WithServer(other))
	held.Switch(socket)
	return other
}

// A plugin replaced behind a held socket by another driver: the socket file is the one the
// stored fingerprint was taken through, so the next process reuses it without an RPC. Its
// DeleteVolume would go to the other driver, which deletes its own volume of that ID (data
// that is not volctl's) or answers OK for one it never had, and volctl would forget the
// volume whose storage the registered driver still holds. DeleteVolume is not sent to a driver
// that is not the registered one.
func TestDeleteThroughAHeldSocketServedByAnotherDriverDeletesNothing(t *testing.T) {
	t.Parallel()
	for _, collide := range []bool{true, false} {
		name := "other driver has no such volume"
		if collide {
			name = "other driver has a volume of that ID"
		}
		t.Run(name, func(t *testing.T) {
			h, held, backend := heldHarness(t)
			ext := h.create(volume("db")).ExternalID
			var ids []string
			if collide {
				ids = []string{ext}
			}
			other := driverBehind(t, held, ids...)
			h.open(Config{}) // the next process

			err := h.e.DeleteVolume(h.ctx, "db")
			if n := other.CallCount(csi.RPCDeleteVolume); n != 0 {
				t.Errorf("DeleteVolume sent %d time(s) to driver other.csi.example", n)
			}
			if _, ok := other.Volume(ext); collide && !ok {
				t.Errorf("the other driver's volume %q was deleted", ext)
			}
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"other.csi.example"`) || !strings.Contains(err.Error(), `"mem.csi.volctl.test"`) {
				t.Errorf("delete through the other driver: %v; want a conflict naming both drivers", err)
			}
			if info, err := h.e.Volume(h.ctx, "db"); err != nil || info.ExternalID != ext {
				t.Fatalf("volume db after the delete: external ID %q, %v; want it still recorded on %q", info.ExternalID, err, ext)
			}
			if _, ok := h.mem.Volume(ext); !ok {
				t.Fatalf("the registered driver lost volume %q", ext)
			}
			// The refusal is not for this command only: the next connection (reconcile's, which
			// finishes the delete) fingerprints the plugin again and refuses it, as for a restart
			// on a new socket file; once the registered driver is back, the delete finishes.
			h.open(Config{})
			if rep, err := h.e.Reconcile(h.ctx); err == nil || !strings.Contains(fmt.Sprint(rep.Problems), `now served by "other.csi.example"`) {
				t.Errorf("reconcile with the other driver behind the socket: %v %+v; want the connection refused, naming the driver", err, rep.Problems)
			}
			if got := volumeRPCs(other); len(got) != 0 {
				t.Errorf("volume RPCs sent to the other driver: %v", got)
			}
			held.Switch(backend)
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile with the registered driver back: %v %+v", err, rep)
			}
			if _, ok := h.mem.Volume(ext); ok {
				t.Errorf("the registered driver still has volume %q after the delete finished", ext)
			}
			if _, err := h.e.Volume(h.ctx, "db"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume db after the delete finished: %v, want not found", err)
			}
		})
	}
}

// A ControllerUnpublishVolume a forced detach left owed, sent by reconcile through a held
// socket another driver now serves: its NOT_FOUND says that driver has no such volume, not
// that the registered one detached it. The attachment stays recorded.
func TestOwedUnpublishAnsweredNotFoundByAnotherDriverIsKept(t *testing.T) {
	t.Parallel()
	h, held, _ := heldHarness(t)
	forceDetachFailingControllerUnpublish(t, h)
	driverBehind(t, held)
	h.open(Config{})
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil && len(rep.Problems) == 0 {
		t.Errorf("reconcile reported nothing: %+v", rep)
	}
	checkOwedUnpublishKept(t, h)
}

// The same for DeleteSnapshot: another driver behind the held socket holding a snapshot of the
// same ID is not asked to delete it, and volctl's record stays.
func TestDeleteSnapshotThroughAHeldSocketServedByAnotherDriverDeletesNothing(t *testing.T) {
	t.Parallel()
	h, held, _ := heldHarness(t)
	h.create(volume("db"))
	sn, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	other := driverBehind(t, held)
	other.AddSnapshot(csi.Snapshot{ID: sn.ID, SourceVolumeID: "theirs", SizeBytes: 1 << 20, ReadyToUse: true})
	h.open(Config{})

	err = h.e.DeleteSnapshot(h.ctx, "mem", sn.ID, nil)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `now served by "other.csi.example"`) {
		t.Errorf("snapshot delete through the other driver: %v; want a conflict naming it", err)
	}
	if n := other.CallCount(csi.RPCDeleteSnapshot); n != 0 {
		t.Errorf("DeleteSnapshot sent %d time(s) to driver other.csi.example", n)
	}
	if len(other.Snapshots()) != 1 {
		t.Errorf("the other driver's snapshot %q was deleted", sn.ID)
	}
	recs, err := h.e.RecordedSnapshots(h.ctx, "mem")
	if err != nil || len(recs) != 1 {
		t.Errorf("volctl's snapshot records after the refused delete: %+v, %v; want s1's kept", recs, err)
	}
}

// A plugin restarted behind a held socket having gained STAGE_UNSTAGE_VOLUME: volctl, reusing
// the fingerprint from before, sends NodePublishVolume without a staging path, which the
// plugin refuses with FAILED_PRECONDITION (as the CSI spec says it does). That answer makes
// volctl fingerprint the plugin again: the claim is left for reconcile saying the plugin
// changed, as when it restarts mid-operation on a new socket file, and reconcile, fingerprinting
// afresh, stages and publishes it; before, reconcile and every claim failed the same way until
// the socket file was touched.
func TestClaimThroughAPluginThatGainedStagingBehindAHeldSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })
	h.create(volume("db"))
	h.mem.Reconfigure(func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = true }) // the same socket file
	h.open(Config{})

	claimLeftThenReconciled(t, h, "other capabilities")
	if st, ok := h.staging("db"); !ok || !st.Staged {
		t.Errorf("staging after reconcile = %+v (found %v), want the volume staged", st, ok)
	}
	h.release("db", "web-0")
	if _, ok := h.mem.StagingPath(h.externalID("db")); ok {
		t.Errorf("the plugin still has db staged after the release")
	}
}

// A probe (plugin status, the agent's every 30 s, the dashboard's) of a plugin replaced behind
// its held socket by another driver shows it unhealthy, naming the driver on the socket: the
// agent's reconcile and claim GC would otherwise send their RPCs to it on a connection made
// before, and status would show it healthy.
func TestProbeOfAHeldSocketServedByAnotherDriverShowsItUnhealthy(t *testing.T) {
	t.Parallel()
	h, held, _ := heldHarness(t)
	h.create(volume("db"))
	other := driverBehind(t, held)
	h.open(Config{})
	info, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if len(info) != 1 {
		t.Fatalf("status = %+v, want plugin mem's", info)
	}
	if got := info[0]; got.Health() == PluginHealthy || !strings.Contains(got.LastError, `now served by "other.csi.example"`) {
		t.Fatalf("status of the plugin another driver now answers for: %s, last error %q; want it unhealthy, naming the driver", got.Health(), got.LastError)
	}
	// Its fingerprint is marked stale: the next process's connection fingerprints the plugin
	// and refuses it, sending it no volume RPC.
	h.open(Config{})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err == nil || !strings.Contains(err.Error(), `now served by "other.csi.example"`) {
		t.Errorf("claim after the probe: %v; want the connection refused, naming the driver", err)
	}
	if got := volumeRPCs(other); len(got) != 0 {
		t.Errorf("volume RPCs sent to the other driver: %v", got)
	}
}

// A plugin restarted behind a held socket with another node ID: volctl, reusing the earlier
// fingerprint, asks ControllerPublishVolume for the old node, which the plugin answers NOT_FOUND
// (the CSI spec's answer for a node that does not exist). That answer has the plugin
// fingerprinted again: the claim is left for reconcile, which, connecting afresh, sees the new
// node ID and attaches the volume to the new node; before, every claim failed so until the
// socket file was touched.
func TestClaimThroughAPluginWithANewNodeIDBehindAHeldSocket(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	h.mem.SetNodeID("node-2") // the same socket file
	h.open(Config{})

	claimLeftThenReconciled(t, h, "another node ID")
	if nodes := h.mem.PublishedNodes(h.externalID("db")); len(nodes) != 1 || nodes[0] != "node-2" {
		t.Errorf("the plugin has db attached to %v, want node-2 only", nodes)
	}
	h.release("db", "web-0")
	if nodes := h.mem.PublishedNodes(h.externalID("db")); len(nodes) != 0 {
		t.Errorf("db still attached to %v after the release", nodes)
	}
}

// claimLeftThenReconciled claims volume db for web-0 through a plugin changed behind its socket,
// which must fail saying what changed (want), and reconciles: the claim must be published.
func claimLeftThenReconciled(t *testing.T, h *harness, want string) {
	t.Helper()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("claim through the changed plugin: %v; want it to say the plugin now has %s", err, want)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep.Problems)
	}
	if live := h.liveClaims("db"); len(live) != 1 || live[0].State != store.ClaimPublished {
		t.Fatalf("claims after reconcile = %+v; want web-0's published", live)
	}
}

// A plugin whose GetPluginInfo hangs, asked before DeleteVolume: the question runs into its
// short timeout once, and the delete is not sent nor the question asked again within the
// command, as for any RPC cut off by volctl's own timeout.
func TestDeleteWhoseDriverCheckHangsIsNotRetried(t *testing.T) {
	// Serial: its sub-second Short timeout covers RPCs it does not test (the fingerprint's),
	// which tests running beside it on a loaded machine made it miss.
	h := newHarness(t, nil)
	h.create(volume("db"))
	// The short timeout must outlast the call's way to the plugin, or the test shows nothing:
	// at 100 ms a whole-suite run at load 25 timed out before the plugin counted the call
	// ("GetPluginInfo asked 0 times"). The hang lasts it out once, so it is the test's time.
	h.open(Config{Timeouts: csi.Timeouts{Short: 500 * time.Millisecond, Long: 5 * time.Second}, Retry: RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: time.Millisecond}})
	h.faults.Hang(csi.RPCGetPluginInfo)
	h.faults.ResetCounts()
	err := h.e.DeleteVolume(h.ctx, "db")
	if err == nil || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("delete while GetPluginInfo hangs: %v; want DeleteVolume not sent", err)
	}
	if n := h.faults.Calls(csi.RPCGetPluginInfo); n != 1 {
		t.Errorf("GetPluginInfo asked %d times, want once (its timeout is not retried)", n)
	}
	if n := h.faults.Calls(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d times", n)
	}
}
