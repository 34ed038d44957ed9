package engine

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/store"
)

// TestRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo: a read_only volume_mount
// remounted writable by hand (mount -o remount,bind,rw DEST) is made read-only again by a
// reconcile pass, which says so (an action and a "restore" event, settleLocked) when the
// claim's target is still mounted. When the target was lost too (unmounted by hand, the bind
// at DEST left), the pass restores the claim, and the restore's bind (drive, ClaimPublished:
// `_, err := e.bind(ctx, cl)`) makes the volume_mount read-only again and throws away what it
// did: the report says only "restored claim ... at TARGET" and the event log nothing of a
// mount changed under a running alloc. Correct: the restore reports and records the
// volume_mount made read-only again, as settleLocked does.
// Found by helper review77 (crash).
func TestRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo(t *testing.T) {
	h, _, dest := boundByOwnGroup(t, true)
	cls, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil || len(cls) != 1 {
		t.Fatalf("claims on data: %+v, %v", cls, err)
	}
	target := cls[0].TargetPath
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID, ""); err != nil { // by hand: writable
		t.Fatal(err)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY != 0 {
		t.Fatalf("the remount left %s read-only (flags %#x): the test tests nothing", dest, f)
	}
	if err := unix.Unmount(target, 0); err != nil { // the target lost, the bind left
		t.Fatalf("unmount the claim's target %s: %v", target, err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile: %v (%+v)", err, rep)
	}
	restored := false
	said := false
	for _, a := range rep.Actions {
		restored = restored || strings.Contains(a.Message, "restored claim")
		said = said || strings.Contains(a.Message, dest)
	}
	if !restored {
		t.Fatalf("reconcile did not restore the claim whose target %s was unmounted (actions %+v, problems %+v): not the case this tests", target, rep.Actions, rep.Problems)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY == 0 {
		t.Fatalf("reconcile left the read_only volume_mount %s writable (flags %#x): not the defect this test is about", dest, f)
	}
	if !said {
		t.Errorf("reconcile's restore made the read_only volume_mount %s read-only again but its report says nothing of it (actions %+v)", dest, rep.Actions)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "restore"})
	if err != nil {
		t.Fatal(err)
	}
	logged := false
	for _, ev := range evs {
		logged = logged || strings.Contains(ev.Message, dest) && strings.Contains(ev.Message, "read-only again")
	}
	if !logged {
		t.Errorf("the event log says nothing of volume_mount %s made read-only again by the restore: %+v", dest, evs)
	}
}
