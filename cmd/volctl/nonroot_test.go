package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// runAsNobody runs nobody's copy of volctl (nobodysVolctl) on state and returns its exit
// status and what it wrote.
func runAsNobody(t *testing.T, bin, home, state string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "VOLCTL_STATE_DIR=" + state}
	cmd.SysProcAttr = asNobody()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("volctl %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// A user who is not root meets what root made: the README's tour puts the plugin's socket in
// root's private state dir, and a state dir made with sudo is root's. volctl must say what is
// wrong and what to do: the socket is there but out of this user's reach (not "does not exist
// (is the plugin running?)" while it runs, after waiting --wait for it to appear), and root's
// state dir is used by running as root (not "chown it to this user", which would hand root's
// mounts to that user).
func TestNonRootUserMeetsRootsFiles(t *testing.T) {
	t.Parallel()
	bin, home := nobodysVolctl(t)

	t.Run("socket out of reach", func(t *testing.T) {
		t.Parallel()
		socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
		code, out := runAsNobody(t, bin, home, filepath.Join(home, "state"), "plugin", "register", "--id", "hp", "--socket", socket)
		if code != 1 {
			t.Errorf("plugin register exited %d, want 1\n%s", code, out)
		}
		for _, want := range []string{"socket " + socket, "permission denied", "uid 65534"} {
			if !strings.Contains(out, want) {
				t.Errorf("plugin register's error lacks %q:\n%s", want, out)
			}
		}
		for _, wrong := range []string{"does not exist", "is the plugin running", "waited"} {
			if strings.Contains(out, wrong) {
				t.Errorf("plugin register's error says %q of a socket that is there, out of this user's reach:\n%s", wrong, out)
			}
		}
	})

	t.Run("state dir out of reach", func(t *testing.T) {
		t.Parallel()
		private := filepath.Join(filepath.Dir(home), "private") // root's, 0700
		if err := os.Mkdir(private, 0o700); err != nil {
			t.Fatal(err)
		}
		state := filepath.Join(private, "state")
		code, out := runAsNobody(t, bin, home, state, "status")
		if code != 1 {
			t.Errorf("status exited %d, want 1\n%s", code, out)
		}
		for _, want := range []string{state, "permission denied", "volctl runs as uid 65534", "run volctl as root", "--state-dir"} {
			if !strings.Contains(out, want) {
				t.Errorf("status on a state dir this user cannot make lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("root's state dir", func(t *testing.T) {
		t.Parallel()
		state := filepath.Join(filepath.Dir(home), "roots-state") // beside home: nobody can reach it
		if err := os.Mkdir(state, 0o700); err != nil {
			t.Fatal(err)
		}
		code, out := runAsNobody(t, bin, home, state, "status")
		if code != 1 {
			t.Errorf("status exited %d, want 1\n%s", code, out)
		}
		if want := "state dir " + state + " is owned by uid 0 (root), not by this user (uid 65534): run volctl as root (sudo) to use it, or use another --state-dir"; !strings.Contains(out, want) {
			t.Errorf("status on root's state dir:\n got %s\nwant %s", out, want)
		}
		if strings.Contains(out, "chown") {
			t.Errorf("status on root's state dir advises a chown, which would hand root's mounts to this user:\n%s", out)
		}
	})
}
