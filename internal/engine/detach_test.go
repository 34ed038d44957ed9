package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A forced detach returns its warnings for the caller to show and does not log them too:
// the command line prints each returned warning, so logging them printed everything twice.
func TestForceDetachReturnsWarningsWithoutLoggingThem(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	var logs bytes.Buffer
	h.open(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("Detach(force): %v", err)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "forced detach") {
		t.Fatalf("Warnings = %q, want the forced-detach warning first", res.Warnings)
	}
	if len(res.Released) != 1 || res.Released[0].Alloc != "a" {
		t.Errorf("Released = %+v, want alloc a's claim", res.Released)
	}
	if strings.Contains(logs.String(), "forced detach") {
		t.Errorf("the warnings were logged as well as returned:\n%s", logs.String())
	}
}

// forceDetachFailingControllerUnpublish force-detaches v's one claim while the plugin answers
// ControllerUnpublishVolume with Unavailable, and checks the attachment is still recorded. It
// returns what the node RPCs it skipped would have undone: the target and the staging path.
func forceDetachFailingControllerUnpublish(t *testing.T, h *harness) (target, staging string) {
	t.Helper()
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Unavailable)
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("Detach(force): %v", err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "ControllerUnpublishVolume") || !strings.Contains(w, "volctl reconcile") {
		t.Errorf("warnings = %q, want the failed ControllerUnpublishVolume and that reconcile sends it again", res.Warnings)
	}
	h.faults.Clear()
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the forced detach: %+v", live)
	}
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished || st.StagingPath != "" || st.Staged {
		t.Fatalf("staging after the forced detach = %+v (found %v), want only the attachment recorded", st, ok)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 1 {
		t.Fatalf("plugin's attachments = %v, want the one left", nodes)
	}
	return cl.TargetPath, st.StagingPath
}

// An attachment a forced detach could not undo (the plugin answered, but with an error) is not
// forgotten: reconcile sends ControllerUnpublishVolume once the plugin is well.
func TestForceDetachLeavesAFailedControllerUnpublishForReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	h.mem.ResetCalls()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
		t.Errorf("reconcile sent ControllerUnpublishVolume %d times, want 1", n)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 0 {
		t.Errorf("still attached to %v after reconcile", nodes)
	}
	if st, ok := h.staging("v"); ok {
		t.Errorf("staging row left after reconcile: %+v", st)
	}
}

// Deleting a volume with such an attachment left undoes it first; deregistering one refuses
// to forget it (TestDeregisterVolumeRefusesToForgetAnOwedUnpublish).
func TestDeleteAfterAFailedForceDetach(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	target, staging := forceDetachFailingControllerUnpublish(t, h)
	forgetNodeSide(t, h, target, staging)
	h.mem.ResetCalls()
	if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	// ListVolumes: the plugin (LIST_VOLUMES, LIST_VOLUMES_PUBLISHED_NODES) is asked whether it
	// still lists the volume published to the node, then, under the lock DeleteVolume is sent
	// under and after checking which driver answers, whether any node holds it (the first
	// listing is from before the lock was let go, and asked of node-1 alone: another state dir
	// may publish the volume in between, TestDeleteAsksAgainAfterUndoingALeftAttachment), then
	// whether the volume is gone.
	if got, want := h.rpcs(), []string{csi.RPCControllerUnpublishVolume, csi.RPCListVolumes, csi.RPCListVolumes, csi.RPCDeleteVolume, csi.RPCListVolumes}; !slices.Equal(got, want) {
		t.Errorf("delete sent %v, want %v", got, want)
	}
	if n := h.pluginVolumeCount(); n != 0 {
		t.Errorf("the plugin still has %d volume(s)", n)
	}
}

