package engine

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// The wall clock steps back (NTP correcting a clock that ran an hour fast, or a date set by
// hand) while a restore's pass runs: after the pass indexed the publish tree, and before another
// command makes alloc b's publish directory. That directory's birth time, the kernel's wall clock
// after the step, is then an hour before the index's build time, so it looked born before the
// index, as if indexed and not there: the index was not walked again, and the pass published v,
// which a staging plugin bound from alloc b's directory, handing alloc a a directory of volctl's
// state dir (TestRestoreIndexSeesADirectoryMadeSinceItWasBuilt without the step). The engine's
// clock (Config.Now) reads the wall clock as it was before the step for the build, and as it
// is after for the rest.
func TestRestoreIndexSeesADirectoryMadeSinceItWasBuiltAfterTheClockSteppedBack(t *testing.T) {
	from := func(dir string) string { return filepath.Join(dir, "publish", "b") }
	h := wrongBindHarness(t, true, from, nil)
	var stepped atomic.Bool
	h.e.cfg.Now = func() time.Time {
		if stepped.Load() {
			return time.Now()
		}
		return time.Now().Add(time.Hour) // the wall clock an hour fast, until it is stepped back
	}
	capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	for _, id := range []string{"x", "w", "v"} {
		h.create(volume(id, capability))
	}
	pass := withPublishIndex(h.ctx)
	if _, err := h.e.Claim(pass, ClaimRequest{VolumeID: "x", Alloc: "c"}); err != nil { // the pass's first check builds the index
		t.Fatal(err)
	}
	defer h.release("x", "c")
	stepped.Store(true)
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"}) // another command, outside the pass, after the step
	defer h.release("w", "b")
	cl, err := h.e.Claim(pass, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		entries, _ := os.ReadDir(cl.TargetPath)
		t.Fatalf("claim of v published at %s, a bind of %s (what the alloc sees there: %v), want it refused", cl.TargetPath, from(h.dir), entries)
	}
	if want := "a bind mount of " + from(h.dir) + ", a directory of volctl's state dir"; !strings.Contains(err.Error(), want) {
		t.Fatalf("claim = %v\nwant an error saying %s", err, want)
	}
}
