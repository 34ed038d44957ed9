package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
)

// A restore from snapshot "nightly" paused at its check (restore:checked, or restore:ready,
// past it) while another volctl runs `volume snapshot deregister mem nightly`, which forgets
// volctl's record of the snapshot and leaves the snapshot itself at the plugin. The restore is
// refused saying the snapshot "was deleted by another volctl while this restore checked it ...
// give volume "restored" another snapshot": a lie about someone's backup (the plugin still
// holds it, untouched), and advice that sends the user looking for another snapshot when the
// same create run again restores from this one. The transaction that records the restore's
// intent (createVolume, volumes_create.go) takes "no longer recorded" for "deleted"
// (deletedWhileRestoreWaited), as goneWhileWaiting once did for volumes
// (TestCommandThatWaitedForADeregisterDoesNotSayDeleted). Correct: a snapshot forgotten but
// still held by the plugin is not said deleted: the restore goes on from it (a restore from a
// snapshot volctl records nothing of is allowed), or is refused saying it was deleted or
// deregistered meanwhile, with advice that works (run the create again): the latter, the
// event log telling a deregister from a delete (endedWhileRestoreChecked).
//
// Found by helper review81 (race).
func TestRestoreBesideASnapshotDeregisterDoesNotSayItWasDeleted(t *testing.T) {
	t.Parallel()
	for _, fp := range []string{"restore:checked", "restore:ready"} {
		t.Run(strings.ReplaceAll(fp, ":", "_"), func(t *testing.T) {
			t.Parallel()
			h := snapshotDB(t)
			h.snapshot("nightly")
			sv := restoredFromTheSnapshot(h)
			out := h.pausedPair(fp,
				func(ctx context.Context) error { _, err := h.e.CreateVolume(ctx, sv); return err },
				func(ctx context.Context, other *Engine) error {
					_, err := other.DeregisterSnapshot(ctx, "mem", "nightly")
					return err
				})
			if out.bErr != nil {
				t.Fatalf("the snapshot deregister: %v", out.bErr)
			}
			if n := len(h.mem.Snapshots()); n != 1 {
				t.Fatalf("the plugin holds %d snapshots after the deregister, want nightly kept", n)
			}
			if out.aErr != nil && strings.Contains(fmt.Sprint(out.aErr), "was deleted by another volctl") {
				t.Errorf("restore = %v\nsnapshot nightly was deregistered (volctl's record forgotten), not deleted: the plugin still holds it", out.aErr)
			}
			if out.aErr == nil || !strings.Contains(out.aErr.Error(), "was deregistered") || !strings.Contains(out.aErr.Error(), fmt.Sprintf("create volume %q again", sv.ID)) {
				t.Fatalf("restore = %v\nwant it refused saying the snapshot was deregistered meanwhile, advising the same create again", out.aErr)
			}
			// The snapshot is there: the same create, run again, restores from it.
			if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
				t.Fatalf("the restore run again from the snapshot the plugin still holds: %v", err)
			}
			if n := h.mem.CallCount(csi.RPCCreateVolume); n != 2 {
				t.Errorf("%d CreateVolume sent, want db's and the restore's", n)
			}
		})
	}
}
