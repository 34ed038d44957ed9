package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// The target index (<state>/targets/) put back older than the mounts, or damaged: a backup of
// the state dir restored whole (tar, cp -a, rsync -a: files and directory with their times as
// they were), its list of volume v from before alloc c claimed it; or the list torn, or
// emptied. The release of the last claim the database knows (c's claim lost with it) read the
// list, found no directory of c, and sent NodeUnstageVolume and ControllerUnpublishVolume from
// under c's live mount. A list or index whose times say something other than volctl wrote it
// last (its inode changed after its contents, as a restore that keeps times leaves it), or
// whose contents volctl never writes, is not trusted: the index is built again from the
// publish tree, and the release leaves the staging, naming c's target.
func TestReleaseLooksPastATargetIndexRestoredOrDamaged(t *testing.T) {
	t.Parallel()
	old := time.Now().Add(-24 * time.Hour)
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, index string)
	}{
		{"restored with its times", func(t *testing.T, index string) {
			writeList(t, index, "a\n")
			for _, p := range []string{filepath.Join(index, "v"), index} {
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"the list's times alone", func(t *testing.T, index string) {
			writeList(t, index, "a\n")
			if err := os.Chtimes(filepath.Join(index, "v"), old, old); err != nil {
				t.Fatal(err)
			}
		}},
		{"the directory's times alone", func(t *testing.T, index string) {
			// The list as c's claim left it but without c (its times a write's): the release
			// drops it, naming no live directory, which makes the directory's times new.
			writeList(t, index, "a\n")
			if err := os.Chtimes(index, old, old); err != nil {
				t.Fatal(err)
			}
		}},
		{"the directory's times, then a volume deleted", func(t *testing.T, index string) {
			// The delete of volume w drops its list, which names no live directory, and that
			// makes the directory's times new before any release looks.
			writeList(t, index, "a\n")
			if err := os.WriteFile(filepath.Join(index, "w"), []byte("gone\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(index, old, old); err != nil {
				t.Fatal(err)
			}
		}},
		{"torn", func(t *testing.T, index string) { writeList(t, index, "a\nc\x00\x00") }},
		{"emptied", func(t *testing.T, index string) { writeList(t, index, "") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, c, index := claimsAAndC(t, "v", "w")
			tc.replace(t, index)
			if err := h.e.DeleteVolume(h.ctx, "w"); err != nil {
				t.Fatal(err)
			}
			h.update(func(tx *store.Tx) error { return tx.Claims().Free(c.ID, store.OutcomeReleased) }) // lost with the backup
			h.mem.ResetCalls()

			_, err := h.e.Release(h.ctx, "v", "a")
			for _, call := range h.mem.Calls() {
				if call.RPC == csi.RPCNodeUnstageVolume || call.RPC == csi.RPCControllerUnpublishVolume {
					t.Fatalf("%s sent with %s mounted from the staging, the target index %s (release: %v)", call.RPC, c.TargetPath, tc.name, err)
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.TargetPath+" is mounted, named as a target of volume \"v\", but no claim records it") {
				t.Fatalf("release of the last recorded claim while c's target %s is mounted, the target index %s: %v; want it refused, naming that target", c.TargetPath, tc.name, err)
			}
			if list, err := os.ReadFile(filepath.Join(index, "v")); err != nil || string(list) != "c\n" {
				t.Errorf("the target index's list of volume v after the release: %q, %v; want it built again from the publish tree", list, err)
			}
			if err := unix.Unmount(c.TargetPath, 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// writeList replaces the target index's list of volume v with contents.
func writeList(t *testing.T, index, contents string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(index, "v"), []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A target index restored with its times, then claims made before any release looked: one of
// another volume (a new list: the directory's times new) and one of volume v (a line appended:
// the list's times new). Had they written into it, nothing would show the restore any more;
// the first claim to find it moves it aside, and the release's look builds it from the
// publish tree, finding c's target.
func TestClaimMovesARestoredTargetIndexAside(t *testing.T) {
	t.Parallel()
	h, c, index := claimsAAndC(t, "v", "w")
	writeList(t, index, "a\n")
	old := time.Now().Add(-24 * time.Hour)
	for _, p := range []string{filepath.Join(index, "v"), index} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	h.update(func(tx *store.Tx) error { return tx.Claims().Free(c.ID, store.OutcomeReleased) }) // lost with the backup
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "x"})
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "d"})
	h.release("v", "d")
	h.mem.ResetCalls()

	_, err := h.e.Release(h.ctx, "v", "a")
	for _, call := range h.mem.Calls() {
		if call.RPC == csi.RPCNodeUnstageVolume || call.RPC == csi.RPCControllerUnpublishVolume {
			t.Fatalf("%s sent with %s mounted from the staging (release: %v)", call.RPC, c.TargetPath, err)
		}
	}
	if err == nil || !strings.Contains(err.Error(), c.TargetPath+" is mounted, named as a target of volume \"v\", but no claim records it") {
		t.Fatalf("release of the last recorded claim while c's target %s is mounted: %v; want it refused, naming that target", c.TargetPath, err)
	}
	if left, _ := filepath.Glob(index + ".*"); len(left) != 0 {
		t.Errorf("left beside the target index: %v", left)
	}
	if err := unix.Unmount(c.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
}

// claimsAAndC is a kernel harness with multi-writer volumes vols, the target index built (a
// claim of vols[0] and its release), and allocs a and c claiming vols[0]: c's claim, and its
// index directory, index.
func claimsAAndC(t *testing.T, vols ...string) (h *harness, c ClaimInfo, index string) {
	t.Helper()
	h = kernelHarness(t, nil)
	for _, v := range vols {
		h.create(volume(v, capab(spec.MultiNodeMultiWriter)))
	}
	h.claim(ClaimRequest{VolumeID: vols[0], Alloc: "first"})
	h.release(vols[0], "first") // builds the index
	h.claim(ClaimRequest{VolumeID: vols[0], Alloc: "a"})
	c = h.claim(ClaimRequest{VolumeID: vols[0], Alloc: "c"})
	return h, c, filepath.Join(h.dir, "targets") // targetIndexDir
}
