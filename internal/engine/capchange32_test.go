package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A snapshot volctl records (being created, made, or being deleted) whose plugin comes back
// from a restart without CREATE_DELETE_SNAPSHOT, × the next command (reconcile, snapshot
// delete): nothing is sent, and the refusal says the plugin lost the capability, names the
// snapshot, and names both ways out (the capability back; `volume snapshot deregister`, which
// then forgets it). Before, reconcile reported "plugin "mem" cannot create snapshots (no
// CREATE_DELETE_SNAPSHOT controller capability)" every pass and the delete "cannot delete
// snapshots", naming neither; volume creates had this (TestInterruptedCreateThroughAPluginThatLostCreateDelete).
func TestSnapshotOfAPluginThatLostCreateDeleteSnapshot(t *testing.T) {
	t.Parallel()
	pending := func(h *harness) string { return pendingSnapshot(h.t, h) }
	for _, tc := range []struct {
		name string
		// leave makes the snapshot's record, returning the name the refusal must name.
		leave func(h *harness) string
		next  func(h *harness, name string) error
	}{
		{"being created, reconcile", pending, reconcileProblem},
		{"being created, delete", pending, deleteSnapshot},
		{"made, delete", func(h *harness) string { return h.snapshot("made").ID }, deleteSnapshot},
		{"delete recorded, reconcile", func(h *harness) string {
			id := h.snapshot("deleting").ID
			h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
			if err := h.e.DeleteSnapshot(h.ctx, "mem", id, nil); err == nil {
				h.t.Fatal("delete with every answer lost succeeded")
			}
			return id
		}, reconcileProblem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := snapshotHarness(t, nil)
			name := tc.leave(h)
			h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = false })

			err := tc.next(h, name)
			if err == nil {
				t.Fatal("nothing refused")
			}
			for _, want := range []string{`plugin "mem" no longer has the controller capability CREATE_DELETE_SNAPSHOT`, `"` + name + `"`,
				"volctl volume snapshot deregister mem " + name, "start the plugin with that capability again"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal %q does not say %s", err, want)
				}
			}
			if n := strings.Count(err.Error(), "snapshot deregister"); n != 1 {
				t.Errorf("the refusal %q names the deregister %d times, want once", err, n)
			}
			if rpcs := h.rpcs(); len(rpcs) != 0 {
				t.Errorf("sent %v to a plugin without CREATE_DELETE_SNAPSHOT", rpcs)
			}
			// The way out it names forgets it.
			if _, err := h.e.DeregisterSnapshot(h.ctx, "mem", name); err != nil {
				t.Fatal(err)
			}
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile after the deregister: %v (%+v)", err, rep.Problems)
			}
		})
	}
}

func reconcileProblem(h *harness, _ string) error {
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil {
		return nil
	}
	if len(rep.Problems) != 1 {
		h.t.Fatalf("reconcile problems %+v, want one", rep.Problems)
	}
	return errorString(rep.Problems[0].Message)
}

func deleteSnapshot(h *harness, name string) error {
	return h.e.DeleteSnapshot(h.ctx, "mem", name, nil)
}

type errorString string

func (e errorString) Error() string { return string(e) }

// A monolith that comes back from a restart serving its controller alone (no Node service on
// the socket) while a claim holds a volume staged and published through it: nothing is sent,
// the release is left for reconcile with the staging and attachment recorded, and the error
// (and `plugin status`'s last_error) says the node service is gone, the node it served as, and
// to start it with the service again. Before: "NodeGetCapabilities: Unimplemented: unknown
// service csi.v1.Node (the plugin does not implement NodeGetCapabilities; check its
// capabilities)", nothing saying it had one. Back with it, reconcile undoes what was recorded.
func TestPluginBackWithoutItsNodeServiceIsToldSo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithRegister(func(s *grpc.Server) {
		h.mem.RegisterServices(s, csitest.Identity, csitest.Controller)
	}))
	h.mem.ResetCalls()

	_, err := h.e.Release(h.ctx, "v", "a")
	wants := []string{`plugin "mem" came back without its node service`, `as node "node-1"`, "STAGE_UNSTAGE_VOLUME",
		"start the plugin with its node service again, then run `volctl reconcile`"}
	for _, want := range wants {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("release through a plugin without its node service: %v; want it to say %s", err, want)
		}
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("sent %v", rpcs)
	}
	if st, ok := h.staging("v"); !ok || !st.Staged || !st.ControllerPublished {
		t.Errorf("staging after the refused release = %+v, want it staged and attached as recorded", st)
	}
	ps, err := h.e.PluginStatus(h.ctx, "mem")
	if err != nil || len(ps) != 1 || !strings.Contains(ps[0].LastError, wants[0]) {
		t.Errorf("plugin status = %+v, %v; want its last error to say %s", ps, err, wants[0])
	}

	h.stopServe()
	h.serveAgain(t)
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the node service back: %v (%+v)", err, rep.Problems)
	}
	for _, rpc := range []string{csi.RPCNodeUnpublishVolume, csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		if n := h.mem.CallCount(rpc); n != 1 {
			t.Errorf("%s sent %d times once the node service was back, want 1", rpc, n)
		}
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the reconcile: %+v", live)
	}
}

