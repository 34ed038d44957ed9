package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A volume claimed and released by many allocs while one claim keeps it staged has no release
// that looks for unrecorded targets, so nothing drops its stale lines there: the claim that
// finds the list past 4 KiB rewrites it with the allocs whose publish directory is still there,
// its own among them.
func TestClaimRewritesALongTargetIndexListWithoutItsStaleLines(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	index := filepath.Join(h.dir, "targets") // targetIndexDir; made here whole: no publish directory yet
	if err := os.Mkdir(index, 0o700); err != nil {
		t.Fatal(err)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "keeper"})
	stale := strings.Repeat("gone-alloc-with-a-long-name\n", 200)
	f, err := os.OpenFile(filepath.Join(index, "v"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(stale); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "new"})
	list, err := os.ReadFile(filepath.Join(index, "v"))
	if err != nil || string(list) != "keeper\nnew\n" {
		t.Fatalf("the target index's list of volume v after a claim found it %d bytes long: %d bytes, %q..., %v; want \"keeper\\nnew\\n\"",
			len(stale)+len("keeper\n"), len(list), list[:min(len(list), 40)], err)
	}
}

// A volume deleted leaves no list in the target index: one whose plugin neither stages nor
// attaches has no release that looks and drops it. A list naming a publish directory still
// there (a claim the database lost) stays.
func TestDeleteDropsTheVolumesTargetIndexList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	h.create(volume("w", capab(spec.MultiNodeMultiWriter)))
	index := filepath.Join(h.dir, "targets") // targetIndexDir
	if err := os.MkdirAll(filepath.Join(h.dir, "publish", "lost", "w"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(index, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"v", "w"} {
		if err := os.WriteFile(filepath.Join(index, id), []byte("gone\nlost\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := h.e.DeleteVolume(h.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(filepath.Join(index, "v")); !os.IsNotExist(err) {
		t.Fatalf("the target index's list of volume v, deleted, none of whose publish directories is there: %v; want it removed", err)
	}
	if _, err := os.Lstat(filepath.Join(index, "w")); err != nil {
		t.Fatalf("the target index's list of volume w, deleted while publish/lost/w is there: %v; want it kept", err)
	}
}
