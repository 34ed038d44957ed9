package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
)

// TestFileModes checks the modes of everything volctl creates, with every process run under
// umask 000 so that no mode comes from the umask: the state dir 0700; volctl.db and its -wal
// and -shm 0600; the lock dir 0700 and its lock files 0600; the agent's run and logs dirs 0700
// and its pid and log files 0600; the directory it makes for a plugin's socket 0700; and the
// sockets of `volctl plugin serve hostpath`, whether started by hand or by the agent, 0600
// (never world-writable: whoever can connect can make the plugin bind-mount). Nothing under the state dir may be writable by others. No root needed.
func TestFileModes(t *testing.T) {
	t.Parallel()
	dir := hostpathtest.ShortDir(t) // sockets go under it
	state := filepath.Join(dir, "state")
	umask0 := func(args ...string) *exec.Cmd {
		// exec keeps the shell's umask for volctl, and volctl passes it on to what it starts.
		cmd := exec.Command("sh", append([]string{"-c", `umask 000 && exec "$@"`, "sh"}, args...)...)
		cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+state, "NO_COLOR=1")
		return cmd
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := umask0(append([]string{"volctl"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("volctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The umask really is 000 in there: a file created with the usual 0666 keeps every bit.
	probe := filepath.Join(dir, "probe")
	if out, err := umask0("touch", probe).CombinedOutput(); err != nil {
		t.Fatalf("touch: %v\n%s", err, out)
	}
	if got := perm(t, probe); got != 0o666 {
		t.Fatalf("a file created under umask 000 has mode %v, want 0666: the umask did not apply", got)
	}

	// A plugin started by hand.
	socket := filepath.Join(dir, "sockets", "hp.sock")
	serve := umask0("volctl", "plugin", "serve", "hostpath", "--socket", socket, "--root", filepath.Join(dir, "hproot"), "--node-id", "n1")
	stopServe := startBackground(t, serve)
	waitForPath(t, socket)
	want := map[string]fs.FileMode{socket: 0o600, filepath.Join(dir, "hproot"): 0o700}

	// A fresh state dir, the database, and the locks of a volume operation and of the plugin's
	// controller.
	run("plugin", "register", "--id", "hp", "--socket", socket)
	spec := filepath.Join(dir, "v.hcl")
	writeFile(t, spec, `id = "v"
name = "v"
type = "csi"
plugin_id = "hp"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
`)
	run("volume", "create", spec)
	run("volume", "snapshot", "create", "v", "before")
	for path, mode := range map[string]fs.FileMode{
		state:                                      0o700,
		filepath.Join(state, "volctl.db"):          0o600,
		filepath.Join(state, "locks"):              0o700,
		lockFile(state, "volume-v"):                0o600,
		oneLockFile(t, state, "controller-*"):      0o600,
		oneLockFile(t, state, "controller.path-*"): 0o600,
		filepath.Join(state, "volctl.db-lock"):     0o600,
	} {
		want[path] = mode
	}
	// And every other lock volctl made on the way (the publish locks, the directory lock).
	locks, err := filepath.Glob(lockFile(state, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range locks {
		want[path] = 0o600
	}

	// The agent, which keeps the database open (so its -wal and -shm exist) and starts a plugin
	// of its own, which inherits the agent's umask.
	agentSocket := filepath.Join(dir, "agent-sockets", "hx.sock")
	config := filepath.Join(dir, "agent.hcl")
	writeFile(t, config, fmt.Sprintf(`plugin "hx" {
  type   = "monolith"
  socket = %q
  exec {
    command = "volctl"
    args    = ["plugin", "serve", "hostpath", "--root", %q, "--node-id", "n1"]
  }
}
`, agentSocket, filepath.Join(dir, "hxroot")))
	stopAgent := startBackground(t, umask0("volctl", "agent", "--config", config, "--probe-interval", "100ms"))
	for _, p := range []string{agentSocket, filepath.Join(state, "run", "hx.pid"), filepath.Join(state, "volctl.db-wal"), filepath.Join(state, "volctl.db-shm")} {
		waitForPath(t, p)
	}
	for path, mode := range map[string]fs.FileMode{
		agentSocket: 0o600,
		// The directory the agent makes for a plugin's socket: only the owner may reach a
		// socket there, whatever mode the plugin's own listen gives it under the umask.
		filepath.Dir(agentSocket):                0o700,
		filepath.Join(state, "volctl.db-wal"):    0o600,
		filepath.Join(state, "volctl.db-shm"):    0o600,
		lockFile(state, "agent"):                 0o600,
		filepath.Join(state, "run"):              0o700,
		filepath.Join(state, "run", "agent.pid"): 0o600,
		filepath.Join(state, "run", "hx.pid"):    0o600,
		filepath.Join(state, "logs"):             0o700,
		filepath.Join(state, "logs", "hx.log"):   0o600,
	} {
		want[path] = mode
	}
	for path, mode := range want {
		if got := perm(t, path); got != mode {
			t.Errorf("%s: mode %v, want %v", path, got, mode)
		}
	}
	// Whatever else is in the state dir, others cannot write it.
	err = filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s is writable by others: %v", path, info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := stopAgent(); err != nil {
		t.Errorf("agent: %v\n%s", err, out)
	}
	if out, err := stopServe(); err != nil {
		t.Errorf("plugin serve: %v\n%s", err, out)
	}
}

func lockFile(state, name string) string { return filepath.Join(state, "locks", name+".lock") }

// oneLockFile is the one lock under state whose name matches pattern: the controller's locks
// are named by its socket (engine socketLocks), so found by their prefix.
func oneLockFile(t *testing.T, state, pattern string) string {
	t.Helper()
	found, err := filepath.Glob(lockFile(state, pattern))
	if err != nil || len(found) != 1 {
		t.Fatalf("lock files %s: %v (%v), want one", pattern, found, err)
	}
	return found[0]
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startBackground starts a long-running volctl (a plugin, the agent) and returns a function
// that stops it with SIGTERM, as a service manager would, and returns its output and how it
// ended. The process is killed at cleanup if the test never stopped it.
func startBackground(t *testing.T, cmd *exec.Cmd) (stop func() (string, error)) {
	t.Helper()
	stop, _ = startBackgroundOutput(t, cmd)
	return stop
}

// startBackgroundOutput is startBackground that also gives the output as it comes, for a test
// that reads the process's log while it runs.
func startBackgroundOutput(t *testing.T, cmd *exec.Cmd) (stop func() (string, error), out *iostreams.SyncBuffer) {
	t.Helper()
	out = new(iostreams.SyncBuffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop = func() (string, error) {
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := <-done
		return out.String(), err
	}
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return stop, out
}

// waitForPath waits for a file or socket a background process creates. The limit is generous
// (a shared, loaded machine); it bounds a hang, it is not a timing assertion.
func waitForPath(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within 30s", path)
		}
	}
}
