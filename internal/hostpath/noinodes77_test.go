package hostpath_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestDeleteSucceedsOnARootWithNoInodesLeft: a consumer that writes many small files into its
// volume can use up the inodes of the plugin's root (the file system its volumes' data is on;
// an inode quota does the same). A CreateVolume then answers RESOURCE_EXHAUSTED, "free space on
// that file system (delete volumes or snapshots no longer needed ...)". A delete needs no new
// inode: the volume's directory is renamed into partial/, its record file unlinked, the
// directory removed. Since the delete's removal is told by a lock file made beside the moved
// directory before the rename (moveAside, lockTrash: O_CREATE of
// partial/delete-ID-RANDOM.lock), every DeleteVolume (and DeleteSnapshot) on such a root fails
// INTERNAL, "locking its removal: no space left on device": the advice followed does nothing, and
// the one thing that would free the inodes, deleting the volume, is refused. (On a file system
// that allocates inodes from free blocks, XFS or btrfs, a root merely full of data does the same.)
// Correct: the delete goes through on a root with no inode to spare (the lock file made where
// it cannot fail for want of room, e.g. taken from a reserve, or the delete going on without it
// when it cannot be made, as before), and frees the volume's inodes.
// Found by helper review77 (own5).
// Found by helper review77 (own5).
func TestDeleteSucceedsOnARootWithNoInodesLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to mount a tmpfs with few inodes")
	}
	scratch := "/tmp/h77-own5"
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		t.Fatal(err)
	}
	mnt, err := os.MkdirTemp(scratch, "inodes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(mnt) })
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=16m,nr_inodes=400,mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs with few inodes at %s: %v", mnt, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	root := filepath.Join(mnt, "root")
	cfg := hostpath.Config{Root: root, NodeID: "n1", Mounter: &hostpathtest.FakeMounter{}}
	srv := hostpathtest.Start(t, cfg)
	ctl := csi.NewControllerClient(srv.Dial(t))
	ctx := context.Background()
	resp, err := ctl.CreateVolume(ctx, createReq("data", mib))
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	id := resp.GetVolume().GetVolumeId()
	dir, ok := srv.Plugin.VolumePath(id)
	if !ok {
		t.Fatalf("volume %q has no directory", id)
	}

	// The consumer's many small files, until the root has no inode left.
	n := 0
	for ; ; n++ {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%05d", n)), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("making the consumer's file %d: %v", n, err)
		}
		f.Close()
		if n > 10000 {
			t.Fatalf("made %d files on a tmpfs of 400 inodes without ENOSPC: the root is not what this tests", n)
		}
	}
	if n == 0 {
		t.Fatalf("no file could be made in the volume: the case is not what this tests")
	}

	_, err = ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	if err != nil {
		t.Errorf("DeleteVolume on a root with no inode left (a consumer's %d files use them up) failed: %v; "+
			"a delete needs no new inode (rename, unlink, removal), and deleting volumes is the way to free the root", n, err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the deleted volume's directory %s is still in place, its %d files with it", dir, n)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "partial", "delete-"+id+"-*")); len(left) != 0 {
		t.Errorf("the delete left %v in partial/", left)
	}
}
