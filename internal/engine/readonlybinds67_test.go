package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/mountflags"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// statfsFlags is statfs's f_flags of path: its mount's flags.
func statfsFlags(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Flags
}

// TestReadOnlyVolumeMountKeepsTheClaimsNoexec: a claim published with mount flags
// noexec,nosuid,nodev (a group's mount_options) and bound by a read_only volume_mount: the
// bind is read-only and keeps the target's noexec, nosuid and nodev. bindFD's read-only remount
// (MS_BIND|MS_REMOUNT|MS_RDONLY alone) cleared every other per-mount flag: the alloc could run
// the volume's programs and set-user-ID ones. Made read-only before it is attached now
// (attachBind: mount_setattr sets that flag alone); on a kernel without mount_setattr, the
// remount is given the mount's own flags (makeReadOnly): both ways tested. Found by helper
// review67.
func TestReadOnlyVolumeMountKeepsTheClaimsNoexec(t *testing.T) {
	t.Run("mount_setattr", readOnlyVolumeMountKeepsTheClaimsNoexec)
	t.Run("remount", func(t *testing.T) {
		withoutMountSetattr.Store(true) // not parallel: no other test runs meanwhile
		defer withoutMountSetattr.Store(false)
		readOnlyVolumeMountKeepsTheClaimsNoexec(t)
	})
}

func readOnlyVolumeMountKeepsTheClaimsNoexec(t *testing.T) {
	h := newHostpathEngine(t)
	dir := hostpathtest.MountDir(t)
	sv := spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeMultiWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	rw := filepath.Join(dir, "rw")
	ro := filepath.Join(dir, "ro")
	for _, c := range []struct {
		alloc, dest string
		ro          bool
	}{{"a-0", rw, false}, {"a-1", ro, true}} {
		cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: c.alloc, AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem,
			MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noexec", "nosuid", "nodev"}},
			Binds:        []spec.VolumeMount{{Volume: "data", Destination: c.dest, ReadOnly: c.ro}}})
		if err != nil {
			t.Fatalf("claim %s: %v", c.alloc, err)
		}
		alloc := c.alloc
		t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "data", alloc) })
		if f := statfsFlags(t, cl.TargetPath); f&unix.ST_NOEXEC == 0 {
			t.Fatalf("%s's target %s is not noexec (flags %#x): the plugin did not apply the claim's flags", c.alloc, cl.TargetPath, f)
		}
	}
	want := int64(unix.ST_NOEXEC | unix.ST_NOSUID | unix.ST_NODEV)
	if f := statfsFlags(t, rw); f&want != want {
		t.Errorf("writable volume_mount %s: flags %#x, want noexec|nosuid|nodev", rw, f)
	}
	f := statfsFlags(t, ro)
	if f&unix.ST_RDONLY == 0 {
		t.Errorf("read_only volume_mount %s is writable (flags %#x)", ro, f)
	}
	if f&want != want {
		t.Errorf("read_only volume_mount %s: flags %#x, lost the claim's noexec|nosuid|nodev (noexec=%v nosuid=%v nodev=%v): "+
			"the read-only remount of the bind reset them", ro, f, f&unix.ST_NOEXEC != 0, f&unix.ST_NOSUID != 0, f&unix.ST_NODEV != 0)
	}
}

// TestReadOnlyVolumeMountIsReadOnlyWhereverPropagationCarriesIt: a destination below a
// shared mount (as / is on systemd hosts; here an admin's shared bind of a directory, with a
// peer alias elsewhere) has the bind carried to the parent's peers when it is made. bindFD
// made the bind writable (a copy of the writable target) and only then remounted its own copy
// read-only: the copy propagation made at the peer stayed writable, and the read_only
// volume_mount's volume was written there. No other claim is involved (checkJoined has nothing
// to refuse). It is read-only before it is attached now (attachBind). Found by helper review67.
func TestReadOnlyVolumeMountIsReadOnlyWhereverPropagationCarriesIt(t *testing.T) {
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	base := hostpathtest.MountDir(t)
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(a, a, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(a, unix.MNT_DETACH) })
	if err := unix.Mount("", a, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(a, b, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(b, unix.MNT_DETACH) })
	g := spec.Group{Name: "ro", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
			AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(a, "x"), ReadOnly: true}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "ro") })
	if f := statfsFlags(t, filepath.Join(a, "x")); f&unix.ST_RDONLY == 0 {
		t.Fatalf("the read_only volume_mount at %s is writable (flags %#x)", filepath.Join(a, "x"), f)
	}
	if !mountedAt(t, filepath.Join(b, "x")) {
		t.Skip("the bind was not propagated to the peer: nothing to check")
	}
	err := os.WriteFile(filepath.Join(b, "x", "written-through-the-peer"), []byte("x"), 0o644)
	if err == nil {
		t.Errorf("the read_only volume_mount %s, carried by propagation to %s, is writable there: wrote %s into the volume",
			filepath.Join(a, "x"), filepath.Join(b, "x"), "written-through-the-peer")
	}
}

func mountedAt(t *testing.T, p string) bool {
	t.Helper()
	return len(mountsUnder(t, p)) > 0
}