// forgetNodeSide has the plugin forget volume v's publication at target and staging at
// staging, as a forced detach takes the node side to be gone (the node rebooted, say).
func forgetNodeSide(t *testing.T, h *harness, target, staging string) {
	t.Helper()
	c, err := csi.New(csi.Config{NodeSocket: h.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.NodeUnpublishVolume(h.ctx, csi.NodeUnpublishVolumeRequest{VolumeID: h.externalID("v"), TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if err := c.NodeUnstageVolume(h.ctx, csi.NodeUnstageVolumeRequest{VolumeID: h.externalID("v"), StagingPath: staging}); err != nil {
		t.Fatal(err)
	}
}

// A delete whose ControllerUnpublishVolume still fails keeps the attachment recorded (and the
// volume, marked deleting) and says what it was undoing: the node, the plugin, what to run.
func TestDeleteKeepsAnOwedUnpublishThatStillFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	target, staging := forceDetachFailingControllerUnpublish(t, h)
	forgetNodeSide(t, h, target, staging)
	h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Unavailable)
	err := h.e.DeleteVolume(h.ctx, "v")
	if err == nil {
		t.Fatal("delete succeeded while ControllerUnpublishVolume fails")
	}
	for _, want := range []string{`volume "v"`, `node "node-1"`, `plugin "mem"`, "ControllerUnpublishVolume", "`volctl reconcile`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %s", err, want)
		}
	}
	if n := h.mem.CallCount(csi.RPCDeleteVolume); n != 0 {
		t.Errorf("DeleteVolume sent %d times while the volume is still attached", n)
	}
	checkOwedUnpublishKept(t, h)
	h.faults.Clear()
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("volume after reconcile finished the delete: %v, want not found", err)
	}
}

// checkOwedUnpublishKept checks that volume v is still recorded, attached to node-1 with no
// claim, as forceDetachFailingControllerUnpublish left it, and that the plugin still has it
// attached there.
func checkOwedUnpublishKept(t *testing.T, h *harness) {
	t.Helper()
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished || st.NodeID != "node-1" {
		t.Errorf("staging = %+v (found %v), want the attachment to node-1 still recorded", st, ok)
	}
	if got := h.volumeInfo("v").AttachedTo; got != "node-1" {
		t.Errorf("attached_to = %q, want node-1", got)
	}
	if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 1 {
		t.Errorf("plugin's attachments = %v, want the one left", nodes)
	}
}

// checkNamesTheOwedUnpublish checks a refusal to forget volume v's attachment: a conflict
// naming the volume, the node, the plugin, and what to run.
func checkNamesTheOwedUnpublish(t *testing.T, err error, run ...string) {
	t.Helper()
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want a conflict", err)
	}
	for _, want := range append([]string{`volume "v"`, `node "node-1"`, `plugin "mem"`, "ControllerUnpublishVolume", "`volctl reconcile`"}, run...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to say %s", err, want)
		}
	}
}

// A volume recorded attached with no claim (a forced detach could not send
// ControllerUnpublishVolume) is not forgotten by deregistering it: that is refused, naming the
// volume, the node, the plugin, reconcile, and the --force that forgets it.
func TestDeregisterVolumeRefusesToForgetAnOwedUnpublish(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	ext := h.externalID("v")
	h.mem.ResetCalls()
	_, err := h.e.DeregisterVolume(h.ctx, "v", false)
	checkNamesTheOwedUnpublish(t, err, "`volctl volume deregister v --force --yes`")
	if got := h.rpcs(); len(got) != 0 {
		t.Errorf("deregister sent %v, want nothing: it only reads the records", got)
	}
	checkOwedUnpublishKept(t, h)
	if evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "volume-deregister"}); err != nil || len(evs) != 0 {
		t.Errorf("volume-deregister events = %+v (%v), want none", evs, err)
	}
	// Reconcile sends what is owed; then the volume deregisters.
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
		t.Fatalf("deregister after reconcile: %v", err)
	}
	if nodes := h.mem.PublishedNodes(ext); len(nodes) != 0 {
		t.Errorf("still attached to %v", nodes)
	}
}

