package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// deleteInUse is a plugin that deletes a volume published to a node and answers OK, where the
// CSI spec says it SHOULD answer FAILED_PRECONDITION (many do not): the data of whoever uses
// the volume goes with it.
func deleteInUse(c *csitest.MemConfig) { c.DeleteInUse = true }

// checkDeleteRefusedAsPublished checks that the delete of volume vol (err) was refused as a
// conflict naming the volume, the plugin and node-1, with no DeleteVolume sent (the plugin
// still has ext, published to node-1), and that vol stays recorded, ready, in e's state dir.
func checkDeleteRefusedAsPublished(t *testing.T, h *harness, e *Engine, err error, vol, plugin, ext string) {
	t.Helper()
	if !errors.Is(err, ErrConflict) {
		t.Errorf("delete of volume %q published to node-1 elsewhere: %v; want a conflict", vol, err)
	}
	for _, want := range []string{`volume "` + vol + `"`, `plugin "` + plugin + `"`, `node "node-1"`, "DeleteVolume not sent"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %s", err, want)
		}
	}
	checkKeptPublished(t, h, e, vol, ext)
}

// checkKeptPublished checks that no DeleteVolume was sent, the plugin still has ext, published
// to node-1, and volume vol stays recorded, ready, in e's state dir.
func checkKeptPublished(t *testing.T, h *harness, e *Engine, vol, ext string) {
	t.Helper()
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d time(s) for a volume published to node-1", n)
	}
	if _, ok := h.mem.Volume(ext); !ok {
		t.Fatalf("the plugin deleted volume %q, published to node-1: its user's data is gone", ext)
	}
	if nodes := h.mem.PublishedNodes(ext); !slices.Equal(nodes, []string{"node-1"}) {
		t.Errorf("volume %q published to %v, want still node-1", ext, nodes)
	}
	info, verr := e.Volume(h.ctx, vol)
	if verr != nil || info.State != string(store.VolumeReady) {
		t.Errorf("volume %q after the refused delete: %+v, %v; want it kept, ready", vol, info.State, verr)
	}
}

