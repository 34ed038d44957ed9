package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestGroupCommandsPlaceVolumeMountsWithOneReadOfTheMountTable: `group run` of many allocs
// with volume_mounts elsewhere checked each claim's binds against the others' places with a
// read of the mount table of its own (a view per claim: 11 reads for 12 allocs), and `group
// stop` read it again for each release's unbinds; a reconcile pass reads it once
// (TestReconcilePlacesVolumeMountsWithOneReadOfTheMountTable). A group command carries one
// view too: the table read once for the run, once for the stop. Real mounts, as root.
func TestGroupCommandsPlaceVolumeMountsWithOneReadOfTheMountTable(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	const n = 12
	before := h.e.placeReads.Load()
	if _, err := h.e.RunGroup(h.ctx, multiWriterGroup("many", n, filepath.Join(dir, "{index}"))); err != nil {
		t.Fatal(err)
	}
	if reads := h.e.placeReads.Load() - before; reads != 1 {
		t.Errorf("group run of %d allocs with volume_mounts read the mount table %d times to place them; want once", n, reads)
	}
	if m := mountsUnder(t, dir); len(m) != n {
		t.Fatalf("mounted after the run: %v; want %d binds", m, n)
	}
	before = h.e.placeReads.Load()
	if _, err := h.e.StopGroup(h.ctx, "many"); err != nil {
		t.Fatal(err)
	}
	if reads := h.e.placeReads.Load() - before; reads > 1 {
		t.Errorf("group stop of %d allocs with volume_mounts read the mount table %d times to place them; want once at most", n, reads)
	}
	if m := mountsUnder(t, dir); len(m) != 0 {
		t.Errorf("mounted after the stop: %v; want nothing", m)
	}
}

// TestGroupRunRefusesAVolumeMountJoinedWithOneBoundEarlierInTheRun: one view of the mount table
// for a whole group run must still see the claims the run admitted after the view listed the
// claims with volume_mounts. web[0] binds at dir/0/x; web[1] at dir/1/x, dir/1 bound on itself
// with shared propagation; web[2] at dir/2/x, dir/2 a bind of dir/1: the directory web[1] is
// bound on, by another path, joined by propagation. web[2] is refused naming web[1], however
// the run shares its view, and the stop leaves nothing mounted. web[1]'s bind shows at dir/2/x
// too (propagation made it there): the stop's release of web[0] took that copy for a bind of
// web[0]'s moved away (movedBinds), refused, and said to unmount it, which would have taken
// web[1]'s bind down with it; now it is known for web[1]'s, unmounted with it. Real mounts, as
// root.
func TestGroupRunRefusesAVolumeMountJoinedWithOneBoundEarlierInTheRun(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	dir := hostpathtest.MountDir(t)
	for i := range 3 {
		if err := os.MkdirAll(filepath.Join(dir, strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d1, d2 := filepath.Join(dir, "1"), filepath.Join(dir, "2")
	for _, m := range []struct {
		src, dst string
		flags    uintptr
	}{{d1, d1, unix.MS_BIND}, {"", d1, unix.MS_SHARED}, {d1, d2, unix.MS_BIND}} {
		if err := unix.Mount(m.src, m.dst, "", m.flags, ""); err != nil {
			t.Fatalf("mount %s on %s (%#x): %v", m.src, m.dst, m.flags, err)
		}
	}
	_, err := h.e.RunGroup(h.ctx, multiWriterGroup("web", 3, filepath.Join(dir, "{index}", "x")))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `alloc "web[2]"`) || !strings.Contains(err.Error(), `alloc "web[1]"'s volume_mount `+filepath.Join(d1, "x")) {
		t.Errorf("group run with web[2]'s destination joined with web[1]'s = %v; want web[2] refused, naming web[1]'s volume_mount", err)
	}
	if got := claimsOnData(t, h); strings.Join(got, ",") != "web[0],web[1]" {
		t.Errorf("claims after the run = %v; want web[0] and web[1]", got)
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if p := filepath.Join(dir, strconv.Itoa(i), "x"); hostpathtest.Mounted(t, p) {
			t.Errorf("%s is still mounted after the stop", p)
		}
	}
}
