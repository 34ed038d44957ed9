package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A staging path (or target) that is an ANCESTOR of the plugin's root is not refused.
// outsideRoot refuses only paths at or below the root; a bind mount on a directory above it
// covers the root just as one on meta/ does (TestStagingInsideThePluginsRootIsRefused): every
// record is hidden under the volume's data, every other volume is then unknown to the plugin,
// and the stage just made cannot be undone through the plugin. Found by helper review66.
func TestStagingOverAnAncestorOfTheRootIsRefused(t *testing.T) {
	c, base, parent, root, v, other := underParent(t)
	t.Cleanup(func() { _ = hostpath.UnmountAll(parent) })

	if refusedAtParent(t, c, "NodeStageVolume", c.stage(v, paths{staging: parent}, nil), parent, root, other) {
		return
	}
	if err := c.unstage(v, paths{staging: parent}); err != nil {
		t.Errorf("NodeUnstageVolume of what it just staged: %v", err)
	}

	// Worse: the root's path now shows the volume's data, 0777, its consumer's. A consumer
	// writes a record and a volume "directory" that is a symlink to a root-only directory, and
	// the plugin, trusting what it finds under its root, bind-mounts that directory for it.
	secret := filepath.Join(base, "secret")
	mustOK(t, os.Mkdir(secret, 0o700))
	mustOK(t, os.WriteFile(filepath.Join(secret, "shadow"), []byte("root only"), 0o600))
	forged := "vol-" + "00112233445566778899aabb"
	mustOK(t, os.MkdirAll(filepath.Join(root, "meta", "volumes"), 0o777))
	mustOK(t, os.MkdirAll(filepath.Join(root, "volumes"), 0o777))
	mustOK(t, os.WriteFile(filepath.Join(root, "meta", "volumes", forged+".json"),
		[]byte(`{"id":"`+forged+`","name":"forged","capacity_bytes":0,"created_at":"2024-01-01T00:00:00Z"}`), 0o666))
	mustOK(t, os.Symlink(secret, filepath.Join(root, "volumes", forged)))
	q := filepath.Join(base, "q")
	t.Cleanup(func() { _ = hostpath.UnmountAll(q) })
	if err := c.stage(&csi.Volume{VolumeId: forged}, paths{staging: q}, nil); err == nil {
		b, _ := os.ReadFile(filepath.Join(q, "shadow"))
		t.Errorf("then a volume forged by the consumer in its own data was staged at %s, showing %s (its file: %q)", q, secret, b)
	} else {
		t.Logf("forged volume's stage: %v", err)
	}
}

