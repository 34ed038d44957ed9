package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// A state dir whose names are looked up without regard to case (vfat, or an ext4 or tmpfs
// directory with the casefold attribute) cannot keep volctl's IDs apart: lock files, staging
// and publish directories are named after volume, plugin and alloc IDs, which may differ in case
// alone. There "db" and "DB" share locks/volume-db.lock (a clone of one from the other waits on
// itself), staging/mem/db (the second volume staged onto the first's staging path) and
// publish/<alloc>/db (one claim's target the other's), and allocs "web" and "Web" share every
// target. Before, volctl went ahead. Now it finds such a dir as it opens (one lstat: the locks
// directory is found as "LOCKS" too), and every command that would take a lock, and so name
// something after an ID, is refused, naming the dir and what to do; reading still works (to
// list what to move).
//
// The lookup is made here as a case-insensitive directory makes it, by a bind mount of locks/
// on LOCKS/; TestCaseFoldedStateDirIsRefused uses a real one where the kernel can make it.
func TestCaseInsensitiveStateDirRefusesWhatWouldNameByID(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db"))
	alias := filepath.Join(h.dir, "LOCKS")
	if err := os.Mkdir(alias, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(h.dir, lockDir), alias, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to bind-mount the locks directory at LOCKS, as a case-insensitive directory finds it: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(alias, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", alias, err)
		}
	})
	h.open(Config{})
	wantCaseRefusal(t, h)
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web"}); err == nil || !strings.Contains(err.Error(), "case-insensitive") {
		t.Errorf("claim in a case-insensitive state dir: %v, want it refused saying why", err)
	}
	if vs, err := h.e.Volumes(h.ctx); err != nil {
		t.Errorf("listing the volumes of a case-insensitive state dir (to move them): %v", err)
	} else if len(vs) != 1 {
		t.Errorf("volumes %+v, want db alone", vs)
	}
}

// TestCaseFoldedStateDirIsRefused is the same on a real case-insensitive directory: a tmpfs
// mounted with casefold (Linux 6.13 on, a kernel built with CONFIG_UNICODE).
func TestCaseFoldedStateDirIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a case-insensitive tmpfs")
	}
	h := newHarness(t, nil)
	h.e.Close()
	h.e = nil
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "casefold"); err != nil {
		t.Skipf("this kernel cannot make a case-insensitive directory (tmpfs -o casefold: %v; it needs Linux 6.13 or later built with CONFIG_UNICODE)", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	h.dir = dir
	h.open(Config{})
	_, _ = h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket})
	wantCaseRefusal(t, h)
}

func wantCaseRefusal(t *testing.T, h *harness) {
	t.Helper()
	_, err := h.e.CreateVolume(h.ctx, volume("DB"))
	if err == nil {
		t.Fatal(`volume "DB" created in a case-insensitive state dir beside "db": their locks and staging paths are one`)
	}
	for _, want := range []string{h.dir, "case-insensitive", `"db" and "DB"`, "case-sensitive"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CreateVolume in a case-insensitive state dir: %v\nwant it to say %q", err, want)
		}
	}
}
