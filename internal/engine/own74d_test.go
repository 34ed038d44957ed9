package engine

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDashboardOnAReadOnlyBindOfTheStateDirReadsTheState: a state dir on a read-only file
// system (a read-only bind of the live state dir, which architecture.md names as where "a
// dashboard on a read-only bind still does" read, a backup mounted read-only) opens for
// reading (store.openReadOnly), but that open never records the database file's device and
// inode (Store.file stays zero, set by openWritable alone). Store.CheckFile then finds "another
// file at its path" on every call, so every reader that checks it first fails with
// store.ErrReplaced and the advice "restart this volctl", which fails the same way after the
// restart: engine.Dashboard (the dashboard shows the replaced-state box and nothing else),
// Engine.CheckStateFile (events --follow stops at its first poll; the metrics scrape and
// /healthz this round made depend on it fail and say not ready). Correct: a store opened
// read-only checks the file it opened (or, immutable, the file readPool reopens on), and the
// dashboard and CheckStateFile read an unreplaced read-only state without error.
// Found by helper review74 (own4).
func TestDashboardOnAReadOnlyBindOfTheStateDirReadsTheState(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("db"))
	h.e.Close()
	h.e = nil

	ro := t.TempDir()
	if err := unix.Mount(h.dir, ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("precondition: bind-mounting the state dir (needs root with CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(ro, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", ro, err)
		}
	})
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("precondition: remounting the bind read-only: %v", err)
	}
	e, err := Open(h.ctx, Config{StateDir: ro, Mounts: h.mounts})
	if err != nil {
		t.Fatalf("open on the read-only bind %s: %v", ro, err)
	}
	t.Cleanup(func() { e.Close() })
	if e.store.CheckWritable() == nil {
		t.Fatalf("precondition: the state at %s opened writable; want it opened read-only", ro)
	}

	d, err := e.Dashboard(h.ctx, 10)
	if err != nil {
		t.Errorf("dashboard on a read-only bind of the state dir, nothing replaced: %v; want the state read (volume db)", err)
	} else if len(d.Volumes) != 1 {
		t.Errorf("dashboard on a read-only bind read %d volumes, want 1 (db)", len(d.Volumes))
	}
	if err := e.CheckStateFile(); err != nil {
		what := "an error"
		if strings.Contains(err.Error(), "restart this volctl") {
			what = "an error whose advice (restart) fails the same way after a restart"
		}
		t.Errorf("CheckStateFile (events --follow's poll, the metrics scrape, /healthz) on a read-only state nothing replaced: %s: %v; want nil", what, err)
	}
}
