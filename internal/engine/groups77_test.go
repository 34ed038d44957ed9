package engine

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusDoesNotCallAReadOnlyVolumeMountRemountedWritableBound: group web's alloc
// web[0] has volume data bound at a read_only volume_mount, and the bind is remounted writable
// since (`mount -o remount,bind,rw DEST`, by hand or a tool). `group status` (Groups, and so the
// CLI's table and the dashboard) still shows the volume_mount bound, "(read-only)" in MOUNTED AT,
// the alloc counted ready with no error: markUnbound/bindShows compare only which file is
// mounted there, not the mode the volume_mount asks for, while a group run again (bindMount,
// bindModeDiffers) finds the very same bind "writable, where this bind is read-only" and fixes
// it. The alloc can write to a volume its spec gives it read-only, and status says all is well.
// Correct: the volume_mount is marked (Bind.Unbound, or the alloc's error) as writable where it
// is read-only, the alloc not counted ready, naming what makes it read-only again.
// Found by helper review77 (groups).
func TestGroupStatusDoesNotCallAReadOnlyVolumeMountRemountedWritableBound(t *testing.T) {
	h, _, dest := boundByOwnGroup(t, true)
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID, ""); err != nil { // writable now
		t.Fatal(err)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY != 0 {
		t.Fatalf("the remount left %s read-only (flags %#x): the test tests nothing", dest, f)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 || len(gs[0].Allocs[0].Claims) != 1 {
		t.Fatalf("group status = %+v, %v; want web[0] holding its claim on data", gs, err)
	}
	a := gs[0].Allocs[0]
	b := a.Claims[0].Binds
	if len(b) != 1 || !b[0].ReadOnly {
		t.Fatalf("web[0]'s binds %+v; want its read_only volume_mount at %s", b, dest)
	}
	if !b[0].Unbound || !strings.Contains(a.Error, dest) || !strings.Contains(a.Error, "writable") || !strings.Contains(a.Error, "`volctl reconcile`") {
		t.Fatalf("group status of web[0], its read_only volume_mount %s remounted writable: bind %+v, alloc error %q; "+
			"want the volume_mount marked not as its spec asks (writable where it is read-only), the alloc not ready, and what mends it", dest, b[0], a.Error)
	}
	// The advice followed.
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile as advised: %v %+v", err, rep.Problems)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY == 0 {
		t.Errorf("after the advised reconcile %s is still writable", dest)
	}
	if gs, err := h.e.Groups(h.ctx, "web"); err != nil || gs[0].Allocs[0].Error != "" || gs[0].Allocs[0].Claims[0].Binds[0].Unbound {
		t.Errorf("group status after the advised reconcile: %+v, %v; want web[0] bound as asked", gs, err)
	}
}

// TestGroupStatusDoesNotCallReadyAnAllocWhoseTargetLostItsMount: group web's alloc web[0]
// holds its claim on volume data, published; the claim's target then loses its mount (a reboot
// before the agent's reconcile, a plugin restart, an unmount by hand): nothing is mounted there,
// and the alloc reads and writes the state dir's bare directory, not the volume. `group status`
// (Groups) shows the claim published, at rest, its target not covered and no error: the CLI
// counts web[0] ready ("Allocs Ready 1/1"), though a target covered by another mount (a lesser
// harm: the volume is at least still under it) marks it not ready (markUnbound, Covered), and
// reconcile or a group run again finds the target unmounted and mounts the volume there again.
// Correct: group status looks at a target at rest as it looks for a cover, and says the target
// has nothing mounted (what restores it: `volctl reconcile`), web[0] not counted ready.
// Found by helper review77 (groups).
func TestGroupStatusDoesNotCallReadyAnAllocWhoseTargetLostItsMount(t *testing.T) {
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data", AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}
	info, err := h.e.RunGroup(h.ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if len(info.Allocs) != 1 || len(info.Allocs[0].Claims) != 1 {
		t.Fatalf("group run = %+v; want web[0] holding its claim on data", info)
	}
	target := info.Allocs[0].Claims[0].TargetPath
	if !hostpathtest.Mounted(t, target) {
		t.Fatalf("web[0]'s target %s is not mounted after the run", target)
	}
	if err := unix.Unmount(target, 0); err != nil {
		t.Fatal(err)
	}
	if hostpathtest.Mounted(t, target) {
		t.Fatalf("the unmount left %s mounted: the test tests nothing", target)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 || len(gs[0].Allocs[0].Claims) != 1 {
		t.Fatalf("group status = %+v, %v; want web[0] holding its claim on data", gs, err)
	}
	a := gs[0].Allocs[0]
	c := a.Claims[0]
	// What the CLI's groupCounts (and so "Allocs Ready") reads of the alloc.
	ready := len(a.Missing) == 0 && !gs[0].Lacks(a) && c.AtRest() && c.Covered == "" && !c.Degraded
	if ready || !strings.Contains(a.Error, target) || !strings.Contains(a.Error, "`volctl reconcile`") {
		t.Fatalf("group status of web[0], its claim's target %s with nothing mounted: claim state %q, covered %q, alloc error %q; "+
			"want the alloc not counted ready and its error saying the target has lost the volume's mount (and that `volctl reconcile` mounts it again)",
			target, c.State, c.Covered, a.Error)
	}
	// The advice followed.
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile as advised: %v %+v", err, rep.Problems)
	}
	if gs, err := h.e.Groups(h.ctx, "web"); err != nil || gs[0].Allocs[0].Error != "" || gs[0].Allocs[0].Claims[0].Covered != "" {
		t.Errorf("group status after the advised reconcile: %+v, %v; want web[0] ready", gs, err)
	}
}