// An expansion pending (ControllerExpandVolume sent, its answer never read: here it never
// reached the plugin, so the storage did not grow) whose plugin comes back without the
// controller capability EXPAND_VOLUME (× keeping the node's, or losing both) × the next
// command (reconcile, the expand again, the expand further). One rule, the plugin's current
// declaration: with node EXPAND_VOLUME alone it declares node-only expansion (the CSI spec's
// case where NodeExpandVolume is the whole expansion), as volctl trusts for any other volume of
// it, so the pending expansion is finished so: NodeExpandVolume sent once, the size recorded,
// the pending mark cleared, and the event and the command's output say it was finished
// node-only, naming the plugin and the sizes. With neither capability nothing is sent, the
// record and the pending mark stay, the error says what was lost and both ways out, and with
// the capability back reconcile finishes it. (caps32 refused the node-only case for good,
// while the same plugin grew another volume node-only: TestPendingExpansionNodeOnlyIsOneRuleForEveryVolume.)
func TestPendingExpansionThroughAPluginThatLostControllerExpand(t *testing.T) {
	t.Parallel()
	for _, lose := range []struct {
		name     string
		nodeOnly bool
		edit     func(*csitest.MemConfig)
	}{
		{"controller's", true, func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false }},
		{"both", false, func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = false, false }},
	} {
		for _, next := range []struct {
			name string
			size int64 // what the volume is recorded at once it is finished node-only
			run  func(h *harness) (output string, err error)
		}{
			{"reconcile", 4 << 30, func(h *harness) (string, error) {
				rep, err := h.e.Reconcile(h.ctx)
				if err != nil {
					return "", reconcileProblem(h, "")
				}
				var out []string
				for _, a := range rep.Actions {
					out = append(out, a.Message)
				}
				return strings.Join(out, "\n"), nil
			}},
			{"expand again", 4 << 30, func(h *harness) (string, error) {
				v, err := h.e.ExpandVolume(h.ctx, "v", 4<<30, 0)
				return v.ExpansionNote, err
			}},
			{"expand further", 8 << 30, func(h *harness) (string, error) {
				v, err := h.e.ExpandVolume(h.ctx, "v", 8<<30, 0)
				return v.ExpansionNote, err
			}},
		} {
			t.Run(lose.name+"/"+next.name, func(t *testing.T) {
				h := newHarness(t, nil)
				h.create(volume("v"))
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
				expansionPending(h, "v", 4<<30)
				h.restartWith(lose.edit)

				out, err := next.run(h)
				if lose.nodeOnly {
					if err != nil {
						t.Fatalf("%s through a plugin that now declares node-only expansion: %v", next.name, err)
					}
					if n, c := h.mem.CallCount(csi.RPCNodeExpandVolume), h.mem.CallCount(csi.RPCControllerExpandVolume); n != 1 || c != 0 {
						t.Errorf("NodeExpandVolume sent %d times, ControllerExpandVolume %d; want once, never", n, c)
					}
					if v := h.volumeInfo("v"); v.CapacityBytes != next.size || v.ExpansionPending != 0 || v.NodeExpansionOwed != 0 {
						t.Errorf("volume recorded at %d, pending %d, node expansion owed %d; want %d, none pending, none owed",
							v.CapacityBytes, v.ExpansionPending, v.NodeExpansionOwed, next.size)
					}
					wants := []string{"the pending controller expansion to 4GiB", "finished node-only, to " + spec.FormatSize(next.size),
						`plugin "mem" now declares node EXPAND_VOLUME without the controller's`, "recorded at 1MiB"}
					for _, want := range wants {
						if !strings.Contains(out, want) {
							t.Errorf("%s's output %q; want it to say %s", next.name, out, want)
						}
						if msgs := h.eventMessages("volume-expand", "v"); !strings.Contains(msgs, want) {
							t.Errorf("the expand events %q; want one to say %s", msgs, want)
						}
					}
					if rep, err := h.e.Reconcile(h.ctx); err != nil || h.mem.CallCount(csi.RPCNodeExpandVolume) != 1 {
						t.Errorf("reconcile after: %v (%+v), NodeExpandVolume sent %d times in all; want nothing left, once",
							err, rep.Problems, h.mem.CallCount(csi.RPCNodeExpandVolume))
					}
					return
				}
				for _, want := range []string{`plugin "mem" no longer has the controller capability EXPAND_VOLUME, nor the node's`, "expansion to 4GiB is pending",
					"start the plugin with an EXPAND_VOLUME capability again", "`volctl volume deregister v --force --yes`", "`volctl volume register`"} {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %v; want it to say %s", next.name, err, want)
					}
				}
				if rpcs := h.rpcs(); len(rpcs) != 0 {
					t.Errorf("sent %v", rpcs)
				}
				if v := h.volumeInfo("v"); v.CapacityBytes != 1<<20 || v.ExpansionPending != 4<<30 || v.NodeExpansionOwed != 0 {
					t.Errorf("volume recorded at %d, pending %d, node expansion owed %d; want 1MiB, 4GiB pending, none owed (the storage is %+v)",
						v.CapacityBytes, v.ExpansionPending, v.NodeExpansionOwed, h.mem.Volumes())
				}

				h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = true, true })
				if rep, err := h.e.Reconcile(h.ctx); err != nil {
					t.Fatalf("reconcile with the capability back: %v (%+v)", err, rep.Problems)
				}
				if v := h.volumeInfo("v"); v.CapacityBytes != 4<<30 || v.ExpansionPending != 0 || h.mem.CallCount(csi.RPCControllerExpandVolume) != 1 {
					t.Errorf("after the reconcile: volume recorded at %d, pending %d, ControllerExpandVolume sent %d times; want 4GiB, none, once",
						v.CapacityBytes, v.ExpansionPending, h.mem.CallCount(csi.RPCControllerExpandVolume))
				}
			})
		}
	}
}

