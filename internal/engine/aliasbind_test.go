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
	"github.com/volctl/volctl/internal/store"
)

// aliasedDirs makes real, a directory bind-mounted on itself with shared propagation (as "/" is
// on systemd hosts), and alias, a bind of it: one directory by two paths, a mount at either
// showing at both. Cleanup unmounts what is left below and on them.
func aliasedDirs(t *testing.T) (real, alias string) {
	t.Helper()
	dir := hostpathtest.MountDir(t)
	real, alias = filepath.Join(dir, "real"), filepath.Join(dir, "alias")
	for _, d := range []string{real, alias} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct {
		src, dst string
		flags    uintptr
	}{{real, real, unix.MS_BIND}, {"", real, unix.MS_SHARED}, {real, alias, unix.MS_BIND}} {
		if err := unix.Mount(m.src, m.dst, "", m.flags, ""); err != nil {
			t.Fatalf("mount %s on %s: %v", m.src, m.dst, err)
		}
	}
	t.Cleanup(func() {
		for _, p := range []string{alias + "/x", real + "/x", alias + "/shared", real + "/shared", alias, real} {
			for unix.Unmount(p, unix.MNT_DETACH) == nil {
			}
		}
	})
	return real, alias
}

// claimsOnData lists the allocs holding a claim on volume "data".
func claimsOnData(t *testing.T, h *hostpathEngine) []string {
	t.Helper()
	live, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range live {
		out = append(out, c.Alloc)
	}
	return out
}

// TestVolumeMountAtAnotherClaimsDestinationByAnotherPathIsRefused: admission compares
// volume_mount destinations as text, but a directory an admin's bind mount (with shared
// propagation, as "/" is on systemd hosts) makes reachable by two paths is one place: a bind at
// either path shows at both. A reader's group bound at the second path found the writer's bind
// propagated there, the same file, and took it as "bound already": its read-only volume_mount
// was the writer's read-write bind, and the writer's release unmounted both paths from under
// the reader, still held. Bind finds another live claim's destination at the place its own
// names and refuses, naming both; the refused claim's rollback leaves the other's bind; either
// order; and a destination that is itself the root of the admin's alias mount too. Real
// mounts, as root.
func TestVolumeMountAtAnotherClaimsDestinationByAnotherPathIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		firstRO, secondRO      bool
		firstDest, secondDest  func(real, alias string) string
		extraAlias             bool // alias/x is a bind of real/x (the destination itself aliased)
		firstGroup, secondName string
	}{
		{name: "parent aliased, writer first", secondRO: true,
			firstDest: func(r, _ string) string { return r + "/shared" }, secondDest: func(_, a string) string { return a + "/shared" }},
		{name: "parent aliased, reader first", firstRO: true,
			firstDest: func(_, a string) string { return a + "/shared" }, secondDest: func(r, _ string) string { return r + "/shared" }},
		{name: "destination aliased", secondRO: true, extraAlias: true,
			firstDest: func(r, _ string) string { return r + "/x" }, secondDest: func(_, a string) string { return a + "/x" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSharedVolumeEngine(t, spec.MultiNodeSingleWriter)
			real, alias := aliasedDirs(t)
			if tc.extraAlias {
				// alias is not a bind of real here: alias/x is a bind of real/x.
				_ = unix.Unmount(alias, unix.MNT_DETACH)
				for _, d := range []string{real + "/x", alias + "/x"} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				if err := unix.Mount(real+"/x", alias+"/x", "", unix.MS_BIND, ""); err != nil {
					t.Fatal(err)
				}
			}
			first, second := tc.firstDest(real, alias), tc.secondDest(real, alias)
			if _, err := h.e.RunGroup(h.ctx, sharedDestGroup("first", 1, tc.firstRO, first)); err != nil {
				t.Fatal(err)
			}
			info, err := h.e.RunGroup(h.ctx, sharedDestGroup("second", 1, tc.secondRO, second))
			if err == nil && tc.secondRO {
				if werr := os.WriteFile(filepath.Join(second, "by-reader"), []byte("x"), 0o644); werr == nil {
					t.Errorf("second[0]'s read-only volume_mount at %s is writable: it was handed first[0]'s read-write bind", second)
				}
			}
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "volume_mount "+second) ||
				!strings.Contains(err.Error(), `alloc "first[0]"`) || !strings.Contains(err.Error(), first) {
				t.Fatalf("second group, its volume_mount at %s, the place first[0] is bound at %s = %+v, %v; want a conflict naming both destinations and first[0]",
					second, first, info, err)
			}
			if got := claimsOnData(t, h); len(got) != 1 || got[0] != "first[0]" {
				t.Fatalf("claims on data after the refusal: %v; want first[0]'s alone", got)
			}
			// The refused claim's rollback unbinds nothing of first[0]'s: its bind is where it was.
			if !hostpathtest.Mounted(t, first) {
				t.Fatalf("first[0]'s volume_mount at %s is gone after second[0]'s refusal: its rollback unbound it", first)
			}
			if !tc.firstRO {
				if err := os.WriteFile(filepath.Join(first, "by-first"), []byte("x"), 0o644); err != nil {
					t.Fatalf("first[0]'s read-write volume_mount at %s: %v", first, err)
				}
			}
			if _, err := h.e.StopGroup(h.ctx, "second"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.e.StopGroup(h.ctx, "first"); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{first, second} {
				if tc.extraAlias && p == second {
					continue // the admin's own bind is there
				}
				if hostpathtest.Mounted(t, p) {
					t.Errorf("%s is still mounted after both groups stopped", p)
				}
			}
		})
	}
}

// TestVolumeMountInsideAnotherAllocsBindIsRefused: a destination below another alloc's live
// volume_mount was admitted; its bind made the directory inside that volume, and the other
// alloc's release then failed, its bind busy. Admission refuses it, naming the bind above.
func TestVolumeMountInsideAnotherAllocsBindIsRefused(t *testing.T) {
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