// State dir A claims volume v (the plugin publishes it to node-1); state dir B registers the
// same storage as w and deletes it. B records no claim of w, so its own check passes, and a
// plugin that does not refuse DeleteVolume of a published volume deleted A's data from under
// its published claim. The plugin lists the volume published to node-1: B's delete is refused,
// naming the volume, the plugin and the node, and sends no DeleteVolume. Once A releases its
// claim, B's delete goes through.
func TestDeleteOfAVolumeAnotherStateDirPublishedIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	other := h.registeredElsewhere("w", ext)
	h.mem.ResetCalls()

	err := other.DeleteVolume(h.ctx, "w")
	checkDeleteRefusedAsPublished(t, h, other, err, "w", "mem", ext)
	if err != nil && !strings.Contains(err.Error(), "this host's") {
		t.Errorf("err = %v\nwant it to say node-1 is this host's node for the plugin", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != "published" {
		t.Errorf("state dir A's claims = %+v, want its one claim published", live)
	}

	h.release("v", "a")
	h.mem.ResetCalls()
	if err := other.DeleteVolume(h.ctx, "w"); err != nil {
		t.Fatalf("delete once A released the volume: %v", err)
	}
	if _, ok := h.mem.Volume(ext); ok {
		t.Errorf("the plugin still has %q after the delete", ext)
	}
}

// The same through reconcile: state dir B's delete of w was interrupted (recorded deleting,
// DeleteVolume not sent) and state dir A claimed the storage meanwhile. Reconcile, finishing
// the delete, asks the plugin too: nothing is deleted, w goes back to ready, and the pass
// reports the refusal as a problem naming the node.
func TestReconcileFinishingADeleteOfAVolumeAnotherStateDirPublishedKeepsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	ext := h.create(volume("v")).ExternalID
	other := h.registeredElsewhere("w", ext)
	if err := other.store.Update(h.ctx, func(tx *store.Tx) error {
		w, err := tx.Volumes().Get("w")
		if err != nil {
			return err
		}
		w.State = store.VolumeDeleting
		return tx.Volumes().Update(&w)
	}); err != nil {
		t.Fatal(err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mem.ResetCalls()

	rep, err := other.Reconcile(h.ctx)
	if problems := fmt.Sprint(rep.Problems); err == nil || !strings.Contains(problems, `node "node-1"`) || !strings.Contains(problems, "DeleteVolume not sent") {
		t.Errorf("reconcile: %v %+v; want a problem naming node-1, which holds w", err, rep.Problems)
	}
	checkKeptPublished(t, h, other, "w", ext)
}

// One state dir, one storage volume recorded twice: as v on plugin mem and as w on plugin mem2,
// another socket of the same backend (a second instance of the driver), which register does not
// tell apart from another backend (the two are not socket mates: refuseSharedDelete does not
// see them). v is claimed; w has no claim, and its delete deleted v's data. It is refused,
// naming v, which records the same storage here, and the release that frees it.
func TestDeleteOfAVolumeRecordedTwiceInOneStateDirWhileTheOtherIsClaimed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	_, ext := h.recordedThroughASecondSocket()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.mem.ResetCalls()

	err := h.e.DeleteVolume(h.ctx, "w")
	checkDeleteRefusedAsPublished(t, h, h.e, err, "w", "mem2", ext)
	for _, want := range []string{`volume "v"`, "`volctl volume release v --alloc a`"} {
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to name the volume recorded on the same storage here and its release: %s", err, want)
		}
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != "published" {
		t.Errorf("v's claims = %+v, want its one claim published", live)
	}
}

// The plugin answers through ControllerGetVolume alone (GET_VOLUME, no LIST_VOLUMES): its
// status.published_node_ids says node-1 holds the volume, and the delete is refused the same.
func TestDeleteOfAVolumePublishedElsewhereCheckedByGetVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		deleteInUse(c)
		c.Controller.ListVolumes, c.Controller.GetVolume = false, true
	})
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	other := h.registeredElsewhere("w", ext)
	h.mem.ResetCalls()
	err := other.DeleteVolume(h.ctx, "w")
	checkDeleteRefusedAsPublished(t, h, other, err, "w", "mem", ext)
	if err != nil && !strings.Contains(err.Error(), csi.RPCControllerGetVolume) {
		t.Errorf("err = %v\nwant it to name ControllerGetVolume, the RPC that said so", err)
	}
}

// A volume with an attachment its last claim left (a forced detach whose
// ControllerUnpublishVolume failed), deleted: the delete sends ControllerUnpublishVolume first
// and checks, by a listing, that the volume is no longer published to node-1, then lets the
// plugin's controller lock go. Meanwhile another state dir, which registered the same storage,
// claims it: the plugin publishes it to node-1 again. That first listing is from before, so the
// delete asks again, under the lock it sends DeleteVolume under and after checking which driver
// answers, and is refused; without that second listing (the first one's nodes reused), the
// plugin deleted the other state dir's published volume. This is why
// TestDeleteAfterAFailedForceDetach's delete sends ListVolumes twice before DeleteVolume.
func TestDeleteAsksAgainAfterUndoingALeftAttachment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	target, staging := forceDetachFailingControllerUnpublish(t, h)
	forgetNodeSide(t, h, target, staging)
	ext := h.externalID("v")
	other := h.registeredElsewhere("w", ext)
	claimed := false
	h.e.failpointHook = func(name string) {
		if name != "rpc:"+csi.RPCControllerUnpublishVolume || claimed {
			return
		}
		claimed = true // the attachment undone and checked, the controller lock let go
		if _, err := other.Claim(h.ctx, ClaimRequest{VolumeID: "w", Alloc: "b"}); err != nil {
			t.Errorf("the other state dir's claim: %v", err)
		}
	}
	h.mem.ResetCalls()
	err := h.e.DeleteVolume(h.ctx, "v")
	h.e.failpointHook = nil
	if !claimed {
		t.Fatal("the delete passed no rpc:ControllerUnpublishVolume failpoint: the attachment was not undone")
	}
	if got := h.rpcs(); !slices.Contains(got, csi.RPCControllerUnpublishVolume) {
		t.Errorf("delete sent %v; want the left attachment undone first", got)
	}
	h.mem.ResetCalls() // the claim's RPCs are not the delete's
	checkDeleteRefusedAsPublished(t, h, h.e, err, "v", "mem", ext)
}

