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

// TestVolumeMountInsideAnotherAllocsBindIsRefused: a destination below another alloc's live
// volume_mount was admitted; its bind made the directory inside that volume, and the other
// alloc's release then failed, its bind busy. Admission refuses it, naming the bind above.
func TestVolumeMountInsideAnotherAllocsBindIsRefused(t *testing.T) {
	t.Parallel()
	h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
	dest := filepath.Join(hostpathtest.MountDir(t), "shared")
	t.Cleanup(func() {
		_ = unix.Unmount(dest+"/sub", unix.MNT_DETACH)
		_ = unix.Unmount(dest, unix.MNT_DETACH)
	})
	if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("web", 1, false, dest)); err != nil {
		t.Fatal(err)
	}
	info, err := h.e.RunGroup(h.ctx, sharedDestGroup("reader", 1, true, dest+"/sub"))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volume_mount "+dest+"/sub") || !strings.Contains(err.Error(), `alloc "web[0]"`) {
		t.Errorf("group reader, its volume_mount inside web[0]'s bind at %s = %+v, %v; want a conflict naming web[0]", dest, info, err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "sub")); err == nil {
		t.Errorf("%s/sub was made inside web[0]'s volume", dest)
	}
	if _, err := h.e.StopGroup(h.ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatalf("stop web: %v", err)
	}
}
