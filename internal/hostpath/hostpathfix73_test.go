package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// partialEntries lists what root's partial/ holds.
func partialEntries(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "partial"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// fillDir puts a few files and a directory in dir, as a consumer's data.
func fillDir(t *testing.T, dir string) {
	t.Helper()
	mustOK(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o777))
	for _, f := range []string{"a", "sub/b"} {
		mustOK(t, os.WriteFile(filepath.Join(dir, f), []byte("data"), 0o644))
	}
}

// DeleteVolume removes the volume's directory, moved into partial/ under the lock, before it
// answers: nothing of it is left there, nor at volumes/<id>, so the room it took is free once
// the delete is answered; the ID is gone, and deleting it again is OK.
func TestDeleteLeavesNothingOfTheVolumeOnTheRoot(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	c, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	v := c.createVolume(t, "v")
	dir := c.volumeDir(t, v.GetVolumeId())
	fillDir(t, dir)
	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after the delete: %v, want it gone", dir, err)
	}
	if left := partialEntries(t, root); len(left) != 0 {
		t.Errorf("partial/ holds %v after the delete was answered, want nothing: the room is not free", left)
	}
	if _, err := os.Stat(filepath.Join(root, "meta", "volumes", v.GetVolumeId()+".json")); !os.IsNotExist(err) {
		t.Errorf("the record after the delete: %v, want it gone", err)
	}
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
}

// A plugin killed while it removed a deleted volume's directory (moved to partial/ under a
// name of its own, its record removed) leaves it there: the next start removes it, as it
// removes an interrupted copy, but not one another process serving the root is removing (its
// directory locked).
func TestStartRemovesWhatAnInterruptedDeleteLeft(t *testing.T) {
	root := t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	startFake(t, cfg) // makes partial/
	left := filepath.Join(root, "partial", "delete-vol-"+strings.Repeat("a", 24)+"-0123456789abcdef")
	busy := filepath.Join(root, "partial", "delete-vol-"+strings.Repeat("b", 24)+"-0123456789abcdef")
	for _, d := range []string{left, busy} {
		fillDir(t, d)
	}
	lockAsAnotherProcess(t, busy) // its delete, still removing it
	startFake(t, cfg)
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("what an interrupted delete left, %s, after a start: %v, want it removed", left, err)
	}
	if _, err := os.Stat(filepath.Join(busy, "sub", "b")); err != nil {
		t.Errorf("a deleted volume's directory another process is removing, after a start: %v, want it left to that process", err)
	}
}

// A plugin killed between moving the volume's directory out of the way and removing its
// record leaves the record: the delete sent again finds the directory gone and removes the
// record, and the start before it removed the directory.
func TestDeleteSentAgainAfterACrashBetweenTheMoveAndTheRecord(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := hostpath.Config{Root: root, NodeID: "n1"}
	c, _ := startFake(t, cfg)
	v := c.createVolume(t, "v")
	id := v.GetVolumeId()
	fillDir(t, c.volumeDir(t, id))
	mustOK(t, c.srv.Stop())
	moved := filepath.Join(root, "partial", "delete-"+id+"-0123456789abcdef")
	mustOK(t, os.Rename(filepath.Join(root, "volumes", id), moved))

	c, _ = startFake(t, cfg)
	if _, err := os.Stat(moved); !os.IsNotExist(err) {
		t.Errorf("%s after a start: %v, want it removed", moved, err)
	}
	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	mustOK(t, err)
	list, err := c.ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	mustOK(t, err)
	for _, e := range list.GetEntries() {
		if e.GetVolume().GetVolumeId() == id {
			t.Errorf("volume %s listed after its delete", id)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "meta", "volumes", id+".json")); !os.IsNotExist(err) {
		t.Errorf("the record after the delete: %v, want it gone", err)
	}
}

// A delete whose removal did not finish (it failed, or the request was cut short) leaves the
// directory in partial/: the delete sent again, of an ID gone, removes it and answers OK, but
// leaves one another request or process is removing (locked).
func TestDeleteOfAnIDGoneRemovesWhatAnEarlierDeleteLeft(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	c, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	v := c.createVolume(t, "v")
	id := v.GetVolumeId()
	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	mustOK(t, err)
	left := filepath.Join(root, "partial", "delete-"+id+"-0123456789abcdef")
	busy := filepath.Join(root, "partial", "delete-"+id+"-fedcba9876543210")
	other := filepath.Join(root, "partial", "delete-vol-"+strings.Repeat("c", 24)+"-0123456789abcdef")
	for _, d := range []string{left, busy, other} {
		fillDir(t, d)
	}
	lockAsAnotherProcess(t, busy)
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	mustOK(t, err)
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("%s after the delete sent again: %v, want it removed", left, err)
	}
	for _, d := range []string{busy, other} {
		if _, err := os.Stat(filepath.Join(d, "sub", "b")); err != nil {
			t.Errorf("%s (being removed by another, or another volume's) after the delete of %s: %v, want it left", d, id, err)
		}
	}
}

// ControllerUnpublishVolume without a node ID removes every attachment: refused while the
// volume is mounted on this host, whichever node ID its attachment is under, and answered OK
// once the node RPCs have run.
func TestControllerUnpublishOfAllNodesIsRefusedWhileMountedHere(t *testing.T) {
	ctx := context.Background()
	c, v, p := attachedUnderAnEarlierNodeID(t, false)
	_, err := c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.FailedPrecondition, p.staging)
	mustOK(t, c.unstage(v, p))
	_, err = c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "old-name"})
	mustOK(t, err)
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
}

