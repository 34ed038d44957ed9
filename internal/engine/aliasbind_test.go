package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// aliasedDirs makes real, a directory bind-mounted on itself with shared propagation (as "/" is
// on systemd hosts), and alias, a bind of it, one directory by two paths; how says what alias
// is then: "shared" (a peer of real: a mount at either shows at both), "slave" (a mount at real
// shows at alias, not the other way) or "private" (neither: two separate mounts of one
// directory). Cleanup unmounts what is left below and on them.
func aliasedDirs(t *testing.T, how string) (real, alias string) {
	t.Helper()
	dir := hostpathtest.MountDir(t)
	real, alias = filepath.Join(dir, "real"), filepath.Join(dir, "alias")
	for _, d := range []string{real, alias} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	flags := map[string]uintptr{"shared": 0, "slave": unix.MS_SLAVE, "private": unix.MS_PRIVATE}[how]
	steps := []struct {
		src, dst string
		flags    uintptr
	}{{real, real, unix.MS_BIND}, {"", real, unix.MS_SHARED}, {real, alias, unix.MS_BIND}}
	if flags != 0 {
		steps = append(steps, struct {
			src, dst string
			flags    uintptr
		}{"", alias, flags})
	}
	for _, m := range steps {
		if err := unix.Mount(m.src, m.dst, "", m.flags, ""); err != nil {
			t.Fatalf("mount %s on %s (%#x): %v", m.src, m.dst, m.flags, err)
		}
	}
	return real, alias // MountDir's cleanup unmounts them and what is below
}

// claimsOnData lists the allocs holding a claim on volume "data".
func claimsOnData(t *testing.T, h *hostpathEngine) []string {
	t.Helper()
	live, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range live {
		out = append(out, c.Alloc)
	}
	return out
}

// TestVolumeMountAtAnotherClaimsDestinationByAnotherPathIsRefused: admission compares
// volume_mount destinations as paths, but a directory an admin's bind mount makes reachable by
// two paths, the two mounts joined by propagation (shared, as "/" is on systemd hosts, or one
// a slave of the other), is one place: a bind at one path shows at the other. A reader's group
// bound at the second path found the writer's bind propagated there, the same file, and took
// it as "bound already": its read-only volume_mount was the writer's read-write bind, and the
// writer's release unmounted both paths from under the reader, still held. The other order,
// the reader bound first at a slave, had the writer's bind at the master propagated onto the
// reader's destination. The claim bound second is refused, naming both destinations and the
// claim bound first; its rollback leaves the first's bind; both stops leave nothing mounted.
// Real mounts, as root.
func TestVolumeMountAtAnotherClaimsDestinationByAnotherPathIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		how               string // the alias's propagation (aliasedDirs)
		firstRO, secondRO bool
		firstOnAlias      bool // the first group binds at the alias, the second at real
		destAliased       bool // alias/x is itself a bind of real/x (not alias of real)
	}{
		{name: "shared alias, writer first", how: "shared", secondRO: true},
		{name: "shared alias, reader first", how: "shared", firstRO: true, firstOnAlias: true},
		{name: "slave alias, writer at the master first", how: "slave", secondRO: true},
		{name: "slave alias, reader at the slave first", how: "slave", firstRO: true, firstOnAlias: true},
		{name: "destination itself aliased", how: "shared", secondRO: true, destAliased: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
			real, alias := aliasedDirs(t, tc.how)
			if tc.destAliased {
				// alias is not a bind of real here: alias/x is a bind of real/x, a peer of real.
				for unix.Unmount(alias, unix.MNT_DETACH) == nil {
				}
				for _, d := range []string{real + "/x", alias + "/x"} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if err := unix.Mount(real+"/x", alias+"/x", "", unix.MS_BIND, ""); err != nil {
					t.Fatal(err)
				}
			}
			first, second := real+"/x", alias+"/x"
			if tc.firstOnAlias {
				first, second = second, first
			}
			if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("first", 1, tc.firstRO, first)); err != nil {
				t.Fatal(err)
			}
			info, err := h.e.RunGroup(h.ctx, sharedDestGroup("second", 1, tc.secondRO, second))
			if err == nil && tc.secondRO {
				if werr := os.WriteFile(filepath.Join(second, "by-reader"), []byte("x"), 0o644); werr == nil {
					t.Errorf("second[0]'s read-only volume_mount at %s is writable: it was handed first[0]'s read-write bind", second)
				}
			}
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volume_mount "+second) ||
				!strings.Contains(err.Error(), `alloc "first[0]"`) || !strings.Contains(err.Error(), first) {
				t.Fatalf("second group, its volume_mount at %s, the directory first[0] is bound at by %s = %+v, %v; want a conflict naming both destinations and first[0]",
					second, first, info, err)
			}
			if got := claimsOnData(t, h); len(got) != 1 || got[0] != "first[0]" {
				t.Fatalf("claims on data after the refusal: %v; want first[0]'s alone", got)
			}
			// The refused claim's rollback unbinds nothing of first[0]'s: its bind is where it was.
			if !hostpathtest.Mounted(t, first) {
				t.Fatalf("first[0]'s volume_mount at %s is gone after second[0]'s refusal: its rollback unbound it", first)
			}
			if !tc.firstRO {
				if err := os.WriteFile(filepath.Join(first, "by-first"), []byte("x"), 0o644); err != nil {
					t.Fatalf("first[0]'s read-write volume_mount at %s: %v", first, err)
				}
			}
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Fatalf("reconcile with first[0] alone bound: %+v, %v; want nothing wrong", rep, err)
			}
			if _, err := h.e.StopGroup(h.ctx, "second"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.e.StopGroup(h.ctx, "first"); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{first, second} {
				if tc.destAliased && p == alias+"/x" {
					if m := mountsUnder(t, p); len(m) != 1 {
						t.Errorf("mounts at %s after both groups stopped: %v; want the admin's own bind alone", p, m)
					}
					continue
				}
				if hostpathtest.Mounted(t, p) {
					t.Errorf("%s is still mounted after both groups stopped", p)
				}
			}
		})
	}
}

