package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
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
	t.Parallel()
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

// Why every lock is refused there, not only one whose ID folds onto another the store records:
// the state dir holds names the store no longer does. A volume deregistered while a mount was
// left on its staging path (deregister forgets a staging row a release cut short, and reports
// the mount), a process killed between the row's delete and the directory's removal, a lock
// file a crashed process held: none is in the store, so a rule that refused only IDs colliding
// with stored ones would let "DB" be created and staged onto "db"'s leftover staging path, its
// alloc handed what is mounted there. The directory alone cannot say which IDs it holds (a
// listing of a case-insensitive dir gives each name once, in whichever case it was made), so
// volctl refuses them all.
func TestCaseInsensitiveStateDirRefusesAnIDThatFoldsOntoWhatOnlyTheDiskHolds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	left := stagingPath(h.dir, "mem", "db")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(left, "mounted-data")
	if err := os.WriteFile(mark, []byte("db's"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.update(func(tx *store.Tx) error { return tx.Volumes().Delete("db") }) // forgotten, its staging path left
	// The lookups a case-insensitive dir makes: locks as LOCKS, db's staging path as DB's.
	for alias, real := range map[string]string{
		filepath.Join(h.dir, "LOCKS"):   filepath.Join(h.dir, lockDir),
		stagingPath(h.dir, "mem", "DB"): left,
	} {
		if err := os.Mkdir(alias, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(real, alias, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("needs root with CAP_SYS_ADMIN to bind-mount %s at %s, as a case-insensitive directory finds it: %v", real, alias, err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(alias, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", alias, err)
			}
		})
	}
	h.open(Config{})
	if vs, err := h.e.Volumes(h.ctx); err != nil || len(vs) != 0 {
		t.Fatalf("volumes %+v (%v), want none: no stored ID folds onto DB", vs, err)
	}
	if _, err := h.e.CreateVolume(h.ctx, volume("DB")); err == nil || !strings.Contains(err.Error(), "case-insensitive") {
		t.Fatalf(`volume "DB" created in a case-insensitive state dir whose staging path for it holds db's leftover mount: %v`, err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "DB", Alloc: "web"}); err == nil {
		t.Error(`claim of "DB" went ahead onto db's leftover staging path`)
	}
	if b, err := os.ReadFile(mark); err != nil || string(b) != "db's" {
		t.Errorf("db's leftover staging path touched: %q, %v", b, err)
	}
}

// TestCaseFoldedStateDirIsRefused is the same on a real case-insensitive directory: a tmpfs
// mounted with casefold (Linux 6.13 on, a kernel built with CONFIG_UNICODE).
func TestCaseFoldedStateDirIsRefused(t *testing.T) {
	t.Parallel()
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
