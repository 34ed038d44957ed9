package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
)

// requireRootForNewUserTest fails the test, saying why, where it cannot play root and another
// user (these tests are about what a user meets after root, or sudo, made something).
func requireRootForNewUserTest(t *testing.T, mount bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs volctl as root and as nobody (uid %d): run it as root", nobody)
	}
	if mount {
		if err := hostpathtest.CanMount(); err != nil {
			t.Fatalf("this test runs quickstart, which claims a volume and so bind-mounts: %v", err)
		}
	}
}

// runAdvisedAsSudoUser runs one line of advice printed to the user who ran `sudo volctl ...`,
// as that user would in their own shell: a line that starts with "sudo " runs the rest as
// root (what sudo does for them), any other line runs as that user (nobody here).
func runAdvisedAsSudoUser(t *testing.T, line, home string) (string, error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	if rest, ok := strings.CutPrefix(line, "sudo "); ok {
		cmd.Args = []string{"/bin/sh", "-c", rest}
	} else {
		cmd.SysProcAttr = asNobody()
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestQuickstartKeptUnderSudoAdvisesCommandsItsUserCanRun ran `sudo volctl quickstart --keep`
// (the Example of `volctl quickstart --help` and of its man page, and the README's first
// command with --keep) as the user nobody would, SUDO_USER and SUDO_UID set as sudo sets them,
// then ran the commands it printed under "Look at it with:" and "Remove it with:", copied
// into that user's shell. Each failed: the kept directory is root's, 0700 (os.MkdirTemp),
// and the advice was printed as if the user were root (`/path/volctl --state-dir .../state
// status`, `rm -rf ...`), so the status said "mkdir .../state: permission denied (volctl runs
// as uid 65534 ...)" and the rm could not remove it. quickstart's help promises "--keep leaves
// the directory (the volume, the event log) and prints how to look at it", and
// TestQuickstartKeepAdviceNamesVolctlAsItWasRun says that advice is "to be copied and run";
// selfForSudo already names volctl as sudo finds it, but the privilege sudo gave is dropped
// from the advice. Found by helper review73.
func TestQuickstartKeptUnderSudoAdvisesCommandsItsUserCanRun(t *testing.T) {
	requireRootForNewUserTest(t, true)
	t.Parallel()
	bin, home := nobodysVolctl(t)
	tmp := hostpathtest.MountDir(t)
	if err := os.Chmod(tmp, 0o755); err != nil { // as /tmp is to every user: searchable
		t.Fatal(err)
	}
	qs := exec.Command(bin, "quickstart", "--keep")
	qs.Dir = tmp
	qs.Env = append(os.Environ(), "TMPDIR="+tmp, "VOLCTL_STATE_DIR="+filepath.Join(tmp, "unused-state"),
		"SUDO_USER=nobody", "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_COMMAND="+bin+" quickstart --keep")
	outb, err := qs.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("sudo volctl quickstart --keep: %v\n%s", err, out)
	}
	kept, _ := filepath.Glob(filepath.Join(tmp, "volctl-quickstart-*"))
	if len(kept) != 1 {
		t.Fatalf("quickstart --keep left %v in %s, want its one directory\n%s", kept, tmp, out)
	}
	_, advice, ok := strings.Cut(out, "Look at it with:\n")
	if !ok {
		t.Fatalf("quickstart --keep printed no advice to look at what it kept:\n%s", out)
	}
	var lines []string
	for _, l := range strings.Split(advice, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	if _, rm, ok := strings.Cut(advice, "Remove it with: "); ok {
		rm, _, _ = strings.Cut(rm, "\n")
		lines = append(lines, rm)
	}
	if len(lines) < 3 {
		t.Fatalf("want the two commands that look at the kept state and the one that removes it; quickstart --keep printed:\n%s", out)
	}
	for _, line := range lines {
		got, err := runAdvisedAsSudoUser(t, line, home)
		if err != nil {
			t.Errorf("after `sudo volctl quickstart --keep`, its advice `%s`, run by the user who ran sudo (uid %d), failed: %v\n%s",
				line, nobody, err, got)
		}
	}
}

// TestRegisterOfRootsHostpathSocketByAnotherUserFailsAtOnceNamingTheUser served volctl's own
// plugin as root, as the tour does, with its socket in a directory every user may search (what
// docs/troubleshooting.md, entry 2, advises for "socket ...: permission denied": "Run volctl as
// root (or as the plugin's user), or serve the socket from a directory this user may search"),
// and registered it as nobody. The plugin makes its socket 0600 whatever the umask
// (docs/architecture.md: "The socket is 0600 whatever the umask"), so the connect(2) itself is
// refused with EACCES: the advice cannot work for volctl's own plugin, and the refusal was taken
// for a plugin still starting. `volctl plugin register` waited its whole --wait (5 s) for a
// socket that was there all along, then said "fingerprint: GetPluginInfo: Unavailable: plugin
// socket ...: connect: permission denied (...); waited 5s for it to answer (--wait)", not the
// "socket ...: permission denied (volctl runs as uid N: ...)" that docs/troubleshooting.md
// names and that the same socket behind a directory nobody may search gets at once
// (TestNonRootUserMeetsRootsFiles). Its help promises the wait only for "a plugin whose socket
// is missing or refuses connections, as while it starts or restarts". Found by helper review73.
func TestRegisterOfRootsHostpathSocketByAnotherUserFailsAtOnceNamingTheUser(t *testing.T) {
	requireRootForNewUserTest(t, false)
	t.Parallel()
	bin, home := nobodysVolctl(t)
	dir := hostpathtest.ShortDir(t)
	if err := os.Chmod(dir, 0o755); err != nil { // searchable by every user, written by root only
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "hp.sock")
	serve := exec.Command(bin, "plugin", "serve", "hostpath", "--socket", socket, "--root", filepath.Join(dir, "root"), "--node-id", "n1")
	serve.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+filepath.Join(dir, "state"))
	var sout bytes.Buffer
	serve.Stdout, serve.Stderr = &sout, &sout
	startUntilStopped(t, serve, 10*time.Second)
	waitForPath(t, socket)

	start := time.Now()
	code, out := runAsNobody(t, bin, home, filepath.Join(home, "state"), "plugin", "register", "--id", "hostpath", "--socket", socket)
	took := time.Since(start)
	if code != 1 {
		t.Errorf("plugin register as nobody of root's socket exited %d, want 1\n%s", code, out)
	}
	if took > 3*time.Second || strings.Contains(out, "waited") {
		t.Errorf("plugin register as nobody of root's 0600 socket took %s, waiting --wait for a plugin that was serving all along:\n%s", took.Round(time.Millisecond), out)
	}
	for _, want := range []string{"socket " + socket, "permission denied", "volctl runs as uid 65534"} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin register's error lacks %q (docs/troubleshooting.md: `socket ...: permission denied (volctl runs as uid N: ...)`):\n%s", want, out)
		}
	}
}

// startUntilStopped starts cmd and returns stop, which sends it SIGTERM and waits for it to exit
// (killing it after grace), and a channel closed once it has exited. stop runs at the test's
// end too; a second run does nothing.
func startUntilStopped(t *testing.T, cmd *exec.Cmd, grace time.Duration) (stop func(), exited <-chan struct{}) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(grace):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)
	return stop, done
}