// The same for a target: NodePublishVolume on an ancestor of the root.
func TestTargetOverAnAncestorOfTheRootIsRefused(t *testing.T) {
	c, _, parent, root, v, other := underParent(t)
	p := newPaths(t)
	mustOK(t, c.stage(v, p, nil))
	t.Cleanup(func() { _ = hostpath.UnmountAll(parent) })

	if refusedAtParent(t, c, "NodePublishVolume", c.publish(v, p, parent, false, nil), parent, root, other) {
		return
	}
	if err := c.unpublish(v, parent); err != nil {
		t.Errorf("NodeUnpublishVolume of what it just published: %v", err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Two processes serve one root (volctl's plugin and the one Nomad runs after a
// handover). A volume the other process deleted is still found by name by the first, and a
// CreateVolume of its name answers OK with the deleted ID, whose directory and record are gone:
// the orchestrator's next NodeStageVolume of the volume it was just given is NOT_FOUND. The
// same for snapshots was fixed (TestSnapshotDeletedByTheOtherProcessIsMadeAgain); volumes
// were not (existingVolume reads state.volumeByName from memory only). Found by helper review66.
func TestVolumeDeletedByTheOtherProcessIsMadeAgain(t *testing.T) {
	root := t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	local, _ := startFake(t, cfg)
	nomad, _ := startFake(t, cfg)
	first := local.createVolume(t, "data")
	ctx := context.Background()
	if _, err := nomad.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: first.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume through the other process: %v", err)
	}
	if exists(filepath.Join(root, "volumes", first.GetVolumeId())) {
		t.Fatalf("the other process's DeleteVolume left the directory")
	}
	again := local.createVolume(t, "data")
	if again.GetVolumeId() == first.GetVolumeId() {
		err := local.stage(again, newPaths(t), nil)
		t.Fatalf("CreateVolume %q again answered OK with volume %s, which the other process deleted (directory there: %t); staging it: %v",
			"data", first.GetVolumeId(), exists(filepath.Join(root, "volumes", first.GetVolumeId())), err)
	}
}

// NodePublishVolume takes a target directory that already exists (ensureDir: "use the
// existing target_path", as CSI allows), but NodeUnpublishVolume removes the directory at every
// recorded target whether the plugin made it or not. One that is not empty under the mount (the
// orchestrator's directory with its files, or files written into the bare target while it was
// unmounted, after a reboot before the mounts were restored) fails os.Remove with ENOTEMPTY
// after the unmount: INTERNAL, the target still recorded, and every retry fails the same way,
// so the claim can never be released. CSI has the SP delete only what it created. Found by
// helper review66.
func TestUnpublishOfATargetThatWasNotEmptyCompletes(t *testing.T) {
	c, _ := startFake(t, hostpath.Config{})
	v, p := c.staged(t, "data")
	mustOK(t, os.Mkdir(p.target, 0o750))
	mustOK(t, os.WriteFile(filepath.Join(p.target, "left-by-the-orchestrator"), []byte("x"), 0o644))
	mustOK(t, c.publish(v, p, p.target, false, nil))

	for i := 1; i <= 2; i++ {
		if err := c.unpublish(v, p.target); err != nil {
			t.Errorf("NodeUnpublishVolume #%d of %s, published over a directory that was there with a file in it: %v", i, p.target, err)
		}
	}
	if _, err := os.Stat(filepath.Join(p.target, "left-by-the-orchestrator")); err != nil {
		t.Errorf("the file under the target: %v", err)
	}
	if err := c.unstage(v, p); err != nil {
		t.Errorf("NodeUnstageVolume after: %v", err)
	}
}

// underParent starts a plugin whose root is parent/root, parent a directory of base (a mount
// dir of the test's), with two volumes, "data" and "other".
func underParent(t *testing.T) (c *client, base, parent, root string, v, other *csi.Volume) {
	t.Helper()
	hostpathtest.RequireMount(t)
	base = hostpathtest.MountDir(t)
	parent = filepath.Join(base, "srv")
	mustOK(t, os.Mkdir(parent, 0o755))
	root = filepath.Join(parent, "root")
	c = start(t, hostpath.Config{Root: root})
	return c, base, parent, root, c.createVolume(t, "data"), c.createVolume(t, "other")
}

// refusedAtParent says whether rpc's err, of a mount on parent (root's parent), is the refusal
// it must be; when it answered OK, it fails the test saying what the mount covered.
func refusedAtParent(t *testing.T, c *client, rpc string, err error, parent, root string, other *csi.Volume) bool {
	t.Helper()
	if err != nil {
		if code := status.Code(err); code != codes.InvalidArgument && code != codes.FailedPrecondition {
			t.Fatalf("%s at %s: %v, want INVALID_ARGUMENT or FAILED_PRECONDITION", rpc, parent, err)
		}
		return true
	}
	t.Errorf("%s at %s, the parent of the plugin's root %s, answered OK (meta still visible: %t)",
		rpc, parent, root, exists(filepath.Join(root, "meta")))
	if _, err := c.ctl.ValidateVolumeCapabilities(context.Background(), &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: other.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{snw},
	}); err != nil {
		t.Errorf("volume %s, untouched, is now: %v", other.GetVolumeId(), err)
	}
	return false
}
