package hostpath_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

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
