package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// expand35: an owed expansion's controller step (expand34's, sent before the NodeExpandVolume of
// a debt its controller never had) met with a plugin whose ControllerExpandVolume is not
// idempotent, answers above the limit, and the rest.

// nodeOnlyDebt creates volume v on a node-only plugin and expands it to 4MiB while it is on no
// path here: the debt (NodeExpandVolume owed, the whole expansion) its controller never had. The
// plugin then comes back with edit applied and the controller's EXPAND_VOLUME, growing by the
// delta each call (ExpandByDelta). It returns v's external ID. caps are v's (none: one
// single-node-writer).
func nodeOnlyDebt(t *testing.T, edit func(*csitest.MemConfig), caps ...spec.Capability) (*harness, string) {
	t.Helper()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	ext := h.create(volume("v", caps...)).ExternalID
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	h.restartWith(func(c *csitest.MemConfig) {
		c.Controller.ExpandVolume = true
		if edit != nil {
			edit(c)
		}
	})
	h.mem.ExpandByDelta(true)
	return h, ext
}

// The owed controller step answered, and its answer not recorded (the plugin grew the volume
// and answered an error: the answer lost as a kill after it would lose it), through a plugin
// whose ControllerExpandVolume grows the volume by the delta each call. The CSI spec makes the
// RPC idempotent; this plugin is not, and the plugin lists the volume at its size: volctl could
// know the step was had. Before, the next attempt sent it again, and the storage grew to 7MiB
// for the 4MiB asked. Now the plugin is asked the volume's size first, and a volume listed at
// the size owed has its step recorded, not sent again; the NodeExpandVolume alone follows.
// Both ways the step is sent: before the attach (a plugin that expands only offline, reconcile
// while the volume is off the node) and before the node's step (ONLINE, `volume expand`).
func TestOwedControllerStepAnsweredButNotRecordedIsNotSentAgain(t *testing.T) {
	t.Parallel()
	for _, plugin := range []string{"offline only", "online"} {
		t.Run(plugin, func(t *testing.T) {
			t.Parallel()
			var h *harness
			var ext string
			if plugin == "online" {
				h, ext = nodeOnlyDebt(t, nil)
			} else {
				h, ext = nodeOnlyDebt(t, offlineOnlyExpansion)
			}
			// The claim sends the step (before the attach, or before the node's step once
			// published), and its answer is lost.
			h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Code: codes.Internal, Times: 1})
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			if plugin != "online" {
				h.release("v", "a")
			}
			if mv, _ := h.mem.Volume(ext); mv.CapacityBytes != 4*mib {
				t.Fatalf("the lost step left the storage at %d; want 4MiB (the plugin did it)", mv.CapacityBytes)
			}
			// Again: reconcile (off the node) or the expand (on it).
			if plugin == "online" {
				if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
					t.Fatalf("expand again: %v", err)
				}
			} else {
				if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
					t.Fatalf("reconcile: %v (%+v)", err, rep.Problems)
				}
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
			}
			mv, _ := h.mem.Volume(ext)
			v := h.volumeInfo("v")
			if mv.CapacityBytes != 4*mib || v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 0 {
				t.Errorf("after the step again: storage %d, recorded %d, owed %d; want 4MiB grown once, recorded, nothing owed (ControllerExpandVolume sent %d times)",
					mv.CapacityBytes, v.CapacityBytes, v.NodeExpansionOwed, h.mem.CallCount(csi.RPCControllerExpandVolume))
			}
			if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 1 {
				t.Errorf("NodeExpandVolume sent %d times; want once", n)
			}
			if ev := h.eventsOf("volume-expand", "v", "ControllerExpandVolume not sent"); len(ev) != 1 || !strings.Contains(ev[0], "lists the volume at 4MiB") {
				t.Errorf("events saying the step was not sent again: %q; want one naming the size listed", ev)
			}
		})
	}
}

