package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestLostCapabilitiesDoNotDropStagingsQuietly: a plugin that comes back from a restart without
// STAGE_UNSTAGE_VOLUME and PUBLISH_UNPUBLISH_VOLUME while a volume is staged and attached
// through it. Before, the release dropped the staging and attachment records without a word,
// leaving the staging mounted and the volume attached with nothing tracking them. Now an event
// says what changed, the release checks the mount table and keeps the record of a staging
// still mounted, reconcile reports it until it is unmounted, and the attachment record is
// dropped with an event saying the volume may still be attached.
func TestLostCapabilitiesDoNotDropStagingsQuietly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	if !st.Staged || !st.ControllerPublished {
		t.Fatalf("staging before the restart = %+v", st)
	}

	restarted := h.restartPlugin(func(cfg *csitest.MemConfig) {
		cfg.Node.StageUnstageVolume = false
		cfg.Controller.PublishUnpublishVolume = false
	}, "v")

	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), "still mounted") || !strings.Contains(err.Error(), "STAGE_UNSTAGE_VOLUME") {
		t.Fatalf("release with the staging still mounted: %v", err)
	}
	if got, ok := h.staging("v"); !ok || !got.Staged || got.StagingPath != st.StagingPath {
		t.Fatalf("the staging record was dropped while its path is mounted: %+v", got)
	}
	if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
		t.Fatalf("claim after the refused unstage = %+v", live)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "plugin-capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "lost: ") || !strings.Contains(evs[0].Message, "STAGE_UNSTAGE_VOLUME") ||
		!strings.Contains(evs[0].Message, "PUBLISH_UNPUBLISH_VOLUME") || !strings.Contains(evs[0].Message, `"v"`) {
		t.Fatalf("capability change events = %+v", evs)
	}

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, st.StagingPath+" is still mounted") {
		t.Fatalf("reconcile with the staging still mounted: %+v, %v", rep, err)
	}

	// Unmounted by hand: the next pass finishes the release and forgets the staging, saying
	// so. The attachment is not forgotten: the plugin cannot be asked to detach, but the
	// volume may still be attached, and a plugin given the capability back can detach it. It
	// stays recorded, owed, and the pass reports it with what ends it.
	h.mounts.markGone(st.StagingPath)
	rep, err = h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "PUBLISH_UNPUBLISH_VOLUME") ||
		!strings.Contains(rep.Problems[0].Message, "volctl volume detach v --force --yes") {
		t.Fatalf("reconcile once the staging is unmounted: %+v, %v; want the attachment reported, owed", rep, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after reconcile = %+v", live)
	}
	if got, ok := h.staging("v"); !ok || got.Staged || got.StagingPath != "" || !got.ControllerPublished || got.NodeID != "node-1" {
		t.Fatalf("staging record after the release = %+v (kept %v); want only the attachment to node-1, owed", got, ok)
	}
	lost, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "capability-lost"})
	if err != nil {
		t.Fatal(err)
	}
	var sawStage, sawAttach bool
	for _, ev := range lost {
		sawStage = sawStage || strings.Contains(ev.Message, "recorded as staged")
		sawAttach = sawAttach || strings.Contains(ev.Message, `recorded as attached to node "node-1"`)
	}
	if !sawStage || !sawAttach {
		t.Fatalf("events for the dropped records = %+v", lost)
	}
	if n := restarted.CallCount(csi.RPCNodeUnstageVolume) + restarted.CallCount(csi.RPCControllerUnpublishVolume); n != 0 {
		t.Fatalf("%d unstage/detach calls to a plugin without the capabilities", n)
	}

	// The capability back: the next pass sends the unpublish owed and forgets the record.
	back := h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }, "v")
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with PUBLISH_UNPUBLISH_VOLUME back: %+v, %v", rep, err)
	}
	if n := back.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
		t.Fatalf("ControllerUnpublishVolume calls once the capability is back = %d, want 1", n)
	}
	if got, ok := h.staging("v"); ok {
		t.Fatalf("the attachment record outlived its unpublish: %+v", got)
	}
}