// One plugin back with node EXPAND_VOLUME alone: volume w (nothing pending) and volume v (a
// controller expansion pending) are both expanded node-only, each recorded at the size asked.
// Before, w was expanded while v was refused for good, on a ground (NodeExpandVolume may grow
// the file system to a size the storage may not have) that held for w just as much (review32b).
func TestPendingExpansionNodeOnlyIsOneRuleForEveryVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.create(volume("w"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	expansionPending(h, "v", 4<<30)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume = false })
	_, werr := h.e.ExpandVolume(h.ctx, "w", 4<<30, 0)
	_, verr := h.e.ExpandVolume(h.ctx, "v", 4<<30, 0)
	if werr != nil || verr != nil {
		t.Fatalf("one plugin, node-only expansion: w %v, v %v; want both expanded", werr, verr)
	}
	for _, id := range []string{"v", "w"} {
		if v := h.volumeInfo(id); v.CapacityBytes != 4<<30 || v.ExpansionPending != 0 {
			t.Errorf("volume %q recorded at %d, pending %d; want 4GiB, none", id, v.CapacityBytes, v.ExpansionPending)
		}
	}
}

// A pending expansion through a plugin with no EXPAND_VOLUME left, which will not have it
// again: the expand's refusal and handover's both name the way out, and the commands they
// advise (release, `volume deregister`, `volume register` of the spec with its external_id)
// leave the volume recorded anew, nothing pending, reconcile clean, claimable, the storage
// untouched. Before, the refusal named only the capability back (review32b).
func TestPendingExpansionWithNoExpandCapabilityWayOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ext := h.create(volume("v")).ExternalID
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	expansionPending(h, "v", 4<<30)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.ExpandVolume, c.Node.ExpandVolume = false, false })

	_, expandErr := h.e.ExpandVolume(h.ctx, "v", 4<<30, 0)
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	_, handErr := h.e.HandOver(h.ctx, "v", HandoverTarget{Address: "http://127.0.0.1:4646"}, false, nil)
	for name, err := range map[string]error{"expand": expandErr, "handover": handErr} {
		for _, want := range []string{"`volctl volume deregister v --force --yes`", "`volctl volume register` of its spec with external_id = " + strconv.Quote(ext),
			"the storage is not touched"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s refusal: %v; want it to say %s", name, err, want)
			}
		}
	}
	h.mem.ResetCalls()

	// The way out, as advised: --force, as a plain deregister refuses to forget a pending
	// expansion (TestDeregisterOfAVolumeWithAPendingExpansionIsRefusedAndFinishesAsAdvised).
	if _, err := h.e.DeregisterVolume(h.ctx, "v", true); err != nil {
		t.Fatalf("deregister: %v", err)
	}
	sv := volume("v")
	sv.ExternalID = ext
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatalf("register: %v", err)
	}
	if v := h.volumeInfo("v"); v.ExpansionPending != 0 || v.CapacityBytes > 1<<20 || v.RequestedMin != 1<<20 {
		t.Errorf("registered anew: recorded at %d (asked %d), pending %d; want 1MiB, nothing pending", v.CapacityBytes, v.RequestedMin, v.ExpansionPending)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("reconcile after the way out: %v (%+v)", err, rep.Problems)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	if _, ok := h.mem.Volume(ext); !ok {
		t.Errorf("storage %q gone", ext)
	}
	for _, rpc := range []string{csi.RPCDeleteVolume, csi.RPCControllerExpandVolume, csi.RPCNodeExpandVolume} {
		if n := h.mem.CallCount(rpc); n != 0 {
			t.Errorf("%s sent %d times on the way out", rpc, n)
		}
	}
}

