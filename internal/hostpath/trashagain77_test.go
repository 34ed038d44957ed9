package hostpath_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestDeleteSentAgainRemovesTheLeftoverOfAVolumeAConsumerHoldsLocked: a DeleteVolume that goes
// on past a consumer's flock of the volume's directory (consumersLock) moves the directory into
// partial/ without a lock of its own; the consumer's lock goes with the inode, so the leftover
// in partial/ stays locked by the consumer. When the removal then fails (a file that cannot be
// unlinked), the answer says "the request sent again, or the plugin's next start, tries again,
// and logs what it cannot remove". Followed (the file made removable, the request sent again),
// removeDeleted finds the leftover locked, takes it for another request's removal in progress,
// skips it without a word, and answers OK: the volume's data stays on the root, unaccounted for,
// while the CO was told it is deleted, and the plugin's next start skips it the same way while
// the consumer lives. Correct: a delete sent again removes the leftover (a delete's own removal
// is told from a consumer's lock, e.g. by a lock only plugin processes take), or at least does
// not answer OK while the directory is still there.
// Found by helper review77 (own4).
func TestDeleteSentAgainRemovesTheLeftoverOfAVolumeAConsumerHoldsLocked(t *testing.T) {
	ctx := context.Background()
	c := start(t, hostpath.Config{})
	root := c.srv.Config.Root
	v := c.createVolume(t, "data")
	dir := c.volumeDir(t, v.GetVolumeId())
	unpin := pinFile(t, root, dir)

	// The consumer's process: it opened its volume's directory (through its target) and locks
	// it, as flock(1) does; it outlives its alloc.
	consumerLocks(t, dir)

	_, derr := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	if derr == nil {
		t.Fatalf("DeleteVolume answered OK though a file of the volume cannot be unlinked: the removal was expected to fail")
	}
	if !strings.Contains(derr.Error(), "request sent again") {
		t.Fatalf("DeleteVolume's answer %v does not advise sending the request again: the case is not what this tests", derr)
	}
	left, _ := filepath.Glob(filepath.Join(root, "partial", "delete-"+v.GetVolumeId()+"-*[^k]")) // not its .lock
	if len(left) != 1 {
		t.Fatalf("DeleteVolume failed (%v) leaving %v in partial/: want its one directory there", derr, left)
	}

	// The advice followed: the file made removable, the request sent again.
	unpin(left[0])
	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	still, _ := filepath.Glob(filepath.Join(root, "partial", "delete-"+v.GetVolumeId()+"-*"))
	if err != nil || len(still) != 0 {
		t.Errorf("DeleteVolume sent again, as the first answer (%v) advised, answered OK and left the volume's data at %v: "+
			"the leftover, locked by the consumer's flock that went with the directory, was taken for another request's removal and skipped",
			derr, still)
	}
}