// volume deregister --force sends the ControllerUnpublishVolume a forced detach left owed, as
// reconcile would; a plugin that still cannot take it gets the attachment forgotten, which
// --force says in a warning and the event, naming the node and the plugin.
func TestDeregisterVolumeForceSendsOrForgetsAnOwedUnpublish(t *testing.T) {
	t.Parallel()
	t.Run("sent", func(t *testing.T) {
		h := newHarness(t, nil)
		forceDetachFailingControllerUnpublish(t, h)
		ext := h.externalID("v")
		h.mem.ResetCalls()
		warnings, err := h.e.DeregisterVolume(h.ctx, "v", true)
		if err != nil {
			t.Fatalf("deregister --force: %v", err)
		}
		if len(warnings) != 0 {
			t.Errorf("warnings = %q, want none: nothing was forgotten", warnings)
		}
		if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
			t.Errorf("deregister --force sent ControllerUnpublishVolume %d times, want 1", n)
		}
		if nodes := h.mem.PublishedNodes(ext); len(nodes) != 0 {
			t.Errorf("still attached to %v", nodes)
		}
	})
	t.Run("forgotten", func(t *testing.T) {
		h := newHarness(t, nil)
		forceDetachFailingControllerUnpublish(t, h)
		h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Unavailable)
		warnings, err := h.e.DeregisterVolume(h.ctx, "v", true)
		if err != nil {
			t.Fatalf("deregister --force: %v", err)
		}
		w := strings.Join(warnings, "\n")
		for _, want := range []string{`volume "v"`, `node "node-1"`, `plugin "mem"`, "ControllerUnpublishVolume", "Unavailable", "attachment to node \"node-1\" is forgotten"} {
			if !strings.Contains(w, want) {
				t.Errorf("warnings = %q, want them to say %s", warnings, want)
			}
		}
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume after deregister --force: %v, want not found", err)
		}
		if _, ok := h.staging("v"); ok {
			t.Error("staging row left after deregister --force")
		}
		evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "volume-deregister"})
		if err != nil || len(evs) != 1 || !strings.Contains(evs[0].Message, `node "node-1"`) || !strings.Contains(evs[0].Message, "forgotten") {
			t.Errorf("volume-deregister events = %+v (%v), want one saying the attachment to node-1 was forgotten", evs, err)
		}
	})
}

// A plugin through which a ControllerUnpublishVolume is owed is not deregistered, --force or
// not: nothing would be left to send it through. The refusal names the volume, the node, the
// plugin, reconcile, and the volume deregister --force that forgets the attachment.
func TestDeregisterPluginRefusesWhileAnUnpublishIsOwed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	for _, force := range []bool{false, true} {
		err := h.e.DeregisterPlugin(h.ctx, "mem", force)
		checkNamesTheOwedUnpublish(t, err, "`volctl volume deregister v --force --yes`")
		if ps, err := h.e.Plugins(h.ctx); err != nil || len(ps) != 1 {
			t.Fatalf("plugins after a refused deregister (force %v) = %+v (%v), want mem still registered", force, ps, err)
		}
		checkOwedUnpublishKept(t, h)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v %+v", err, rep)
	}
	if err := h.e.DeregisterPlugin(h.ctx, "mem", true); err != nil {
		t.Fatalf("deregister --force once the unpublish was sent: %v", err)
	}
}

// A plugin deregister refused for an owed unpublish of a volume handed over to Nomad says how
// to take it back with commands that name the mark's cluster, namespace and region: the
// environment they are pasted into may name another, where a bare `nomad volume deregister`
// would deregister another volume by the ID.
func TestDeregisterPluginRefusalNamesWhereAHandedOverVolumeIs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	to := HandoverTarget{Address: "http://nomad.example:4646", Namespace: "prod", Region: "eu"}
	// --force: handed over with the unpublish owed (volctl sends it once it is taken back).
	if _, err := h.e.HandOver(h.ctx, "v", to, true, nil); err != nil {
		t.Fatal(err)
	}
	err := h.e.DeregisterPlugin(h.ctx, "mem", true)
	checkNamesTheOwedUnpublish(t, err,
		"`NOMAD_ADDR=http://nomad.example:4646 nomad volume deregister -namespace prod -region eu v`, then `NOMAD_ADDR=http://nomad.example:4646 volctl nomad release v`")
}
