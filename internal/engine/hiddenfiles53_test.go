package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// webGroup is a group of one alloc, web[0], claiming volume vol for writing, bound at dest.
func webGroup(vol, dest string) spec.Group {
	return spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: vol,
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: dest}}}
}

// newDataEngine is newHostpathEngine with the single-node-writer volume "data" created.
func newDataEngine(t *testing.T) *hostpathEngine {
	t.Helper()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	return h
}

// boundThenMovedAway claims volume "data" for alloc "a" with a volume_mount at DIR/alloc/data,
// then renames DIR/alloc to DIR/moved, the bind going with it, as its owner may. It returns DIR
// and where the bind is now, unmounted at cleanup.
func boundThenMovedAway(t *testing.T, h *hostpathEngine) (dests, boundAt string) {
	t.Helper()
	dests = hostpathtest.MountDir(t)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a", Binds: []spec.VolumeMount{
		{Volume: "data", Destination: filepath.Join(dests, "alloc", "data"), PropagationMode: spec.PropagationPrivate}}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dests, "alloc"), filepath.Join(dests, "moved")); err != nil {
		t.Fatal(err)
	}
	boundAt = filepath.Join(dests, "moved", "data")
	t.Cleanup(func() { _ = unix.Unmount(boundAt, unix.MNT_DETACH) })
	return dests, boundAt
}

