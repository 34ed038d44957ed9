package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// webWithHeldPublish starts `group run` of web, two allocs binding volume data at
// dir/{index}/x and claiming volume e (made here) too, and holds web[0]'s NodePublishVolume
// of e: the run has read its one view of the mount table (web[0]'s binds of data), and
// web[1]'s claim comes after. go on lets the run go on and is its error.
func webWithHeldPublish(t *testing.T, h *hostpathEngine, dir string) (goOn func() error) {
	t.Helper()
	sv := spec.Volume{ID: "e", Name: "e", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeMultiWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	g := multiWriterGroup("web", 2, filepath.Join(dir, "{index}", "x"))
	g.Volumes = append(g.Volumes, spec.VolumeRequest{Name: "e", Type: "csi", Source: "e",
		AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem})
	gate := make(chan struct{})
	h.faults.Inject(csi.RPCNodePublishVolume, csitest.Fault{Gate: gate, Times: 1, When: func(m proto.Message) bool {
		r := m.ProtoReflect()
		return strings.Contains(r.Get(r.Descriptor().Fields().ByName("target_path")).String(), "/web[0]/e/")
	}})
	done := make(chan error, 1)
	go func() { _, err := h.e.RunGroup(h.ctx, g); done <- err }()
	for h.faults.Held() < 1 {
		select {
		case err := <-done:
			t.Fatalf("group run returned before web[0]'s publish of e was held: %v", err)
		default:
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 1e6}, nil)
	}
	var once bool
	t.Cleanup(func() {
		if !once {
			close(gate)
			<-done
		}
	})
	return func() error { once = true; close(gate); return <-done }
}