// The honest case of the same: a plugin that lists the volume below the size owed (its
// controller never had the step) is sent it, once, and a plugin that cannot say a volume's size
// (no LIST_VOLUMES nor GET_VOLUME) is sent it as before, on the spec's word.
func TestOwedControllerStepSentWhereTheListingSaysItIsNeeded(t *testing.T) {
	t.Parallel()
	for _, lists := range []bool{true, false} {
		t.Run(fmt.Sprint("lists=", lists), func(t *testing.T) {
			t.Parallel()
			h, ext := nodeOnlyDebt(t, func(c *csitest.MemConfig) {
				offlineOnlyExpansion(c)
				c.Controller.ListVolumes, c.Controller.GetVolume = lists, lists
			})
			h.mem.ExpandByDelta(false)
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			mv, _ := h.mem.Volume(ext)
			if v := h.volumeInfo("v"); mv.CapacityBytes != 4*mib || v.NodeExpansionOwed != 0 || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 {
				t.Errorf("storage %d, owed %d, ControllerExpandVolume sent %d times; want 4MiB, nothing owed, once",
					mv.CapacityBytes, v.NodeExpansionOwed, h.mem.CallCount(csi.RPCControllerExpandVolume))
			}
		})
	}
}

// The owed controller step answered above the debt's limit (`volume expand --limit`): the
// storage is that size, and what is said names the RPC that answered, ControllerExpandVolume.
// Before, the answer was carried into the node's step and said as NodeExpandVolume's ("plugin
// answered NodeExpandVolume ... above the limit"), and through a plugin that expands only
// offline (the step sent before the attach) not at all: the record at 6MiB past its 5MiB limit,
// and no event. The NodeExpandVolume then follows the storage (no limit), as an expand's does.
func TestOwedControllerStepAboveTheLimitNamesControllerExpandVolume(t *testing.T) {
	t.Parallel()
	for _, plugin := range []string{"offline only", "online"} {
		t.Run(plugin, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
			h.create(volume("v"))
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 5*mib); err != nil {
				t.Fatalf("node-only expand: %v", err)
			}
			h.restartWith(func(c *csitest.MemConfig) {
				c.Controller.ExpandVolume = true
				if plugin != "online" {
					offlineOnlyExpansion(c)
				}
			})
			h.mem.AnswerExpandWith(6 * mib)
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}) // the step: before the attach, or before the node's once published
			var err error
			said := fmt.Sprint(err, h.eventsOf("volume-expand", "v", "above the limit"))
			if !strings.Contains(said, "answered ControllerExpandVolume for volume \"v\" with 6MiB, above the limit 5MiB") ||
				strings.Contains(said, "answered NodeExpandVolume") {
				t.Errorf("said %s; want it to name ControllerExpandVolume's 6 MiB answer above the 5 MiB limit, not NodeExpandVolume", said)
			}
			if v := h.volumeInfo("v"); v.CapacityBytes != 6*mib || v.NodeExpansionOwed != 0 {
				t.Errorf("recorded %d, owed %d; want the 6MiB the storage is, nothing owed", v.CapacityBytes, v.NodeExpansionOwed)
			}
			reqs := csitest.Requests[csi.NodeExpandVolumeRequest](h.mem)
			if len(reqs) == 0 || reqs[len(reqs)-1].CapacityMax != 0 {
				t.Errorf("NodeExpandVolume %+v; want it sent with no limit (the node follows the storage past it)", reqs)
			}
		})
	}
}

// killedAt runs op on h's engine until it passes failpoint fp, and stops it there as a kill
// would (a panic through the failpoint hook, recovered here: what op committed stands, nothing
// after fp is done), then opens the engine again, as the next volctl process. It fails the test
// when op never reaches fp.
func killedAt(h *harness, fp string, op func()) {
	h.t.Helper()
	type killed struct{}
	reached := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(killed); !ok {
					panic(r)
				}
				reached = true
			}
		}()
		onFailpoints(h.t, func(n string) {
			if n == fp {
				panic(killed{})
			}
		}, h.e)
		op()
	}()
	h.e.failpointHook = nil
	if !reached {
		h.t.Fatalf("the operation never reached failpoint %s", fp)
	}
	h.open(Config{})
}

