package hostpath_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// The plugin's root is the file system its volumes' data is on: a consumer writing to its
// volume until it is full fills the file system the records are on. Before, every teardown then
// failed: NodeUnpublishVolume unmounted the target and could not record it (a record is written
// beside its old one and renamed: it needs room for a new file), answering INTERNAL, and so did
// each one sent again, NodeUnstageVolume and ControllerUnpublishVolume alike: no alloc could
// release a volume until someone freed space by hand. The teardowns, which take the volume
// away from its consumers, succeed on a full root, and what they recorded is there after a
// restart.
func TestTeardownsSucceedOnAFullRoot(t *testing.T) {
	root := hostpathtest.Tmpfs(t, "size=2m,mode=0700")
	cfg := hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true}
	c, _ := startFake(t, cfg)
	ctx := context.Background()
	v := c.createVolume(t, "v")
	pub, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	p := newPaths(t)
	mustOK(t, c.stage(v, p, pub.GetPublishContext()))
	mustOK(t, c.publish(v, p, p.target, false, pub.GetPublishContext()))

	// The consumer fills its volume, and with it the root.
	hostpathtest.Fill(t, filepath.Join(c.volumeDir(t, v.GetVolumeId()), "fill"))

	if err := c.unpublish(v, p.target); err != nil {
		t.Fatalf("NodeUnpublishVolume on a full root: %v", err)
	}
	if err := c.unstage(v, p); err != nil {
		t.Fatalf("NodeUnstageVolume on a full root: %v", err)
	}
	if _, err := c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1"}); err != nil {
		t.Fatalf("ControllerUnpublishVolume on a full root: %v", err)
	}

	// Recorded: a plugin started again on the root holds the volume as torn down, and deletes it.
	mustOK(t, c.srv.Stop())
	again, _ := startFake(t, cfg)
	if _, err := again.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume after the teardowns, the plugin started again: %v (the teardowns not recorded?)", err)
	}
}

// A consumer that goes on writing takes whatever room a teardown frees. Before, the first
// teardown on a full root removed meta/.reserve and saved again, handing its 64 KiB to the file
// system: the consumers still writing (this volume's, on a mount not yet gone, or another
// volume's on the same root) ate them, and the next teardown found no room and no reserve,
// answering INTERNAL until someone freed space by hand. Each teardown here follows the root
// filled again, and each succeeds, its record there after a restart.
func TestTeardownsSucceedWhileAConsumerKeepsWriting(t *testing.T) {
	root := hostpathtest.Tmpfs(t, "size=2m,mode=0700")
	cfg := hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true}
	c, _ := startFake(t, cfg)
	ctx := context.Background()
	v := c.createVolume(t, "v")
	other := c.createVolume(t, "other")
	pub, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	p := newPaths(t)
	mustOK(t, c.stage(v, p, pub.GetPublishContext()))
	mustOK(t, c.publish(v, p, p.target, false, pub.GetPublishContext()))

	// The other volume's consumer writes until the root is full, before each teardown.
	fill := filepath.Join(c.volumeDir(t, other.GetVolumeId()), "fill")
	hostpathtest.Fill(t, fill)
	if err := c.unpublish(v, p.target); err != nil {
		t.Fatalf("NodeUnpublishVolume on a full root: %v", err)
	}
	hostpathtest.Fill(t, fill)
	if err := c.unstage(v, p); err != nil {
		t.Fatalf("NodeUnstageVolume on a root filled again since the unpublish: %v", err)
	}
	hostpathtest.Fill(t, fill)
	if _, err := c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1"}); err != nil {
		t.Fatalf("ControllerUnpublishVolume on a root filled again since the unstage: %v", err)
	}

	mustOK(t, c.srv.Stop())
	again, _ := startFake(t, cfg)
	if _, err := again.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume after the teardowns, the plugin started again: %v (the teardowns not recorded?)", err)
	}
}

// The root's file system turned read-only under the plugin (the kernel does so after a disk
// error, errors=remount-ro; or an operator's remount): nothing can be recorded there. A teardown
// then fails, as it must (its record would say the volume is still published), but before it
// said only "saving state: open .../meta/volumes/.volctl-tmp-vol-...-2992981835: read-only file
// system", a temporary file's name and nothing of what to do. It names the root and the way
// out, and once the root is writable again the request sent again finishes, recorded.
func TestTeardownOnAReadOnlyRootSaysWhatToDo(t *testing.T) {
	root := hostpathtest.Tmpfs(t, "size=2m,mode=0700")
	cfg := hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true}
	c, _ := startFake(t, cfg)
	ctx := context.Background()
	v := c.createVolume(t, "v")
	pub, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	p := newPaths(t)
	mustOK(t, c.stage(v, p, pub.GetPublishContext()))
	mustOK(t, c.publish(v, p, p.target, false, pub.GetPublishContext()))

	if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount the root's tmpfs read-only: %v", err)
	}
	err = c.unpublish(v, p.target)
	if err == nil {
		t.Fatal("NodeUnpublishVolume on a read-only root succeeded, recording nothing")
	}
	for _, want := range []string{root + " is on a read-only file system", "mount it read-write again", "send the request again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NodeUnpublishVolume on a read-only root: %v\nwant it to say %q", err, want)
		}
	}
	_, err = c.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "w", VolumeCapabilities: []*csi.VolumeCapability{snw}})
	if err == nil || !strings.Contains(err.Error(), root+" is on a read-only file system") {
		t.Errorf("CreateVolume on a read-only root: %v, want it to name the root as read-only", err)
	}

	if err := unix.Mount("", root, "", unix.MS_REMOUNT, ""); err != nil {
		t.Fatalf("remounting the root read-write: %v", err)
	}
	if err := c.unpublish(v, p.target); err != nil {
		t.Fatalf("NodeUnpublishVolume sent again, the root writable again: %v", err)
	}
	if err := c.unstage(v, p); err != nil {
		t.Fatalf("NodeUnstageVolume after: %v", err)
	}
	if _, err := c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "n1"}); err != nil {
		t.Fatalf("ControllerUnpublishVolume after: %v", err)
	}
	mustOK(t, c.srv.Stop())
	again, _ := startFake(t, cfg)
	if _, err := again.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume after the teardowns, the plugin started again: %v (the teardowns not recorded?)", err)
	}
}
