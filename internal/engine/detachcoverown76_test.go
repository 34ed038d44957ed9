package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// TestForcedDetachLeavesAHandsCoverOfATargetInsideAMountOverItsPublishDirectory: the plugin's
// NodePublishVolume mounted over the claim's publish directory (publish/<alloc>/<volume>) and
// published the target inside that mount (what the claim records: releaseLeftOverAMount's
// premise). Later, by hand, a tmpfs is mounted over the target, and the alloc writes into it.
// A release refuses to unmount anything there (targetCovered) and offers the forced detach. The
// forced detach's new up-front check (coveredBeforeForce) sees the target covered, but lets any
// claim whose publish directory is a mount point through, taking the cover for "a plugin's
// doing": it then unmounts the publish directory until nothing is mounted there, lazily taking
// the hand's tmpfs with it, and the file the alloc wrote is gone, the claim reported released.
// Correct: the exemption covers only what the mount over the directory brought (the target's
// own mount inside it), not a cover stacked over the target since its publish: the detach stops
// before undoing anything, naming the target and its umount, as it does for a cover elsewhere.
// Found by helper review76 (own4).
func TestForcedDetachLeavesAHandsCoverOfATargetInsideAMountOverItsPublishDirectory(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	publishedInsideAMountOverItsDir(t, h, target)
	// The hand's cover, and what the alloc wrote into it.
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	writtenUnderACoverSurvivesTheForcedDetach(t, h, target, "mounted by hand")
}

// writtenUnderACoverSurvivesTheForcedDetach writes into the cover at volume v's claim a's target
// (how: how it came there), and checks that the release refuses, advising the forced detach, and
// that the forced detach stops before undoing anything, the cover and what was written there
// left, and named.
func writtenUnderACoverSurvivesTheForcedDetach(t *testing.T, h *harness, target, how string) {
	t.Helper()
	written := filepath.Join(target, "written-by-the-alloc")
	if err := os.WriteFile(written, []byte("the alloc's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, rerr := h.e.Release(h.ctx, "v", "a"); rerr == nil || !strings.Contains(rerr.Error(), "volctl volume detach v --force") {
		t.Fatalf("premise: release over the covered target %s = %v; want it refused, advising the forced detach", target, rerr)
	}
	res, err := h.e.Detach(h.ctx, "v", true)
	if _, serr := os.Stat(written); serr != nil {
		t.Errorf("forced detach of v (err %v, released %d claim(s), warnings %q) unmounted the tmpfs %s over alloc a's target %s, "+
			"and with it the file the alloc wrote there (%v); want the detach stopped before undoing anything, the cover named", err, len(res.Released), res.Warnings, how, target, serr)
	}
	if err == nil || !strings.Contains(err.Error(), target) || len(res.Released) != 0 {
		t.Errorf("forced detach of v over the covered target %s: err %v, released %d; want it stopped, the cover named", target, err, len(res.Released))
	}
}

// publishedInsideAMountOverItsDir has volume v's claims' target made as a plugin that mounts over
// the claim's publish directory and makes the target inside publishes it, and records what the
// target shows then, as a publish does.
func publishedInsideAMountOverItsDir(t *testing.T, h *harness, target string) {
	t.Helper()
	dir := filepath.Dir(target)
	mountOverAndInside(t, dir, target) // the plugin's publish: over the directory, the target inside
	for _, cl := range h.liveClaims("v") {
		shows := h.e.targetShows(&cl)
		if shows == nil {
			t.Fatalf("the target %s inside the mount over %s shows nothing to record", target, dir)
		}
		if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error { return tx.Claims().SetTargetMount(cl.ID, shows) }); err != nil {
			t.Fatal(err)
		}
	}
}
