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

// groupWithATargetCovered runs group "web" (count 2, per_alloc volume v[0], v[1] on a kernel
// harness) and, when bind, binds each alloc's volume at dir/app-{index}; "the volume's" data is
// written in alloc web[0]'s volume, then a tmpfs is mounted over web[0]'s target (unmounted when
// the test ends). It returns the group, web[0]'s claim and its destination ("" without bind).
func groupWithATargetCovered(t *testing.T, bind bool) (*harness, spec.Group, ClaimInfo, string) {
	t.Helper()
	h := kernelHarness(t, nil)
	h.create(volume("v[0]", capab(spec.SingleNodeWriter)))
	h.create(volume("v[1]", capab(spec.SingleNodeWriter)))
	g := spec.Group{Name: "web", Count: 2,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "v", PerAlloc: true, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}}
	dest := ""
	if bind {
		dir := hostpathtest.MountDir(t)
		g.Mounts = []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(dir, "app-{index}")}}
		dest = filepath.Join(dir, "app-0")
	}
	info, err := h.e.RunGroup(h.ctx, g)
	if err != nil {
		t.Fatalf("run group: %v", err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if len(info.Allocs) != 2 || len(info.Allocs[0].Claims) != 1 {
		t.Fatalf("run group = %+v; want two allocs holding their claim", info)
	}
	cl := info.Allocs[0].Claims[0]
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "volume-data"), []byte("the volume's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", cl.TargetPath, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs over the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH) })
	if _, err := os.Stat(filepath.Join(cl.TargetPath, "volume-data")); !os.IsNotExist(err) {
		t.Fatalf("the target still shows the volume's data under the tmpfs: %v", err)
	}
	return h, g, cl, dest
}

// TestGroupStatusNamesTheCoveredTargetNotTheVolumeMountThatShowsTheVolume: alloc web[0]'s
// volume_mount at app-0 was bound from its target, and a tmpfs was mounted over the target
// since. app-0 still shows the volume (the bind is the volume's, made before the cover); it is
// the target that does not. `group status` (markUnbound, bindShows) compares the destination
// with what the target path shows now, the tmpfs, and says of app-0 "has something else
// mounted, not the volume (mounted over it, or in its place): unmount that, then `volctl
// reconcile` binds the volume there again", the bind marked unbound: the wrong path named, and
// advice that, followed, unmounts the one path where the alloc still has its volume, while
// reconcile then binds nothing (settleLocked refuses the covered target) and the cover stays.
// Correct: a target covered since its publish is the claim's to say, as bindShows already
// leaves a target that lost its mount: the alloc's error names the target and its `umount`
// (targetCovered's words), and the volume_mount that shows the volume is not marked unbound
// nor its unmount advised.
// Found by helper review75.
func TestGroupStatusNamesTheCoveredTargetNotTheVolumeMountThatShowsTheVolume(t *testing.T) {
	t.Parallel()
	h, _, cl, dest := groupWithATargetCovered(t, true)
	if b, err := os.ReadFile(filepath.Join(dest, "volume-data")); err != nil || string(b) != "the volume's" {
		t.Fatalf("the volume_mount %s: %q, %v; want it to show the volume's data (the precondition)", dest, b, err)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 2 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	a := gs[0].Allocs[0]
	for _, c := range a.Claims {
		for _, b := range c.Binds {
			if b.Destination == dest && b.Unbound {
				t.Errorf("group status marks volume_mount %s unbound, though it shows the volume's data; the target %s is what is covered", dest, cl.TargetPath)
			}
		}
	}
	if strings.Contains(a.Error, "something else mounted") || !strings.Contains(a.Error, cl.TargetPath) || !strings.Contains(a.Error, "umount") {
		t.Errorf("group status: alloc %s's error = %q\nwant it to name the covered target %s and its umount, not advise unmounting the volume_mount %s, which shows the volume",
			a.Name, a.Error, cl.TargetPath, dest)
	}
}

// TestGroupStatusAfterARunRefusedACoveredTargetDoesNotCallTheAllocReady: group web's alloc
// web[0] (no volume_mounts) holds its claim, whose target a tmpfs covers since its publish. A
// `group run` of the same spec again refuses web[0] as it should (a conflict naming the target
// and its umount, web[1] served). But `group status` right after shows web[0] ready: its claim
// published and at rest, nothing missing, no error (groupInfo shows a run's recorded error only
// of an alloc lacking claims, and markUnbound looks at volume_mounts alone). A script polling
// status starts the task on the tmpfs, and what it writes is not on the volume. Correct: as
// for an unbound volume_mount (TestGroupStatusDoesNotCallReadyAnAllocWhoseBindIsGone), status
// does not count the alloc ready, its error naming the covered target and its umount.
// Found by helper review75.
func TestGroupStatusAfterARunRefusedACoveredTargetDoesNotCallTheAllocReady(t *testing.T) {
	t.Parallel()
	h, g, cl, _ := groupWithATargetCovered(t, false)
	info, err := h.e.RunGroup(h.ctx, g)
	if err == nil || !errors.Is(err, ErrConflict) || len(info.Allocs) != 2 || !strings.Contains(info.Allocs[0].Error, cl.TargetPath) || info.Allocs[1].Error != "" {
		t.Fatalf("group run again with web[0]'s target covered = %+v, %v; want web[0] refused naming its target, web[1] served (the precondition)", info, err)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 2 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	a := gs[0].Allocs[0]
	if countedReady(gs[0], a) && !strings.Contains(a.Error, cl.TargetPath) {
		t.Errorf("group status right after the run that refused alloc %s (%q): the alloc counted ready, error %q, though its target %s shows a tmpfs over the volume; "+
			"want it not ready, or the covered target and its umount named", a.Name, info.Allocs[0].Error, a.Error, cl.TargetPath)
	}
}