// TestReadOnlyVolumeMountRestoredAfterARebootKeepsTheRootsNosymfollow: the plugin's root
// is on a nosymfollow,nosuid,nodev mount, whose flags the hostpath plugin carries to every
// target. A group's read_only volume_mount, bound by `group run` and bound again by reconcile
// after a reboot, lost them to bindFD's read-only remount, which the writable volume_mount
// beside it kept. Found by helper review67.
func TestReadOnlyVolumeMountRestoredAfterARebootKeepsTheRootsNosymfollow(t *testing.T) {
	base := hostpathtest.MountDir(t)
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSYMFOLLOW|unix.MS_NOSUID|unix.MS_NODEV, "size=16m,mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	h := newHostpathEngineWith(t, hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true})
	sv := spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeMultiWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	dests := filepath.Join(base, "dests")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
			AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{
			{Volume: "d", Destination: dests + "/rw/{index}"},
			{Volume: "d", Destination: dests + "/ro/{index}", ReadOnly: true},
		}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	want := int64(mountflags.STNoSymFollow | unix.ST_NOSUID | unix.ST_NODEV)
	check := func(when string) {
		t.Helper()
		if f := statfsFlags(t, filepath.Join(dests, "rw", "0")); f&want != want {
			t.Fatalf("%s: the writable volume_mount's flags %#x lack the root's nosymfollow|nosuid|nodev: the plugin did not carry them", when, f)
		}
		f := statfsFlags(t, filepath.Join(dests, "ro", "0"))
		if f&unix.ST_RDONLY == 0 {
			t.Errorf("%s: the read_only volume_mount is writable (flags %#x)", when, f)
		}
		if f&want != want {
			t.Errorf("%s: the read_only volume_mount's flags %#x lack the root's nosymfollow|nosuid|nodev (nosymfollow=%v nosuid=%v nodev=%v), which its target has",
				when, f, f&mountflags.STNoSymFollow != 0, f&unix.ST_NOSUID != 0, f&unix.ST_NODEV != 0)
		}
	}
	check("after group run")
	for _, d := range []string{dests, h.state} { // a reboot; the root's disk comes back mounted as before
		if err := hostpath.UnmountAll(d); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile after the reboot: %+v, %v", rep, err)
	}
	check("after a reboot and reconcile")
}

// TestOwnReadOnlyBindRemountedWritableIsMadeReadOnlyAgain: a group's read_only
// volume_mount that an admin remounted writable (mount -o remount,bind,rw DEST) is the claim's
// own bind, the mount its bind record names. A group run again (and every reconcile pass)
// refused it as "not this claim's bind (another claim's, moved here?)" and advised giving the
// volume_mount another destination, which the group run refuses for an alloc holding the
// claim, and the alloc kept a writable bind of a read_only volume_mount. It is made read-only
// again, the same mount, its flags kept. Found by helper review67.
func TestOwnReadOnlyBindRemountedWritableIsMadeReadOnlyAgain(t *testing.T) {
	h, g, dest := boundByOwnGroup(t, true)
	before := ownBindAt(t, h, dest)
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID, ""); err != nil { // the admin's: writable
		t.Fatal(err)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY != 0 {
		t.Fatalf("the remount left %s read-only (flags %#x): the test tests nothing", dest, f)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatalf("group run again, web[0]'s own read_only bind at %s remounted writable: %v", dest, err)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY == 0 || f&unix.ST_NOSUID == 0 {
		t.Errorf("after group run again, web[0]'s read_only volume_mount %s has flags %#x, want read-only and the nosuid it had", dest, f)
	}
	if after := ownBindAt(t, h, dest); after != before {
		t.Errorf("the bind at %s is mount %d now, was %d: made again rather than made read-only", dest, after, before)
	}
}

// TestOwnWritableBindRemountedReadOnlyIsSaidSoWithAStepThatWorks: the other way round, a
// writable volume_mount an admin remounted read-only is not made writable under them: the
// group run says it is the claim's own bind, read-only since, and names the remount that makes
// it as the volume_mount asks, which then lets the run through. It was refused as another
// claim's bind, with the advice to give the volume_mount another destination. Found by helper
// review67's case above.
func TestOwnWritableBindRemountedReadOnlyIsSaidSoWithAStepThatWorks(t *testing.T) {
	h, g, dest := boundByOwnGroup(t, false)
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil { // the admin's: read-only
		t.Fatal(err)
	}
	_, err := h.e.RunGroup(h.ctx, g)
	advice := "`mount -o remount,bind,rw " + dest + "`"
	if err == nil || strings.Contains(err.Error(), "not this claim's bind") || !strings.Contains(err.Error(), advice) {
		t.Fatalf("group run again, web[0]'s own writable bind at %s remounted read-only: %v\nwant it said to be the claim's own, read-only since, advising %s", dest, err, advice)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY == 0 {
		t.Fatalf("the run made %s writable itself (flags %#x)", dest, f)
	}
	// The claim held, its bind in place: nothing undone under the alloc.
	ownBindAt(t, h, dest)
	// The advice.
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Errorf("group run after the advised remount: %v", err)
	}
}

// boundByOwnGroup runs group web (one alloc) with volume data bound at a destination,
// read-only or not, and returns it and where web[0]'s bind is.
func boundByOwnGroup(t *testing.T, readOnly bool) (*hostpathEngine, spec.Group, string) {
	t.Helper()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
			AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: dir + "/{index}", ReadOnly: readOnly}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	return h, g, dir + "/0"
}

// ownBindAt is the mount ID of the bind at dest, which the record of the claim on data names.
func ownBindAt(t *testing.T, h *hostpathEngine, dest string) int {
	t.Helper()
	cls, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil || len(cls) != 1 || cls[0].BindMounts == nil {
		t.Fatalf("claims on data: %+v, %v", cls, err)
	}
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dest))
	if err != nil || len(ms) != 1 {
		t.Fatalf("the bind at %s: %v, %v", dest, ms, err)
	}
	if rec := cls[0].BindMounts.At[filepath.Clean(dest)]; uint64(ms[0].ID) != rec.ID {
		t.Fatalf("the claim's bind record %+v does not name the bind at %s (mount %d)", cls[0].BindMounts, dest, ms[0].ID)
	}
	return ms[0].ID
}
