package hostpath_test

import (
	"context"
	"os"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/hostpath"
)

// TestDeleteIsNotHeldOffByAConsumersLockOnItsVolume: the plugin tells "another plugin process
// serving the root" by a flock(2) on the volume's own directory (moveAside, holdNew,
// sweepUnrecorded). That directory is the consumer's: mode 0777, bind-mounted at its staging
// path and target, where any process of the alloc may open it and flock it (`flock /data
// backup.sh`), the lock being the inode's whatever path reached it. A process that outlived
// its alloc (the unpublish found the target busy and detached it lazily) keeps that lock, and
// every DeleteVolume after is refused ABORTED, "its directory ... is held by another plugin
// process serving the root (recording it as it creates it); send the request again": the
// wrong holder named, and the advice never works while the process lives. Correct: a lock only
// plugin processes can take (a file under the private root, not the consumer's directory),
// so that the delete of a volume no record shows in use goes through.
// Found by helper review77 (hostpath).
func TestDeleteIsNotHeldOffByAConsumersLockOnItsVolume(t *testing.T) {
	ctx := context.Background()
	c, _ := startFake(t, hostpath.Config{Root: t.TempDir(), NodeID: "n1"})
	v := c.createVolume(t, "data")
	dir := c.volumeDir(t, v.GetVolumeId())

	// The consumer's process: it opened its volume's root (through its target, the same
	// directory) and locks it, as flock(1) does; its mounts are gone.
	consumerLocks(t, dir)

	_, err := c.ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()})
	if err != nil {
		st := status.Convert(err)
		t.Fatalf("DeleteVolume of a volume nothing records in use, its directory locked by a consumer's process: %v (%s); want it deleted, not refused as held by another plugin process",
			st.Code(), st.Message())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("after the delete the volume's directory %s is still there: %v", dir, err)
	}
}

// consumerLocks opens dir, a volume's directory as its target shows it, and flocks it, as a
// process of the volume's consumers may (flock(1)), until the test ends.
func consumerLocks(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the consumer's flock of its volume's directory: %v", err)
	}
}