// A volume delete in flight (DeleteVolume's answer lost: the storage is gone or not, volctl
// cannot tell) whose plugin comes back without CREATE_DELETE_VOLUME × the next command
// (reconcile, the delete again): DeleteVolume is not sent to a plugin that does not advertise
// it, and the refusal says the capability was lost, names the deregister that forgets the
// volume and the storage it may leave; the deregister then warns of that storage. Before,
// reconcile sent DeleteVolume every pass and said to run the delete again or reconcile, the
// delete said "cannot delete volumes", and the deregister forgot the volume without a word.
func TestInterruptedDeleteThroughAPluginThatLostCreateDelete(t *testing.T) {
	t.Parallel()
	for _, next := range []struct {
		name string
		run  func(h *harness) error
	}{
		{"reconcile", func(h *harness) error { return reconcileProblem(h, "") }},
		{"delete again", func(h *harness) error { return h.e.DeleteVolume(h.ctx, "v") }},
	} {
		t.Run(next.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ext := deleteInterruptedThenCapabilityLost(h)

			err := next.run(h)
			for _, want := range []string{`plugin "mem" no longer has the controller capability CREATE_DELETE_VOLUME`,
				"start the plugin with that capability again", "volctl volume deregister v", ext} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v; want it to say %s", next.name, err, want)
				}
			}
			if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
				t.Errorf("DeleteVolume sent %d times to a plugin without CREATE_DELETE_VOLUME", n)
			}
			if v := h.volumeInfo("v"); v.State != "deleting" {
				t.Errorf("volume %s after the refusal, want deleting", v.State)
			}
			warnings, err := h.e.DeregisterVolume(h.ctx, "v", false)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "its delete, or its create's removal of a volume the plugin answered with that volctl could not use, was not finished") || !strings.Contains(warnings[0], ext) {
				t.Errorf("deregister of the interrupted delete warned %q; want the storage %q it may leave", warnings, ext)
			}
			if msgs := h.eventMessages("volume-deregister", "v"); !strings.Contains(msgs, ext) {
				t.Errorf("the deregister event %q does not name %q", msgs, ext)
			}
		})
	}
}

// An interrupted delete whose plugin lost CREATE_DELETE_VOLUME and then got it back, × the
// next command (reconcile twice, the delete again): DeleteVolume is sent exactly once, the
// storage and the record are gone (review32b).
func TestInterruptedDeleteWithTheCapabilityBackFinishesOnce(t *testing.T) {
	t.Parallel()
	for _, next := range []struct {
		name string
		run  func(h *harness) error
	}{
		{"reconcile", func(h *harness) error {
			for range 2 {
				if rep, err := h.e.Reconcile(h.ctx); err != nil {
					return fmt.Errorf("%w (%+v)", err, rep.Problems)
				}
			}
			return nil
		}},
		{"delete again", func(h *harness) error { return h.e.DeleteVolume(h.ctx, "v") }},
	} {
		t.Run(next.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ext := deleteInterruptedThenCapabilityLost(h)
			if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
				t.Fatal("delete without the capability succeeded")
			}
			if err := reconcileProblem(h, ""); err == nil {
				t.Fatal("reconcile without the capability refused nothing")
			}
			h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteVolume = true })
			if err := next.run(h); err != nil {
				t.Fatalf("%s with the capability back: %v", next.name, err)
			}
			if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 1 {
				t.Errorf("DeleteVolume sent %d times with the capability back, want 1", n)
			}
			if _, ok := h.mem.Volume(ext); ok {
				t.Errorf("storage %q still there", ext)
			}
			if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
				t.Errorf("volume after the finished delete: %v, want not found", err)
			}
		})
	}
}