// unmountedAndWritten unmounts a claim's target, as a reboot leaves it, and, with write, writes
// app.log there, as an application started before the restore does.
func unmountedAndWritten(t *testing.T, target string, write bool) {
	t.Helper()
	// Detached, as a reboot leaves it: a process another parallel test forks meanwhile keeps a
	// copy of a descriptor the claim had open on the mount until its exec, and a plain unmount
	// was then EBUSY (TestUnbindIsNotMadeBusyByAProcessThisOneStarts says why).
	if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if write {
		if err := os.WriteFile(filepath.Join(target, "app.log"), []byte("written while unmounted"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// refusedBeforeAnything fails the test unless err, a group run's of webGroup, is a conflict
// saying want, and nothing was sent to the plugin or recorded for the alloc.
func (h *hostpathEngine) refusedBeforeAnything(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
		t.Fatalf("group run = %v; want it refused (a conflict) saying %q", err, want)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume) + h.faults.Calls(csi.RPCNodePublishVolume); n != 0 {
		t.Errorf("%d NodeStageVolume and NodePublishVolume sent for a claim refused before admission", n)
	}
	if evs, err := h.e.Events(h.ctx, 0, EventFilter{Alloc: spec.AllocName("web", 0)}); err != nil || len(evs) != 0 {
		t.Errorf("events of the alloc refused before admission: %+v, %v; want none", evs, err)
	}
}

// TestVolumeMountOverFilesAlreadyThereIsRefused: a volume_mount destination is a host path, and
// a group run bound the volume over a directory that held its owner's files: they were hidden
// from every user of the host while the claim was held (a destination of /srv/app/data with the
// application's data in it, /etc on a host without mounts below it), and the alloc was handed
// the empty volume where they had been, without a word. The claim is refused before anything
// is sent, naming what is there (bindsBindable), and the files stay in view; a destination of
// empty directories only is bound. The bind itself checks it again: a claim's restore onto a
// destination written while it was not bound (a reboot) is refused naming the file, the claim
// kept, and bound once the file is gone. Real mounts, as root.
func TestVolumeMountOverFilesAlreadyThereIsRefused(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	dir := hostpathtest.MountDir(t)
	dest := filepath.Join(dir, "app-data")
	if err := os.MkdirAll(filepath.Join(dest, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.db", "b.log", "c.conf"} {
		if err := os.WriteFile(filepath.Join(dest, f), []byte("the owner's "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := webGroup("data", dest)
	_, err := h.e.RunGroup(h.ctx, g)
	h.refusedBeforeAnything(t, err, `volume_mount `+dest+` is a directory holding "a.db", "b.log" and "c.conf", which the bind would hide`)
	if isMount(t, dest) {
		t.Fatalf("%s is a mount point after the refused run", dest)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "a.db")); err != nil || string(b) != "the owner's a.db" {
		t.Fatalf("the owner's file after the refused run: %q, %v", b, err)
	}

	// One file left, below a directory: named by its path from the destination, no "and more".
	for _, f := range []string{"a.db", "b.log"} {
		if err := os.Remove(filepath.Join(dest, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(dest, "c.conf"), filepath.Join(dest, "sub", "c.conf")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err == nil || !strings.Contains(err.Error(), `is a directory holding "sub/c.conf", which the bind would hide`) {
		t.Fatalf("group run over a directory holding one file below it = %v; want it refused naming it", err)
	}

	// Nothing but empty directories (volctl's own mkdir of a nested destination, walked before
	// its outer one was bound, TestAFailedOuterRestoreLeavesTheInnerForTheNextPass): bound.
	if err := os.Remove(filepath.Join(dest, "sub", "c.conf")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dest, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatalf("group run over a directory of empty directories: %v", err)
	}
	if !isMount(t, dest) {
		t.Fatalf("%s is not bound after the run", dest)
	}

	// The bind lost (a reboot, an unmount by hand) and a file written in its place: the restore
	// refuses to hide it, and keeps the claim.
	if err := unix.Unmount(dest, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "written-unbound.log"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, `is a directory holding "written-unbound.log", which the bind would hide`) {
		t.Fatalf("reconcile over a destination written while unbound = %+v, %v; want the file named", rep.Problems, err)
	}
	if isMount(t, dest) {
		t.Fatalf("%s bound over the file", dest)
	}
	if _, err := h.e.ClaimInfo(h.ctx, "data", spec.AllocName("web", 0)); err != nil {
		t.Fatalf("the claim after the refused restore: %v; want it kept", err)
	}
	if err := os.Remove(filepath.Join(dest, "written-unbound.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil || !isMount(t, dest) {
		t.Fatalf("reconcile once the file is gone: %v, bound %v", err, isMount(t, dest))
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
}

// TestGroupRunThatReleasesAFailedClaimSaysSo: a group run whose claim failed at its bind
// (something else mounted at the destination, which only the bind can tell from the claim's
// own) released the claim, but its error still said "(the claim is left published for
// `volctl reconcile`)". It says the run released it. Real mounts, as root.
func TestGroupRunThatReleasesAFailedClaimSaysSo(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	dest := filepath.Join(hostpathtest.MountDir(t), "busy")
	foreignMount(t, dest)
	info, err := h.e.RunGroup(h.ctx, webGroup("data", dest))
	if err == nil || !strings.Contains(err.Error(), "something else is mounted there") || !strings.Contains(err.Error(), "(the run released the claim again)") {
		t.Fatalf("group run over another mount = %v; want the bind refused and the claim released, saying so", err)
	}
	if strings.Contains(err.Error(), "left published") || len(info.Allocs) != 1 || !strings.Contains(info.Allocs[0].Error, "released the claim again") {
		t.Errorf("the run's error %q, allocs %+v: it says the claim is left while the run released it", err, info.Allocs)
	}
	if _, err := h.e.ClaimInfo(h.ctx, "data", spec.AllocName("web", 0)); err == nil {
		t.Fatal("the refused alloc still holds its claim")
	}
}

// TestHiddenSaysWhatAMountWouldHide: a file of some bytes is named by its size; an empty file,
// an empty directory and a tree of empty directories are nothing; a directory is named by the
// first files below it, in name order, by path from it; a symlink is a file (not followed), a
// device or a named pipe its kind; and the walk stops at its budget.
func TestHiddenSaysWhatAMountWouldHide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	at := func(rel string) string {
		if filepath.IsAbs(rel) {
			return rel
		}
		return filepath.Join(dir, rel)
	}
	write := func(rel, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(at(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(at(rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hidden := func(rel string) string {
		t.Helper()
		p, err := openNoFollow("/", at(rel), createNothing)
		if err != nil {
			t.Fatal(err)
		}
		defer p.close()
		what, err := p.hidden()
		if err != nil {
			t.Fatal(err)
		}
		return what
	}
	write("empty", "")
	write("full", "12345")
	for _, d := range []string{"d", "tree/a/b/c", "tree/x", "one/sub"} {
		if err := os.MkdirAll(at(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("one/sub/z.txt", "z")
	if err := unix.Mkfifo(at("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(at("link"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", at("link/etc")); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{
		"empty": "",
		"full":  "a file of 5 bytes",
		"d":     "",
		"tree":  "",
		"one":   `a directory holding "sub/z.txt"`,
		"link":  `a directory holding "etc"`,
		"fifo":  "a named pipe",
		".":     `a directory holding "empty", "fifo", "full" and more`,
	} {
		if got := hidden(rel); got != want {
			t.Errorf("hidden(%s) = %q; want %q", rel, got, want)
		}
	}
	if got := hidden("/dev/null"); got != "a character device" {
		t.Errorf("hidden(/dev/null) = %q; want a character device", got)
	}
	for i := range hiddenBudget + 1 {
		if err := os.MkdirAll(at("wide/"+strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := hidden("wide"), fmt.Sprintf("a directory of more than %d directories", hiddenBudget); got != want {
		t.Errorf("hidden of a directory of %d empty directories = %q; want %q", hiddenBudget+1, got, want)
	}
}

// TestVolumeMountPastNameMaxIsReleased: a group whose volume_mount destination had a component
// past 255 bytes got its claim staged and published, the bind failed at the walk
// (ENAMETOOLONG), and the run's release of the claim failed the same way at the unbind's walk:
// the claim stayed unpublishing, and every reconcile and group stop failed on it, until a
// forced detach. The spec refuses such a destination now, and so does a claim before its
// admission (bindsBindable); one an older volctl recorded is released: a path that cannot exist
// holds no bind. Real mounts, as root.
func TestVolumeMountPastNameMaxIsReleased(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	dest := filepath.Join(hostpathtest.MountDir(t), strings.Repeat("n", 300), "x")
	_, err := h.e.RunGroup(h.ctx, webGroup("data", dest))
	h.refusedBeforeAnything(t, err, "file name too long")

	// Recorded so by an older volctl: its release unbinds nothing there, and goes on.
	cl := store.Claim{VolumeID: "data", Alloc: "old", Binds: []spec.VolumeMount{{Volume: "d", Destination: dest}}}
	if err := h.e.unbind(h.ctx, &cl); err != nil {
		t.Fatalf("unbind of a destination past NAME_MAX: %v; want nothing to unbind", err)
	}
}

// TestReleaseFindsAVolumeMountMovedAwayAndAFileInItsPlace: as
// TestReleaseFindsAVolumeMountMovedAway, the destination's parent renamed away, but a file made
// in its place: the unbind's walk met ENOTDIR and the release failed "not a directory", not
// naming where the volume is still bound. A path through a file holds no bind: the release
// finds the bind where it went (movedBinds) and names it, as for a parent gone.
func TestReleaseFindsAVolumeMountMovedAwayAndAFileInItsPlace(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	dests, boundAt := boundThenMovedAway(t, h)
	if err := os.WriteFile(filepath.Join(dests, "alloc"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "data", "a"); err == nil || !strings.Contains(err.Error(), boundAt) {
		t.Fatalf("release = %v; want it refused naming %s, where the volume is still bound", err, boundAt)
	}
}

// TestVolumeMountThroughASymlinkIsReleased: a destination through a symlink (/var/run, a link
// to /run on Debian) is refused at the bind, which never follows one; the group run's release
// of the claim then failed the same way at the unbind's walk, and the claim stayed unpublishing
// through every reconcile and group stop until a forced detach. The claim is refused before its
// admission now; and a claim bound before the link was made (its bind then lost: a reboot) is
// released: nothing of volctl's can be bound through a link. A bind moved away and a link made
// in its place is still found where it went. Real mounts, as root.
func TestVolumeMountThroughASymlinkIsReleased(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	dests := hostpathtest.MountDir(t)
	if err := os.Mkdir(filepath.Join(dests, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dests, "link")); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.RunGroup(h.ctx, webGroup("data", filepath.Join(dests, "link", "data")))
	h.refusedBeforeAnything(t, err, filepath.Join(dests, "link")+" is a symlink")

	// Bound, the bind lost, and the destination's parent made a link: released.
	lost := filepath.Join(dests, "lost", "data")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "b",
		Binds: []spec.VolumeMount{{Volume: "data", Destination: lost, PropagationMode: spec.PropagationPrivate}}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(lost, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dests, "lost")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dests, "lost")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "data", "b"); err != nil {
		t.Fatalf("release of a claim whose lost bind's destination is now through a symlink: %v", err)
	}

	// Bound, then its parent renamed away and a link to it made in its place.
	elsewhere, boundAt := boundThenMovedAway(t, h)
	if err := os.Symlink("moved", filepath.Join(elsewhere, "alloc")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "data", "a"); err == nil || !strings.Contains(err.Error(), boundAt) {
		t.Fatalf("release = %v; want it refused naming %s, where the volume is still bound", err, boundAt)
	}
}

// TestFilesWrittenAtAnUnmountedTargetAreSetAside: after a reboot (or an unmount by hand) a
// claim's target is an empty directory of the state dir's disk until its restore, and an
// application started before the restore writes there. The restore's NodePublishVolume mounted
// the volume over those files, hiding them from every path without a word. They are moved aside
// to TARGET.written-TIME first, named in a warning event, and the volume is mounted as before;
// an empty target (the usual reboot) sets nothing aside. Real mounts, as root.
func TestFilesWrittenAtAnUnmountedTargetAreSetAside(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	ci, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a"})
	if err != nil {
		t.Fatal(err)
	}
	target := ci.TargetPath
	if err := os.WriteFile(filepath.Join(target, "in-volume"), []byte("the volume's"), 0o644); err != nil {
		t.Fatal(err)
	}
	asides := func() []string {
		t.Helper()
		m, err := filepath.Glob(target + ".written-*")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for round, write := range []bool{false, true} {
		unmountedAndWritten(t, target, write)
		if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Actions) == 0 {
			t.Fatalf("round %d: reconcile = %+v, %v; want the claim restored", round, rep, err)
		}
		if b, err := os.ReadFile(filepath.Join(target, "in-volume")); err != nil || string(b) != "the volume's" {
			t.Fatalf("round %d: the volume's file at the restored target: %q, %v", round, b, err)
		}
		got := asides()
		if !write {
			if len(got) != 0 {
				t.Fatalf("an empty target set aside: %v", got)
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("set aside: %v; want one directory", got)
		}
		if b, err := os.ReadFile(filepath.Join(got[0], "app.log")); err != nil || string(b) != "written while unmounted" {
			t.Fatalf("the file written while unmounted, set aside: %q, %v", b, err)
		}
		evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "data", Alloc: "a"})
		if err != nil || !slices.ContainsFunc(evs, func(e EventInfo) bool {
			return strings.Contains(e.Message, `holding "app.log", written there while the volume was not mounted`) && strings.Contains(e.Message, got[0])
		}) {
			t.Fatalf("events %+v (%v): none names the file set aside and where", evs, err)
		}
	}
}

// TestFilesWrittenAtAnUnmountedTargetAreSetAsideBeforeItsRelease: a claim released while its
// target is not mounted (after a reboot, before any restore) and holds what an application wrote
// there: NodeUnpublishVolume removes the target, and volctl's plugin refused "directory not
// empty" at every try, the claim stuck unpublishing, its error saying only that the plugin
// failed internally (another plugin may remove the files with the directory). The files are set
// aside first, named in an event, and the release goes through. Real mounts, as root.
func TestFilesWrittenAtAnUnmountedTargetAreSetAsideBeforeItsRelease(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	ci, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a"})
	if err != nil {
		t.Fatal(err)
	}
	unmountedAndWritten(t, ci.TargetPath, true)
	if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
		t.Fatalf("release of a claim whose unmounted target holds a file: %v", err)
	}
	got, err := filepath.Glob(ci.TargetPath + ".written-*")
	if err != nil || len(got) != 1 {
		t.Fatalf("set aside: %v, %v; want one directory", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(got[0], "app.log")); err != nil || string(b) != "written while unmounted" {
		t.Fatalf("the file set aside: %q, %v", b, err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "data", Alloc: "a"})
	if err != nil || !slices.ContainsFunc(evs, func(e EventInfo) bool {
		return strings.Contains(e.Message, "before NodeUnpublishVolume") && strings.Contains(e.Message, got[0])
	}) {
		t.Fatalf("events %+v (%v): none names the file set aside before NodeUnpublishVolume", evs, err)
	}
}

// TestNestedVolumeMountOverTheOuterVolumesFilesIsRefused: an inner volume_mount (logs at
// /app/logs) lies in the outer volume once that is bound: files the outer volume holds at
// logs/ (an application that wrote its logs there before the logs volume was added) would be
// hidden under the inner bind. The run refuses the alloc naming them, releases the outer claim
// it took, and the outer volume's files are untouched; moved away, the group runs. Real
// mounts, as root.
func TestNestedVolumeMountOverTheOuterVolumesFilesIsRefused(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dests := hostpathtest.MountDir(t)
	g := nestedGroup(t, h, dests, false)
	// The outer volume's own logs/ with a file in it, written through a claim of its own.
	ci, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ci.TargetPath, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ci.TargetPath, "logs", "old.log"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "data", "writer"); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(dests, "app", "logs")
	_, err = h.e.RunGroup(h.ctx, g)
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volume_mount "+inner+` is a directory holding "old.log"`) {
		t.Fatalf("group run with an inner volume_mount over the outer volume's files = %v; want it refused naming old.log", err)
	}
	for _, vol := range []string{"data", "logs"} {
		if _, err := h.e.ClaimInfo(h.ctx, vol, spec.AllocName("app", 0)); err == nil {
			t.Errorf("alloc app[0] still holds %q after its refused run", vol)
		}
	}
	if m := mountsUnder(t, dests); len(m) != 0 {
		t.Fatalf("mounts left after the refused run: %v", m)
	}
	// Moved away (through a claim of the outer volume again): the group runs.
	ci, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ci.TargetPath, "logs", "old.log")); err != nil || string(b) != "old" {
		t.Fatalf("the outer volume's file after the refused run: %q, %v", b, err)
	}
	if err := os.Rename(filepath.Join(ci.TargetPath, "logs", "old.log"), filepath.Join(ci.TargetPath, "old.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "data", "writer"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatalf("group run once logs/ is empty: %v", err)
	}
	if _, err := h.e.StopGroup(h.ctx, "app"); err != nil {
		t.Fatal(err)
	}
}

// TestFilesAPluginLeftAtATargetItDidNotMountAreSetAside: a plugin whose NodePublishVolume
// answered OK having written a file at the target and mounted nothing. checkTarget refuses it and
// the claim is rolled back; the rollback's NodeUnpublishVolume had volctl's plugin refuse to
// remove the target ("directory not empty"), and the claim was left for a reconcile that failed
// the same way. The file is set aside, its event saying it may be the plugin's, and the claim is
// rolled back. Real mounts, as root.
func TestFilesAPluginLeftAtATargetItDidNotMountAreSetAside(t *testing.T) {
	t.Parallel()
	var leave atomic.Bool
	leave.Store(true)
	h := newHostpathEngineAt(t, hostpathtest.MountDir(t), hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1"},
		csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*csipb.NodePublishVolumeRequest); ok && leave.Load() {
				if err := os.MkdirAll(r.GetTargetPath(), 0o750); err != nil {
					return nil, err
				}
				return &csipb.NodePublishVolumeResponse{}, os.WriteFile(filepath.Join(r.GetTargetPath(), "plugin-left"), []byte("x"), 0o644)
			}
			return handler(ctx, req)
		}))
	h.createWriterVolume(t, "data")
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a"})
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("claim whose NodePublishVolume mounted nothing = %v; want it refused and rolled back", err)
	}
	if _, err := h.e.ClaimInfo(h.ctx, "data", "a"); err == nil {
		t.Fatal("the claim is still held after its rollback")
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{VolumeID: "data", Alloc: "a"})
	if err != nil || !slices.ContainsFunc(evs, func(e EventInfo) bool {
		return strings.Contains(e.Message, `holding "plugin-left"`) && strings.Contains(e.Message, "or left by the plugin")
	}) {
		t.Fatalf("events %+v (%v): none names the plugin's file set aside", evs, err)
	}
	leave.Store(false)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a"}); err != nil {
		t.Fatalf("claim once the plugin mounts: %v", err)
	}
}

// TestVolumeMountOfTheOtherKindIsRefusedBeforeAnything: a file-system volume's volume_mount at
// an existing empty file (nothing to hide) was staged, published and refused at the bind
// "bind mount: not a directory", and released again. It is refused before admission, saying a
// file-system volume is bound on a directory. Real mounts, as root.
func TestVolumeMountOfTheOtherKindIsRefusedBeforeAnything(t *testing.T) {
	t.Parallel()
	h := newDataEngine(t)
	dest := filepath.Join(hostpathtest.MountDir(t), "empty-file")
	if err := os.WriteFile(dest, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.RunGroup(h.ctx, webGroup("data", dest))
	h.refusedBeforeAnything(t, err, "volume_mount "+dest+" is a file, and a file-system volume is bound on a directory")
}
