package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// liveClaimsOfData lists the live claims of volume "data".
func liveClaimsOfData(t *testing.T, h *hostpathEngine) []store.Claim {
	t.Helper()
	live, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// Group one's bind moved (its parent renamed) onto group two's destination, as in
// bindMovedOntoAnothersDestination; then group one's claim is driven again at its own, now
// empty, destination (a group run again, or a reconcile pass, as the agent runs them). Before,
// bind dropped the record of the moved bind, whose destination held nothing, and bound it
// again: from then on nothing named the moved one, one's release did not find it
// (recordedElsewhere reads the record, movedBinds skips a path another claim names), two's
// release left it as not its own, and both groups stopped without an error left the volume
// bound at two's destination with no claim of it. The claim is not bound again while its
// recorded bind is mounted elsewhere, which the refusal names. Found by helper review64.
func TestReboundClaimKeepsTheRecordOfItsMovedBind(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"group run again", "reconcile"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			h, dest := bindMovedOntoAnothersDestination(t)
			dir := filepath.Dir(filepath.Dir(dest))
			var said string
			switch how {
			case "group run again":
				_, err := h.e.RunGroup(h.ctx, sharedDestGroup("one", 1, true, filepath.Join(dir, "a", "data")))
				said = fmt.Sprint(err)
			case "reconcile":
				rep, err := h.e.Reconcile(h.ctx)
				said = fmt.Sprintf("%+v, %v", rep.Problems, err)
			}
			if !strings.Contains(said, "the claim's bind made there is mounted at "+dest+" now") {
				t.Errorf("one[0] driven again (%s), its bind moved to %s: %s; want it refused, naming where its bind went", how, dest, said)
			}
			_, err1 := h.e.StopGroup(h.ctx, "one")
			_, err2 := h.e.StopGroup(h.ctx, "two")
			t.Logf("stop one: %v; stop two: %v", err1, err2)
			if hostpathtest.Mounted(t, dest) && len(liveClaimsOfData(t, h)) == 0 {
				t.Errorf("volume \"data\" is still bound at %s (one[0]'s bind, moved there) after both groups were stopped "+
					"without a refusal naming it (stop one: %v; stop two: %v): a bind left mounted with no claim", dest, err1, err2)
			}
			if err1 == nil || !strings.Contains(err1.Error(), "still bound at "+dest) {
				t.Errorf("stop one, its bind moved to %s = %v; want the release refused, naming it", dest, err1)
			}
		})
	}
}

// Two readers an older volctl admitted at one destination, sharing one bind (as the doc has
// it: "a release leaves it while another claim of the volume, held and not being released, is
// bound there, and the last one's release ... unbinds it"): one[0] recorded by this volctl,
// two[0] by the older one (no record). The bind is unmounted by hand and two[0]'s alloc claims
// again (its group run again), which binds the destination anew and records that mount as its
// own. one[0]'s record still names the mount gone: before, from then on the shared bind was
// "not the mount this claim's bind made there" for one[0], a conflict at every reconcile pass,
// and its release left it; two stopped first (its release leaves the bind to one[0], bound
// there too), then one, the volume stayed bound at the destination with no claim left. A
// mount no other claim records elsewhere, where the claim's own recorded bind is gone, is the
// claim's. Found by helper review64.
func TestSharedOlderDestinationBoundAgainByOneClaimIsReleasedByTheLast(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dest := filepath.Join(hostpathtest.MountDir(t), "shared")
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("one", 1, true, dest)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, filepath.Join(hostpathtest.MountDir(t), "other"))); err != nil {
		t.Fatal(err)
	}
	// As an older volctl recorded it: two[0] bound at one[0]'s destination too, no record.
	shareAsAnOlderVolctl(t, h, "two[0]", dest)
	forgetBindMounts(t, h, "two[0]")

	// The shared bind unmounted by hand; two[0]'s alloc claims again.
	if err := unix.Unmount(dest, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, dest)); err != nil {
		t.Fatalf("group two run again: %v", err)
	}
	if !hostpathtest.Mounted(t, dest) {
		t.Fatalf("%s not bound again", dest)
	}
	rep, err := h.e.Reconcile(h.ctx)
	t.Logf("reconcile: %+v, %v", rep.Problems, err)
	if err != nil || !rep.OK() {
		t.Errorf("reconcile after two[0] bound the shared destination again = %+v, %v; want one[0] to take the bind it shares, as before the unmount", rep.Problems, err)
	}
	_, err2 := h.e.StopGroup(h.ctx, "two")
	_, err1 := h.e.StopGroup(h.ctx, "one")
	t.Logf("stop two: %v; stop one: %v", err2, err1)
	if m := mountsUnder(t, dest); len(m) != 0 && len(liveClaimsOfData(t, h)) == 0 {
		t.Errorf("mounts at %s after the last claim bound there was released (stop two: %v; stop one: %v): %v; want none: a bind left with no claim", dest, err2, err1, m)
	}
}