// TestVolumeMountsAtOneDirectoryNotJoinedByPropagationAreBound: one directory reached by two
// paths whose mounts propagation does not join is two places to bind: a private alias (an
// admin's bind made private), the same disk mounted twice, and one volume bound per alloc at
// /t/{index} and again at /t/{index}/logs (every alloc's logs/ is the volume's one logs
// directory, below binds of their own). Each claim is bound, reconcile passes find nothing
// wrong (a check by place alone refused them every pass), and each stop unbinds its own,
// leaving nothing mounted. Real mounts, as root.
func TestVolumeMountsAtOneDirectoryNotJoinedByPropagationAreBound(t *testing.T) {
	t.Parallel()
	twice := func(t *testing.T, h *hostpathEngine, first, second string) {
		t.Helper()
		if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("first", 1, false, first)); err != nil {
			t.Fatal(err)
		}
		if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("second", 1, true, second)); err != nil {
			t.Fatalf("second group at %s, first[0] bound at %s, the same directory by a mount propagation does not join: %v; want it bound", second, first, err)
		}
		if err := os.WriteFile(filepath.Join(second, "by-reader"), []byte("x"), 0o644); err == nil {
			t.Errorf("second[0]'s read-only volume_mount at %s is writable", second)
		}
		if err := os.WriteFile(filepath.Join(first, "by-writer"), []byte("x"), 0o644); err != nil {
			t.Errorf("first[0]'s read-write volume_mount at %s: %v", first, err)
		}
		for range 2 {
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Fatalf("reconcile: %+v, %v; want nothing wrong", rep, err)
			}
		}
		for _, g := range []string{"first", "second"} {
			if _, err := h.e.StopGroup(h.ctx, g); err != nil {
				t.Fatalf("stop %s: %v", g, err)
			}
		}
		for _, p := range []string{first, second} {
			if hostpathtest.Mounted(t, p) {
				t.Errorf("%s is still mounted after both groups stopped", p)
			}
		}
	}
	t.Run("private alias", func(t *testing.T) {
		h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
		real, alias := aliasedDirs(t, "private")
		twice(t, h, real+"/x", alias+"/x")
	})
	t.Run("one disk mounted twice", func(t *testing.T) {
		h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
		dir := hostpathtest.MountDir(t)
		disk := diskOf(t, dir)
		again := filepath.Join(dir, "again")
		if err := os.Mkdir(again, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		// Read-only: the whole disk is below it, and nothing must remove through it. Mounted
		// as it is (a file system mounted read-write refuses a second mount asking read-only,
		// EBUSY), then this mount alone made read-only.
		if err := unix.Mount(disk.Source, again, disk.FSType, 0, ""); err != nil {
			t.Skipf("cannot mount %s (%s, holding %s) a second time: %v", disk.Source, disk.FSType, dir, err)
		}
		t.Cleanup(func() {
			for unix.Unmount(again, unix.MNT_DETACH) == nil {
			}
		})
		if err := unix.Mount("", again, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("make the second mount of %s at %s read-only: %v", disk.Source, again, err)
		}
		// The disk's whole file system is at again: dir/x is at again/<its path in it>.
		rel, err := filepath.Rel(disk.Mountpoint, dir)
		if err != nil {
			t.Fatal(err)
		}
		twice(t, h, filepath.Join(dir, "x"), filepath.Join(again, disk.Root, rel, "x"))
	})
	t.Run("one volume per alloc at t/{index} and t/{index}/logs", func(t *testing.T) {
		h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
		dir := hostpathtest.MountDir(t)
		g := multiWriterGroup("nest", 2, filepath.Join(dir, "t", "{index}"), filepath.Join(dir, "t", "{index}", "logs"))
		if _, err := h.e.RunGroup(h.ctx, g); err != nil {
			t.Fatalf("group with one volume bound per alloc at t/{index} and t/{index}/logs: %v", err)
		}
		for range 2 {
			if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
				t.Fatalf("reconcile: %+v, %v; want nothing wrong", rep, err)
			}
		}
		if _, err := h.e.StopGroup(h.ctx, "nest"); err != nil {
			t.Fatalf("stop: %v", err)
		}
		if m := mountsUnder(t, filepath.Join(dir, "t")); len(m) != 0 {
			t.Errorf("mounted after the stop: %v", m)
		}
	})
}

