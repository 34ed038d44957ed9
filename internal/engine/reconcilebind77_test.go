package engine

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReconcileSaysItMadeAReadOnlyVolumeMountReadOnlyAgain: a group's read_only volume_mount
// remounted writable by hand (mount -o remount,bind,rw DEST) is made read-only again by a
// reconcile pass (bindMount), but the pass reports no action at all: `volctl reconcile` prints
// "Nothing to do: every claim is at rest and every mount is in place." of a mount it just
// changed under a running alloc, and the event log records nothing (a bind made again is a
// "restore" event and a "restored" action). The pass must say what it repaired: an action
// naming the destination.
// Found by helper review77 (reconcile).
func TestReconcileSaysItMadeAReadOnlyVolumeMountReadOnlyAgain(t *testing.T) {
	h, _, dest := boundByOwnGroup(t, true)
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID, ""); err != nil { // by hand: writable
		t.Fatal(err)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY != 0 {
		t.Fatalf("the remount left %s read-only (flags %#x): the test tests nothing", dest, f)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile: %v (%+v)", err, rep)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY == 0 {
		t.Fatalf("reconcile left the read_only volume_mount %s writable (flags %#x): not the defect this test is about", dest, f)
	}
	said := false
	for _, a := range rep.Actions {
		if strings.Contains(a.Message, dest) {
			said = true
		}
	}
	if !said {
		t.Errorf("reconcile made the read_only volume_mount %s read-only again but its report says nothing of it (actions %+v): "+
			"`volctl reconcile` prints \"Nothing to do ... every mount is in place\"", dest, rep.Actions)
	}
	if evs := readOnlyAgainLogged(t, h.ctx, h.e, dest); evs != nil {
		t.Errorf("the event log says nothing of volume_mount %s made read-only again: %+v", dest, evs)
	}
}

// readOnlyAgainLogged returns e's restore events when none of them says volume_mount dest was
// made read-only again (nil when one does).
func readOnlyAgainLogged(t *testing.T, ctx context.Context, e *Engine, dest string) []EventInfo {
	t.Helper()
	evs, err := e.Events(ctx, 0, EventFilter{Kind: "restore"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Message, dest) && strings.Contains(ev.Message, "read-only again") {
			return nil
		}
	}
	return evs
}
