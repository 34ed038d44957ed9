package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// groupWithTwoBinds runs group "web" (count 1) holding volumes data and logs, bound at
// dir/app and dir/logs; it returns the group, and the two destinations.
func groupWithTwoBinds(t *testing.T, h *hostpathEngine) (g spec.Group, app, logs string) {
	t.Helper()
	h.createWriterVolume(t, "data")
	h.createWriterVolume(t, "logs")
	dir := hostpathtest.MountDir(t)
	app, logs = filepath.Join(dir, "app"), filepath.Join(dir, "logs")
	g = spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{writerBlock("d", "data"), writerBlock("l", "logs")},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: app}, {Volume: "l", Destination: logs}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	return g, app, logs
}

// countedReady is how `group status` counts an alloc ready (cli.groupCounts).
func countedReady(g GroupInfo, a AllocInfo) bool {
	ready := len(a.Claims) > 0 && len(a.Missing) == 0 && !g.Lacks(a)
	for _, c := range a.Claims {
		ready = ready && c.AtRest()
		for _, b := range c.Binds {
			ready = ready && !b.Unbound
		}
	}
	return ready
}

// TestGroupStatusSaysSomethingElseMountedAtTheDestination: the bind at a volume_mount was
// replaced by a tmpfs (an admin's mount, another volume's bind moved there); the run again
// refused the alloc ("something else is mounted there"), and `group status` right after, whose
// first look asked only whether something was mounted, counted the alloc ready, its destination
// listed as bound. Found by helper review72 (own3).
func TestGroupStatusSaysSomethingElseMountedAtTheDestination(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	g, _, logs := groupWithTwoBinds(t, h)
	if err := unix.Unmount(logs, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", logs, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(logs, unix.MNT_DETACH) })
	info, err := h.e.RunGroup(h.ctx, g)
	if err == nil || len(info.Allocs) != 1 || info.Allocs[0].Error == "" {
		t.Fatalf("group run again over a tmpfs at %s = %+v, %v; want the alloc refused", logs, info, err)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	a := gs[0].Allocs[0]
	if countedReady(gs[0], a) && a.Error == "" {
		t.Errorf("group status right after the run that refused alloc %s (%q): the alloc counted ready, no error, its volume_mount %s listed as bound, "+
			"though what is mounted there is a tmpfs, not volume logs; want it not ready, or the run's error shown", a.Name, info.Allocs[0].Error, logs)
	}
}

// TestGroupStatusSaysWhatIsAtTheDestinationNow: a run again refused alloc web[0]'s bind at /logs
// (a file written there); the file moved away, `volctl reconcile` bound /logs again, as advised,
// and the run's error stayed recorded (reconcile does not clear it). With /app found unmounted
// later, `group status` gave the alloc that stale error about /logs, naming the wrong destination
// and a file that is gone: what is at each destination now is said instead. Found by helper
// review72 (own3).
func TestGroupStatusSaysWhatIsAtTheDestinationNow(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	g, app, logs := groupWithTwoBinds(t, h)
	if err := unix.Unmount(logs, 0); err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(logs, "x")
	if err := os.WriteFile(x, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err == nil || !errors.Is(err, ErrConflict) {
		t.Fatalf("group run again over %s holding a file = %v; want a conflict", logs, err)
	}
	if err := os.Remove(x); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if !hostpathtest.Mounted(t, logs) {
		t.Fatalf("reconcile did not bind %s again", logs)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 || !countedReady(gs[0], gs[0].Allocs[0]) {
		t.Fatalf("group status after reconcile re-bound %s = %+v, %v; want the alloc ready", logs, gs, err)
	}
	// Later, /app is unmounted (by hand, a namespace teardown).
	if err := unix.Unmount(app, 0); err != nil {
		t.Fatal(err)
	}
	gs, err = h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	a := gs[0].Allocs[0]
	if strings.Contains(a.Error, logs) || !strings.Contains(a.Error, app) {
		t.Errorf("group status with %s unmounted (and %s bound again by reconcile, empty): alloc %s's error = %q\n"+
			"want it about %s, not the stale refusal of %s recorded by a run before reconcile fixed it", app, logs, a.Name, a.Error, app, logs)
	}
}

// TestDashboardGroupAgreesWithGroupStatusOnAnUnmountedBind: with a volume_mount of a held claim
// unmounted, `group status` marked it and gave the alloc an error, and the dashboard's read of
// the same state (Dashboard) showed the alloc with no error, its bind as bound. Found by helper
// review72 (own3).
func TestDashboardGroupAgreesWithGroupStatusOnAnUnmountedBind(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	_, _, logs := groupWithTwoBinds(t, h)
	if err := unix.Unmount(logs, 0); err != nil {
		t.Fatal(err)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	st := gs[0].Allocs[0]
	if st.Error == "" || countedReady(gs[0], st) {
		t.Fatalf("group status with %s unmounted: alloc %+v; want it not ready with an error (markUnbound)", logs, st)
	}
	d, err := h.e.Dashboard(h.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, dg := range d.Groups {
		if dg.Name != "web" || len(dg.Allocs) != 1 {
			continue
		}
		found = true
		da := dg.Allocs[0]
		if da.Error != st.Error || countedReady(dg, da) != countedReady(gs[0], st) {
			t.Errorf("dashboard's group web, alloc %s: error %q, ready %v; group status of the same state: error %q, ready %v (volume_mount %s not mounted)",
				da.Name, da.Error, countedReady(dg, da), st.Error, countedReady(gs[0], st), logs)
		}
	}
	if !found {
		t.Fatalf("dashboard groups = %+v; want web with one alloc", d.Groups)
	}
}
