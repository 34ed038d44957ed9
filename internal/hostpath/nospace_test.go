package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// A snapshot or a clone is a copy of the volume's data on the plugin's root: one that does not
// fit fills the root and stops with ENOSPC. The plugin answered INTERNAL ("failed internally;
// check its logs"), which says nothing of space; CSI's answer for a provisioning or snapshot
// that lacks space is RESOURCE_EXHAUSTED (spec.md, CreateSnapshot's "Not enough resources to
// create snapshot"; CreateVolume's codes), which volctl words as space to free. It answers that,
// naming the root and what did not fit, and leaves nothing of the partial copy behind: the root
// has the room it had before, and once room is made the same request succeeds.
func TestACopyThatFillsTheRootIsResourceExhausted(t *testing.T) {
	root := hostpathtest.Tmpfs(t, "size=2m,mode=0700")
	c, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	ctx := context.Background()
	src := c.createVolume(t, "src")
	data := filepath.Join(c.volumeDir(t, src.GetVolumeId()), "data")
	if err := os.WriteFile(data, make([]byte, 1200<<10), 0o644); err != nil { // more than half the root
		t.Fatal(err)
	}
	free := func() uint64 {
		var st unix.Statfs_t
		if err := unix.Statfs(root, &st); err != nil {
			t.Fatal(err)
		}
		return st.Bfree
	}
	entries := func(dir string) int {
		es, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return len(es)
	}
	before, snapshots, volumes := free(), entries("snapshots"), entries("volumes")
	for _, tt := range []struct {
		name string
		send func() error
	}{
		{"CreateSnapshot", func() error {
			_, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: src.GetVolumeId()})
			return err
		}},
		{"CreateVolume of a clone", func() error {
			req := createReq("clone", mib)
			req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
				Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}}
			_, err := c.ctl.CreateVolume(ctx, req)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.send()
			wantCode(t, err, codes.ResourceExhausted, "no room left on the plugin's root "+root, "the copy needs about", "bytes free on it now", "free space")
			if n := entries("partial"); n != 0 {
				t.Errorf("%d entries left in %s/partial after the copy failed", n, root)
			}
			if got, want := entries("snapshots")+entries("volumes"), snapshots+volumes; got != want {
				t.Errorf("%d snapshots and volumes after the copy failed, want %d", got, want)
			}
			if got := free(); got < before {
				t.Errorf("%d blocks free on the root after the copy failed, %d before: the partial copy is left", got, before)
			}
		})
	}
	// Room made, the same requests succeed.
	if err := os.Truncate(data, 400<<10); err != nil {
		t.Fatal(err)
	}
	_, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: src.GetVolumeId()})
	mustOK(t, err)
}

// A root full to its last block (a consumer filled its volume): a new, empty volume's record
// cannot be written, nor an attachment's. That too is RESOURCE_EXHAUSTED naming the root, not
// INTERNAL, and leaves no directory behind.
func TestCreateVolumeOnAFullRootIsResourceExhausted(t *testing.T) {
	root := hostpathtest.Tmpfs(t, "size=1m,mode=0700")
	c, _ := startFake(t, hostpath.Config{Root: root, NodeID: "n1", EnableAttach: true})
	src := c.createVolume(t, "src")
	hostpathtest.Fill(t, filepath.Join(c.volumeDir(t, src.GetVolumeId()), "fill"))
	es, err := os.ReadDir(filepath.Join(root, "volumes"))
	mustOK(t, err)
	_, err = c.ctl.CreateVolume(context.Background(), createReq("new", mib))
	wantCode(t, err, codes.ResourceExhausted, "no room left on the plugin's root "+root, "free space")
	after, err := os.ReadDir(filepath.Join(root, "volumes"))
	mustOK(t, err)
	if len(after) != len(es) {
		t.Errorf("%d volume directories after the create failed, want %d", len(after), len(es))
	}
	_, err = c.ctl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: src.GetVolumeId(), NodeId: "n1", VolumeCapability: snw})
	wantCode(t, err, codes.ResourceExhausted, "no room left on the plugin's root "+root, "the change is not recorded", "free space")
}
