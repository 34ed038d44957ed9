package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/hostpath"
)

// copyHeld starts a plugin on root and has each snapshot's or clone's copy wait, after its
// file "f" (withData), until the test sends on or closes release; copying is sent on once per
// copy that reached that point.
func copyHeld(t *testing.T, root string) (c *client, copying <-chan struct{}, release chan struct{}) {
	t.Helper()
	c, _ = startFake(t, hostpath.Config{Root: root, NodeID: "n1"})
	reached := make(chan struct{}, 4)
	release = make(chan struct{})
	hostpath.AfterEachCopiedFile(t, func(rel string) {
		if rel != "f" {
			return
		}
		reached <- struct{}{}
		<-release
	})
	t.Cleanup(func() { letGo(release) }) // a test that failed before it did: the plugin stops
	return c, reached, release
}

// letGo closes release unless it is closed.
func letGo(release chan struct{}) {
	select {
	case <-release:
	default:
		close(release)
	}
}

// withData creates volume name holding one file.
func (c *client) withData(t *testing.T, name string) *csi.Volume {
	t.Helper()
	v := c.createVolume(t, name)
	if err := os.WriteFile(filepath.Join(c.volumeDir(t, v.GetVolumeId()), "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	return v
}

// within is a context of d, for a request that must be answered while a copy runs.
func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A snapshot or a clone copied its source holding the plugin's one lock throughout: with a
// large volume every other request (a create, a list, every node RPC of every other volume)
// waited for the copy, and timed out. The copy runs under no lock; a delete of its source
// meanwhile is refused ABORTED (removed under the copy, the copy failed, or came out missing
// what the removal reached first), and a second create of the same name waits for the first
// and answers with what it made, rather than copy again.
func TestCopyLetsOtherRequestsThrough(t *testing.T) {
	c, copying, release := copyHeld(t, t.TempDir())
	src := c.withData(t, "src")
	first := snapshotOf(c, src)
	<-copying

	// Before, each of these timed out behind the copy.
	other, err := c.ctl.CreateVolume(within(t, 2*time.Second), createReq("other", mib))
	if err != nil {
		t.Fatalf("CreateVolume of another volume while a snapshot copies: %v", err)
	}
	if _, err := c.ctl.ListVolumes(within(t, 2*time.Second), &csi.ListVolumesRequest{}); err != nil {
		t.Fatalf("ListVolumes while a snapshot copies: %v", err)
	}
	p := newPaths(t)
	if err := c.stage(other.GetVolume(), p, nil); err != nil {
		t.Fatalf("NodeStageVolume of another volume while a snapshot copies: %v", err)
	}
	_, err = c.ctl.DeleteVolume(within(t, 2*time.Second), &csi.DeleteVolumeRequest{VolumeId: src.GetVolumeId()})
	wantCode(t, err, codes.Aborted, src.GetVolumeId(), "is being copied")

	again := snapshotOf(c, src) // the same name again: waits for the first
	select {
	case r := <-again:
		t.Fatalf("a second CreateSnapshot of the name being copied answered before the copy finished: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	one, two := <-first, <-again
	if one.err != nil || two.err != nil {
		t.Fatalf("CreateSnapshot: %v; the same name again: %v", one.err, two.err)
	}
	if one.id != two.id {
		t.Fatalf("the same name made two snapshots, %s and %s", one.id, two.id)
	}
	if b, err := os.ReadFile(filepath.Join(snapshotDir(t, c, one.id), "f")); err != nil || string(b) != "data" {
		t.Fatalf("the snapshot holds %q (%v), want the volume's data", b, err)
	}
	// Once the copy is done, the source goes as before.
	mustOK(t, c.unstage(other.GetVolume(), p))
	_, err = c.ctl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: src.GetVolumeId()})
	mustOK(t, err)
}

// The same for a clone: a volume made from a snapshot copies it under no lock, and the
// snapshot is not deleted under the copy.
func TestCloneLetsOtherRequestsThrough(t *testing.T) {
	c, copying, release := copyHeld(t, t.TempDir())
	src := c.withData(t, "src")
	made := snapshotOf(c, src)
	<-copying
	release <- struct{}{} // the snapshot's copy goes on
	snap := <-made
	mustOK(t, snap.err)

	clones := make(chan error, 1)
	go func() {
		_, err := c.ctl.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
			Name: "clone", VolumeCapabilities: []*csi.VolumeCapability{snw},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
				Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.id}}},
		})
		clones <- err
	}()
	<-copying
	if _, err := c.ctl.CreateVolume(within(t, 2*time.Second), createReq("other", mib)); err != nil {
		t.Fatalf("CreateVolume of another volume while a clone copies: %v", err)
	}
	_, err := c.ctl.DeleteSnapshot(within(t, 2*time.Second), &csi.DeleteSnapshotRequest{SnapshotId: snap.id})
	wantCode(t, err, codes.Aborted, snap.id, "is being copied")
	close(release)
	mustOK(t, <-clones)
	_, err = c.ctl.DeleteSnapshot(context.Background(), &csi.DeleteSnapshotRequest{SnapshotId: snap.id})
	mustOK(t, err)
}

type snapResult struct {
	id  string
	err error
}

// snapshotOf sends CreateSnapshot "snap" of v; its answer comes on the channel.
func snapshotOf(c *client, v *csi.Volume) <-chan snapResult {
	out := make(chan snapResult, 1)
	go func() {
		resp, err := c.ctl.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: v.GetVolumeId()})
		out <- snapResult{resp.GetSnapshot().GetSnapshotId(), err}
	}()
	return out
}

func snapshotDir(t *testing.T, c *client, id string) string {
	t.Helper()
	dir, ok := c.srv.Plugin.SnapshotPath(id)
	if !ok {
		t.Fatalf("snapshot %q has no directory", id)
	}
	return dir
}