// A claim killed inside the owed expansion's controller step before the attach: once
// ControllerExpandVolume answered, before the step is recorded (rpc:ControllerExpandVolume),
// and once it is recorded (expand:controller-done). reconcile drives the claim on; it was taken
// with the attach's intent recorded, so the volume may be attached and no ControllerExpandVolume
// may be sent (the plugin expands only offline). Before, the first kill's expansion then waited
// for the claim's own release (reconcile exit 1, naming it), and was sent again after it: a
// plugin that grows by the delta each call grew the volume twice. The plugin lists the volume at
// the size owed: the step is recorded, and the NodeExpandVolume sent alone at the publish.
func TestOwedControllerStepKilledBeforeTheAttach(t *testing.T) {
	t.Parallel()
	for _, fp := range []string{"rpc:ControllerExpandVolume", "expand:controller-done"} {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			h, ext := nodeOnlyDebt(t, offlineOnlyExpansion)
			killedAt(h, fp, func() { _, _ = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}) })
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Fatalf("reconcile after the kill: %v (%+v)", err, rep.Problems)
			}
			mv, _ := h.mem.Volume(ext)
			v := h.volumeInfo("v")
			if mv.CapacityBytes != 4*mib || v.NodeExpansionOwed != 0 || len(v.Claims) != 1 || v.Claims[0].State != "published" {
				t.Errorf("after reconcile: storage %d, owed %d, claims %+v; want 4MiB, nothing owed, the claim published", mv.CapacityBytes, v.NodeExpansionOwed, v.Claims)
			}
			if c, n := h.mem.CallCount(csi.RPCControllerExpandVolume), h.mem.CallCount(csi.RPCNodeExpandVolume); c != 1 || n != 1 {
				t.Errorf("ControllerExpandVolume sent %d times, NodeExpandVolume %d; want once each", c, n)
			}
		})
	}
}

// A second claim, by another process, racing the first's owed controller step (paused once
// ControllerExpandVolume answered, before the step is recorded) on a volume both may hold: it
// waits for the volume's lock, and finds the debt paid. And reconcile racing the first paused
// once the step is recorded, before the attach: it sends nothing. Either way the storage is grown
// once (the plugin grows by the delta each call), its file system once, nothing owed.
func TestPausedPairOwedControllerStep(t *testing.T) {
	t.Parallel()
	for _, fp := range []string{"rpc:ControllerExpandVolume", "expand:controller-done"} {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			h, ext := nodeOnlyDebt(t, offlineOnlyExpansion, capab(spec.MultiNodeMultiWriter))
			out := h.pausedPair(fp,
				func(ctx context.Context) error {
					_, err := h.e.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
					return err
				},
				func(ctx context.Context, other *Engine) error {
					if fp == "expand:controller-done" {
						_, err := other.Reconcile(ctx)
						return err
					}
					_, err := other.Claim(ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
					return err
				})
			if out.aErr != nil || out.bErr != nil {
				t.Fatalf("the claim: %v; the other (waited %v): %v", out.aErr, out.bWaited, out.bErr)
			}
			mv, _ := h.mem.Volume(ext)
			if v := h.volumeInfo("v"); mv.CapacityBytes != 4*mib || v.NodeExpansionOwed != 0 {
				t.Errorf("storage %d, owed %d; want 4MiB, nothing owed", mv.CapacityBytes, v.NodeExpansionOwed)
			}
			if c, n := h.mem.CallCount(csi.RPCControllerExpandVolume), h.mem.CallCount(csi.RPCNodeExpandVolume); c != 1 || n != 1 {
				t.Errorf("ControllerExpandVolume sent %d times, NodeExpandVolume %d; want once each", c, n)
			}
			h.storeMatchesPlugin("after the pair")
		})
	}
}

