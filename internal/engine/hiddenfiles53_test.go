package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestVolumeMountOverFilesAlreadyThereIsRefused: a volume_mount destination is a host path, and
// a group run bound the volume over a directory that held its owner's files: they were hidden
// from every user of the host while the claim was held (a destination of /srv/app/data with the
// application's data in it, /etc on a host without mounts below it), and the alloc was handed
// the empty volume where they had been, without a word. The bind is refused naming what is
// there, nothing is mounted, the files stay in view; the run releases the claim it took and
// says so, where its error said the claim was "left published for `volctl reconcile`" while
// the run had released it. An empty destination, made by volctl or not, is bound as before.
// Real mounts, as root.
func TestVolumeMountOverFilesAlreadyThereIsRefused(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
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
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: dest}}}
	info, err := h.e.RunGroup(h.ctx, g)
	if err == nil {
		t.Fatal("group run with a volume_mount over a directory holding files: no error")
	}
	for _, want := range []string{`volume_mount ` + dest + ` is a directory holding "a.db", "b.log" and "c.conf", which the bind would hide`,
		"hide", "another destination", "the run released the claim again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the run's error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "left published") || len(info.Allocs) != 1 || !strings.Contains(info.Allocs[0].Error, "released the claim again") {
		t.Errorf("the run's error %q, allocs %+v: it says the claim is left while the run released it", err, info.Allocs)
	}
	if m := isMount(t, dest); m {
		t.Fatalf("%s is a mount point after the refused bind", dest)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "a.db")); err != nil || string(b) != "the owner's a.db" {
		t.Fatalf("the owner's file after the refused bind: %q, %v", b, err)
	}
	if _, err := h.e.ClaimInfo(h.ctx, "data", spec.AllocName("web", 0)); err == nil {
		t.Fatal("the refused alloc still holds its claim")
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
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
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
// past 255 bytes (the spec now refuses it; a group recorded by an older volctl, or a file
// system with a shorter bound, still meets it) got its claim staged and published, the bind
// failed at the walk (ENAMETOOLONG), and the run's release of the claim failed the same way at
// the unbind's walk: the claim stayed unpublishing, and every reconcile and group stop failed
// on it, until a forced detach. A path that cannot exist holds no bind: the release goes on.
// Real mounts, as root.
func TestVolumeMountPastNameMaxIsReleased(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	dest := filepath.Join(hostpathtest.MountDir(t), strings.Repeat("n", 300), "x")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: dest}}}
	_, err := h.e.RunGroup(h.ctx, g)
	if err == nil || !strings.Contains(err.Error(), "file name too long") || !strings.Contains(err.Error(), "the run released the claim again") {
		t.Fatalf("group run with a destination past NAME_MAX = %v; want the bind refused and the claim released", err)
	}
	if _, err := h.e.ClaimInfo(h.ctx, "data", spec.AllocName("web", 0)); err == nil {
		t.Fatal("the claim is still held after the run")
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile after the run: %+v, %v", rep, err)
	}
}

// TestReleaseFindsAVolumeMountMovedAwayAndAFileInItsPlace: as
// TestReleaseFindsAVolumeMountMovedAway, the destination's parent renamed away, but a file made
// in its place: the unbind's walk met ENOTDIR and the release failed "not a directory", not
// naming where the volume is still bound. A path through a file holds no bind: the release
// finds the bind where it went (movedBinds) and names it, as for a parent gone.
func TestReleaseFindsAVolumeMountMovedAwayAndAFileInItsPlace(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dests := hostpathtest.MountDir(t)
	dest := filepath.Join(dests, "alloc", "data")
	if _, err := h.claimWithBind(t, "data", spec.VolumeMount{Volume: "data", Destination: dest}); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dests, "moved")
	if err := os.Rename(filepath.Join(dests, "alloc"), moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(moved, "data"), unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(dests, "alloc"), []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.Release(h.ctx, "data", "a")
	if want := filepath.Join(moved, "data"); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("release = %v; want it refused naming %s, where the volume is still bound", err, want)
	}
}

// TestVolumeMountThroughASymlinkIsReleased: a destination through a symlink (/var/run, a link
// to /run on Debian) is refused at the bind, which never follows one; the group run's release
// of the claim then failed the same way at the unbind's walk, and the claim stayed unpublishing
// through every reconcile and group stop until a forced detach. Nothing of volctl's can be
// bound there: the release goes on, and the run says it released the claim. A bind moved away
// and a link made in its place is still found where it went.
func TestVolumeMountThroughASymlinkIsReleased(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	dests := hostpathtest.MountDir(t)
	if err := os.Mkdir(filepath.Join(dests, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dests, "link")); err != nil {
		t.Fatal(err)
	}
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data",
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(dests, "link", "data")}}}
	_, err := h.e.RunGroup(h.ctx, g)
	if err == nil || !strings.Contains(err.Error(), "is a symlink") || !strings.Contains(err.Error(), "the run released the claim again") {
		t.Fatalf("group run with a destination through a symlink = %v; want the bind refused and the claim released", err)
	}
	if _, err := h.e.ClaimInfo(h.ctx, "data", spec.AllocName("web", 0)); err == nil {
		t.Fatal("the claim is still held after the run")
	}

	// Bound, then its parent renamed away and a link to it made in its place.
	dest := filepath.Join(dests, "alloc", "data")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "a",
		Binds: []spec.VolumeMount{{Volume: "data", Destination: dest, PropagationMode: spec.PropagationPrivate}}}); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dests, "moved")
	if err := os.Rename(filepath.Join(dests, "alloc"), moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(moved, "data"), unix.MNT_DETACH) })
	if err := os.Symlink("moved", filepath.Join(dests, "alloc")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Release(h.ctx, "data", "a"); err == nil || !strings.Contains(err.Error(), filepath.Join(moved, "data")) {
		t.Fatalf("release = %v; want it refused naming %s, where the volume is still bound", err, filepath.Join(moved, "data"))
	}
}
