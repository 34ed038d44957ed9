package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// The state database older than the mounts (a backup restored after alloc "c" claimed the
// volume; its last commits lost): c's target is mounted, bound from the volume's staging, and
// no claim records it. The release of the last claim the database knows (a) sent
// NodeUnstageVolume and ControllerUnpublishVolume, which a plugin that leaves CSI's rule (every
// target unpublished first) to the CO carries out, taking the storage from under c's mount.
// Now the release leaves the volume staged and attached, naming the mount and what to do, the
// claim on its release path for reconcile; once the mount is gone, reconcile finishes it.
func TestReleaseLeavesTheStagingOfATargetTheDatabaseLost(t *testing.T) {
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	staging := stagingPath(h.dir, "mem", "v")
	lost := publishPath(h.dir, "c", "v", false, spec.FileSystem, spec.MultiNodeMultiWriter)
	if err := os.MkdirAll(lost, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(staging, lost, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s at %s: %v", staging, lost, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(lost, unix.MNT_DETACH) })
	h.mem.ResetCalls()

	_, err := h.e.Release(h.ctx, "v", "a")
	for _, want := range []string{lost + " is mounted, named as a target of volume \"v\", but no claim records it", "unmount " + lost, "volctl reconcile"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("release of the last recorded claim while %s, bound from the staging, is mounted: %v; want it to say %q", lost, err, want)
		}
	}
	for _, c := range h.mem.Calls() {
		if c.RPC == csi.RPCNodeUnstageVolume || c.RPC == csi.RPCControllerUnpublishVolume {
			t.Fatalf("%s sent with %s mounted from the staging", c.RPC, lost)
		}
	}
	if got := h.liveClaims("v"); len(got) != 1 || got[0].ID != a.ID || got[0].State != store.ClaimNodeDetached {
		t.Fatalf("claims after the refused release: %+v; want a's left node-detached", got)
	}

	// Reconcile says what it cannot tell, and leaves the staging as the release did.
	rep, err := h.e.Reconcile(h.ctx)
	var said []string
	for _, p := range rep.Problems {
		said = append(said, p.Message)
	}
	all := strings.Join(said, "\n")
	for _, want := range []string{lost + ` is mounted, named as alloc "c"'s target of volume "v", but no claim records it`, "cannot tell whether the alloc still uses it",
		`volume "v" is left staged and attached`} {
		if err == nil || !strings.Contains(all, want) {
			t.Fatalf("reconcile with %s mounted: %v, problems:\n%s\nwant one saying %q", lost, err, all, want)
		}
	}
	for _, c := range h.mem.Calls() {
		if c.RPC == csi.RPCNodeUnstageVolume || c.RPC == csi.RPCControllerUnpublishVolume {
			t.Fatalf("reconcile sent %s with %s mounted from the staging", c.RPC, lost)
		}
	}

	if err := unix.Unmount(lost, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once %s is unmounted: %v", lost, err)
	}
	if got := h.liveClaims("v"); len(got) != 0 {
		t.Fatalf("claims after reconcile: %+v; want none", got)
	}
	if _, err := os.Stat(filepath.Join(staging, ".")); err == nil {
		if left, _ := h.e.mountsAt(staging); len(left) != 0 {
			t.Fatalf("staging still mounted after reconcile: %v", left)
		}
	}
}