// Honest deletes the check must not refuse. An unpublished volume, beside another volume of
// the plugin published to node-1, and listed among entries of IDs near its own (case, white
// space, a prefix, a fullwidth letter) that the plugin says are published to node-1: they are
// other volumes, and the delete goes, sending ListVolumes (no node holds it), DeleteVolume and
// ListVolumes (it is gone).
func TestDeleteOfAnUnpublishedVolumeBesideAPublishedOneGoes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, deleteInUse)
	h.create(volume("busy"))
	h.claim(ClaimRequest{VolumeID: "busy", Alloc: "a"})
	ext := h.create(volume("v")).ExternalID
	listsNearSpellings(h, []string{"node-1"})
	h.mem.ResetCalls()
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete of an unpublished volume: %v", err)
	}
	if got, want := h.rpcs(), []string{csi.RPCListVolumes, csi.RPCDeleteVolume, csi.RPCListVolumes}; !slices.Equal(got, want) {
		t.Errorf("delete sent %v, want %v", got, want)
	}
	if _, ok := h.mem.Volume(ext); ok {
		t.Errorf("the plugin still has %q", ext)
	}
	if live := h.liveClaims("busy"); len(live) != 1 || live[0].State != "published" {
		t.Errorf("busy's claims = %+v, want its one claim published", live)
	}
	if msgs := h.eventMessages("volume-delete", "v"); strings.Contains(msgs, "not checked") {
		t.Errorf("the delete event says %q; want it checked both ways", msgs)
	}
}

// Plugins whose answer to the check cannot be had or says nothing of the volume: the delete
// goes as before the check (volctl cannot know), its event and a warning saying the nodes
// holding it were not checked, and ends: a ControllerGetVolume answering about another volume
// published to node-1 (another volume's state, not this one's), one answering OK with no
// volume, a ListVolumes whose next_token loops, one that fails. A plugin that cannot say which
// nodes hold a volume (no LIST_VOLUMES_PUBLISHED_NODES, or neither LIST_VOLUMES nor GET_VOLUME)
// is not asked, and the delete sends what it did before.
func TestDeleteWhoseNodesCheckSaysNothingGoesAsBefore(t *testing.T) {
	t.Parallel()
	getOnly := func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, true }
	for _, tc := range []struct {
		name   string
		config func(*csitest.MemConfig)
		fault  func(h *harness, other string)
		rpcs   []string // the volume RPCs the delete sends; nil: not checked
		says   string   // what the event says of the check, "" for nothing
	}{
		{name: "GetVolume answers about another volume", config: getOnly, says: "answered about volume",
			fault: func(h *harness, other string) {
				h.faults.Inject(csi.RPCControllerGetVolume, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
					resp := m.(*csipb.ControllerGetVolumeResponse)
					resp.Volume.VolumeId = other
					resp.Status = &csipb.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: []string{"node-1"}}
				}})
			}},
		{name: "GetVolume answers with no volume", config: getOnly, says: "answered OK with no volume",
			fault: func(h *harness, other string) {
				h.faults.Inject(csi.RPCControllerGetVolume, csitest.Fault{Times: 1, Answer: func(m proto.Message) {
					resp := m.(*csipb.ControllerGetVolumeResponse)
					resp.Volume = nil
					resp.Status = &csipb.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: []string{"node-1"}}
				}})
			}},
		{name: "ListVolumes' token loops", says: "a second time",
			fault: func(h *harness, other string) {
				h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Times: 2, FirstPage: true, NextToken: func(string) string { return "again" }})
			}},
		{name: "ListVolumes fails", says: "injected Internal",
			fault: func(h *harness, other string) {
				h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Times: 1, Code: codes.Internal})
			}},
		{name: "no published nodes capability", rpcs: []string{csi.RPCDeleteVolume, csi.RPCListVolumes},
			config: func(c *csitest.MemConfig) { c.Controller.ListVolumesPublishedNodes = false }},
		{name: "neither LIST_VOLUMES nor GET_VOLUME", rpcs: []string{csi.RPCDeleteVolume},
			config: func(c *csitest.MemConfig) { c.Controller.ListVolumes, c.Controller.GetVolume = false, false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) {
				deleteInUse(c)
				if tc.config != nil {
					tc.config(c)
				}
			})
			other := h.create(volume("busy")).ExternalID
			h.claim(ClaimRequest{VolumeID: "busy", Alloc: "a"})
			ext := h.create(volume("v")).ExternalID
			if tc.fault != nil {
				tc.fault(h, other)
			}
			h.mem.ResetCalls()
			done := make(chan error, 1)
			go func() { done <- h.e.DeleteVolume(h.ctx, "v") }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("delete: %v; want it to go as before the check", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("delete still running after 60 s")
			}
			if _, ok := h.mem.Volume(ext); ok {
				t.Errorf("the plugin still has %q", ext)
			}
			if _, ok := h.mem.Volume(other); !ok {
				t.Errorf("volume busy's storage %q was deleted", other)
			}
			if tc.rpcs != nil {
				if got := h.rpcs(); !slices.Equal(got, tc.rpcs) {
					t.Errorf("delete sent %v, want %v", got, tc.rpcs)
				}
			}
			msgs := h.eventMessages("volume-delete", "v")
			if checked := !strings.Contains(msgs, "not checked that no node held it"); checked != (tc.says == "") || !strings.Contains(msgs, tc.says) {
				t.Errorf("the delete event %q; want it to say %q of the check before DeleteVolume", msgs, tc.says)
			}
		})
	}
}

