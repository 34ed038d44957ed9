package hostpath_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// TestDeleteCutShortPastAConsumersLockIsFinishedByTheNextStartOrTheRequestAgain: a DeleteVolume
// of a volume whose directory a consumer's process holds flocked goes on past that lock
// (consumersLock) without a lock of its own: it renames the directory into
// partial/delete-<id>-..., removes the record, and then removes the directory. Cut short in
// that removal (the plugin killed mid-RemoveAll; played here by a file that cannot be unlinked,
// made removable again afterwards, which leaves the same state: no record, the directory in
// partial/), the directory is never removed while the consumer's process lives: the next start
// (clearInterruptedCopies) and the request sent again (removeDeleted) both find it locked,
// take the consumer's lock for "another process removing it", and leave it, the request
// answering OK. A deleted volume's data stays on disk for good, unnoticed, and the failed
// delete's own advice ("the request sent again, or the plugin's next start, tries again")
// does nothing. Correct: the lock that tells a delete in progress is one only plugin
// processes take (a file under the private root, not the consumer's directory), so the next
// start or the request sent again removes what a delete cut short left.
// Found by helper review77 (crash).
func TestDeleteCutShortPastAConsumersLockIsFinishedByTheNextStartOrTheRequestAgain(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(hostpathtest.MountDir(t), "root")
	cfg := hostpath.Config{Root: root, NodeID: "n1", Mounter: &hostpathtest.FakeMounter{}}
	srv := hostpathtest.Start(t, cfg)
	ctl := csi.NewControllerClient(srv.Dial(t))
	resp, err := ctl.CreateVolume(ctx, createReq("data", mib))
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	id := resp.GetVolume().GetVolumeId()
	dir, ok := srv.Plugin.VolumePath(id)
	if !ok {
		t.Fatalf("volume %q has no directory", id)
	}
	mustOK(t, os.WriteFile(filepath.Join(dir, "data"), make([]byte, 64<<10), 0o644))
	unpin := pinFile(t, root, dir)

	// The consumer's process (its target unmounted lazily under it) holds its volume's
	// directory locked, as `flock /data backup.sh` does.
	consumerLocks(t, dir)

	// The delete, cut short in its removal.
	_, derr := ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	glob := filepath.Join(root, "partial", "delete-"+id+"-*")
	left, _ := filepath.Glob(glob)
	if derr == nil || len(left) == 0 {
		t.Fatalf("DeleteVolume answered %v, leaving %v in partial/: want its removal cut short, the directory left there (the case this plays)", derr, left)
	}
	unpin(left[0])

	// The plugin started again on the root, as after a kill.
	mustOK(t, srv.Stop())
	srv = hostpathtest.StartAt(t, cfg, srv.Socket)
	if still, _ := filepath.Glob(glob); len(still) != 0 {
		t.Errorf("after DeleteVolume's removal was cut short (%v), the plugin's next start left the deleted volume's directory %v in place: "+
			"it took the consumer's lock on it for another plugin process removing it", derr, still)
	}

	// The request sent again, as the delete's answer advises.
	ctl = csi.NewControllerClient(srv.Dial(t))
	if _, err := ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume sent again: %v", err)
	}
	if still, _ := filepath.Glob(glob); len(still) != 0 {
		t.Errorf("DeleteVolume sent again answered OK and left the deleted volume's directory %v in place (the consumer's lock taken for another process's removal); "+
			"the first delete's answer %q said the request sent again removes it", still, derr)
	}
}