// A forced detach of the outer volume of an alloc's nested volume_mounts (data at /app, logs at
// /app/logs): its unbind of /app is EBUSY (logs is mounted below it). Before, that was said in
// a warning advising "unmount or release that first", and the claim was freed all the same: the
// volume stayed bound at /app (its staging lazily unmounted, the plugin told nothing), with no
// claim of it left, and releasing logs, as the warning advised, unbound /app/logs only; nothing
// volctl runs unbound /app again (detaching data again found no claim). The detach stops there,
// the claim kept, and the detach again, once logs is released, finishes it. Found by helper
// review64.
func TestForcedDetachOfAnOuterVolumeLeavesNoBindWithoutAClaim(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dests := hostpathtest.MountDir(t)
	if _, err := h.e.RunGroup(h.ctx, nestedGroup(t, h, dests, false)); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dests, "app")
	res, err := h.e.Detach(h.ctx, "data", true)
	t.Logf("forced detach of data: %+v, %v", res, err)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(app, "logs")+" is mounted below it") {
		t.Errorf("forced detach of data, logs bound below its /app = %v; want it stopped, naming what is below", err)
	}
	// As the warning advises: release what is below it, then detach again.
	_, relErr := h.e.Release(h.ctx, "logs", "app[0]")
	res2, err2 := h.e.Detach(h.ctx, "data", true)
	t.Logf("release logs: %v; forced detach of data again: %+v, %v", relErr, res2, err2)
	var live []store.Claim
	live, err = viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil {
		t.Fatal(err)
	}
	if hostpathtest.Mounted(t, app) && len(live) == 0 {
		t.Errorf("volume \"data\" is still bound at %s with no claim of it after a forced detach (warnings %q), the release of what was below it, and a forced detach again: "+
			"nothing volctl runs unbinds it", app, res.Warnings)
	}
	if err2 != nil || hostpathtest.Mounted(t, app) || len(live) != 0 {
		t.Errorf("forced detach of data again, logs released = %v; /app mounted %v, data's claims %d: want it finished", err2, hostpathtest.Mounted(t, app), len(live))
	}
}

// The pre-6.8 record (table IDs only, which the kernel hands the next mount made once a bind is
// gone) meets the commonest reuse: web[0]'s bind is unmounted by hand, and the next mount
// made is another alloc's bind of the same shared volume, which gets its ID. recordedElsewhere
// took that mount, at two[0]'s live destination, for web[0]'s bind moved there (it is a mount
// of the volume, outside the state dir: the only check the ID reuse got), and movedBinds
// refused web[0]'s release, every time, telling the user to `umount` two[0]'s live bind from
// under its alloc. The record is written as a pre-6.8 kernel leaves it (no unique ID),
// naming the ID two[0]'s bind has, as the reuse gives it. Found by helper review64. Real
// mounts, as root.
func TestReusedMountIDOfAnotherClaimsBindIsNotTakenForTheClaimsBind(t *testing.T) {
	t.Parallel()
	h, dir, dest, webID := websBindUnmountedByHand(t)
	other := filepath.Join(dir, "b", "data")
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("two", 1, true, other)); err != nil {
		t.Fatal(err)
	}
	otherID := mountIDOf(t, other)
	t.Logf("web[0]'s bind had ID %d; two[0]'s bind, made after its unmount, has ID %d", webID, otherID)
	err := h.e.store.Update(h.ctx, func(tx *store.Tx) error {
		c, err := tx.Claims().Find("data", "web[0]")
		if err != nil {
			return err
		}
		return tx.Claims().SetBindMounts(c.ID, &store.BindMounts{Boot: bootID(), MountNS: mountNS(), At: map[string]store.BindMount{filepath.Clean(dest): {ID: otherID}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Errorf("stop web, its bind unmounted by hand and its mount ID reused by two[0]'s bind at %s: %v; want it released (that mount is two[0]'s live bind)", other, err)
	}
	if !hostpathtest.Mounted(t, other) {
		t.Errorf("two[0]'s bind at %s was unmounted", other)
	}
}
