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

// Deleting a volume with such an attachment left undoes it first; deregistering one forgets it.
func TestDeleteAndDeregisterAfterAFailedForceDetach(t *testing.T) {
	t.Run("delete", func(t *testing.T) {
		h := newHarness(t, nil)
		target, staging := forceDetachFailingControllerUnpublish(t, h)
		// The node side is gone, as a forced detach takes it to be (the node rebooted, say):
		// the plugin forgets it too.
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
		h.mem.ResetCalls()
		if err := h.e.DeleteVolume(h.ctx, "v"); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if got, want := h.rpcs(), []string{csi.RPCControllerUnpublishVolume, csi.RPCDeleteVolume}; !slices.Equal(got, want) {
			t.Errorf("delete sent %v, want %v", got, want)
		}
		if n := h.pluginVolumeCount(); n != 0 {
			t.Errorf("the plugin still has %d volume(s)", n)
		}
	})
	t.Run("deregister", func(t *testing.T) {
		h := newHarness(t, nil)
		forceDetachFailingControllerUnpublish(t, h)
		if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err != nil {
			t.Fatalf("deregister: %v", err)
		}
		if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
			t.Errorf("volume after deregister: %v, want not found", err)
		}
		if _, ok := h.staging("v"); ok {
			t.Error("staging row left after deregister")
		}
	})
}
