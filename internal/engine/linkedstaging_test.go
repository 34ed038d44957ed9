package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin whose NodeStageVolume answers OK and leaves a symlink where the staging directory
// was (to a directory of its own) did not stage the volume at the path volctl gave it: every
// check of the staging (a bare staging bind-mounted, another volume's data) is blind behind
// the link, the release took the link for one put by hand and removed it before
// NodeUnstageVolume (the plugin's own mount behind it leaked), and a claim resumed at that
// point was refused at the link on every reconcile pass. It is refused after the answer, as
// checkTarget refuses a linked target: the claim is rolled back, NodePublishVolume never
// sent, and the rollback's NodeUnstageVolume finds the plugin's link there for the plugin to
// remove, no event blaming a hand or a program.
func TestPluginThatLinksItsStagingPathIsRolledBack(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir() // the plugin's own directory, where its link leads
	h := newHarness(t, func(c *csitest.MemConfig) { c.MakeStaging = linkPathTo(elsewhere) })
	h.create(volume("v"))
	staging := stagingPath(h.dir, "mem", "v")
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodeUnstageVolume, csitest.Fault{Gate: gate, Times: 1})
	done := make(chan error, 1)
	go func() { _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); done <- err }()
	for deadline := time.Now().Add(10 * time.Second); h.faults.Held() < 1; time.Sleep(time.Millisecond) {
		select {
		case err := <-done:
			close(gate)
			t.Fatalf("claim on a plugin that made its staging path a symlink to %s = %v, before any NodeUnstageVolume; want it refused and rolled back", elsewhere, err)
		default:
		}
		if time.Now().After(deadline) {
			close(gate)
			t.Fatal("no NodeUnstageVolume was held at the plugin")
		}
	}
	fi, lerr := os.Lstat(staging)
	close(gate)
	err := <-done
	want := fmt.Sprintf(`%s: plugin "mem" answered OK for volume "v", but the staging path %s is a symlink to %q`, csi.RPCNodeStageVolume, staging, elsewhere)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("claim = %v\nwant it refused saying %s, and rolled back", err, want)
	}
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
		t.Errorf("error kind: %v is a conflict or invalid request, want the plugin's bad answer (a runtime error)", err)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 0 {
		t.Errorf("NodePublishVolume sent %d times through the plugin's staging link; want none", n)
	}
	if lerr != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the rollback's NodeUnstageVolume sent, the staging path then: %v, %v; want the plugin's link there, for the plugin to remove", fi, lerr)
	}
	evs, eerr := h.e.Events(h.ctx, 0, EventFilter{Kind: "target-link-removed", VolumeID: "v"})
	if eerr != nil || len(evs) != 0 {
		t.Errorf("target-link-removed events = %+v, %v; want none: the link was the plugin's, not a hand's or a program's", evs, eerr)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims after the refusal = %+v, want none", live)
	}
	if st, ok := h.staging("v"); ok {
		t.Errorf("staging row after the rollback = %+v, want none", st)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("reconcile after the rollback: %+v, %v; want nothing to do", rep, err)
	}
}

// A symlink put at a volume's staging path before a claim (by hand, by another program: no
// NodeStageVolume of the claim's made it) is not the plugin's answer. The claim was left
// controller-published for reconcile, which refused the link on every pass and never settled
// it. It is rolled back as a conflict saying to remove the link, nothing sent through it
// (neither NodeStageVolume nor NodeUnstageVolume, whose plugin would follow it), and the link
// is left as it was, for its owner.
func TestLinkAtANewClaimsStagingPathIsRolledBackAsAConflict(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir()
	h := newHarness(t, nil)
	h.create(volume("v"))
	staging := stagingPath(h.dir, "mem", "v")
	if err := os.MkdirAll(filepath.Dir(staging), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, staging); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "rm "+staging) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("claim with a symlink at the staging path = %v\nwant a conflict saying to remove it (rm %s), the claim rolled back", err, staging)
	}
	if strings.Contains(err.Error(), "use the path it points to") {
		t.Errorf("claim = %v\nwant no advice to use the path the link points to: the staging path is volctl's own", err)
	}
	checkStagingLinkUntouched(t, h, staging, elsewhere)
}

// A claim whose NodeStageVolume the plugin failed after the attempts (UNAVAILABLE) is left
// controller-published, its record holding UNAVAILABLE. A link found at the staging path since
// cannot be told from the plugin's own: UNAVAILABLE may be a lost answer of a plugin that
// staged by linking (TestLinkAfterALostStageAnswerIsNotDetachedUnder). Before, every pass
// refused it and the claim never settled; then (round 30) it was taken for a hand's, the
// staging dropped and the volume detached with no NodeUnstageVolume, under what may be the
// plugin's live staging. It is taken for the plugin's: reconcile rolls the claim back through
// NodeUnstageVolume (the plugin's chance to remove its link), then ControllerUnpublishVolume,
// and says so, blaming no hand; the claim settles.
func TestLinkAtAStagingPathAfterAFailedStageIsUnstagedFirst(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.Unavailable)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
		t.Fatal("claim with NodeStageVolume unavailable succeeded")
	}
	h.faults.Clear()
	h.faults.ResetCounts()
	staging := stagingPath(h.dir, "mem", "v")
	if err := os.Remove(staging); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, staging); err != nil {
		t.Fatal(err)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	var said string
	for _, p := range rep.Problems {
		said += p.Message + "\n"
	}
	if !strings.Contains(said, "may have reached plugin \"mem\"") || strings.Contains(said, "by hand or by another program") {
		t.Errorf("reconcile said:\n%s\nwant it to say a NodeStageVolume may have reached the plugin, blaming no hand", said)
	}
	if n := h.faults.Calls(csi.RPCNodeUnstageVolume); n != 1 {
		t.Errorf("NodeUnstageVolume sent %d times by the rollback; want once, before the volume is unpublished", n)
	}
	var order []string
	for _, c := range h.mem.Calls() {
		if c.RPC == csi.RPCNodeUnstageVolume || c.RPC == csi.RPCControllerUnpublishVolume {
			order = append(order, c.RPC)
		}
	}
	if len(order) != 2 || order[0] != csi.RPCNodeUnstageVolume {
		t.Errorf("the rollback's calls = %v; want NodeUnstageVolume, then ControllerUnpublishVolume", order)
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != 0 {
		t.Errorf("NodePublishVolume sent %d times with a symlink at the staging path; want none", n)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims = %+v, want the claim rolled back", live)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("reconcile: %+v, %v; want nothing to do (the claim settled)", rep, err)
	}
}

// checkStagingLinkUntouched checks that volume v's claim was rolled back with nothing sent
// through the link to elsewhere at staging, which is left as it was, and that the next
// reconcile has nothing to do.
func checkStagingLinkUntouched(t *testing.T, h *harness, staging, elsewhere string) {
	t.Helper()
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodeUnstageVolume, csi.RPCNodePublishVolume} {
		if n := h.faults.Calls(rpc); n != 0 {
			t.Errorf("%s sent %d times with a symlink put at the staging path; want none", rpc, n)
		}
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims = %+v, want the claim rolled back", live)
	}
	if dest, err := os.Readlink(staging); err != nil || dest != elsewhere {
		t.Errorf("the link at the staging path: %q, %v; want it left as it was, for its owner to remove", dest, err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("reconcile: %+v, %v; want nothing to do (the claim settled)", rep, err)
	}
}
