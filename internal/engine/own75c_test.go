package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// TestCreateReplayWithALargerCapacityMinAndAnotherCapacityMaxIsNotSaidCreatedWithIt: a create of
// volume b (capacity_min 1MiB, capacity_max 16MiB) loses every CreateVolume answer; the plugin,
// which rounds sizes up to 4MiB, made it at 4MiB. The same create run again with capacity_min
// 2MiB and capacity_max 8MiB replays the recorded request (1MiB..16MiB) and exits 0 saying the
// volume is created, but the record keeps 16MiB as its capacity_max: `volume expand b --size
// 12MiB` (no --limit) then grows it past the 8MiB the spec allowed, and the same create run once
// more is refused as "does not change its capacity_max". The replay's refusal of another
// capacity_max (volumes_create.go, createVolume) is made only when capacity_min is not above the
// recorded one (sv.CapacityMin <= old.RequestedMin), on the reasoning that a larger
// capacity_min is grown after the replay with the spec's capacity_max recorded as the limit
// (specLimit); but that growth happens only when capacity_min is also above the size the plugin
// made (grow), and a plugin may make a volume anywhere up to limit_bytes (rounding up, as here).
//
// Correct behaviour: the replay whose spec gives another capacity_max is refused, naming
// capacity_max, whenever no growth after the replay records that limit (the condition checked
// after the replay, not before it), or the spec's capacity_max is recorded; never "created"
// with the old limit kept. It is recorded where the volume fits under it. Found by helper
// review75.
func TestCreateReplayWithALargerCapacityMinAndAnotherCapacityMaxIsNotSaidCreatedWithIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Granularity = 4 * mib })
	sv := volume("b")
	sv.CapacityMin, sv.CapacityMax = 1*mib, 16*mib
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Lost: true, Times: fastRetry.Attempts})
	if _, err := h.e.CreateVolume(h.ctx, sv); err == nil {
		t.Fatal("premise: create with every answer lost succeeded")
	}
	if v := h.volumeInfo("b"); v.State != "creating" {
		t.Fatalf("premise: after the lost answers the volume is %q; want it recorded as being created", v.State)
	}
	again := sv
	again.CapacityMin, again.CapacityMax = 2*mib, 8*mib
	if _, err := h.e.CreateVolume(h.ctx, again); err != nil {
		t.Fatalf("create of b with capacity_min 2MiB, capacity_max 8MiB over its interrupted create: %v; want it finished, its capacity_max recorded", err)
	}
	v := h.volumeInfo("b")
	if v.CapacityBytes != 4*mib {
		t.Fatalf("premise: the plugin made b at 4MiB (its granularity); recorded %s", spec.FormatSize(v.CapacityBytes))
	}
	if v.RequestedMax != again.CapacityMax {
		_, expErr := h.e.ExpandVolume(h.ctx, "b", 12*mib, 0)
		t.Errorf("create of b with capacity_max %s over its interrupted create exited 0 (created), with its capacity_max recorded as %s: "+
			"the spec's capacity_max was neither applied nor refused; `volume expand b --size 12MiB` then: %v (volume now %s)",
			spec.FormatSize(again.CapacityMax), spec.FormatSize(v.RequestedMax), expErr, spec.FormatSize(h.volumeInfo("b").CapacityBytes))
	}
}

// TestLockWaitOnATwoLayerOverlayDoesNotNameAProcessLockingAnImageFileOfTheSameInodeNumber: on a
// state dir on an overlay whose layers are on two file systems (a container's root), the lock
// file volume-v.lock is on the writable layer's file system, and a file of the image (the lower
// layer, another file system) may have the same inode number: inode numbers are per file system,
// and a fresh tmpfs, as a container's layers often are, numbers from 1. /proc/locks names a
// flock through the overlay by the overlay's device and the layer file's inode number, so a
// process holding a flock on that image file is listed exactly as a holder of volume-v.lock
// would be. store.overlayLockID (lockholders.go) takes every lock of "overlay device:the lock
// file's inode number" for the lock file's, so the wait for volume v's lock names that unrelated
// process as a holder; stopped, it is said stopped, its `kill -CONT` advised, and where the
// real holder is not one /proc names (this process's own, another PID namespace's) the wait
// gives up after stoppedWait saying the lock is held by that unrelated stopped process.
//
// Correct behaviour: only the lock file's own holders are named (a lock listed under the
// overlay's device is the file's only if it is the file's inode on that layer: compare, for
// example, the lock's pid's open file descriptors, or the overlay's xino-mapped number, or name
// nobody rather than guess); the unrelated process is never named nor waited on. A holder found
// by the overlay's device is named only if it has the lock file open. Found by helper review75.
func TestLockWaitOnATwoLayerOverlayDoesNotNameAProcessLockingAnImageFileOfTheSameInodeNumber(t *testing.T) {
	state, lowerDir := twoLayerOverlay(t, 64)
	l, err := newLocker(state)
	if err != nil {
		t.Fatal(err)
	}
	l.stoppedWait = 300 * time.Millisecond
	lockFile := filepath.Join(l.dir, volumeLockPrefix+"v.lock")
	if err := os.WriteFile(lockFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var lst unix.Stat_t
	if err := unix.Stat(lockFile, &lst); err != nil {
		t.Fatal(err)
	}
	// The image's file with the lock file's inode number, on the lower layer's file system.
	image := ""
	for i := 0; i < 64 && image == ""; i++ {
		var st unix.Stat_t
		name := fmt.Sprintf("f%d", i)
		if err := unix.Stat(filepath.Join(lowerDir, name), &st); err == nil && st.Ino == lst.Ino {
			image = filepath.Join(state, name) // as the container sees it, through the overlay
		}
	}
	if image == "" {
		t.Fatalf("precondition: no file of the lower layer has the lock file's inode number %d", lst.Ino)
	}
	holder := holdLockFileInAnotherProcess(t, lockFile)
	other := holdLockFileInAnotherProcess(t, image) // an unrelated program's lock on an image file
	if err := other.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_, err = volumeLockRefused(t, l, 2*time.Second, holder.Process.Pid)
	if strings.Contains(err.Error(), fmt.Sprintf("pid %d", other.Process.Pid)) {
		t.Errorf("the wait for volume v's lock (held by pid %d) names pid %d, which holds a lock on %s, an image file that only shares the lock file's inode number: %v",
			holder.Process.Pid, other.Process.Pid, image, err)
	}
}
