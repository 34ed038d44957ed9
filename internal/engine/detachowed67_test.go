package engine

import (
	"errors"
	"github.com/volctl/volctl/internal/csi"
	"google.golang.org/grpc/codes"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestForcedDeregisterOfACapabilityLostAttachmentGivesAdviceThatWorks: a `volume deregister
// --force` of a volume whose attachment is owed through a plugin that lost
// PUBLISH_UNPUBLISH_VOLUME forgets the attachment, and its warning quoted the undo's error
// whole: that the attachment "stays recorded, owed" for reconcile, and to run `volctl volume
// detach v --force`, which fails once the volume is deregistered. It says the cause alone now
// (owedError). Found by helper review67.
func TestForcedDeregisterOfACapabilityLostAttachmentGivesAdviceThatWorks(t *testing.T) {
	t.Parallel()
	noStaging := func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }
	h := newHarness(t, noStaging)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartPlugin(func(cfg *csitest.MemConfig) { noStaging(cfg); cfg.Controller.PublishUnpublishVolume = false }, "v")
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("staging after the release = %+v (%v), want the attachment owed", st, ok)
	}
	warnings, err := h.e.DeregisterVolume(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("deregister --force: %v", err)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("volume after deregister --force: %v, want not found", err)
	}
	w := strings.Join(warnings, "\n")
	if !strings.Contains(w, "forgotten") {
		t.Errorf("warnings = %q, want them to say the attachment is forgotten", w)
	}
	// The advice given must work now that the volume is gone.
	if _, err := h.e.Detach(h.ctx, "v", true); err == nil {
		t.Fatalf("detach --force of the deregistered volume succeeded?")
	}
	for _, wrong := range []string{"stays recorded", "volctl volume detach", "`volctl reconcile` sends it"} {
		if strings.Contains(w, wrong) {
			t.Errorf("warning of a deregister that forgot the attachment says %q, which is no longer true or fails:\n%s", wrong, w)
		}
	}
}

// TestForcedDetachWarningNamesTheVolumeAndNodeLeftAttached: a forced detach that could not
// send ControllerUnpublishVolume leaves the attachment recorded, owed, and says so in a warning.
// The command line prints each warning on its own line, and that one named neither the volume
// nor the node it stays attached to ("attached to this node"), whether the plugin answered with
// an error or could not be reached at all. Found by helper review67.
func TestForcedDetachWarningNamesTheVolumeAndNodeLeftAttached(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		break_ func(h *harness)
	}{
		{"answered Internal", func(h *harness) { h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Internal) }},
		{"plugin gone", func(h *harness) { h.stopServe() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			c.break_(h)
			res, err := h.e.Detach(h.ctx, "v", true)
			if err != nil {
				t.Fatalf("Detach(force): %v", err)
			}
			if st, ok := h.staging("v"); !ok || !st.ControllerPublished || st.NodeID != "node-1" {
				t.Fatalf("staging = %+v (%v), want the attachment to node-1 kept, owed", st, ok)
			}
			var about []string
			for _, w := range res.Warnings {
				if strings.Contains(w, "ControllerUnpublishVolume") && !strings.HasPrefix(w, "forced detach of volume") {
					about = append(about, w)
				}
			}
			if len(about) != 1 {
				t.Fatalf("warnings = %q, want one about the ControllerUnpublishVolume not done", res.Warnings)
			}
			for _, want := range []string{`volume "v"`, `node "node-1"`, `plugin "mem"`} {
				if !strings.Contains(about[0], want) {
					t.Errorf("the warning about the attachment left does not name %s:\n%s", want, about[0])
				}
			}
		})
	}
}

// TestForcedDeregisterOfAnAttachmentStillListedSaysItIsForgotten: the same of an owed
// unpublish the plugin answers OK but still lists (it detaches in the background, or did not):
// the deregister forgets the attachment, and its warning said volctl keeps it recorded and
// reconcile sends ControllerUnpublishVolume again. Found by helper review67.
func TestForcedDeregisterOfAnAttachmentStillListedSaysItIsForgotten(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	forceDetachFailingControllerUnpublish(t, h)
	h.mem.Reconfigure(func(cfg *csitest.MemConfig) { cfg.UnpublishLater = true })
	warnings, err := h.e.DeregisterVolume(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("deregister --force: %v", err)
	}
	if _, err := h.e.Volume(h.ctx, "v"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("volume after deregister --force: %v, want not found", err)
	}
	w := strings.Join(warnings, "\n")
	for _, wrong := range []string{"keeps it recorded", "`volctl reconcile` sends"} {
		if strings.Contains(w, wrong) {
			t.Errorf("warning of a deregister that forgot the attachment says %q, which is no longer true:\n%s", wrong, w)
		}
	}
}