// TestAttachmentKeptWhileThePluginLacksPublishUnpublish: a volume attached for a claim, then its
// plugin restarted without PUBLISH_UNPUBLISH_VOLUME (another build, other flags, another
// instance answering on the socket) while the claim is released, then restarted with it again.
// Before, the release dropped the attachment record: the volume stayed attached at the
// storage provider with nothing in volctl recording it, reconcile said there was nothing to do,
// and a delete failed on the plugin's own refusal (found by running volctl against a
// supervised hostpath plugin whose socket two instances served in turn). Now the release frees
// the claim and keeps the attachment, owed: a delete and a plain deregister refuse it, naming
// it; reconcile reports it while the plugin cannot take it, and sends ControllerUnpublishVolume
// once it can; a forced detach forgets it on the user's word.
func TestAttachmentKeptWhileThePluginLacksPublishUnpublish(t *testing.T) {
	t.Parallel()
	noStaging := func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }
	h := newHarness(t, noStaging)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	detachless := func(cfg *csitest.MemConfig) { noStaging(cfg); cfg.Controller.PublishUnpublishVolume = false }
	h.restartPlugin(detachless, "v")
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the release = %+v", live)
	}
	if got, ok := h.staging("v"); !ok || !got.ControllerPublished || got.NodeID != "node-1" {
		t.Fatalf("staging record after the release = %+v (kept %v); want the attachment to node-1 kept, owed", got, ok)
	}
	lost, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "capability-lost", VolumeID: "v"})
	if err != nil || len(lost) != 1 || !strings.Contains(lost[0].Message, "stays recorded") {
		t.Fatalf("capability-lost events = %+v (%v); want one saying the attachment stays recorded", lost, err)
	}
	if err := h.e.DeleteVolume(h.ctx, "v"); err == nil || !strings.Contains(err.Error(), `node "node-1"`) {
		t.Fatalf("delete with the attachment owed: %v; want a refusal naming the attachment", err)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); !errors.Is(err, ErrConflict) {
		t.Fatalf("deregister with the attachment owed: %v; want a conflict", err)
	}
	for range 2 { // every pass says it, not only the first
		rep, err := h.e.Reconcile(h.ctx)
		if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "PUBLISH_UNPUBLISH_VOLUME") ||
			!strings.HasPrefix(rep.Problems[0].Message, `attachment of volume "v" to node "node-1" with no claim: `) {
			t.Fatalf("reconcile while the plugin lacks the capability: %+v, %v", rep, err)
		}
	}

	back := h.restartPlugin(noStaging, "v")
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) != 1 ||
		rep.Actions[0].Message != `undid the attachment of volume "v" to node "node-1" with no claim` {
		t.Fatalf("reconcile with the capability back: %+v, %v", rep, err)
	}
	if n := back.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
		t.Fatalf("ControllerUnpublishVolume calls once the capability is back = %d, want 1", n)
	}
	if got, ok := h.staging("v"); ok {
		t.Fatalf("the attachment record outlived its unpublish: %+v", got)
	}

	// Again without the capability: a forced detach forgets the attachment, saying so.
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	h.restartPlugin(detachless, "v")
	if _, err := h.e.Release(h.ctx, "v", "b"); err != nil {
		t.Fatalf("release: %v", err)
	}
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil || !strings.Contains(strings.Join(res.Warnings, "\n"), "PUBLISH_UNPUBLISH_VOLUME") {
		t.Fatalf("forced detach of the owed attachment: %+v, %v; want it forgotten with a warning", res, err)
	}
	if got, ok := h.staging("v"); ok {
		t.Fatalf("the attachment record outlived the forced detach: %+v", got)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the forced detach: %+v, %v", rep, err)
	}
}

// A forced detach of a volume attached through a plugin that has since lost
// PUBLISH_UNPUBLISH_VOLUME warns that the volume may still be attached, rather than dropping
// the attachment record as if the plugin had never attached anything, and records the same in
// a capability-lost event, as a release that drops the record does: the warning goes to whoever
// ran the command, the event stays in the history.
func TestForceDetachWarnsOfAnAttachmentItCannotUndo(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = false })

	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("Detach(force): %v", err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, `recorded as attached to node "node-1"`) || !strings.Contains(w, "PUBLISH_UNPUBLISH_VOLUME") {
		t.Fatalf("warnings = %q; want one saying the attachment could not be undone", res.Warnings)
	}
	lost, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "capability-lost", VolumeID: "v"})
	if err != nil || len(lost) != 1 || !strings.Contains(lost[0].Message, `recorded as attached to node "node-1"`) {
		t.Errorf("capability-lost events = %+v (%v); want one recording the attachment dropped", lost, err)
	}
}

// TestCapabilityChangeSeenFirstByAProbe: under the agent, the first to reach a restarted plugin
// is its runner's health probe (PluginStatus), not a volume operation. The probe records the new
// fingerprint; the capability change must still get its event, naming the volumes staged or
// attached through it, rather than being recorded silently so that no later connection ever
// sees a change.
func TestCapabilityChangeSeenFirstByAProbe(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }, "v")

	if infos, err := h.e.PluginStatus(h.ctx, "mem"); err != nil || len(infos) != 1 || !infos[0].Healthy {
		t.Fatalf("plugin status after the restart = %+v, %v", infos, err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile: %v", err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "plugin-capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "STAGE_UNSTAGE_VOLUME") || !strings.Contains(evs[0].Message, `"v"`) {
		t.Fatalf("capability change events = %+v; want one naming STAGE_UNSTAGE_VOLUME and volume \"v\"", evs)
	}
}

// TestCapabilityChangeSeenFirstByARegistration: the agent registers its config's plugins at
// every start, so after a restart of both, a registration is the first to fingerprint the
// plugin again. The capability change gets its event there too.
func TestCapabilityChangeSeenFirstByARegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = false }, "v")
	h.open(Config{}) // a new process: the agent starting again
	h.registerPlugin("mem", h.socket)

	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "plugin-capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "PUBLISH_UNPUBLISH_VOLUME") || !strings.Contains(evs[0].Message, `"v"`) {
		t.Fatalf("capability change events = %+v; want one naming PUBLISH_UNPUBLISH_VOLUME and volume \"v\"", evs)
	}
}

