package engine

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A forced detach of a volume this state dir has no claim on and no attachment recorded for
// still sends ControllerUnpublishVolume for the plugin's node ("whatever the records say").
// When the storage volume is attached to that node by another volctl installation (another
// state dir on the same plugin, whose claim is published there), that unpublish detaches the
// volume from under the other installation's live claim, and the detach then says `Volume "w"
// has no claims: nothing to detach` (DetachedFrom is empty), exit 0. The claim path already
// refuses such an attachment as "attached to node ... already, and not by this volctl state
// dir" (TestClaimOfAVolumeAnotherStateDirAttachedLeavesItsAttachment). Correct: a forced
// detach with no attachment recorded asks the plugin's listing first and sends no
// ControllerUnpublishVolume for an attachment this state dir never recorded (or, if it sends
// one, says it detached the volume); the other installation's attachment must stay.
// Found by helper review74.
func TestForcedDetachWithNothingRecordedLeavesAnotherStateDirsAttachment(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other := claimAttachedByAnotherStateDir(t, h, func() {})
	ext := h.externalID("v")
	h.mem.ResetCalls()

	res, err := other.Detach(h.ctx, "w", true)
	if err != nil {
		t.Logf("forced detach in the other state dir: %v", err)
	}
	nodes := h.mem.PublishedNodes(ext)
	if !slices.Equal(nodes, []string{"node-1"}) {
		t.Errorf("after a forced detach of w (no claim, no attachment recorded) in another state dir, the volume is published to %v, want still node-1: "+
			"this state dir's claim of v is published there (ControllerUnpublishVolume sent %d time(s); result %+v)",
			nodes, h.mem.CallCount(csi.RPCControllerUnpublishVolume), res)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != "published" {
		t.Errorf("claims of v = %+v, want its one claim published", live)
	}
}

// A forced detach of a claim whose target is busy (a process's working directory is inside
// it, an alloc still running) unmounts it lazily (forceUnmount's MNT_DETACH): the mount leaves
// the mount table but the filesystem stays mounted for that process, which keeps reading and
// writing the volume. The detach then goes on to the staging and ControllerUnpublishVolume,
// frees the claim and says nothing of it: its warnings name neither the target nor that it
// was in use, and a user told the claim was released, the volume detached, hands it to
// another writer (or the storage is detached from under the process's unwritten data).
// Correct: a forced detach that finds a target (or staging) busy says so in a warning naming
// the path and that processes still use the volume there (the lazy unmount leaves it mounted
// for them until they exit). Found by helper review74.
func TestForcedDetachOfABusyTargetSaysItIsStillInUse(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	if mounted, err := (kernelMounts{}).MountsUnder(target); err != nil || len(mounted) == 0 {
		t.Fatalf("the claim's target %s is not a mount (%v, %v): the test needs a real mount", target, mounted, err)
	}
	if pid, warnings, said := busyForcedDetach(t, h, target); !said {
		t.Errorf("forced detach of volume v whose target %s a running process (pid %d) has as its working directory: warnings %q; "+
			"want a warning naming the target and that it is still in use (the lazy unmount leaves it mounted for that process)",
			target, pid, warnings)
	}
}

// busyForcedDetach starts a process whose working directory is target, volume v's claim's,
// runs a forced detach of v, and says whether a warning names target as in use.
func busyForcedDetach(t *testing.T, h *harness, target string) (pid int, warnings []string, said bool) {
	t.Helper()
	busy := exec.Command("sleep", "300")
	busy.Dir = target
	if err := busy.Start(); err != nil {
		t.Fatalf("start a process inside the target: %v", err)
	}
	t.Cleanup(func() {
		_ = busy.Process.Kill()
		_ = busy.Wait()
	})
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("forced detach: %v", err)
	}
	said = slices.ContainsFunc(res.Warnings, func(w string) bool {
		return strings.Contains(w, target) && strings.Contains(w, "in use")
	})
	return busy.Process.Pid, res.Warnings, said
}

// A release through a plugin registered again by its node half alone (it still advertises
// CONTROLLER_SERVICE and PUBLISH_UNPUBLISH_VOLUME) keeps the attachment recorded, owed, and
// its message (the attachment-kept event, reconcile's problem) advised, besides registering
// the controller half: "or detach the volume from that node with the storage provider's tools
// and run `volctl volume detach v --force` to forget it". Followed, that forced detach did not
// forget it: through the same registration it keeps the record, owed (forceDetach's
// needsControllerHalf branch, for the controller half registered again), so reconcile went on
// reporting it and volume deregister went on refusing. The advice now names what ends the
// record, `volume deregister --force`, and that, followed, does. Found by helper review74.
func TestAdvisedForcedDetachForgetsAnAttachmentKeptForTheControllerHalf(t *testing.T) {
	t.Parallel()
	h := claimedThenRegisteredAs(t, spec.PluginNode)
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	problem := reconcileProblem(h, "")
	if problem == nil {
		t.Fatal("premise: reconcile reported no problem of the attachment kept")
	}
	if strings.Contains(problem.Error(), "volctl volume detach v --force") {
		t.Errorf("reconcile's problem advises the forced detach, which keeps the attachment owed through a node half: %s", problem)
	}
	advised := "volctl volume deregister v --force"
	if !strings.Contains(problem.Error(), advised) {
		t.Fatalf("reconcile's problem does not advise %q: %s", advised, problem)
	}
	warnings, err := h.e.DeregisterVolume(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("the advised `%s`: %v", advised, err)
	}
	if st, ok := h.staging("v"); ok && st.ControllerPublished {
		t.Errorf("after the advised `%s`, the attachment is still recorded, owed: %+v (warnings %q)", advised, st, warnings)
	}
	if p := reconcileProblem(h, ""); p != nil {
		t.Errorf("after the advised `%s`, reconcile still reports: %v", advised, p)
	}
}
