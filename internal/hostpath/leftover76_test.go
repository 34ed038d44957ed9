package hostpath_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestStartServesThoughADeletedVolumesLeftoverCannotBeRemoved: a DeleteVolume whose removal
// fails on a file that cannot be unlinked (one made immutable, the case
// TestDeleteSnapshotCutShortLeavesNoHalfSnapshotToRestore plays; a consumer running as root may
// set it) removes the record and leaves the directory in partial/, answering "the plugin's next
// start removes it, or send the request again". The next start does not serve on without it:
// clearInterruptedCopies returns the removal's error from New, so the plugin never starts again
// on that root (every volume on it unreachable, its Nomad system job crash-looping), over the
// leftover of a volume already deleted, and the error gives no way out. sweepUnrecorded and
// removeDeleted, which meet the same kind of leftover, log it and go on. Correct: the start
// logs what it could not remove, naming it, and serves; the volumes still recorded are served.
// Found by helper review76.
func TestStartServesThoughADeletedVolumesLeftoverCannotBeRemoved(t *testing.T) {
	ctx := context.Background()
	c := start(t, hostpath.Config{})
	root := c.srv.Config.Root
	kept := c.createVolume(t, "kept")
	gone := c.createVolume(t, "gone")
	unpin := pinFile(t, root, c.volumeDir(t, gone.GetVolumeId()))

	_, derr := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: gone.GetVolumeId()})
	if derr == nil {
		t.Fatalf("DeleteVolume answered OK though a file of the volume cannot be unlinked: the removal was expected to fail")
	}
	left, _ := filepath.Glob(filepath.Join(root, "partial", "delete-"+gone.GetVolumeId()+"-*"))
	if len(left) == 0 {
		t.Fatalf("DeleteVolume failed (%v) without leaving its directory in partial/: the case is not what this tests", derr)
	}

	// The plugin started again on the root, as the delete's answer says it should be.
	p, err := hostpath.New(hostpath.Config{Root: root, NodeID: "node-1"})
	if err != nil {
		t.Fatalf("after DeleteVolume answered %v, leaving %s, the plugin cannot start on %s again: %v\n"+
			"want it to start, log what it could not remove, and serve volume %s", derr, left[0], root, err, kept.GetVolumeId())
	}
	if _, ok := p.VolumePath(kept.GetVolumeId()); !ok {
		t.Errorf("the plugin started again does not serve volume %s", kept.GetVolumeId())
	}
	// The delete's answer names what keeps the removal from going; cleared, the request sent
	// again removes what is left, as the answer says.
	if !strings.Contains(derr.Error(), "lsattr -R") || !strings.Contains(derr.Error(), "request sent again") {
		t.Errorf("DeleteVolume's answer %v does not name the file that cannot be unlinked, nor the request sent again", derr)
	}
	unpin(left[0])
	if _, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: gone.GetVolumeId()}); err != nil {
		t.Fatalf("DeleteVolume again: %v", err)
	}
	if still, _ := filepath.Glob(filepath.Join(root, "partial", "delete-"+gone.GetVolumeId()+"-*")); len(still) != 0 {
		t.Errorf("DeleteVolume sent again left %v", still)
	}
}

// pinFile writes a file named "pinned" in dir and makes it immutable (chattr +i): one that
// cannot be unlinked, which cuts a removal of dir short; made removable again, wherever a delete
// moved it below root, when the test ends. unpin makes the pinned file in a directory (where dir
// was moved to) removable again.
func pinFile(t *testing.T, root, dir string) (unpin func(moved string)) {
	t.Helper()
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Fatalf("chattr is needed to make a file that cannot be unlinked: %v", err)
	}
	pinned := filepath.Join(dir, "pinned")
	mustOK(t, os.WriteFile(pinned, []byte("x"), 0o644))
	if out, err := exec.Command(chattr, "+i", pinned).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i %s: %v: %s", pinned, err, out)
	}
	t.Cleanup(func() {
		_ = filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
			if err == nil && filepath.Base(path) == "pinned" {
				_ = exec.Command(chattr, "-i", path).Run()
			}
			return nil
		})
	})
	return func(moved string) {
		t.Helper()
		if out, err := exec.Command(chattr, "-i", filepath.Join(moved, "pinned")).CombinedOutput(); err != nil {
			t.Fatalf("chattr -i: %v: %s", err, out)
		}
	}
}
