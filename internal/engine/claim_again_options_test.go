package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestClaimAgainWithOtherMountOptionsIsAConflict: `volume claim --help` promises that claiming
// again "for an alloc that holds the same claim prints the same target path", and that
// --fs-type and --mount-flag replace the volume's. A claim again asking for mount options the
// held claim was not published with is not the same claim: handed the held target, the alloc
// would take a mount without the noexec (or the fs type) it asked for for one with it. It is
// refused as a claim again in another mode is (a conflict: release it first), naming the
// options without the flags themselves (they may carry credentials). A claim again that asks
// nothing of the mount options, or what the claim has, still gets the held claim.
func TestClaimAgainWithOtherMountOptionsIsAConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	first, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0",
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime", "uid=1000"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, mo := range []*spec.MountOptions{
		nil,
		{MountFlags: spec.MountFlags{"noatime", "uid=1000"}},
	} {
		again, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0", MountOptions: mo})
		if err != nil || again.TargetPath != first.TargetPath {
			t.Fatalf("claim again with %+v = %+v, %v; want the held claim", mo, again, err)
		}
	}
	for _, mo := range []*spec.MountOptions{
		{MountFlags: spec.MountFlags{"noexec"}},
		{FSType: "xfs"},
	} {
		_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0", MountOptions: mo})
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "web-0" already holds a write claim published with other mount options`) {
			t.Fatalf("claim again with %+v = %v; want a conflict saying the held claim has other mount options", mo, err)
		}
		if strings.Contains(err.Error(), "uid=1000") || strings.Contains(err.Error(), "noexec") {
			t.Errorf("conflict %q shows mount flags, which may carry credentials", err)
		}
	}
	if live := h.liveClaims("db"); len(live) != 1 || live[0].Releasing || len(live[0].MountFlags) != 2 {
		t.Fatalf("claims after the refused claims again = %+v; want the held one as it was", live)
	}
}

// TestRunGroupAgainWithOtherVolumeMountsIsAConflict: `group run --help` promises that running
// a group again is idempotent and prints "where each is bind-mounted (MOUNTED AT)". A group run
// again whose volume_mount moved (another destination, or read-only now) found the alloc's
// claim held and answered success, printing the old destination, with nothing mounted at the
// new one: the alloc, told its volume is there, would write to the host's disk. It is a
// conflict naming the alloc, the destinations it holds and `group stop`; the held claim and its
// bind stay as they are, and the same spec run again still succeeds. Real mounts, as root.
func TestRunGroupAgainWithOtherVolumeMountsIsAConflict(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	dir := hostpathtest.MountDir(t)
	group := func(dest string, ro bool) spec.Group {
		return spec.Group{Name: "web", Count: 1,
			Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
			Mounts:  []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(dir, dest), ReadOnly: ro}}}
	}
	if _, err := h.e.RunGroup(h.ctx, group("a", false)); err != nil {
		t.Fatal(err)
	}
	for _, g := range []spec.Group{group("b", false), group("a", true)} {
		info, err := h.e.RunGroup(h.ctx, g)
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "web[0]" already holds a write claim bind-mounted otherwise (at `+filepath.Join(dir, "a")+`)`) ||
			!strings.Contains(err.Error(), "volctl group stop web") {
			t.Fatalf("group run again with volume_mount %+v = %+v, %v; want a conflict naming the destination held and group stop", g.Mounts, info, err)
		}
	}
	if m := mountsUnder(t, filepath.Join(dir, "b")); len(m) != 0 {
		t.Errorf("mounted at the refused destination: %v", m)
	}
	if m := mountsUnder(t, filepath.Join(dir, "a")); len(m) != 1 {
		t.Errorf("mounts at the held destination after the refused runs: %v, want its one bind", m)
	}
	if _, err := h.e.RunGroup(h.ctx, group("a", false)); err != nil {
		t.Fatalf("the same group run again: %v", err)
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
}

// TestRunGroupAgainBindsAVolumeMountThatWasUnmounted: `group run --help` promises that a run
// again prints where each volume is bind-mounted (MOUNTED AT). With the claim's target still
// mounted but its destination unmounted (by hand, or a tool that unmounts what it finds), a
// run again found the claim at rest and answered success, MOUNTED AT the destination, with
// nothing mounted there: the alloc would write to the host's disk. The claim again binds it
// again, as reconcile does; and reconcile, which did bind it, reported "Nothing to do ...
// every mount is in place": it now reports the bind it restored. Real mounts, as root.
func TestRunGroupAgainBindsAVolumeMountThatWasUnmounted(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	dest := filepath.Join(hostpathtest.MountDir(t), "dest")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: dest}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(dest, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dest); len(m) != 1 {
		t.Fatalf("after the group run again, mounts at %s: %v; want the volume bound there again", dest, m)
	}

	if err := unix.Unmount(dest, 0); err != nil {
		t.Fatal(err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dest); len(m) != 1 {
		t.Fatalf("after reconcile, mounts at %s: %v; want the volume bound there again", dest, m)
	}
	if len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" || !strings.Contains(rep.Actions[0].Message, "volume_mount "+dest) {
		t.Fatalf("reconcile's report = %+v; want the volume_mount it bound again, restored", rep)
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
}

// TestRunGroupOverAPlainClaimOfItsAllocIsAConflict: a group run that found its alloc holding a
// claim made by `volume claim --alloc 'api[0]'` (no group) took it as the group's: "1 of 1
// allocs have their volumes", while `group status` said 0/1 with no claims, and `group stop`
// said "its claims are released" leaving it published. The claim is not the group's to report
// or release: the run is a conflict naming it and the release that frees it, the claim left.
func TestRunGroupOverAPlainClaimOfItsAllocIsAConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("data"))
	plain := h.claim(ClaimRequest{VolumeID: "data", Alloc: "api[0]"})
	g := spec.Group{Name: "api", Count: 1, Volumes: []spec.VolumeRequest{
		{Name: "d", Type: "csi", Source: "data", AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	info, err := h.e.RunGroup(h.ctx, g)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "api[0]" already holds a write claim made outside group "api"`) ||
		!strings.Contains(err.Error(), "`volctl volume release data --alloc 'api[0]'`") { // quoted: [0] is a glob
		t.Fatalf("group run over a plain claim of its alloc = %+v, %v; want a conflict naming the claim and its release", info, err)
	}
	if live := h.liveClaims("data"); len(live) != 1 || live[0].ID != plain.ID || live[0].Group != "" || live[0].Releasing {
		t.Fatalf("claims after the refused run = %+v; want the plain claim as it was", live)
	}
}

// createWriterVolume creates a single-node-writer volume through the hostpath plugin.
func (h *hostpathEngine) createWriterVolume(t *testing.T, id string) {
	t.Helper()
	sv := spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.SingleNodeWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
}
