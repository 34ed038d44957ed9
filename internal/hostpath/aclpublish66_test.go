package hostpath_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// own4ACL is a POSIX ACL xattr value (acl(5), version 2): user::rwx, user:uid:rwx, group::r-x,
// mask::rwx, other::r-x.
func own4ACL(uid uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 7, ^uint32(0)}, {0x02, 7, uid}, {0x04, 5, ^uint32(0)}, {0x10, 7, ^uint32(0)}, {0x20, 5, ^uint32(0)}} {
		b = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(b, e.tag), e.perm), e.id)
	}
	return b
}

// A consumer gives a directory of its volume a default ACL for a service user (setfacl -d -m
// u:4242:rwx shared) after files were made in it, or moves files into it: those files have no
// ACL, and user 4242 is "other" to them (mode 0640: no access). copyTree makes each directory
// and sets its ACLs (copyACLs) before it copies what the directory holds, so every file and
// directory made in the copy inherits the default ACL: the snapshot's secret carries
// user:4242:rwx (masked by the group bits, r--), and user 4242 reads in the snapshot, and in
// every volume restored from it, what it could not read in the source. Found by helper
// review66 own4.
func TestCopyDoesNotGiveFilesWithoutAnACLTheirDirectorysDefault(t *testing.T) {
	c := start(t, hostpath.Config{})
	v := c.createVolume(t, "acl")
	dir := c.volumeDir(t, v.GetVolumeId())
	shared := filepath.Join(dir, "shared")
	mustOK(t, os.Mkdir(shared, 0o750))
	secret := filepath.Join(shared, "secret")
	mustOK(t, os.WriteFile(secret, []byte("group only"), 0o640))
	mustOK(t, os.Chmod(secret, 0o640))
	sub := filepath.Join(shared, "private")
	mustOK(t, os.Mkdir(sub, 0o750))
	mustOK(t, os.Chmod(sub, 0o750))
	// The default ACL set after the file and the subdirectory were made: they keep none.
	if err := unix.Setxattr(shared, "system.posix_acl_default", own4ACL(4242), 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			t.Skipf("no POSIX ACLs under %s", dir)
		}
		t.Fatal(err)
	}
	for _, p := range []string{secret, sub} {
		if _, err := unix.Getxattr(p, "system.posix_acl_access", make([]byte, 256)); !errors.Is(err, unix.ENODATA) {
			t.Fatalf("the source %s has an access ACL (%v); the test wants one without", p, err)
		}
	}

	resp, err := c.ctl.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: v.GetVolumeId()})
	mustOK(t, err)
	snap, ok := c.srv.Plugin.SnapshotPath(resp.GetSnapshot().GetSnapshotId())
	if !ok {
		t.Fatal("snapshot has no directory")
	}
	for _, rel := range []string{"shared/secret", "shared/private"} {
		p := filepath.Join(snap, rel)
		for _, name := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
			if n, err := unix.Getxattr(p, name, make([]byte, 256)); !errors.Is(err, unix.ENODATA) {
				t.Errorf("the snapshot's %s has %s (%d bytes, %v), which its source has not: "+
					"the copy inherited its directory's default ACL (user:4242), giving user 4242 access the source denied it", rel, name, n, err)
			}
		}
	}
}

// NodePublishVolume refuses a publish whose staging shows another directory than the volume's
// now, and advised "... or stage it again". Staged again at the same path, NodeStageVolume
// answers OK at once (it is staged there and mounted: the idempotent answer) and binds
// nothing: the publish was refused again, word for word. The advice must name steps that
// work, and they must: followed, the publish succeeds, showing the directory there now.
// Found by helper review66.
func TestPublishRefusedForAChangedDirectoryAdvisesAStepThatWorks(t *testing.T) {
	hostpathtest.RequireMount(t)
	base := hostpathtest.MountDir(t)
	old := filepath.Join(base, "root")
	c := start(t, hostpath.Config{Root: old, NodeID: "n1"})
	v, p := c.staged(t, "moved")
	t.Cleanup(func() { _ = hostpath.UnmountAll(p.staging) })
	// The root moved to another disk, and the plugin started again with --root there.
	mustOK(t, c.srv.Stop())
	moved := filepath.Join(hostpathtest.Tmpfs(t, "size=16m"), "root")
	if out, err := exec.Command("cp", "-a", old, moved).CombinedOutput(); err != nil {
		t.Fatalf("copying the root: %v: %s", err, out)
	}
	c = start(t, hostpath.Config{Root: moved, NodeID: "n1"})
	mustOK(t, os.WriteFile(filepath.Join(c.volumeDir(t, v.GetVolumeId()), "now"), []byte("x"), 0o644))

	err := c.publish(v, p, p.target, false, nil)
	if err == nil {
		t.Fatalf("NodePublishVolume with the staging showing the old directory answered OK")
	}
	t.Cleanup(func() { _ = hostpath.UnmountAll(p.target) })
	if strings.Contains(err.Error(), "or stage it again") || !strings.Contains(err.Error(), "unstage it") {
		t.Errorf("the refusal advises a step that changes nothing, or not the unstage that does: %v", err)
	}
	// The advice followed: unstage, stage, publish.
	mustOK(t, c.unstage(v, p))
	mustOK(t, c.stage(v, p, nil))
	if perr := c.publish(v, p, p.target, false, nil); perr != nil {
		t.Fatalf("NodePublishVolume refused: %v\nunstaged and staged again, as advised, it is refused again: %v", err, perr)
	}
	if _, err := os.Stat(filepath.Join(p.target, "now")); err != nil {
		t.Errorf("the target does not show the volume's directory as it is now: %v", err)
	}
}
