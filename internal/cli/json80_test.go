package cli

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// volumeStagedWithoutClaim serves a mounting mem plugin without PUBLISH_UNPUBLISH_VOLUME (so
// that no attachment is involved), creates volume "v", and leaves it staged with no claim: a
// claim whose NodePublishVolume fails after NodeStageVolume, then freed as a release cut
// short leaves it (the staging row stays, for a detach or reconcile to undo). It returns the
// harness and the staging path, which is still mounted.
func volumeStagedWithoutClaim(t *testing.T) (*cliHarness, string) {
	t.Helper()
	requireMount(t)
	faults := csitest.NewFaults()
	h := newCLIHarnessConfig(t, func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false }, csitest.WithFaults(faults))
	info := h.createVolume(t, "v", spec.SingleNodeWriter)
	faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, engine.ClaimRequest{VolumeID: "v", Alloc: "a1"}); err == nil {
		t.Fatal("premise: the claim went past a NodePublishVolume that fails")
	}
	faults.Clear()
	updateStore(t, h, func(tx *store.Tx) error {
		cl, err := tx.Claims().Find("v", "a1")
		if err != nil {
			return err
		}
		return tx.Claims().Free(cl.ID, store.OutcomeForced)
	})
	path, ok := h.mem.StagingPath(info.ExternalID)
	if !ok || path == "" {
		t.Fatalf("premise: the plugin has volume v staged")
	}
	if st, err := h.e.Volume(h.ctx, "v"); err != nil || !st.Staged || len(st.Claims) != 0 {
		t.Fatalf("premise: volume v is recorded staged with no claim: %+v, %v", st, err)
	}
	if !mountPointNow(t, path) {
		t.Fatalf("premise: the staging path %s is mounted", path)
	}
	return h, path
}

// mountPointNow reports whether path is a mount point in this process's mount table.
func mountPointNow(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

// TestForcedDetachOfAStagedVolumeWithNoClaimsSaysItUnmountedTheStaging: volume v has no
// claims but is recorded staged (a release cut short left it), its staging still mounted.
// `volctl volume detach v --force --yes` unmounts the staging itself (forceUnmount, skipping
// NodeUnstageVolume) and deletes the staging record, and then says `Volume "v" has no claims:
// nothing to detach`, exit 0; with --json it prints `{"released": []}`, no `unstaged`, no
// warning. Something was detached — the staging mount was taken down and volctl's record of
// it dropped, without the plugin's NodeUnstageVolume — and neither the text nor the JSON says
// so: a script reads a detach that did nothing. engine.detachStored's forced branch never
// sets DetachResult.Unstaged (only detachLeft, the plain path, does), and forceDetach warns
// that the node RPCs are skipped only when there are claims. Correct: as the plain detach of
// the same volume says it (`Unstaged volume "v" at PATH`, `unstaged` in --json), the forced
// one names the staging path it unmounted (and that NodeUnstageVolume was skipped), never
// "nothing to detach".
// Found by helper review80 (json).
func TestForcedDetachOfAStagedVolumeWithNoClaimsSaysItUnmountedTheStaging(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		h, path := volumeStagedWithoutClaim(t)
		code, out, errOut := runOnOut(context.Background(), h.e, "volume", "detach", "v", "--force", "--yes")
		if st, err := h.e.Volume(h.ctx, "v"); err != nil || st.Staged || mountPointNow(t, path) {
			t.Fatalf("premise: the forced detach unmounted the staging and undid its record: %+v, %v", st, err)
		}
		if code != ExitOK || strings.Contains(errOut, "nothing to detach") || !strings.Contains(out+errOut, path) {
			t.Errorf("forced detach of v, staged at %s with no claim (exit %d), which unmounted that staging and dropped its record, says:\n%s%s\n"+
				"want it to name the staging it unmounted, not \"nothing to detach\"", path, code, out, errOut)
		}
	})
	t.Run("json", func(t *testing.T) {
		h, path := volumeStagedWithoutClaim(t)
		code, out, errOut := runOnOut(context.Background(), h.e, "volume", "detach", "v", "--force", "--yes", "--json")
		if st, err := h.e.Volume(h.ctx, "v"); err != nil || st.Staged || mountPointNow(t, path) {
			t.Fatalf("premise: the forced detach unmounted the staging and undid its record: %+v, %v", st, err)
		}
		var res engine.DetachResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("--json output %q: %v (stderr %s)", out, err, errOut)
		}
		if code != ExitOK || res.Unstaged != path && !strings.Contains(strings.Join(res.Warnings, "\n"), path) {
			t.Errorf("forced detach --json of v, staged at %s with no claim (exit %d), which unmounted that staging and dropped its record, prints:\n%s%s\n"+
				"want `unstaged` (or a warning) naming the staging path", path, code, out, errOut)
		}
	})
}

// TestDetachWhoseReleaseKeepsTheAttachmentSaysLeftAttached: volume v is claimed by alloc a1
// through a plugin that attaches (PUBLISH_UNPUBLISH_VOLUME); the plugin then restarts without
// that capability. `volctl volume detach v --yes --json` releases the claim; the release cannot
// send ControllerUnpublishVolume, so the attachment stays recorded, owed (volume status shows
// attached_to; reconcile reports it each pass). The detach prints `{"released": [...]}` with no
// `left_attached`, exit 0, and its text says only `Released write claim of alloc "a1"`:
// docs/json.md's `left_attached` is "the node the volume stays recorded attached to after the
// detach, its ControllerUnpublishVolume owed (it failed, or cannot be sent ...)", and the
// forced detach and the detach of a volume with no claims set it, but engine.detachStored's
// path over claims never does, so a script reading the detach's result is told the volume was
// left clean. Correct: after releasing the claims, the detach sets LeftAttached from the state
// (e.leftAttached) as its other paths do, and the text says the volume stays recorded attached.
// Found by helper review80 (json).
func TestDetachWhoseReleaseKeepsTheAttachmentSaysLeftAttached(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	h, mem, socket, stop := claimedThroughARestartablePlugin(t)
	// The plugin restarts without PUBLISH_UNPUBLISH_VOLUME.
	stop()
	mem.Reconfigure(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	csitest.ServeAt(t, socket, csitest.WithServer(mem))

	code, out, errOut := runOnOut(ctx, h.e, "volume", "detach", "v", "--yes", "--json")
	after, err := h.e.Volume(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Claims) != 0 || after.AttachedTo == "" {
		t.Fatalf("premise: the detach released the claim and the attachment stays recorded, owed: claims %d, attached_to %q (exit %d)\n%s%s",
			len(after.Claims), after.AttachedTo, code, out, errOut)
	}
	var res engine.DetachResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output %q: %v (stderr %s)", out, err, errOut)
	}
	if len(res.Released) != 1 {
		t.Fatalf("premise: the detach released alloc a1's claim: %s%s", out, errOut)
	}
	if res.LeftAttached != after.AttachedTo {
		t.Errorf("volume detach --json (exit %d), after which volume v stays recorded attached to node %q, its ControllerUnpublishVolume owed, prints:\n%s%s\n"+
			"want left_attached %q", code, after.AttachedTo, out, errOut, after.AttachedTo)
	}
}