// `volume status` of a volume owed a node expansion says why it waits and what does it, as the
// publish's event, reconcile and `volume expand` do: before, it showed the size owed in --json
// alone, and the expansion waiting for a release, or for a controller half, looked like one
// about to be sent. Each state: off the node (the next publish), an offline-only plugin's step
// owed off the node (reconcile or the next claim), the same on the node (the release), the node
// half alone (the controller half), and on the node with the NodeExpandVolume failed.
func TestVolumeStatusSaysWhyAnOwedExpansionWaits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	h.create(volume("v"))
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
		t.Fatalf("node-only expand: %v", err)
	}
	says := func(state string, want ...string) {
		t.Helper()
		v := h.volumeInfo("v")
		for _, w := range want {
			if !strings.Contains(v.NodeExpansionWaits, w) {
				t.Errorf("%s: status says %q (owed %d); want it to say %q", state, v.NodeExpansionWaits, v.NodeExpansionOwed, w)
			}
		}
	}
	says("off the node", "on no path on this node", "when a claim next publishes it")
	h.restartWith(offlineOnlyExpansion)
	h.registerPlugin("mem", h.socket) // the new instance fingerprinted and recorded
	says("off the node, an offline-only plugin's step owed", "expands only offline", "`volctl reconcile` or the next claim sends ControllerExpandVolume")
	h.faults.FailOnce(csi.RPCControllerExpandVolume, codes.Internal)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	says("on the node, an offline-only plugin's step owed", `plugin "mem" expands volumes only offline`, "release its claims")
	h.release("v", "a")
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.VolumeExpansionOnline = true })
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginNode, NodeSocket: h.socket}); err != nil {
		t.Fatalf("register the node half alone: %v", err)
	}
	says("the node half alone", "only its node half is registered", `type "controller"`)
	h.registerPlugin("mem", h.socket)
	h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	says("on the node, its NodeExpandVolume failed", "is on this node", "`volctl events --volume v`", "`volctl reconcile` or `volctl volume expand v --size 4MiB`")
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 || v.NodeExpansionWaits != "" {
		t.Errorf("paid: owed %d, waits %q; want neither", v.NodeExpansionOwed, v.NodeExpansionWaits)
	}
}

// reconcile with a node-only expansion's debt owed to a volume off the node, through a plugin
// whose recorded fingerprint says there is no controller step to send (node-only, or ONLINE:
// the step goes with the node's, at the publish), while another process holds the volume's
// lock (a long claim, a snapshot): nothing is to be done, and reconcile decides so from the
// store. Before, expandOffNode took the volume's lock and connected to the plugin first, for
// every such volume, so reconcile waited for the other process to let the volume go.
func TestReconcileDecidesAnOffNodeDebtFromTheStore(t *testing.T) {
	t.Parallel()
	for _, plugin := range []string{"node-only", "online"} {
		t.Run(plugin, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
			h.create(volume("v"))
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err != nil {
				t.Fatalf("node-only expand: %v", err)
			}
			if plugin == "online" {
				h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = true })
				h.registerPlugin("mem", h.socket)
			}
			unlock, err := h.otherProcess().locks.volume(h.ctx, "v")
			if err != nil {
				t.Fatal(err)
			}
			ctx, waiting := whenWaitingForAnyLock(h.ctx)
			done := make(chan error, 1)
			go func() { _, err := h.e.Reconcile(ctx); done <- err }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("reconcile: %v", err)
				}
				unlock()
			case <-waiting:
				t.Errorf("reconcile waited for volume v's lock, held by another process, with nothing to send for its debt")
				unlock()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("reconcile never returned once the lock was let go")
				}
			}
			if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib {
				t.Errorf("owed %d after reconcile; want the 4MiB still owed, for the next publish", v.NodeExpansionOwed)
			}
		})
	}
}

// The node's step alone owed, its controller's step recorded done (node_expand_ctrl: the
// controller answered node_expansion_required at the size), and the plugin then registered by
// its node half alone (its controller half down, or not registered on this host): nothing
// needs the controller, so the NodeExpandVolume is sent alone, by reconcile and by the expand
// again, not held for the missing half as a debt its controller never had is
// (TestOwedNodeExpansionThroughANodeHalfAloneWaitsForTheControllerHalf). expand34 left this
// untested.
func TestOwedNodeStepThroughANodeHalfAloneAfterTheControllersStep(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"reconcile", "expand"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			h.faults.FailOnce(csi.RPCNodeExpandVolume, codes.Internal)
			if _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); err == nil {
				t.Fatal("expand with the node failing succeeded")
			}
			if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginNode, NodeSocket: h.socket}); err != nil {
				t.Fatalf("register the node half alone: %v", err)
			}
			if w := h.volumeInfo("v").NodeExpansionWaits; !strings.Contains(w, "is on this node") {
				t.Errorf("status says %q; want it to say the volume is on the node and what sends the step", w)
			}
			var err error
			if by == "reconcile" {
				var rep ReconcileReport
				if rep, err = h.e.Reconcile(h.ctx); err == nil && !rep.OK() {
					err = fmt.Errorf("%+v", rep.Problems)
				}
			} else {
				_, err = h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
			}
			if err != nil {
				t.Errorf("%s through the node half alone: %v", by, err)
			}
			if v := h.volumeInfo("v"); v.NodeExpansionOwed != 0 || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 || h.mem.CallCount(csi.RPCNodeExpandVolume) != 1 {
				t.Errorf("owed %d, ControllerExpandVolume sent %d times, NodeExpandVolume %d; want nothing owed, the expand's once, the node's reaching the plugin once (its first failed before it)",
					v.NodeExpansionOwed, h.mem.CallCount(csi.RPCControllerExpandVolume), h.mem.CallCount(csi.RPCNodeExpandVolume))
			}
		})
	}
}