// mountIDOf is the ID of the mount path is on.
func mountIDOf(t *testing.T, path string) uint64 {
	t.Helper()
	p, err := openNoFollow("/", path, createNothing)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	id, err := mountID(p.fd)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestGroupRunSeesBindsMadeDuringTheRunByAnotherProcess: a group run's one view of the mount
// table (withCommandPlaces) went stale while another volctl (here: alloc x's claim, made
// meanwhile) bound a volume_mount at dir/alias/x, dir/alias a slave bind of dir/1, where web[1]
// binds next: the view placed no destination on a mount it did not list, so x's was checked
// against nothing, and web[1]'s bind at dir/1/x, the master, propagated over x's, from under
// its alloc. A destination on a mount the view does not list has the table read again, as a
// claim's own does: web[1] is refused naming x. Real mounts, as root.
func TestGroupRunSeesBindsMadeDuringTheRunByAnotherProcess(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	sv := spec.Volume{ID: "other", Name: "other", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeMultiWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	dir := hostpathtest.MountDir(t)
	d0, d1, alias := filepath.Join(dir, "0"), filepath.Join(dir, "1"), filepath.Join(dir, "alias")
	for _, d := range []string{d0, d1, alias} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct {
		src, dst string
		flags    uintptr
	}{{d0, d0, unix.MS_BIND}, {d1, d1, unix.MS_BIND}, {"", d1, unix.MS_SHARED}, {d1, alias, unix.MS_BIND}, {"", alias, unix.MS_SLAVE}} {
		if err := unix.Mount(m.src, m.dst, "", m.flags, ""); err != nil {
			t.Fatalf("mount %s on %s (%#x): %v", m.src, m.dst, m.flags, err)
		}
	}
	goOn := webWithHeldPublish(t, h, dir)
	xDest := filepath.Join(alias, "x")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "other", Alloc: "x", AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem,
		Binds: []spec.VolumeMount{{Volume: "other", Destination: xDest, PropagationMode: spec.PropagationPrivate}}}); err != nil {
		t.Fatalf("x's claim: %v", err)
	}
	t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "other", "x") })
	if err := os.WriteFile(filepath.Join(xDest, "mine"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := goOn()
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if _, serr := os.Stat(filepath.Join(xDest, "mine")); serr != nil {
		t.Errorf("x's volume_mount at %s no longer shows x's volume (its file: %v): web[1]'s bind at the master propagated over it", xDest, serr)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "x"`) {
		t.Errorf("group run with web[1]'s destination joined with x's, bound meanwhile = %v; want web[1] refused naming x", err)
	}
}

// TestGroupRunSeesAStateDirAliasGivenAFreedMountID: during a group run an admin unmounts one
// mount and binds the state dir at dir/1, and the kernel gives the new mount the freed mount's
// ID: the run's view found that ID in the table as read (the old mount, elsewhere) and placed
// web[1]'s destination dir/1/x nowhere, so bindsReachingStateDir let it through and the bind
// was made in the state dir. A table entry whose mount point is not the path's or above it,
// or whose device is not the file's, has the table read again: refused. Real mounts, as root.
func TestGroupRunSeesAStateDirAliasGivenAFreedMountID(t *testing.T) {
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	d0, d1, gone := filepath.Join(dir, "0"), filepath.Join(dir, "1"), filepath.Join(dir, "gone")
	for _, d := range []string{d0, d1, gone} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{d0, gone} {
		if err := unix.Mount(d, d, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
	}
	freed := mountIDOf(t, gone)
	goOn := webWithHeldPublish(t, h, dir)
	if err := unix.Unmount(gone, 0); err != nil {
		t.Fatal(err)
	}
	got := uint64(0)
	for range 50 { // the kernel hands out the lowest free ID above its cursor: bind until it comes round
		if err := unix.Mount(h.state, d1, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		if got = mountIDOf(t, d1); got >= freed {
			break
		}
	}
	err := goOn()
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if got != freed {
		t.Skipf("the kernel did not give the state dir's alias the freed mount ID %d (gave %d): nothing to test", freed, got)
	}
	if _, serr := os.Lstat(filepath.Join(h.state, "x")); serr == nil {
		t.Errorf("web[1]'s volume_mount made %s in the state dir", filepath.Join(h.state, "x"))
	}
	if err == nil || !strings.Contains(err.Error(), "in the state dir") {
		t.Errorf("group run with web[1]'s destination in the state dir through an alias (mount ID %d, freed during the run) = %v; want it refused", got, err)
	}
}

// TestNestedVolumeMountsOfAPluginKeepingItsVolumesInTheStateDir: a plugin that keeps its
// volumes below volctl's state dir (hostpath --root <state dir>/hp-root) has them on the state
// dir's file system below the state dir: a nested volume_mount, whose destination is on the
// outer volume's bind, was refused as "in the state dir by another path" once its mount point
// existed in the outer volume (the group's second run). A destination on a volume's mount is
// the volume's, not the state dir's: bound. Real mounts, as root.
func TestNestedVolumeMountsOfAPluginKeepingItsVolumesInTheStateDir(t *testing.T) {
	t.Parallel()
	hostpathtest.RequireMount(t)
	state := hostpathtest.MountDir(t)
	h := newHostpathEngineAt(t, state, hostpath.Config{Root: filepath.Join(state, "hp-root"), NodeID: "n1", EnableAttach: true})
	g := nestedGroup(t, h, hostpathtest.MountDir(t), false)
	for _, run := range []string{"first", "second"} {
		if _, err := h.e.RunGroup(h.ctx, g); err != nil {
			t.Errorf("%s run of a nested group, the plugin's volumes in the state dir: %v", run, err)
		}
		if _, err := h.e.StopGroup(h.ctx, "app"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMovedBindOnTheDirectoryOfALiveBindByAPrivateAlias: b[0]'s bind at dir/b/data moved by
// hand (dir/b renamed dir/a), then group a binds at dir/alias/data, dir/alias an admin's
// private bind of dir/a: a's live bind is on the directory b's moved bind is on, by another
// path, but no propagation joins the two. movedBinds took the moved bind for a copy of a's
// and `group stop b` succeeded, leaving volume data bound at dir/a/data. A mount is a copy of a
// live bind only when its parent receives the live bind's parent's mounts: the moved bind is
// named. Real mounts, as root.
func TestMovedBindOnTheDirectoryOfALiveBindByAPrivateAlias(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	if _, err := h.e.RunGroup(h.ctx, multiWriterGroup("b", 1, filepath.Join(dir, "b", "data"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "b"), filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(dir, "alias")
	if err := os.MkdirAll(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(dir, "a"), alias, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", alias, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, multiWriterGroup("a", 1, filepath.Join(alias, "data"))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "a") })
	moved := filepath.Join(dir, "a", "data")
	if _, err := h.e.StopGroup(h.ctx, "b"); err == nil || !strings.Contains(err.Error(), "still bound at "+moved) {
		t.Errorf("stop of b, its bind moved to %s = %v; want the moved bind named (mounts: %v)", moved, err, mountsUnder(t, dir))
	}
}

// TestLoneClaimReadsTheMountTableOnce: a claim whose volume_mount is below a mount point other
// than "/" (a /srv partition) has bindsReachingStateDir place it, reading the mount table, and
// its bind check it against another claim's volume_mount elsewhere: the first read was made
// in a view thrown away, and the bind read the table again. The claim's checks and binds
// share one view: one read. Real mounts, as root.
func TestLoneClaimReadsTheMountTableOnce(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	srv := filepath.Join(dir, "srv")
	if err := os.MkdirAll(srv, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(srv, srv, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	claim := func(alloc, dest string) {
		t.Helper()
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: alloc, AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem,
			Binds: []spec.VolumeMount{{Volume: "data", Destination: dest, PropagationMode: spec.PropagationPrivate}}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = h.e.Release(h.ctx, "data", alloc) })
	}
	claim("first", filepath.Join(dir, "first"))
	before := h.e.placeReads.Load()
	claim("second", filepath.Join(srv, "x"))
	if reads := h.e.placeReads.Load() - before; reads != 1 {
		t.Errorf("a claim with a volume_mount below %s, a mount point, read the mount table %d times; want once", srv, reads)
	}
}