// The mount table is read for the volume's own directory only: another volume mounted, and
// this one's binds moved with their directory and then unmounted, do not refuse its delete.
func TestDeleteIsRefusedOnlyForTheVolumesOwnMounts(t *testing.T) {
	hostpathtest.RequireMount(t)
	ctx := context.Background()
	c := start(t, hostpath.Config{})
	other, op := c.staged(t, "other")
	mustOK(t, c.publish(other, op, op.target, false, nil))

	v := c.createVolume(t, "moved")
	base := hostpathtest.MountDir(t)
	orig := filepath.Join(base, "alloc")
	mustOK(t, os.Mkdir(orig, 0o755))
	p := paths{staging: filepath.Join(orig, "staging"), target: filepath.Join(orig, "target")}
	mustOK(t, c.stage(v, p, nil))
	mustOK(t, c.publish(v, p, p.target, false, nil))
	moved := filepath.Join(base, "alloc-moved")
	mustOK(t, os.Rename(orig, moved))

	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	wantCode(t, err, codes.FailedPrecondition, moved)
	mustOK(t, unix.Unmount(filepath.Join(moved, "target"), 0))
	mustOK(t, unix.Unmount(filepath.Join(moved, "staging"), 0))
	_, err = c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	mustOK(t, err)
	if !hostpathtest.Mounted(t, op.target) {
		t.Errorf("the other volume's target %s is no longer mounted", op.target)
	}
}

// NodeExpandVolume, like the stats, expands the volume only at a path that shows it: with the
// bind at the target unmounted by hand and a tmpfs in its place, it is NOT_FOUND there, and
// the staging path, still the volume's, is expanded.
func TestNodeExpandAtATargetNowShowingSomethingElseIsNotFound(t *testing.T) {
	hostpathtest.RequireMount(t)
	ctx := context.Background()
	c := start(t, hostpath.Config{})
	v, p := c.staged(t, "expand")
	mustOK(t, c.publish(v, p, p.target, false, nil))
	expand := func(path string) (*csi.NodeExpandVolumeResponse, error) {
		return c.nd.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: v.GetVolumeId(), VolumePath: path,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * mib}})
	}
	_, err := expand(p.target)
	mustOK(t, err)
	mustOK(t, unix.Unmount(p.target, 0))
	if err := unix.Mount("someonesfs", p.target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mounting a tmpfs at the target: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(p.target, unix.MNT_DETACH) })
	_, err = expand(p.target)
	wantCode(t, err, codes.NotFound, "not the volume")
	_, err = expand(p.staging)
	mustOK(t, err)
	h, err := c.nd.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging})
	mustOK(t, err)
	if s := h.GetVolumeHealth().GetHealthStatuses(); len(s) != 0 {
		t.Errorf("NodeGetVolumeHealth at the staging path, which shows the volume: %v, want nothing wrong", s)
	}
}

// ControllerUnpublishVolume of another node ID's attachment beside this node ID's own, while
// the volume is mounted here, is answered: the mounts rest on this node's attachment, which
// stays (the refusal of an earlier node ID's, TestControllerUnpublishOfAnEarlierNodeIDsAttachmentIsRefusedWhileMountedHere,
// is for a plugin with none under its own ID).
func TestControllerUnpublishOfAnotherNodeBesideThisOnesIsAnswered(t *testing.T) {
	ctx := context.Background()
	m := &hostpathtest.FakeMounter{}
	root := filepath.Join(hostpathtest.MountDir(t), "root")
	// Attached under the host's earlier name, then under its new one.
	c := start(t, hostpath.Config{Root: root, NodeID: "elsewhere", EnableAttach: true, Mounter: m})
	resp, err := c.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mmwCap}})
	mustOK(t, err)
	v := resp.GetVolume()
	_, err = c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "elsewhere", VolumeCapability: mmwCap})
	mustOK(t, err)
	mustOK(t, c.srv.Stop())
	c = start(t, hostpath.Config{Root: root, NodeID: "here", EnableAttach: true, Mounter: m})
	pub, err := c.ctl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "here", VolumeCapability: mmwCap})
	mustOK(t, err)
	p := newPaths(t)
	_, err = c.nd.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.GetVolumeId(), StagingTargetPath: p.staging, VolumeCapability: mmwCap, PublishContext: pub.GetPublishContext()})
	mustOK(t, err)
	_, err = c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "elsewhere"})
	mustOK(t, err)
	_, err = c.ctl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "here"})
	wantCode(t, err, codes.FailedPrecondition, p.staging)
}

// mmwCap is a multi-node-multi-writer file-system capability.
var mmwCap = mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)

// attachedUnderAnEarlierNodeID is volume "v" attached (--enable-attach) to node "old-name" and
// staged, published at its target too when published, by a plugin (a fake mounter) that then
// stopped; it returns a client of the plugin started again on the same root as "new-name" (a
// host renamed), the mounts still there.
func attachedUnderAnEarlierNodeID(t *testing.T, published bool) (*client, *csi.Volume, paths) {
	t.Helper()
	m := &hostpathtest.FakeMounter{}
	root := filepath.Join(hostpathtest.MountDir(t), "root")
	c := start(t, hostpath.Config{Root: root, NodeID: "old-name", EnableAttach: true, Mounter: m})
	v := c.createVolume(t, "v")
	pub, err := c.ctl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "old-name", VolumeCapability: snw})
	mustOK(t, err)
	p := newPaths(t)
	mustOK(t, c.stage(v, p, pub.GetPublishContext()))
	if published {
		mustOK(t, c.publish(v, p, p.target, false, pub.GetPublishContext()))
	}
	mustOK(t, c.srv.Stop())
	return start(t, hostpath.Config{Root: root, NodeID: "new-name", EnableAttach: true, Mounter: m}), v, p
}
