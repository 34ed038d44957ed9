package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// A umask that takes the owner's own access (0777, 0377) when the state dir is first made: the
// state dir, its lock file, the lock dir and the locks are still the user's to use, at the next
// command under an ordinary umask as at this one. Before, they were made with no permission
// bits at all, and a user other than root, whom no permission bit binds, was refused every
// command after ("open state: open DIR: permission denied") until they chmod-ed them by hand.
func TestOwnerlessUmaskLeavesAUsableStateDir(t *testing.T) {
	t.Parallel()
	bin, home := nobodysVolctl(t)
	state := filepath.Join(home, "sub", "state") // a parent made too
	run := func(umask string) {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-c", "umask "+umask+" && exec \"$0\" volume status", bin)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "VOLCTL_STATE_DIR=" + state}
		cmd.SysProcAttr = asNobody()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("volume status under umask %s: %v\n%s", umask, err, out)
		}
	}
	run("0777")
	run("0022")
	for path, want := range map[string]os.FileMode{filepath.Join(home, "sub"): 0o700, state: 0o700, filepath.Join(state, "locks"): 0o700,
		filepath.Join(state, "volctl.db"): 0o600, filepath.Join(state, "volctl.db-lock"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
}

// nobody is the user tests run volctl as when it must not be root.
const nobody = 65534

// nobodysVolctl skips unless the test runs as root, and returns a copy of volctl in a home
// directory of its own that nobody owns, where nobody can run it.
func nobodysVolctl(t *testing.T) (bin, home string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("runs volctl as another user, which needs root")
	}
	home = t.TempDir()
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(home), 0o711); err != nil { // the test's own dir: traversable
		t.Fatal(err)
	}
	// Copied by cp, not written by this process: a file this process holds open for writing
	// is held open too by every child another parallel test forks meanwhile (until its exec),
	// and exec of it then fails with "Text file busy" (ETXTBSY; seen in CI at load).
	bin = filepath.Join(home, "volctl")
	if out, err := exec.Command("cp", buildVolctl(t), bin).CombinedOutput(); err != nil {
		t.Fatalf("cp volctl: %v\n%s", err, out)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, home
}

// asNobody makes a command run as nobody, with no supplementary groups.
func asNobody() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
}