// diskOf is the mount table's entry for the mount holding dir.
func diskOf(t *testing.T, dir string) *mountinfo.Info {
	t.Helper()
	m, err := holdingMount("/proc/self/mountinfo", dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// multiWriterGroup is a group of count allocs on the multi-writer volume "data", each alloc
// bound at every one of dests (placeholders replaced).
func multiWriterGroup(name string, count int, dests ...string) spec.Group {
	g := spec.Group{Name: name, Count: count,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
			AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}}}
	for _, d := range dests {
		g.Mounts = append(g.Mounts, spec.VolumeMount{Volume: "d", Destination: d})
	}
	return g
}

// TestReconcilePlacesVolumeMountsWithOneReadOfTheMountTable: a reconcile pass checks every
// published claim's volume_mounts against every other's place (bind's check of propagation),
// from one read of the mount table for the whole pass, not one per claim; and a pass that
// binds them all again (a reboot) reads it again only where a bind of the pass holds a
// destination (none here). Real mounts, as root.
func TestReconcilePlacesVolumeMountsWithOneReadOfTheMountTable(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	const n = 12
	if _, err := h.e.RunGroup(h.ctx, multiWriterGroup("many", n, filepath.Join(dir, "{index}"))); err != nil {
		t.Fatal(err)
	}
	for _, unbound := range []bool{false, true} {
		if unbound {
			for i := range n {
				if err := unix.Unmount(filepath.Join(dir, strconv.Itoa(i)), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		before := h.e.placeReads.Load()
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil || !rep.OK() {
			t.Fatalf("reconcile: %+v, %v", rep, err)
		}
		if reads := h.e.placeReads.Load() - before; reads != 1 {
			t.Errorf("reconcile pass over %d claims with volume_mounts (unbound: %v) read the mount table %d times to place them; want once", n, unbound, reads)
		}
		if m := mountsUnder(t, dir); len(m) != n {
			t.Fatalf("mounted after the pass: %v; want %d binds", m, n)
		}
	}
	if _, err := h.e.StopGroup(h.ctx, "many"); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseLeavesABindAnotherClaimReachesThroughPropagation: claims an older volctl bound at
// two paths to one directory joined by shared propagation share one bind (the second took the
// first's, propagated to its path, for its own). The first's release unmounted it, and with it,
// propagated, the second's, still held, whose alloc then wrote to the host's disk there. Now a
// reconcile pass names the second as a conflict (it is on another claim's bind), the first's
// release leaves the bind, and the second's release unbinds both paths. Real mounts, as root.
func TestReleaseLeavesABindAnotherClaimReachesThroughPropagation(t *testing.T) {
	t.Parallel()
	h, real, alias := readerOnWritersBind(t, "shared")
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || rep.Problems[0].Alloc != "reader[0]" || !strings.Contains(rep.Problems[0].Message, `alloc "web[0]"`) {
		t.Errorf("reconcile with reader[0] on web[0]'s bind: %+v, %v; want reader[0]'s conflict alone, naming web[0]", rep, err)
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if !hostpathtest.Mounted(t, alias+"/x") {
		t.Fatalf("reader[0]'s volume_mount at %s/x is gone after web[0]'s release: it unmounted the bind reader[0] reaches through propagation", alias)
	}
	if _, err := h.e.StopGroup(h.ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{real + "/x", alias + "/x"} {
		if hostpathtest.Mounted(t, p) {
			t.Errorf("%s is still mounted after both groups stopped", p)
		}
	}
}

// TestReleaseUnbindsWhatAClaimAtASlaveAliasCannot: web[0] bound at real/x, and reader[0] of the
// same volume recorded at alias/x, a slave of real, where it found web[0]'s bind propagated (an
// older volctl admitted that). web[0]'s release left real/x bound, reader[0] reaching it; but an
// unmount at a slave is not made at its master, so reader[0]'s release unmounted alias/x alone:
// the volume stayed bound read-write at real/x, named by no claim, and reader[0]'s release stuck
// on it every pass. A bind is left only for a claim whose own unmount will reach it; web[0]'s
// release unbinds real/x (and alias/x with it), reconcile binds reader[0] again, and its
// release leaves nothing mounted. Real mounts, as root.
func TestReleaseUnbindsWhatAClaimAtASlaveAliasCannot(t *testing.T) {
	t.Parallel()
	h, real, alias := readerOnWritersBind(t, "slave")
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatalf("stop web: %v", err)
	}
	if hostpathtest.Mounted(t, real+"/x") {
		t.Errorf("%s is still mounted after web[0]'s release: reader[0], at the slave %s, cannot unmount it", real+"/x", alias+"/x")
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("reconcile after web[0]'s release: %+v, %v; want reader[0] bound again, nothing wrong", rep, err)
	}
	if !hostpathtest.Mounted(t, alias+"/x") {
		t.Errorf("reader[0]'s volume_mount at %s is not bound again after reconcile", alias+"/x")
	} else if err := os.WriteFile(filepath.Join(alias, "x", "by-reader"), []byte("x"), 0o644); err == nil {
		t.Errorf("reader[0]'s read-only volume_mount at %s is writable", alias+"/x")
	}
	if _, err := h.e.StopGroup(h.ctx, "reader"); err != nil {
		t.Errorf("stop reader: %v", err)
	}
	for _, p := range []string{real + "/x", alias + "/x"} {
		if hostpathtest.Mounted(t, p) {
			t.Errorf("%s is still mounted after both groups stopped", p)
		}
	}
}

// readerOnWritersBind is what an older volctl left: on an engine with volume "data", aliasedDirs
// made as how says, group web's web[0] bound read-write at real/x, and group reader's reader[0]
// recorded at alias/x, where web[0]'s bind shows, with no bind of its own.
func readerOnWritersBind(t *testing.T, how string) (h *hostpathEngine, real, alias string) {
	t.Helper()
	h = newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	real, alias = aliasedDirs(t, how)
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, real+"/x")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("reader", 1, true, filepath.Join(hostpathtest.MountDir(t), "elsewhere"))); err != nil {
		t.Fatal(err)
	}
	cl, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) (store.Claim, error) { return tx.Claims().Find("data", "reader[0]") })
	if err != nil {
		t.Fatal(err)
	}
	if err := h.e.unbind(h.ctx, &cl); err != nil {
		t.Fatal(err)
	}
	cl.Binds[0].Destination = alias + "/x"
	if err := h.e.store.Update(h.ctx, func(tx *store.Tx) error { return tx.Claims().Update(&cl) }); err != nil {
		t.Fatal(err)
	}
	return h, real, alias
}
