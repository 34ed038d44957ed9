package hostpath_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestDeleteSnapshotCutShortLeavesNoHalfSnapshotToRestore: DeleteSnapshot removes the
// snapshot's directory in place (os.RemoveAll of snapshots/<id>) and only then its record. A
// removal cut short (the plugin killed mid-removal, as a stop past its 5 s grace or the OOM
// killer does it, or a file that cannot be unlinked, played here by one made immutable) leaves
// the record and half the directory under the snapshot's final name: ListSnapshots still lists
// it ready_to_use, and a CreateVolume from it answers OK with a volume holding whatever the
// removal had not reached yet, the rest of the data silently gone. volctl forgets its delete
// record on a final refusal with the snapshot still listed, so it restores from it too.
// DeleteVolume moves the directory into partial/ first, atomically, for exactly this reason;
// the docs promise "a crash never leaves half a snapshot under its final name". Correct: the
// snapshot is either still whole or gone (not listed, a restore from it NOT_FOUND), e.g. by
// renaming its directory into partial/ and removing the record before the removal, as
// DeleteVolume does. Found by helper review74.
func TestDeleteSnapshotCutShortLeavesNoHalfSnapshotToRestore(t *testing.T) {
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Fatalf("chattr is needed to cut a removal short: %v", err)
	}
	ctx := context.Background()
	c := start(t, hostpath.Config{})
	v := c.createVolume(t, "data")
	dir := c.volumeDir(t, v.GetVolumeId())
	const files = 20
	for i := range files {
		mustOK(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), []byte("precious"), 0o644))
	}
	mustOK(t, os.Mkdir(filepath.Join(dir, "zz"), 0o755))
	mustOK(t, os.WriteFile(filepath.Join(dir, "zz", "pinned"), []byte("precious"), 0o644))

	resp, err := c.ctl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "nightly", SourceVolumeId: v.GetVolumeId()})
	if err != nil {
		t.Fatalf("CreateSnapshot: %v", err)
	}
	snapID := resp.GetSnapshot().GetSnapshotId()
	snapDir, ok := c.srv.Plugin.SnapshotPath(snapID)
	if !ok {
		t.Fatalf("snapshot %q has no directory", snapID)
	}
	want := listTree(t, snapDir)

	// One file of the snapshot's copy cannot be unlinked: the removal stops short of it.
	pinned := filepath.Join(snapDir, "zz", "pinned")
	if out, err := exec.Command(chattr, "+i", pinned).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i %s: %v: %s", pinned, err, out)
	}
	// Wherever the delete moved it (partial/), the file is made removable again at the end.
	root := filepath.Dir(filepath.Dir(snapDir))
	t.Cleanup(func() {
		_ = filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
			if err == nil && filepath.Base(path) == "pinned" {
				_ = exec.Command(chattr, "-i", path).Run()
			}
			return nil
		})
	})

	_, derr := c.ctl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snapID})
	if derr == nil {
		if _, still := c.srv.Plugin.SnapshotPath(snapID); still {
			t.Fatalf("DeleteSnapshot answered OK and the snapshot is still recorded")
		}
	}

	list, err := c.ctl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snapID})
	if err != nil {
		t.Fatalf("ListSnapshots: %v", err)
	}
	listed := len(list.GetEntries()) > 0 && list.GetEntries()[0].GetSnapshot().GetReadyToUse()

	clone, cerr := c.ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name:               "restored",
		VolumeCapabilities: []*csi.VolumeCapability{snw},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snapID},
		}},
	})
	if cerr != nil {
		if status.Code(cerr) == codes.NotFound && !listed {
			return // gone whole: the delete's answer aside, nothing half is handed out
		}
		t.Fatalf("after DeleteSnapshot (%v): listed ready_to_use %t, restore from it: %v", derr, listed, cerr)
	}
	got := listTree(t, c.volumeDir(t, clone.GetVolume().GetVolumeId()))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("DeleteSnapshot cut short (answered %v) left snapshot %q listed ready_to_use=%t, and a restore from it answered OK "+
			"with %d of its %d entries: %v\nwant the snapshot whole, or gone", derr, snapID, listed, len(got), len(want), got)
	}
}

// listTree is the relative paths of everything below dir, sorted.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	sort.Strings(out)
	return out
}