// TestAttachIntentOfAPluginThatLostPublishUnpublishIsNotKept: admission records the attach
// intent from the stored fingerprint; when the plugin reached then attaches nothing (restarted
// without PUBLISH_UNPUBLISH_VOLUME since it was fingerprinted), no ControllerPublishVolume is
// sent, and the intent is dropped with the step: kept, it would outlive the claim as an
// attachment owed that was never made, reported by every reconcile pass.
func TestAttachIntentOfAPluginThatLostPublishUnpublishIsNotKept(t *testing.T) {
	t.Parallel()
	noStaging := func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }
	h := newHarness(t, noStaging)
	h.create(volume("v"))
	p := h.restartPlugin(func(cfg *csitest.MemConfig) { noStaging(cfg); cfg.Controller.PublishUnpublishVolume = false }, "v")

	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if n := p.CallCount(csi.RPCControllerPublishVolume); n != 0 {
		t.Fatalf("ControllerPublishVolume sent %d times to a plugin without the capability", n)
	}
	if st, ok := h.staging("v"); ok && st.ControllerPublished {
		t.Fatalf("staging after the claim = %+v; want no attachment recorded", st)
	}
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
}

// TestClaimRedrivenAttachesOnceThePluginDoes: a claim cut short past the attach step of a plugin
// that attached nothing then (no PUBLISH_UNPUBLISH_VOLUME), re-driven by reconcile once the
// plugin came back with the capability. Before, the re-drive went on to NodeStageVolume without
// attaching: a plugin that needs the attachment refused it (hostpath --enable-attach: "publish_context
// is missing"), and reconcile rolled the claim back (found by running volctl against a plugin
// restarted with and without attach at random). Now it attaches first, recording the intent,
// and the release detaches.
func TestClaimRedrivenAttachesOnceThePluginDoes(t *testing.T) {
	t.Parallel()
	detachless := func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = false }
	h := newHarness(t, detachless)
	h.create(volume("v"))
	h.claimInterruptedAt(csi.RPCNodeStageVolume, csitest.Fault{}, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != "controller-published" {
		t.Fatalf("claims after the interruption = %+v; want one left controller-published", live)
	}

	back := h.restartPlugin(func(cfg *csitest.MemConfig) {}, "v")
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %+v, %v", rep, err)
	}
	if n := back.CallCount(csi.RPCControllerPublishVolume); n != 1 {
		t.Fatalf("ControllerPublishVolume calls of the re-drive = %d, want 1", n)
	}
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished || st.NodeID != "node-1" {
		t.Fatalf("staging after the re-drive = %+v (%v); want the attachment recorded", st, ok)
	}
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := back.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
		t.Fatalf("ControllerUnpublishVolume calls of the release = %d, want 1", n)
	}
}

// TestNodeCallsUseTheAttachmentsPublishContext: the attachment is per volume and node, and so is
// the publish_context ControllerPublishVolume returned for it; a claim's own copy of it can be
// stale. Claim "a" was published through a plugin that attached nothing (its copy empty); the
// plugin came back with PUBLISH_UNPUBLISH_VOLUME after a reboot, and claim "b" attached the
// volume. Before, the restore of "a" sent NodeStageVolume and NodePublishVolume with a's empty
// copy: a plugin that needs it refused ("publish_context is missing", hostpath --enable-attach),
// and the claim stayed degraded for every reconcile after (found by running volctl against a
// plugin restarted with and without attach at random, with reboots). The node calls now send
// the attachment's publish_context.
func TestNodeCallsUseTheAttachmentsPublishContext(t *testing.T) {
	t.Parallel()
	detachless := func(cfg *csitest.MemConfig) { cfg.Controller.PublishUnpublishVolume = false }
	h := newHarness(t, detachless)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	h.mounts.markGone(a.TargetPath)
	h.mounts.markGone(st.StagingPath)

	back := h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.PublishContext = map[string]string{"device": "/dev/sdz"} }, "v")
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished || st.PublishContext["device"] != "/dev/sdz" {
		t.Fatalf("staging after b's claim = %+v (%v); want the attachment recorded with its publish_context", st, ok)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile restoring a's claim beside b's attachment: %+v, %v", rep, err)
	}
	for _, cl := range h.liveClaims("v") {
		if cl.State != store.ClaimPublished || cl.Degraded {
			t.Errorf("claim of %q after the reconcile: %s (degraded %v, last error %q); want published", cl.Alloc, cl.State, cl.Degraded, cl.LastError)
		}
	}
	if n := back.CallCount(csi.RPCControllerPublishVolume); n != 1 {
		t.Errorf("ControllerPublishVolume calls = %d, want 1 (b's; a shares the attachment)", n)
	}
}
