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
	r := publishedOnASmallRoot(t)
	// The consumer fills its volume, and with it the root.
	hostpathtest.Fill(t, filepath.Join(r.c.volumeDir(t, r.v.GetVolumeId()), "fill"))
	r.teardown(t, "on a full root", nil)
	r.deletesAfterARestart(t)
}

// A consumer that goes on writing takes whatever room a teardown frees. Before, the first
// teardown on a full root removed meta/.reserve and saved again, handing its 64 KiB to the file
// system: the consumers still writing (this volume's, on a mount not yet gone, or another
// volume's on the same root) ate them, and the next teardown found no room and no reserve,
// answering INTERNAL until someone freed space by hand. Each teardown here follows the root
// filled again, and each succeeds, its record there after a restart.
func TestTeardownsSucceedWhileAConsumerKeepsWriting(t *testing.T) {
	r := publishedOnASmallRoot(t)
	// The other volume's consumer writes until the root is full, before each teardown.
	fill := filepath.Join(r.c.volumeDir(t, r.c.createVolume(t, "other").GetVolumeId()), "fill")
	r.teardown(t, "on a root filled again since the last teardown", func() { hostpathtest.Fill(t, fill) })
	r.deletesAfterARestart(t)
}

// The root's file system turned read-only under the plugin (the kernel does so after a disk
// error, errors=remount-ro; or an operator's remount): nothing can be recorded there. A teardown
// then fails, as it must (its record would say the volume is still published), but before it
// said only "saving state: open .../meta/volumes/.volctl-tmp-vol-...-2992981835: read-only file
// system", a temporary file's name and nothing of what to do. It names the root and the way
// out, and once the root is writable again the request sent again finishes, recorded.
func TestTeardownOnAReadOnlyRootSaysWhatToDo(t *testing.T) {
	r := publishedOnASmallRoot(t)
	if err := unix.Mount("", r.root, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount the root's tmpfs read-only: %v", err)
	}
	err := r.c.unpublish(r.v, r.p.target)
	if err == nil {
		t.Fatal("NodeUnpublishVolume on a read-only root succeeded, recording nothing")
	}
	for _, want := range []string{r.root + " is on a read-only file system", "mount it read-write again", "send the request again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NodeUnpublishVolume on a read-only root: %v\nwant it to say %q", err, want)
		}
	}
	_, err = r.c.ctl.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "w", VolumeCapabilities: []*csi.VolumeCapability{snw}})
	if err == nil || !strings.Contains(err.Error(), r.root+" is on a read-only file system") {
		t.Errorf("CreateVolume on a read-only root: %v, want it to name the root as read-only", err)
	}

	if err := unix.Mount("", r.root, "", unix.MS_REMOUNT, ""); err != nil {
		t.Fatalf("remounting the root read-write: %v", err)
	}
	r.teardown(t, "sent again, the root writable again", nil)
	r.deletesAfterARestart(t)
}

// smallRoot is a plugin on a 2 MiB tmpfs root, with volume v controller-published to n1,
// staged and published at p.
type smallRoot struct {
	root string
	cfg  hostpath.Config
	c    *client
	v    *csi.Volume
	p    paths
}

func publishedOnASmallRoot(t *testing.T) *smallRoot {
	t.Helper()
	r := &smallRoot{root: hostpathtest.Tmpfs(t, "size=2m,mode=0700")}
	r.cfg = hostpath.Config{Root: r.root, NodeID: "n1", EnableAttach: true}
	r.c, _ = startFake(t, r.cfg)
	r.v = r.c.createVolume(t, "v")
	pub, err := r.c.ctl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: r.v.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	r.p = newPaths(t)
	mustOK(t, r.c.stage(r.v, r.p, pub.GetPublishContext()))
	mustOK(t, r.c.publish(r.v, r.p, r.p.target, false, pub.GetPublishContext()))
	return r
}

// teardown sends NodeUnpublishVolume, NodeUnstageVolume and ControllerUnpublishVolume of v,
// each after before (when set), and fails the test, saying when (how), at the first that fails.
func (r *smallRoot) teardown(t *testing.T, how string, before func()) {
	t.Helper()
	for _, step := range []struct {
		rpc  string
		send func() error
	}{
		{"NodeUnpublishVolume", func() error { return r.c.unpublish(r.v, r.p.target) }},
		{"NodeUnstageVolume", func() error { return r.c.unstage(r.v, r.p) }},
		{"ControllerUnpublishVolume", func() error {
			_, err := r.c.ctl.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: r.v.GetVolumeId(), NodeId: "n1"})
			return err
		}},
	} {
		if before != nil {
			before()
		}
		if err := step.send(); err != nil {
			t.Fatalf("%s %s: %v", step.rpc, how, err)
		}
	}
}

// deletesAfterARestart checks that the teardowns were recorded: a plugin started again on the
// root holds the volume as torn down, and deletes it.
func (r *smallRoot) deletesAfterARestart(t *testing.T) {
	t.Helper()
	mustOK(t, r.c.srv.Stop())
	again, _ := startFake(t, r.cfg)
	if _, err := again.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: r.v.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume after the teardowns, the plugin started again: %v (the teardowns not recorded?)", err)
	}
}

// A teardown that saved into the reserve must leave room for the next one. Before, the save
// truncated the reserve to its record's length, handing the rest to the free space a consumer
// still writing took, and the old record's file (one page) was the reserve after: a teardown of
// a volume whose record is larger than a page, the root filled again, answered INTERNAL "no space
// left on device". Here "big" (a record of about 6 KB) is controller-unpublished after v's
// teardowns used the reserve, the root filled again before each, and it succeeds, recorded.
func TestALargeRecordsTeardownFollowsSmallOnesOnAFullRoot(t *testing.T) {
	r := publishedOnASmallRoot(t)
	req := createReq("big", mib)
	req.Parameters = map[string]string{"note": strings.Repeat("x", 6000)}
	big, err := r.c.ctl.CreateVolume(context.Background(), req)
	mustOK(t, err)
	_, err = r.c.ctl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: big.GetVolume().GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	mustOK(t, err)
	fill := filepath.Join(r.c.volumeDir(t, r.v.GetVolumeId()), "fill")
	r.teardown(t, "on a root filled again before each", func() { hostpathtest.Fill(t, fill) })
	hostpathtest.Fill(t, fill)
	if _, err := r.c.ctl.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: big.GetVolume().GetVolumeId(), NodeId: "n1"}); err != nil {
		t.Fatalf("ControllerUnpublishVolume of a volume with a 6 KB record, after v's teardowns used the reserve, the root full: %v", err)
	}
	mustOK(t, r.c.srv.Stop())
	again, _ := startFake(t, r.cfg)
	if _, err := again.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: big.GetVolume().GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume of big after its ControllerUnpublishVolume, the plugin started again: %v (not recorded?)", err)
	}
}
