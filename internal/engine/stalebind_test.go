package engine

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// rebootAfterRead is the kernel's mount table, but the first time a pass reads it, the host
// "reboots" right after: every path in lost is unmounted before the pass goes on.
type rebootAfterRead struct {
	kernelMounts
	t    *testing.T
	lost []string
	once sync.Once
}

func (r *rebootAfterRead) MountsUnder(dir string) (map[string]bool, error) {
	m, err := r.kernelMounts.MountsUnder(dir)
	r.once.Do(func() {
		for _, p := range r.lost {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				r.t.Error(err)
			}
		}
	})
	return m, err
}

// TestReconcileDoesNotBindATargetUnmountedSinceItReadTheTable: a chaos run (a plugin frozen
// for seconds, a reboot unmounting everything meanwhile) had the agent's pass, which read the
// mount table at its start, find a group claim's target mounted, then, after the reboot had
// unmounted it, bind its volume_mount "again" from it: the alloc's destination became a bind
// of the empty target directory on the state dir's disk, not the volume (what it wrote went to
// the host's disk), and every later restore failed "something else is mounted there" until the
// destination was unmounted by hand. Now a bind checks, from the mount table, that the target
// is still mounted, refuses, and the next pass restores the target and binds it.
func TestReconcileDoesNotBindATargetUnmountedSinceItReadTheTable(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	dest := filepath.Join(t.TempDir(), "dest")
	cl, err := h.claimWithBind(t, "d", spec.VolumeMount{Volume: "d", Destination: dest})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "keep.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The destination goes first (an unmount by hand, or the part of a reboot the pass saw);
	// then, once the pass has read the table with the target still in it, the target and the
	// staging go too.
	if err := unix.Unmount(dest, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	racing := &rebootAfterRead{t: t, lost: []string{cl.TargetPath, stagingPath(h.state, "hp", "d")}}
	other, err := Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry, Mounts: racing})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	t.Cleanup(func() { _ = unix.Unmount(dest, unix.MNT_DETACH) }) // what a failure left bound
	rep, err := other.Reconcile(h.ctx)
	if _, err := os.ReadFile(filepath.Join(dest, "keep.txt")); isMount(t, dest) && err != nil {
		t.Fatalf("the destination %s is mounted but is not the volume (keep.txt: %v): the alloc was handed the state dir's empty target directory; the pass said %+v", dest, err, rep)
	}
	// The pass says why it left the claim: its target, no longer mounted.
	if err == nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, cl.TargetPath+" is no longer mounted") {
		t.Errorf("pass over a stale table: err %v, problems %+v: want one naming the target %s, no longer mounted", err, rep.Problems, cl.TargetPath)
	}
	// The next pass, on a table read after the reboot, restores the target and binds it.
	rep, err = h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("second pass: %v (%+v)", err, rep)
	}
	if got, err := os.ReadFile(filepath.Join(dest, "keep.txt")); err != nil || string(got) != "kept" {
		t.Errorf("after the second pass, %s/keep.txt = %q, %v: want the volume bound there again", dest, got, err)
	}
}

// isMount reports whether path is a mount point.
func isMount(t *testing.T, path string) bool {
	t.Helper()
	for _, m := range mountsUnder(t, path) {
		if m == path {
			return true
		}
	}
	return false
}
