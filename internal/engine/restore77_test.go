package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// TestRestoreRefusedForAMountBelowItsTargetAdvisesAnUnmountThatWorks: after a reboot a claim's
// target is an empty directory on the host's disk, and before the restore something was
// mounted in a directory below it (a tmpfs at TARGET/cache, by hand or by a program: the
// alloc's task started before the agent's reconcile). mountedSinceRestoreBegan refuses the
// restore (mountsLeft counts what is mounted at the target or below it), naming TARGET/cache
// as mounted since, but its advice is "unmount it (`umount TARGET`, until `findmnt TARGET`
// lists nothing), then run `volctl reconcile`": TARGET is no mount point, so that umount fails
// ("not mounted"), findmnt TARGET lists nothing already, and the reconcile advised refuses
// again, the claim held degraded pass after pass. Correct: the advice names what is mounted
// (`umount TARGET/cache`), as the release's refusals do (checkUnpublishable: mountNames);
// followed, the next reconcile restores the claim. Real mounts, as root.
// Found by helper review77 (restore).
func TestRestoreRefusedForAMountBelowItsTargetAdvisesAnUnmountThatWorks(t *testing.T) {
	t.Parallel()
	h, cl, _ := rebootedClaim(t, nil)

	// Mounted below the bare target since.
	below := filepath.Join(cl.TargetPath, "cache")
	if err := os.MkdirAll(below, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", below, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs at %s: %v", below, err)
	}
	t.Cleanup(func() {
		for unix.Unmount(below, unix.MNT_DETACH) == nil {
		}
	})

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("premise: reconcile with a tmpfs mounted below the restored claim's target: %v, problems %+v, actions %+v; want the restore refused", err, rep.Problems, rep.Actions)
	}
	msg := rep.Problems[0].Message
	if !strings.Contains(msg, below) {
		t.Fatalf("premise: the refusal does not name %s, what is mounted: %s", below, msg)
	}
	// The advice followed, as written: each umount it names.
	advised := regexp.MustCompile("`umount ([^`]+)`").FindAllStringSubmatch(msg, -1)
	if len(advised) == 0 {
		t.Fatalf("the refusal advises no umount: %s", msg)
	}
	for _, m := range advised {
		if err := unix.Unmount(m[1], 0); err != nil {
			t.Errorf("the advised `umount %s` fails: %v (what is mounted is %s)\nrefusal: %s", m[1], err, below, msg)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Errorf("reconcile after the advice was followed: %v %+v", err, rep.Problems)
	}
	if now := h.liveClaims("v")[0]; now.Degraded || now.State != store.ClaimPublished {
		t.Errorf("after the advice was followed the claim is %s, degraded %v; want it restored", now.State, now.Degraded)
	}
}

// TestVolumeStatusDoesNotCallATargetWithNothingMountedCovered: volume v's claim by alloc a is
// published, and its target then loses its mount (unmounted by hand, a reboot before the
// agent's reconcile): nothing is mounted there at all. The views now say so (lostTarget), but
// through ClaimInfo.Covered, so the claim's condition reads "published (target covered)":
// `volctl volume status v`'s STATE column, the dashboard's claims tab and its detail ("Target
// Covered") call covered a target that nothing covers, the opposite of what is there (nothing
// mounted, the alloc on the host's disk), as TestVolumeStatusDoesNotCallATargetCoveredWhenItsMountCannotBeRead
// found of a read that failed. Correct: the condition names what is wrong (the target's mount
// lost, e.g. "target unmounted"), not a cover. Real mounts, as root.
// Found by helper review77 (restore).
func TestVolumeStatusDoesNotCallATargetWithNothingMountedCovered(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err := unix.Unmount(cl.TargetPath, unix.MNT_DETACH); err != nil {
		t.Fatalf("unmount %s: %v", cl.TargetPath, err)
	}
	t.Cleanup(func() { _, _ = h.e.Reconcile(h.ctx); _, _ = h.e.Release(h.ctx, "v", "a") })
	v, err := h.e.VolumeShown(h.ctx, "v") // `volctl volume status v`
	if err != nil || len(v.Claims) != 1 {
		t.Fatalf("volume status of v: %+v, %v", v.Claims, err)
	}
	c := v.Claims[0]
	if !strings.Contains(c.Covered, "nothing mounted") {
		t.Fatalf("premise: volume status of v, its claim's target %s unmounted: covered %q; want the lost mount said", cl.TargetPath, c.Covered)
	}
	if cond := c.Condition(); strings.Contains(fmt.Sprint(cond.Notes), "covered") {
		t.Errorf("volume status of v, nothing mounted at its claim's target %s: the claim reads %q; "+
			"want no \"target covered\" of a target nothing covers (its mount is lost: say that)", cl.TargetPath, cond.String())
	}
}
