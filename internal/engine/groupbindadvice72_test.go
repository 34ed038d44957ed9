package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupStatusDoesNotCallTheVolumesOwnBindSomethingElse: the claim's target lost its mount (a
// plugin restart, an unmount by hand) while its bind at the volume_mount stayed, the volume
// itself there; `group status` said "has something else mounted, not the volume ... unmount
// that", advice that, followed, took the live volume from under the alloc, where reconcile alone
// restores the target and finds the bind its own (followed here). Found by helper review72 (own4).
func TestGroupStatusDoesNotCallTheVolumesOwnBindSomethingElse(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	_, _, logs := groupWithTwoBinds(t, h)
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	var target string
	for _, c := range gs[0].Allocs[0].Claims {
		if c.VolumeID == "logs" {
			target = c.TargetPath
		}
	}
	if target == "" || !hostpathtest.Mounted(t, target) {
		t.Fatalf("no mounted target for volume logs: %+v", gs[0].Allocs[0].Claims)
	}
	// Retried while busy: a CI run under load once found the target busy for a moment right
	// after the group's read (EBUSY), its holder not found; the unmount is the test's setup.
	err = unix.Unmount(target, 0)
	for deadline := time.Now().Add(5 * time.Second); errors.Is(err, unix.EBUSY) && time.Now().Before(deadline); err = unix.Unmount(target, 0) {
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !hostpathtest.Mounted(t, logs) {
		t.Fatalf("the bind at %s went with its target", logs)
	}
	if err := os.WriteFile(filepath.Join(logs, "still-the-volume"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	gs, err = h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	a := gs[0].Allocs[0]
	if strings.Contains(a.Error, "something else mounted") || strings.Contains(a.Error, "unmount that") {
		t.Errorf("group status with the target %s unmounted and the volume still bound at %s: alloc %s's error = %q\n"+
			"want it not to call the volume's own bind something else, nor advise unmounting it from under the alloc", target, logs, a.Name, a.Error)
	}
	// reconcile alone makes it whole: the target restored, the bind found its own.
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if _, err := os.Stat(filepath.Join(logs, "still-the-volume")); err != nil {
		t.Errorf("after reconcile the file written through the bind is not at %s: %v", logs, err)
	}
}

// TestGroupStatusAdviceForASymlinkedDestinationIsFollowed: the directory holding a
// volume_mount's destination moved (its bind with it) and a symlink left at its old path, the
// volume still mounted there through the link. `group status` said "nothing is mounted ...
// (unmounted since it was bound)" and advised a run again, which refuses the destination for its
// symlink (found by helper review72, own3); then it named the symlink and advised "give the
// volume_mount its path now and run the group's spec again", which a run refuses for an alloc
// holding the claim bound otherwise (own4). It names the group stop first; followed.
func TestGroupStatusAdviceForASymlinkedDestinationIsFollowed(t *testing.T) {
	t.Parallel()
	h, g, dir, srv := webBoundUnderSrv(t)
	moved := filepath.Join(dir, "bigdisk")
	if err := os.Rename(srv, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, srv); err != nil {
		t.Fatal(err)
	}
	if !hostpathtest.Mounted(t, filepath.Join(moved, "app")) {
		t.Fatalf("the bind did not move with its directory")
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	msg := gs[0].Allocs[0].Error
	if strings.Contains(msg, "nothing mounted") || !strings.Contains(msg, "volctl group stop web") || !strings.Contains(msg, "symlink") {
		t.Fatalf("group status of a destination reached through a symlink: %q; want the symlink named and `volctl group stop web` before a run with the new path", msg)
	}
	// The advice followed: the alloc's claims released (the stop names the moved bind to
	// unmount, and reconcile finishes the release once it is), the group's spec run with the
	// path now.
	bound := filepath.Join(moved, "app")
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		if !strings.Contains(err.Error(), "umount "+bound) {
			t.Fatalf("group stop, as advised: %v; want it to name the umount of %s if it leaves it", err, bound)
		}
		if err := unix.Unmount(bound, 0); err != nil {
			t.Fatal(err)
		}
		if rep, err := h.e.Reconcile(h.ctx); err != nil {
			t.Fatalf("reconcile once the moved bind was unmounted: %+v %v", rep, err)
		}
	}
	g2 := g
	g2.Mounts = []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(moved, "app")}}
	if _, err := h.e.RunGroup(h.ctx, g2); err != nil {
		t.Errorf("group status said: %q\nthe run it advises (volume_mount at %s) = %v", msg, filepath.Join(moved, "app"), err)
	}
}

// TestGroupStatusAdviceForADestinationGoneIsFollowed: the directory above a volume_mount renamed,
// its bind moved with it; `group status` said the destination "is gone ... `volctl reconcile`
// makes it and binds the volume there again", and reconcile refused while the moved bind stood,
// the status after it advising the same reconcile again. It says reconcile names where a moved
// bind is first; followed to a bound destination. Found by helper review72 (own4).
func TestGroupStatusAdviceForADestinationGoneIsFollowed(t *testing.T) {
	t.Parallel()
	h, _, dir, srv := webBoundUnderSrv(t)
	if err := os.Rename(srv, filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	gs, err := h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	msg := gs[0].Allocs[0].Error
	t.Logf("status: %s", msg)
	if !strings.Contains(msg, "`volctl reconcile`") || !strings.Contains(msg, "moved") {
		t.Fatalf("status of a destination gone: %q; want it to name `volctl reconcile`, and that it says where a bind that moved is", msg)
	}
	// Followed: reconcile says where the bind moved, and once that is unmounted, binds it.
	rep, err := h.e.Reconcile(h.ctx)
	moved := filepath.Join(dir, "old", "app")
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "umount "+moved) {
		t.Fatalf("reconcile: %+v %v; want it to name the umount of the bind moved to %s", rep, err, moved)
	}
	if err := unix.Unmount(moved, 0); err != nil {
		t.Fatal(err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the moved bind was unmounted: %+v %v", rep, err)
	}
	gs, err = h.e.Groups(h.ctx, "web")
	if err != nil || len(gs) != 1 || len(gs[0].Allocs) != 1 {
		t.Fatalf("group status = %+v, %v", gs, err)
	}
	if a := gs[0].Allocs[0]; a.Error != "" || !countedReady(gs[0], a) {
		t.Errorf("status said %q; after the reconcile it advises: %q", msg, a.Error)
	}
}

// webBoundUnderSrv runs group web, one alloc holding volume "data" (the hostpath plugin, real
// mounts) bound at DIR/srv/app, stopped when the test ends. It returns the harness, the group,
// DIR and DIR/srv.
func webBoundUnderSrv(t *testing.T) (*hostpathEngine, spec.Group, string, string) {
	t.Helper()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	dir := hostpathtest.MountDir(t)
	srv := filepath.Join(dir, "srv")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{writerBlock("d", "data")},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(srv, "app")}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	return h, g, dir, srv
}