// The check before DeleteVolume and the one after it share one bound: a ListVolumes that hangs
// until the bound cuts it leaves no time for the check after, which is not asked (one
// ListVolumes sent in all, where a bound each sent a second), and the delete the plugin
// answered OK succeeds, its event saying neither was checked.
func TestDeleteChecksShareOneBoundAgainstAHungListing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.open(Config{ListCheck: 200 * time.Millisecond})
	ext := h.create(volume("v")).ExternalID
	h.faults.ResetCounts() // the delete's listings are counted, not the create's check of its answer
	h.faults.Inject(csi.RPCListVolumes, csitest.Fault{Hang: true, Times: 1})
	h.mem.ResetCalls()
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete: %v; want it to succeed (the plugin answered OK)", err)
	}
	if n := h.faults.Calls(csi.RPCListVolumes); n != 1 {
		t.Errorf("%d ListVolumes sent; want the hung one alone: the check after it has no time left", n)
	}
	if _, ok := h.mem.Volume(ext); ok {
		t.Errorf("the plugin still has %q", ext)
	}
	msgs := h.eventMessages("volume-delete", "v")
	for _, want := range []string{"not checked that no node held it", "not checked that the plugin no longer lists it", "used up the bound they share"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("the delete event %q; want it to say %q", msgs, want)
		}
	}
}

// recordedThroughASecondSocket serves the harness's plugin on a second socket too, registered as
// mem2 (two plugins to volctl, not socket mates: whatever serves them), creates volume v through
// mem and registers its storage again as volume w through mem2, returning the second socket and
// the storage's external ID.
func (h *harness) recordedThroughASecondSocket() (socket2, ext string) {
	h.t.Helper()
	socket2, _ = csitest.Serve(h.t, csitest.WithServer(h.mem), csitest.WithFaults(h.faults))
	h.registerPlugin("mem2", socket2)
	ext = h.create(volume("v")).ExternalID
	w := registered("w", ext)
	w.PluginID = "mem2"
	if _, err := h.e.RegisterVolume(h.ctx, w); err != nil {
		h.t.Fatalf("register v's storage again as w through mem2, on its own socket: %v", err)
	}
	return socket2, ext
}

// registeredElsewhere is another state dir on this host and plugin, with the storage ext
// registered in it as volume id.
func (h *harness) registeredElsewhere(id, ext string) *Engine {
	h.t.Helper()
	other := h.otherStateDir()
	if _, err := other.RegisterVolume(h.ctx, registered(id, ext)); err != nil {
		h.t.Fatalf("register the volume in the other state dir: %v", err)
	}
	return other
}
