package engine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestForcedDetachLeavesWhatCoversAPublishedTarget: alloc "a"'s published target has a tmpfs
// mounted over it since its NodePublishVolume (by hand, or by a program), and the alloc wrote a
// file into that tmpfs. The release refuses to unmount anything there (the cover is not the
// volume's, and unmounting it loses what the alloc wrote: unpublishTarget's targetCovered), and
// its error offers `volctl volume detach v --force --yes` if the plugin is gone (dropAdvice).
// That forced detach unmounts whatever is mounted at the target, topmost first, in a loop
// (forceDetach's forceUnmount of cl.TargetPath): the tmpfs goes, with the alloc's file, and the
// detach reports the claim released with no word of the cover. Correct: a forced detach unmounts
// volctl's own mounts only; over a covered target (targetCovered) it leaves the cover as it is and
// says so naming the target and its umount (stopping, as it does for a covered bind, with the
// claims left releasing), so that nothing the alloc wrote is lost.
// Found by helper review76.
func TestForcedDetachLeavesWhatCoversAPublishedTarget(t *testing.T) {
	t.Parallel()
	h, cl := publishedUnderACover(t)
	written := filepath.Join(cl.TargetPath, "written-by-the-alloc")
	if err := os.WriteFile(written, []byte("the alloc's"), 0o600); err != nil {
		t.Fatalf("write into the tmpfs covering the target: %v", err)
	}
	// The advice the release gives over the cover names the forced detach.
	_, rerr := h.e.Release(h.ctx, "v", "a")
	if rerr == nil || !strings.Contains(rerr.Error(), "volctl volume detach v --force") {
		t.Fatalf("premise: release over the covered target %s = %v; want it refused, advising the forced detach", cl.TargetPath, rerr)
	}
	res, err := h.e.Detach(h.ctx, "v", true)
	if _, serr := os.Stat(written); serr != nil {
		t.Errorf("forced detach of v (err %v, released %d claim(s), warnings %q) unmounted the tmpfs covering alloc a's target %s, "+
			"and with it the file the alloc wrote there (%v); want the cover left as it is, named", err, len(res.Released), res.Warnings, cl.TargetPath, serr)
	}
	said := err != nil && strings.Contains(err.Error(), cl.TargetPath) ||
		slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, cl.TargetPath) })
	if !said || !errors.Is(err, ErrConflict) || len(res.Released) != 0 {
		t.Fatalf("forced detach of v over the covered target %s: err %v, warnings %q, released %d; want it stopped, the cover named", cl.TargetPath, err, res.Warnings, len(res.Released))
	}
	// Its advice followed: the cover unmounted (what the alloc wrote in it goes with it, by the
	// user's hand), the forced detach again frees the claim.
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
	if res, err := h.e.Detach(h.ctx, "v", true); err != nil || len(res.Released) != 1 {
		t.Fatalf("forced detach again once the cover is unmounted: %+v, %v", res, err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("claims of v after the forced detach: %+v", live)
	}
}

// TestForcedDetachLeavesWhatCoversTheStaging: volume w's staging has another file system mounted
// over it since it was staged (a plugin answering another volume's NodeStageVolume at the wrong
// path, or a hand), its claim left node-staged. A release sends no NodeUnstageVolume over it
// (unstageUncovered: the plugin would unmount the cover, not the volume) and names the umount.
// The forced detach unmounts the staging path in a loop until nothing is mounted there
// (forceDetach's forceUnmount of st.StagingPath), taking the cover down with the volume's mount,
// and reports the claim released with no word of it. Correct: as for a release, the cover is
// left as it is, and named (the detach stops, or warns naming the staging and its umount).
// Found by helper review76.
func TestForcedDetachLeavesWhatCoversTheStaging(t *testing.T) {
	h, staging := coveredStagingAfterStage(t)
	res, err := h.e.Detach(h.ctx, "w", true)
	if _, serr := os.Stat(filepath.Join(staging, "other-data")); serr != nil {
		t.Errorf("forced detach of w (err %v, released %d claim(s), warnings %q) unmounted the file system mounted over its staging %s (%v), "+
			"which was not volume w's; want it left as it is, named", err, len(res.Released), res.Warnings, staging, serr)
	}
	said := err != nil && strings.Contains(err.Error(), staging) ||
		slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, staging) })
	if !said || !errors.Is(err, ErrConflict) {
		t.Fatalf("forced detach of w over its covered staging %s: err %v, warnings %q, claims left %+v; want it stopped, a conflict as over a covered target, the cover named",
			staging, err, res.Warnings, h.liveClaims("w"))
	}
	if err := unix.Unmount(staging, 0); err != nil {
		t.Fatal(err)
	}
	if res, err := h.e.Detach(h.ctx, "w", true); err != nil || len(res.Released) != 1 {
		t.Fatalf("forced detach again once the cover is unmounted: %+v, %v", res, err)
	}
}
