package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// TestReadOnlyReadClaimBesideAPropagationCopyIsNotCalledWritable: with the state dir's publish
// directory a shared mount bound over itself (the kubelet idiom), every target the plugin
// mounts is listed twice at its path in the mount table: the plugin's mount, and a propagation
// copy of it on the hidden mount below, made when the plugin's bind was attached. A read
// claim's target is bound and then remounted read-only, which reaches the plugin's mount alone:
// the path shows a read-only mount (a write through it fails EROFS), while the copy, hidden and
// listed last, is read-write. claimWritable reads the target's mode from the table
// (MountedInTable, mounttable.go), taking the last mount listed at the path for the topmost, so
// a claim again of the read claim is refused, exit 4, "mounted read-write ... the alloc can
// write it", and every reconcile pass reports the same: a lie about the one thing the read
// claim promises. Its advice (release once the alloc stops, claim again) cannot work: the new
// publish passes checkTarget (fstatfs of the path), and the next claim again or reconcile pass
// reads the copy again. MountedInTable must judge the mount the path leads to, the topmost of
// the chain at that path (chainAt, as the stack readers do), not the last listed; the claim
// again then hands back the target, and reconcile reports nothing. Real mounts, as root.
// Found by helper review80 (mountopts).
func TestReadOnlyReadClaimBesideAPropagationCopyIsNotCalledWritable(t *testing.T) {
	t.Parallel()
	h, req, cl := readClaimUnderASharedPublishDir(t)
	listed, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != cl.TargetPath, false })
	if err != nil || len(listed) != 2 {
		t.Fatalf("premise: the table lists %d mounts at the target %s (%v); want the plugin's and its propagation copy", len(listed), cl.TargetPath, err)
	}
	if werr := os.WriteFile(filepath.Join(cl.TargetPath, "written"), []byte("x"), 0o600); !errors.Is(werr, unix.EROFS) {
		t.Fatalf("premise: a write through the read claim's target %s = %v; want EROFS, the path showing a read-only mount", cl.TargetPath, werr)
	}

	again, err := h.e.Claim(h.ctx, req)
	if err != nil {
		t.Errorf("claim again of alloc a's read claim of v, its target %s read-only (a write through it fails EROFS): %v\n"+
			"want the target handed back: the read-write mount the table lists there is a hidden propagation copy, which no path shows", cl.TargetPath, err)
	} else if again.TargetPath != cl.TargetPath {
		t.Errorf("claim again of alloc a's read claim = %s; want its target %s", again.TargetPath, cl.TargetPath)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	for _, p := range rep.Problems {
		if strings.Contains(p.Message, "read-write") {
			t.Errorf("reconcile reports of the read claim whose target %s is read-only: %s\nwant nothing reported", cl.TargetPath, p.Message)
		}
	}
}

// TestReadClaimRemountedWritableBesideAPropagationCopyIsReported: the other side of
// TestReadOnlyReadClaimBesideAPropagationCopyIsNotCalledWritable, where the promise breaks
// silently. Publish directory as there (a shared mount bound over itself); the read claim's
// target is a read-only mount made read-only before it was attached (as a plugin using
// open_tree and move_mount makes it, and as volctl's own read-only binds are made), so its
// hidden propagation copy is read-only too; then the target is remounted read-write, the case
// claimWritable exists for ("or it was remounted since"). A write through the read claim's
// path succeeds, yet a claim again hands the path back as the read claim's, exit 0, and
// reconcile reports nothing: MountedInTable takes the copy, listed last at the path, for the
// topmost mount, and reads its "ro". The alloc holding the volume for reading writes it beside
// its writer. Correct: the mode of the mount the path leads to is judged (chainAt's topmost),
// the claim again refused as a conflict saying the target is mounted read-write, and reconcile
// reporting it. Real mounts, as root.
// Found by helper review80 (mountopts).
func TestReadClaimRemountedWritableBesideAPropagationCopyIsReported(t *testing.T) {
	t.Parallel()
	h, req, cl := readClaimUnderASharedPublishDir(t)
	// The plugin's read-only mount, cloned unattached, and attached again in its place: its
	// propagation copy is made of a read-only mount. Then remounted writable (the top alone).
	tree, err := unix.OpenTree(unix.AT_FDCWD, cl.TargetPath, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		t.Fatalf("premise: open_tree of the target %s: %v", cl.TargetPath, err)
	}
	defer unix.Close(tree)
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatalf("premise: umount %s: %v", cl.TargetPath, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, cl.TargetPath, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		t.Fatalf("premise: move the read-only copy onto %s: %v", cl.TargetPath, err)
	}
	if err := unix.Mount("", cl.TargetPath, "", unix.MS_BIND|unix.MS_REMOUNT, ""); err != nil {
		t.Fatalf("premise: remount %s writable: %v", cl.TargetPath, err)
	}
	listed, err := mountinfo.GetMounts(func(m *mountinfo.Info) (bool, bool) { return m.Mountpoint != cl.TargetPath, false })
	if err != nil || len(listed) != 2 {
		t.Fatalf("premise: the table lists %d mounts at the target %s (%v); want the target's and its propagation copy", len(listed), cl.TargetPath, err)
	}
	written := filepath.Join(cl.TargetPath, "written-by-a-reader")
	if werr := os.WriteFile(written, []byte("x"), 0o600); werr != nil {
		t.Fatalf("premise: a write through the read claim's target %s remounted writable = %v; want it to succeed", cl.TargetPath, werr)
	}

	if again, err := h.e.Claim(h.ctx, req); err == nil {
		t.Errorf("claim again of alloc a's read claim of v = %s, exit 0, though a write through it succeeded (%s written)\n"+
			"want it refused as a conflict saying the target is mounted read-write", again.TargetPath, written)
	}
	rep, _ := h.e.Reconcile(h.ctx)
	reported := false
	for _, p := range rep.Problems {
		reported = reported || strings.Contains(p.Message, "read-write")
	}
	if !reported {
		t.Errorf("reconcile of the read claim whose target %s is writable (%s written through it): problems %+v\nwant it reported mounted read-write", cl.TargetPath, written, rep.Problems)
	}
}

// readClaimUnderASharedPublishDir is a harness whose publish directory is a shared mount bound
// over itself, with alloc a's read claim of v published (its target's mounts unmounted at the end).
func readClaimUnderASharedPublishDir(t *testing.T) (*harness, ClaimRequest, ClaimInfo) {
	t.Helper()
	h := withASharedPublishDirBoundOverItself(t)
	req := ClaimRequest{VolumeID: "v", Alloc: "a", ReadOnly: true}
	cl := h.claim(req)
	t.Cleanup(func() {
		for range 3 {
			_ = unix.Unmount(cl.TargetPath, unix.MNT_DETACH)
		}
	})
	return h, req, cl
}
