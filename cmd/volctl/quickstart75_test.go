package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// TestInitIntoAnExistingDirectoryDoesNotAdviseRemovingIt: a new user who keeps specs in a
// directory runs `volctl init volume specs` (as `volctl init volume data.hcl`, FILE being where
// the example goes). specs is an existing directory, and volctl answers "init: specs already
// exists; not overwriting it (remove it, or give another file: volctl init volume FILE)",
// exit 1: the directory is called a file, and the first remedy offered is to remove it, which
// `rm specs` refuses and `rm -rf specs` does by destroying the user's directory and every spec
// in it. (The open with O_CREAT|O_EXCL of a directory fails with EEXIST, which initRun takes for
// an existing file.) Correct: either write the example into the directory, under the kind's
// default name, or refuse saying specs is a directory and naming a file in it to give instead
// (`volctl init volume specs/volume.hcl`), never advising its removal. It is refused so, and
// the test follows the advice. Found by helper review75.
func TestInitIntoAnExistingDirectoryDoesNotAdviseRemovingIt(t *testing.T) {
	t.Parallel()
	bin := buildVolctl(t)
	work := t.TempDir()
	specs := filepath.Join(work, "specs")
	if err := os.Mkdir(specs, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(specs, "db.hcl")
	if err := os.WriteFile(keep, []byte("# the user's own spec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "init", "volume", "specs")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+filepath.Join(work, "state"))
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err == nil {
		t.Fatalf("`volctl init volume specs` (a directory) exited 0:\n%s", out)
	}
	if _, serr := os.Stat(keep); serr != nil {
		t.Fatalf("the user's spec in the directory is gone: %v", serr)
	}
	if strings.Contains(out, "remove it") {
		t.Errorf("`volctl init volume specs`, specs an existing directory holding the user's specs, advises removing it:\n%s", out)
	}
	if !strings.Contains(out, "specs is a directory") {
		t.Fatalf("`volctl init volume specs` does not say specs is a directory (it calls it a file that exists):\n%s", out)
	}
	// As advised: a file in it.
	advised := "volctl init volume " + filepath.Join("specs", "volume.hcl")
	if !strings.Contains(out, "`"+advised+"`") {
		t.Fatalf("the refusal does not advise %q:\n%s", advised, out)
	}
	cmd = exec.Command(bin, strings.Fields(advised)[1:]...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "VOLCTL_STATE_DIR="+filepath.Join(work, "state"))
	if outb, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the advised `%s`: %v\n%s", advised, err, outb)
	}
	src, err := os.ReadFile(filepath.Join(specs, "volume.hcl"))
	if err != nil {
		t.Fatalf("the advised init wrote no specs/volume.hcl: %v", err)
	}
	if f, diags := spec.NewParser().Parse("volume.hcl", src, spec.VerbCreate); f == nil || len(diags) > 0 {
		t.Errorf("the example written as advised does not validate: %v", diags)
	}
}

// TestNonRootClaimNoMountAdviceWorksWhenFollowed: a user who is not root follows the README's
// tour as themselves (the plugin served by them, volctl run by them, the state dir theirs). The
// claim fails, as it must: the plugin may not bind-mount. The error's advice, from the hint
// volctl adds to the plugin's FAILED_PRECONDITION, is "start `volctl plugin serve hostpath` as
// root (sudo), then run the command again". Followed, it cannot work: volctl's own plugin makes
// its socket 0600 whatever the umask, so a plugin served by root answers root alone, and the
// command run again as the same user is refused at its socket ("permission denied (volctl runs
// as uid N ...)"), besides root's plugin refusing to serve a socket in the user's directory at
// all. docs/troubleshooting.md, entry 1, says what does work: "Run both as root: the plugin ...
// and the command". Correct: the advice said to a volctl that is not root says that volctl
// itself must run as root too (sudo), not only the plugin. This test follows the advice as far as
// it can be followed (the plugin served by root with the same flags), then checks that the
// command run again works, or else that the advice names running volctl itself as root too,
// as it now does. Found by helper review75.
func TestNonRootClaimNoMountAdviceWorksWhenFollowed(t *testing.T) {
	requireRootForNewUserTest(t, false)
	t.Parallel()
	bin, home := nobodysVolctl(t)
	state := filepath.Join(home, "state")
	socket := filepath.Join(home, "hp.sock")
	serveArgs := []string{"plugin", "serve", "hostpath", "--socket", socket, "--root", filepath.Join(home, "hp"), "--node-id", "n1"}

	// serve starts the plugin, as nobody or as root, and returns a stop that waits for it.
	serve := func(asUser bool) (stop func(), out *bytes.Buffer, exited <-chan struct{}) {
		cmd := exec.Command(bin, serveArgs...)
		cmd.Dir = home
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		if asUser {
			cmd.SysProcAttr = asNobody()
		}
		out = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		stop, exited = startUntilStopped(t, cmd, 10*time.Second)
		return stop, out, exited
	}

	stopUsers, _, _ := serve(true)
	waitForPath(t, socket)
	if code, out := runAsNobody(t, bin, home, state, "plugin", "register", "--id", "hostpath", "--socket", socket); code != 0 {
		t.Fatalf("plugin register as the user: exit %d\n%s", code, out)
	}
	specFile := filepath.Join(home, "data.hcl")
	if code, out := runAsNobody(t, bin, home, state, "init", "volume", specFile); code != 0 {
		t.Fatalf("init volume: exit %d\n%s", code, out)
	}
	if code, out := runAsNobody(t, bin, home, state, "volume", "create", specFile); code != 0 {
		t.Fatalf("volume create as the user: exit %d\n%s", code, out)
	}
	code, advice := runAsNobody(t, bin, home, state, "volume", "claim", "data", "--alloc", "web-0")
	if code != 1 || !strings.Contains(advice, "bind-mounting needs root") {
		t.Fatalf("claim as the user with the user's plugin: exit %d, want 1 and the plugin's \"bind-mounting needs root\"\n%s", code, advice)
	}

	// Follow it: the plugin stopped, and started again as root (sudo) as it was started.
	stopUsers()
	stopRoots, rootOut, rootExited := serve(false)
	// Until root's plugin listens, or exits (refusing the socket in the user's directory).
	listening := func() bool { _, err := os.Lstat(socket); return err == nil }
wait:
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !listening(); time.Sleep(20 * time.Millisecond) {
		select {
		case <-rootExited:
			break wait
		default:
		}
	}
	// ... then the command again, by the same user. (rootOut is read once root's plugin is
	// stopped.)
	again, againOut := runAsNobody(t, bin, home, state, "volume", "claim", "data", "--alloc", "web-0")
	stopRoots()
	if again == 0 {
		_, _ = runAsNobody(t, bin, home, state, "volume", "release", "data", "--alloc", "web-0")
		return // the advice worked as given
	}
	if !strings.Contains(advice, "run both as root") || !strings.Contains(advice, "volctl itself") {
		t.Errorf("a claim by a user who is not root, against the plugin they serve, is advised only to start the plugin as root and run the command again; "+
			"followed, it fails.\nThe claim's error (exit %d):\n%s\nroot's `volctl %s`:\n%s\nthe command run again by the same user (exit %d):\n%s",
			code, advice, strings.Join(serveArgs, " "), rootOut, again, againOut)
	}
}
