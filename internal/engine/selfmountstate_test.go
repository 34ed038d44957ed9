package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestStateDirThatIsItsOwnMountPoint: a state dir bind-mounted on itself (a dedicated mount,
// as an admin gives it with shared propagation, as "/" is on systemd hosts) is a mount whose
// file system and root the place view counted among the volumes' (everything mounted at or
// below the state dir). Destinations outside it are placed as on any host: a group's
// volume_mounts there are bound, a reconcile pass finds nothing wrong, the stop leaves
// nothing. A destination in the state dir reached by another path, an admin's bind of it
// elsewhere, is in the state dir all the same: refused as the state dir's own path is. Real
// mounts, as root.
func TestStateDirThatIsItsOwnMountPoint(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeMultiWriter)
	state := h.state
	for _, m := range []struct {
		src, dst string
		flags    uintptr
	}{{state, state, unix.MS_BIND}, {"", state, unix.MS_SHARED}} {
		if err := unix.Mount(m.src, m.dst, "", m.flags, ""); err != nil {
			t.Fatalf("mount %s on %s (%#x): %v", m.src, m.dst, m.flags, err)
		}
	}
	t.Cleanup(func() { _ = unix.Unmount(state, unix.MNT_DETACH) })
	dir := hostpathtest.MountDir(t)
	if _, err := h.e.RunGroup(h.ctx, multiWriterGroup("web", 3, filepath.Join(dir, "{index}"))); err != nil {
		t.Fatalf("group run with the state dir its own mount point: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile: %+v, %v; want nothing wrong", rep, err)
	}
	alias := filepath.Join(dir, "state-alias")
	if err := os.MkdirAll(alias, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(state, alias, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(alias, "staging", "elsewhere")
	_, err := h.e.RunGroup(h.ctx, multiWriterGroup("inside", 1, inside))
	if err == nil || !strings.Contains(err.Error(), "state dir") {
		t.Errorf("group run with a volume_mount in the state dir by another path (%s) = %v; want it refused as in the state dir", inside, err)
	}
	// The alias itself: the state dir's own mount, counted among the volumes' by the place
	// view, was looked through to the directory under the alias, outside the state dir.
	if _, err := h.e.RunGroup(h.ctx, multiWriterGroup("at", 1, alias)); err == nil || !strings.Contains(err.Error(), "in the state dir") {
		t.Errorf("group run with a volume_mount at a bind of the state dir (%s) = %v; want it refused as in the state dir", alias, err)
	}
	if _, err := os.Lstat(filepath.Join(state, "staging", "elsewhere")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state dir after the refusal: %v; want nothing made in it", err)
	}
	for _, g := range []string{"at", "inside", "web"} {
		if _, err := h.e.StopGroup(h.ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	if m := mountsUnder(t, filepath.Join(dir, "0")); len(m) != 0 {
		t.Errorf("mounted after the stop: %v", m)
	}
}