// A split plugin whose controller half is not registered (only its node half) and a volume
// whose delete was interrupted: reconcile, like the delete again, says the controller half is
// missing, and sends nothing. Before, reconcile said the plugin "no longer has the controller
// capability CREATE_DELETE_VOLUME", which the driver has (review32b).
func TestSplitInterruptedDeleteThroughTheNodeHalfNamesTheMissingHalf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	backend := h.nodeHalfAlone()
	sv := spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "split", ExternalID: "ext-1",
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	h.update(func(tx *store.Tx) error { // recorded deleting: its delete interrupted while the controller half was registered
		v := store.VolumeFromSpec(sv)
		v.State = store.VolumeDeleting
		return tx.Volumes().Insert(&v)
	})
	want := `plugin "split" advertises CONTROLLER_SERVICE but only its node half is registered`
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("delete again = %v; want it to say %s", err, want)
	}
	err := reconcileProblem(h, "")
	for _, want := range []string{want, `send the DeleteVolume volume "v" is marked deleting for`, `type "controller"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reconcile of the interrupted delete = %v; want it to say %s", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "no longer has the controller capability") {
		t.Errorf("reconcile says a capability was lost: %v", err)
	}
	if n := backend.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d times", n)
	}
	if v := h.volumeInfo("v"); v.State != "deleting" {
		t.Errorf("volume %s, want deleting", v.State)
	}
}

// A snapshot volctl records whose plugin lost CREATE_DELETE_SNAPSHOT and got it back: a
// pending create is finished once by reconcile (CreateSnapshot once), a recorded delete likewise
// (DeleteSnapshot once) (review32b).
func TestSnapshotWithTheCapabilityBackFinishesOnce(t *testing.T) {
	t.Parallel()
	t.Run("pending create", func(t *testing.T) {
		h, _ := snapshotHarness(t, nil)
		name := pendingSnapshot(h.t, h)
		h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = false })
		if err := reconcileProblem(h, name); err == nil {
			t.Fatal("nothing refused")
		}
		h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = true })
		for range 2 {
			if rep, err := h.e.Reconcile(h.ctx); err != nil {
				t.Fatalf("reconcile with the capability back: %v (%+v)", err, rep.Problems)
			}
		}
		if n := h.mem.CallCount(csi.RPCCreateSnapshot); n != 1 {
			t.Errorf("CreateSnapshot sent %d times, want 1", n)
		}
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		if err != nil || len(list.Snapshots) != 1 || list.Snapshots[0].Pending {
			t.Errorf("snapshots after: %+v %v", list.Snapshots, err)
		}
	})
	t.Run("recorded delete", func(t *testing.T) {
		h, _ := snapshotHarness(t, nil)
		id := h.snapshot("deleting").ID
		h.faults.Inject(csi.RPCDeleteSnapshot, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
		if err := h.e.DeleteSnapshot(h.ctx, "mem", id, nil); err == nil {
			t.Fatal("delete with every answer lost succeeded")
		}
		h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = false })
		if err := reconcileProblem(h, id); err == nil {
			t.Fatal("nothing refused")
		}
		h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteSnapshot = true })
		if rep, err := h.e.Reconcile(h.ctx); err != nil {
			t.Fatalf("reconcile with the capability back: %v (%+v)", err, rep.Problems)
		}
		if n := h.mem.CallCount(csi.RPCDeleteSnapshot); n != 1 {
			t.Errorf("DeleteSnapshot sent %d times, want 1", n)
		}
		list, err := h.e.ListSnapshots(h.ctx, "mem", nil)
		if err != nil || len(list.Snapshots) != 0 {
			t.Errorf("snapshots after: %+v %v", list.Snapshots, err)
		}
	})
}

// A plugin whose node service answers NodeGetCapabilities but NodeGetInfo UNIMPLEMENTED (a
// proxy, a broken build) under a claim: the release sends nothing and says NodeGetInfo, which
// the spec requires, does not answer, not that the plugin came back without its node service,
// which it did not (review32b).
func TestPluginWhoseNodeGetInfoIsUnimplementedIsNotToldItLostItsNodeService(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailAlways(csi.RPCNodeGetInfo, codes.Unimplemented)
	h.restartWith(func(c *csitest.MemConfig) {})
	_, err := h.e.Release(h.ctx, "v", "a")
	if h.faults.Calls(csi.RPCNodeGetCapabilities) == 0 {
		t.Fatal("NodeGetCapabilities was not asked: the fingerprint no longer asks it before NodeGetInfo, and this test tells nothing")
	}
	if err != nil && strings.Contains(err.Error(), "came back without its node service") {
		t.Errorf("NodeGetCapabilities answered, yet: %v", err)
	}
	for _, want := range []string{`plugin "mem"'s node service answers (NodeGetCapabilities did) but NodeGetInfo`, `as node "node-1"`,
		"so that NodeGetInfo answers, then run `volctl reconcile`"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("release: %v; want it to say %s", err, want)
		}
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("sent %v", rpcs)
	}
}