// A plugin that declares the controller's EXPAND_VOLUME and answers the owed expansion's
// ControllerExpandVolume UNIMPLEMENTED: the expansion stays owed, and the error says the plugin
// contradicts itself and that the same answer comes back, where it advised only running the
// expand again, which met the same answer for good (as the node's UNIMPLEMENTED did before
// expand34, TestNodeExpandUnimplementedByANodeThatDeclaresIt).
func TestOwedControllerStepUnimplementedByAControllerThatDeclaresIt(t *testing.T) {
	t.Parallel()
	h, _ := nodeOnlyDebt(t, nil)
	h.mem.ExpandByDelta(false)
	h.faults.FailAlways(csi.RPCControllerExpandVolume, codes.Unimplemented)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
	for _, w := range []string{`plugin "mem" declares the controller capability EXPAND_VOLUME but answered the ControllerExpandVolume`, "Unimplemented",
		"the same answer comes back", "stays owed", "`volctl volume expand v --size 4MiB`"} {
		if !strings.Contains(fmt.Sprint(err), w) {
			t.Errorf("expand = %v; want it to say %q", err, w)
		}
	}
	if v := h.volumeInfo("v"); v.NodeExpansionOwed != 4*mib || h.mem.CallCount(csi.RPCNodeExpandVolume) != 0 {
		t.Errorf("owed %d, NodeExpandVolume sent %d times; want 4MiB still owed, none sent", v.NodeExpansionOwed, h.mem.CallCount(csi.RPCNodeExpandVolume))
	}
}

// An expansion asked by another process while a snapshot of the volume is being taken (paused
// once CreateSnapshot answered, before the snapshot is recorded): the expand waits for the
// volume's lock, then grows it; the snapshot is recorded at the size the plugin answered for
// it (the volume's size when it was taken), not the size grown to after, and restores at that.
// Held; written for expand35's look at expansion elsewhere.
func TestPausedPairSnapshotCreateExpand(t *testing.T) {
	t.Parallel()
	h, _ := snapshotHarness(t, nil)
	out := h.pausedPair("rpc:CreateSnapshot",
		func(ctx context.Context) error { _, err := h.e.CreateSnapshot(ctx, "db", "s1", nil); return err },
		func(ctx context.Context, other *Engine) error {
			_, err := other.ExpandVolume(ctx, "db", 4*mib, 0)
			return err
		})
	if out.aErr != nil || out.bErr != nil {
		t.Fatalf("snapshot: %v; expand (waited %v): %v", out.aErr, out.bWaited, out.bErr)
	}
	if !out.bWaited {
		t.Errorf("the expand did not wait for the snapshot's hold on the volume")
	}
	snaps, err := h.e.ListSnapshots(h.ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range snaps.Snapshots {
		if s.Name != "s1" && !strings.HasSuffix(s.ID, "s1") {
			continue
		}
		found = true
		if s.SizeBytes != 1*mib {
			t.Errorf("snapshot s1 recorded at %d bytes; want the 1MiB the volume was when taken", s.SizeBytes)
		}
	}
	if !found {
		t.Errorf("snapshot s1 not listed: %+v", snaps)
	}
	if v := h.volumeInfo("db"); v.CapacityBytes != 4*mib {
		t.Errorf("volume recorded at %d; want 4MiB", v.CapacityBytes)
	}
}
