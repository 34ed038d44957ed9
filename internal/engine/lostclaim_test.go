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
	t.Parallel()
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

// The release's look for targets no claim records reads the volume's list in the target index
// (<state>/targets/<volume>), which each claim adds its alloc to before NodePublishVolume, not
// every alloc's publish directory: with 1,000 other claims on the host, that look cost a claim
// and release 2–2.5 ms (BenchmarkClaimAmongPublished). The index must still find a target the
// database lost: alloc "c" claims the volume through volctl after the index is built (by the
// first release's look), its claim is then lost from the database (freed in it, its mount
// left), and the release of the last claim the database knows leaves the staging, naming c's
// target.
func TestReleaseFindsATargetTheDatabaseLostThroughTheTargetIndex(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	// Other allocs' claims, and a first claim and release of v, which builds the index.
	for _, alloc := range []string{"x1", "x2", "x3"} {
		h.claim(ClaimRequest{VolumeID: "w", Alloc: alloc})
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "first"})
	if _, err := h.e.Release(h.ctx, "v", "first"); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(h.dir, "targets") // targetIndexDir
	// A claim adds its alloc to the list; a release that unstages drops a list that names no
	// publish directory still there.
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "second"})
	if list, err := os.ReadFile(filepath.Join(index, "v")); err != nil || string(list) != "second\n" {
		t.Fatalf("the target index's list of volume v after the claim of alloc second: %q, %v; want that alloc", list, err)
	}
	if _, err := h.e.Release(h.ctx, "v", "second"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(index, "v")); !os.IsNotExist(err) {
		t.Fatalf("the target index's list of volume v once no publish directory of it is left: %v; want it removed", err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	c := h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
	list, err := os.ReadFile(filepath.Join(index, "v"))
	if err != nil || !strings.Contains(string(list), "c\n") || !strings.Contains(string(list), "a\n") || strings.Contains(string(list), "x1") {
		t.Fatalf("the target index's list of volume v after the claims of allocs a and c: %q, %v; want a and c, no alloc of volume w", list, err)
	}
	h.update(func(tx *store.Tx) error { return tx.Claims().Free(c.ID, store.OutcomeReleased) }) // the lost commit
	h.mem.ResetCalls()

	_, err = h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), c.TargetPath+" is mounted, named as a target of volume \"v\", but no claim records it") {
		t.Fatalf("release of the last recorded claim while c's target %s is mounted: %v; want it refused, naming that target", c.TargetPath, err)
	}
	for _, call := range h.mem.Calls() {
		if call.RPC == csi.RPCNodeUnstageVolume || call.RPC == csi.RPCControllerUnpublishVolume {
			t.Fatalf("%s sent with %s mounted from the staging", call.RPC, c.TargetPath)
		}
	}

	if err := unix.Unmount(c.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
}

// A state dir from before the target index (publish directories made with no list naming
// them), or whose index was removed: the first release's look builds it from one walk of the
// publish tree, so a target the database lost is found there too.
func TestReleaseBuildsTheTargetIndexFromThePublishTree(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "first"})
	if _, err := h.e.Release(h.ctx, "v", "first"); err != nil {
		t.Fatal(err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	c := h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
	index := filepath.Join(h.dir, "targets") // targetIndexDir
	if err := os.RemoveAll(index); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(index+".new", 0o700); err != nil { // a build killed half-way
		t.Fatal(err)
	}
	h.update(func(tx *store.Tx) error { return tx.Claims().Free(c.ID, store.OutcomeReleased) })
	_, err := h.e.Release(h.ctx, "v", "a")
	if err == nil || !strings.Contains(err.Error(), c.TargetPath+" is mounted, named as a target of volume \"v\", but no claim records it") {
		t.Fatalf("release with the index gone while c's target %s is mounted: %v; want it refused, naming that target", c.TargetPath, err)
	}
	if list, err := os.ReadFile(filepath.Join(index, "v")); err != nil || !strings.Contains(string(list), "c\n") {
		t.Fatalf("the target index rebuilt: %q, %v; want it to list alloc c for volume v", list, err)
	}
	if _, err := os.Lstat(index + ".new"); !os.IsNotExist(err) {
		t.Fatalf("the half-built index left beside the built one: %v", err)
	}
	if err := unix.Unmount(c.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
}