// A create whose plugin answered with a volume volctl cannot use (1GiB for a capacity_max of
// 2MiB) and whose removal of it failed: the record stays deleting with that volume's external
// ID, and `volume deregister` of it warns that the storage may be left without calling it an
// interrupted delete (no delete was asked) or a DeleteVolume whose answer was lost (it was
// answered, with an error): it names both things a deleting record can be, and that DeleteVolume
// may not have been sent. Before: "its delete was interrupted, and a DeleteVolume whose answer
// was lost may or may not have deleted its storage" (review32b).
func TestDeregisterOfACreateCleanupSaysWhatItMayBe(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 1 << 30 })
	h.faults.FailAlways(csi.RPCDeleteVolume, codes.Unavailable)
	sv := volume("v")
	sv.CapacityMax = 2 << 20
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("create answered above its capacity_max succeeded")
	}
	v := h.volumeInfo("v")
	if v.State != "deleting" || v.ExternalID == "" {
		t.Fatalf("after the failed cleanup: %s with external ID %q; want deleting with the unusable volume's", v.State, v.ExternalID)
	}
	warnings, err := h.e.DeregisterVolume(h.ctx, "v", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"its create's removal of a volume the plugin answered with that volctl could not use", "may not have been sent", strconv.Quote(v.ExternalID)} {
		if len(warnings) != 1 || !strings.Contains(warnings[0], want) {
			t.Errorf("deregister warned %q; want it to say %s", warnings, want)
		}
	}
	for _, wrong := range []string{"its delete was interrupted", "whose answer was lost may"} {
		if len(warnings) == 1 && strings.Contains(warnings[0], wrong) {
			t.Errorf("deregister warned %q: %q is not what happened", warnings[0], wrong)
		}
	}
	if msgs := h.eventMessages("volume-deregister", "v"); !strings.Contains(msgs, "may not have been sent") {
		t.Errorf("the deregister event %q does not say it", msgs)
	}
}

// deleteInterruptedThenCapabilityLost deletes volume "v", created here, with every DeleteVolume
// answered UNAVAILABLE (left deleting), then restarts the plugin without CREATE_DELETE_VOLUME;
// it returns the volume's external ID.
func deleteInterruptedThenCapabilityLost(h *harness) string {
	h.t.Helper()
	ext := h.create(volume("v")).ExternalID
	h.faults.FailAlways(csi.RPCDeleteVolume, codes.Unavailable)
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil {
		h.t.Fatal("delete with the plugin unavailable succeeded")
	}
	h.faults.Clear(csi.RPCDeleteVolume)
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.CreateDeleteVolume = false })
	return ext
}

// expansionPending expands volume id to size with ControllerExpandVolume answered UNAVAILABLE:
// the expansion is left pending, the storage not grown.
func expansionPending(h *harness, id string, size int64) {
	h.t.Helper()
	h.faults.FailAlways(csi.RPCControllerExpandVolume, codes.Unavailable)
	if _, err := h.e.ExpandVolume(h.ctx, id, size, 0); err == nil {
		h.t.Fatal("expand with the plugin unavailable succeeded")
	}
	h.faults.Clear(csi.RPCControllerExpandVolume)
}
