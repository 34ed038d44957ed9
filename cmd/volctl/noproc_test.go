package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// /proc not mounted where volctl runs (a mount namespace without it): what needs the mount
// table is refused, saying why and what to do, not answered from a table read as empty. A
// reconcile says /proc is missing; an Open of a state dir whose database is missing but whose
// staging dir holds volumes' paths (a lost database's stagings, maybe mounted) is refused
// rather than started empty over them. Before, the reconcile said only "open
// /proc/self/mountinfo: no such file or directory", and the Open started an empty state.
func TestNoProcIsAClearRefusal(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("a mount namespace without /proc needs root")
	}
	bin := buildVolctl(t)
	state := filepath.Join(t.TempDir(), "state")
	noProc := func(args ...string) (string, error) {
		cmd := exec.Command("/bin/sh", append([]string{"-c", `umount -l /proc && exec "$@"`, "sh", bin}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "VOLCTL_STATE_DIR=" + state}
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // Go makes its mounts private
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := exec.Command(bin, "--state-dir", state, "volume", "status").CombinedOutput(); err != nil {
		t.Fatalf("volume status: %v\n%s", err, out)
	}
	out, err := noProc("reconcile")
	if err == nil || !strings.Contains(out, "/proc is not mounted") || !strings.Contains(out, "mount -t proc proc /proc") {
		t.Errorf("reconcile without /proc: %v\n%s\nwant it refused, saying /proc is not mounted and what to do", err, out)
	}
	// A lost database: its stagings left below staging/.
	if err := os.MkdirAll(filepath.Join(state, "staging", "hp", "vol"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"volctl.db", "volctl.db-wal", "volctl.db-shm"} {
		if err := os.Remove(filepath.Join(state, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	out, err = noProc("volume", "status")
	if err == nil || !strings.Contains(out, "missing or empty") || !strings.Contains(out, "/proc is not mounted") {
		t.Errorf("volume status without /proc, the database lost: %v\n%s\nwant it refused, saying why", err, out)
	}
	if fi, err := os.Stat(filepath.Join(state, "volctl.db")); err == nil && fi.Size() > 0 {
		t.Error("an empty state was started over the lost database's stagings")
	}
}
