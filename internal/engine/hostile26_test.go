package engine

import (
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// The adversary: a plugin restarted with EXPAND_VOLUME but without the plugin capability
// VOLUME_EXPANSION ONLINE, which alone says ControllerExpandVolume may grow a volume that is
// published and available on a node (the CSI spec: with OFFLINE only, such a volume SHALL NOT
// be expanded; with neither, the plugin never said it can). volctl refused only a plugin that
// advertised OFFLINE and not ONLINE, and only while the volume had a claim: one that
// advertised neither (the restart dropped ONLINE) had ControllerExpandVolume sent for a volume
// an alloc had mounted, and an offline-only one for a volume still attached to the node with
// no claim (the unpublish owed since a release through an instance without
// PUBLISH_UNPUBLISH_VOLUME, or a forced detach that could not send it). Both are refused now,
// nothing sent, the error naming the plugin, the capability, the volume and what holds it.
func TestControllerExpandOfAVolumeOnTheNodeNeedsOnlineExpansion(t *testing.T) {
	t.Parallel()
	t.Run("neither ONLINE nor OFFLINE, claimed", func(t *testing.T) {
		h := newHarness(t, nil)
		h.create(volume("v"))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
		restarted := h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Plugin.VolumeExpansionOnline = false }, "v")
		h.open(Config{}) // the next command, which fingerprints the restarted plugin

		_, err := h.e.ExpandVolume(h.ctx, "v", 4<<20, 0)
		if n := restarted.CallCount(csi.RPCControllerExpandVolume); n != 0 {
			t.Errorf("ControllerExpandVolume sent %d time(s) for volume v, published, to a plugin without VOLUME_EXPANSION ONLINE", n)
		}
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "mem"`) || !strings.Contains(err.Error(), "ONLINE") ||
			!strings.Contains(err.Error(), `alloc "web"`) {
			t.Errorf("expand of a published volume through a plugin without online expansion: %v; want a conflict naming the plugin, ONLINE and the claim", err)
		}
		if v := h.volumeInfo("v"); v.CapacityBytes != 1<<20 {
			t.Errorf("volume v recorded at %d bytes after a refused expand, want %d", v.CapacityBytes, 1<<20)
		}
	})
	t.Run("OFFLINE only, attached with no claim", func(t *testing.T) {
		offline := func(cfg *csitest.MemConfig) {
			cfg.Node.StageUnstageVolume = false
			cfg.Plugin.VolumeExpansionOnline, cfg.Plugin.VolumeExpansionOffline = false, true
		}
		h := newHarness(t, offline)
		h.create(volume("v"))
		h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
		restarted := h.restartPlugin(func(cfg *csitest.MemConfig) { offline(cfg); cfg.Controller.PublishUnpublishVolume = false }, "v")
		if _, err := h.e.Release(h.ctx, "v", "web"); err != nil {
			t.Fatalf("release: %v", err)
		}
		if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
			t.Fatalf("staging after the release = %+v (%v), want the attachment kept, owed", st, ok)
		}

		_, err := h.e.ExpandVolume(h.ctx, "v", 4<<20, 0)
		if n := restarted.CallCount(csi.RPCControllerExpandVolume); n != 0 {
			t.Errorf("ControllerExpandVolume sent %d time(s) for volume v, attached to node-1, to an offline-only plugin", n)
		}
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "offline") || !strings.Contains(err.Error(), `node "node-1"`) ||
			!strings.Contains(err.Error(), "volctl reconcile") {
			t.Errorf("expand of an attached volume through an offline-only plugin: %v; want a conflict naming the node and the way to detach it", err)
		}
	})
}

// The other side of the rule above, as `volume expand`'s help states it: a plugin that expands
// on the node alone (no controller EXPAND_VOLUME) and says neither ONLINE nor OFFLINE is not
// refused for a claimed volume: NodeExpandVolume needs the volume on the node, and no
// ControllerExpandVolume is sent. Only an offline-only plugin's claims are refused there.
func TestNodeOnlyExpansionOfAClaimedVolumeIsNotRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(cfg *csitest.MemConfig) {
		cfg.Controller.ExpandVolume = false
		cfg.Plugin.VolumeExpansionOnline, cfg.Plugin.VolumeExpansionOffline = false, false
	})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
	if _, err := h.e.ExpandVolume(h.ctx, "v", 4<<20, 0); err != nil {
		t.Fatalf("expand of a claimed volume through a node-only plugin saying neither ONLINE nor OFFLINE: %v; want it expanded on the node", err)
	}
	if n := h.mem.CallCount(csi.RPCNodeExpandVolume); n != 1 {
		t.Errorf("NodeExpandVolume sent %d time(s), want once, at the claim's target", n)
	}
	if n := h.mem.CallCount(csi.RPCControllerExpandVolume); n != 0 {
		t.Errorf("ControllerExpandVolume sent %d time(s) to a plugin without the controller's EXPAND_VOLUME", n)
	}
}

// The adversary: a plugin whose answer to ControllerExpandVolume is lost after it expanded the
// volume (node_expansion_required true, for its file system), and whose answer to the same
// request sent again, the volume already at the size, says node_expansion_required false: CSI
// makes the call idempotent, not its answer, and a plugin finding nothing to do may well say
// nothing is needed. volctl took the retry's word: the expand succeeded, the volume recorded at
// the new size with no node expansion owed, and NodeExpandVolume never sent, the alloc's file
// system left at the old size for good. An answer read after an earlier attempt's was lost (in
// the same command, or by the expand run again or reconcile, the expansion pending from an
// earlier run) does not clear the node step: it is owed when the node can expand, and sent.
func TestExpandRetryAnsweredNodeExpansionNotRequiredStillExpandsTheNode(t *testing.T) {
	t.Parallel()
	notRequired := csitest.Fault{Answer: func(m proto.Message) {
		m.(*csipb.ControllerExpandVolumeResponse).NodeExpansionRequired = false
	}}
	for _, tt := range []struct {
		name  string
		again func(h *harness) error // what sends ControllerExpandVolume again, after the lost answer
	}{
		{"retried by the expand", nil},
		{"sent again by reconcile", func(h *harness) error { _, err := h.e.Reconcile(h.ctx); return err }},
		{"sent again by the same expand", func(h *harness) error { _, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Every attempt lost: through a plugin that cannot say a volume's size, since one
			// that can is asked before the RPC is sent again, and its listing ends the expand
			// (TestExpandRetryAfterALostAnswerAsksTheListingFirst).
			h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.ListVolumes = tt.again == nil })
			h.create(volume("v"))
			cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
			lost := 1
			if tt.again != nil {
				lost = fastRetry.Attempts // every attempt of the first expand
			}
			h.faults.Inject(csi.RPCControllerExpandVolume, csitest.Fault{Lost: true, Times: lost})
			h.faults.Inject(csi.RPCControllerExpandVolume, notRequired)
			_, err := h.e.ExpandVolume(h.ctx, "v", 4*mib, 0)
			if tt.again != nil {
				if err == nil {
					t.Fatal("expand whose every answer was lost succeeded")
				}
				err = tt.again(h)
			}
			if err != nil {
				t.Fatalf("expand: %v", err)
			}
			if reqs := h.nodeExpands(); len(reqs) != 1 || reqs[0].VolumePath != cl.TargetPath || reqs[0].CapacityMin != 4*mib {
				t.Errorf("NodeExpandVolume requests = %+v; want one for 4 MiB at the claim's target %s: the file system is left at the old size", reqs, cl.TargetPath)
			}
			if v := h.volumeInfo("v"); v.CapacityBytes != 4*mib || v.NodeExpansionOwed != 0 || v.ExpansionPending != 0 {
				t.Errorf("after the expand: capacity %d, node expansion owed %d, pending %d; want 4 MiB, nothing owed or pending",
					v.CapacityBytes, v.NodeExpansionOwed, v.ExpansionPending)
			}
		})
	}
}

// The adversary: a plugin whose NodeGetInfo says nothing of a limit (max_volumes_per_node 0,
// or a number above what its node takes: a cloud instance's attachment slots that other
// devices use up) and whose ControllerPublishVolume answers RESOURCE_EXHAUSTED, the CSI spec's
// "max volumes attached" to the node: the caller MUST see fewer volumes attached before it
// tries again. volctl took it as any RESOURCE_EXHAUSTED, retryable: the claim sent it at each of
// its attempts, was left taken, and every reconcile pass (the agent's, every minute) sent it
// again, the volume held by a claim that never got it and counted on the node against the
// limit of every other claim's admission, until the claim was released by hand. Now it is
// final, as admission's refusal at max_volumes_per_node is: sent once, the claim rolled back,
// the error naming the plugin's word and what to do, and nothing left for reconcile.
func TestClaimRefusedByAFullNodeIsRolledBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCControllerPublishVolume, codes.ResourceExhausted)

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web"})
	if err == nil || !strings.Contains(err.Error(), "ResourceExhausted") || !strings.Contains(err.Error(), "release a volume on this node") {
		t.Errorf("claim refused by a full node: %v; want the plugin's RESOURCE_EXHAUSTED saying to release a volume on the node", err)
	}
	if n := h.faults.Calls(csi.RPCControllerPublishVolume); n != 1 {
		t.Errorf("ControllerPublishVolume sent %d times to a node that said it is full, want once", n)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the refusal = %+v; want the claim rolled back, not left taken", live)
	}
	h.reconcileSendsNoMore(csi.RPCControllerPublishVolume)

	h.faults.Clear() // a volume released on the node: the claim again is attached
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "web"})
}

// The same for the two other RPCs whose RESOURCE_EXHAUSTED the CSI spec says not to send again
// as it is: CreateVolume's "unable to provision in accessible_topology" (the caller MUST address
// what prevents it first) and CreateSnapshot's "not enough space" (the caller SHOULD fail the
// request). Taken as retryable, each was sent at every attempt and left recorded as being
// created for reconcile, which sent it again at every pass: a volume stuck in state creating, a
// snapshot pending, until deleted by hand. Now the command fails, sent once, nothing recorded,
// the hint saying what to change first.
func TestCreateRefusedForWantOfSpaceIsNotLeftForReconcile(t *testing.T) {
	t.Parallel()
	t.Run("CreateVolume", func(t *testing.T) {
		h := newHarness(t, nil)
		h.faults.FailAlways(csi.RPCCreateVolume, codes.ResourceExhausted)
		_, err := h.e.CreateVolume(h.ctx, volume("v"))
		if err == nil || !strings.Contains(err.Error(), "relax topology_request") {
			t.Errorf("create refused for want of space: %v; want the plugin's RESOURCE_EXHAUSTED saying what to change", err)
		}
		if n := h.faults.Calls(csi.RPCCreateVolume); n != 1 {
			t.Errorf("CreateVolume sent %d times to a plugin that said it cannot provision it, want once", n)
		}
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume v after the refused create: %v; want no record left for reconcile", err)
		}
		h.reconcileSendsNoMore(csi.RPCCreateVolume)
	})
	t.Run("CreateSnapshot", func(t *testing.T) {
		h := newHarness(t, nil)
		h.create(volume("db"))
		h.faults.FailAlways(csi.RPCCreateSnapshot, codes.ResourceExhausted)
		_, err := h.e.CreateSnapshot(h.ctx, "db", "s1", nil)
		if err == nil || !strings.Contains(err.Error(), "not enough space for the snapshot") {
			t.Errorf("snapshot refused for want of space: %v; want the plugin's RESOURCE_EXHAUSTED with its hint", err)
		}
		if n := h.faults.Calls(csi.RPCCreateSnapshot); n != 1 {
			t.Errorf("CreateSnapshot sent %d times to a plugin that said it has no space for it, want once", n)
		}
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Snapshots) != 0 {
			t.Errorf("snapshots after the refused create = %+v; want none left pending for reconcile", list.Snapshots)
		}
		h.reconcileSendsNoMore(csi.RPCCreateSnapshot)
	})
}

// reconcileSendsNoMore runs a reconcile pass, which must find nothing to do and send rpc no more
// after a command the plugin refused it for good.
func (h *harness) reconcileSendsNoMore(rpc string) {
	h.t.Helper()
	sent := h.faults.Calls(rpc)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		h.t.Errorf("reconcile after %s was refused for good: %+v, %v; want nothing left to do", rpc, rep, err)
	}
	if n := h.faults.Calls(rpc) - sent; n != 0 {
		h.t.Errorf("reconcile sent %s %d more time(s) after the plugin refused it for good", rpc, n)
	}
}
