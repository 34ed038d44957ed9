package engine

import (
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// citime35: a launcher that listened, handed its socket to the plugin it started and exits,
// fingerprinted while exiting (its program and memory gone, its descriptors not yet closed: a
// zombie, or a race-built process's exit on a loaded machine, seconds long) was recorded as
// "pid L start S exe ? stack 0", a known image. Once it was reaped, every connection to the
// unchanged plugin behind the socket was refused ("another process than the one that listened
// there ... that one is gone"), and the agent, the plugin unhealthy past its health timeout,
// restarted it, killing the daemon it had just left (TestAgentFollowsADaemonThatInheritedItsSocket
// under load). A listener without a program is gone: never compared. A live process, another
// user's read without its program (EACCES) included, is compared as before.
func TestListenerThatIsExitingIsGone(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	// Until it has exited, without reaping it: a zombie, as a launcher is until its parent waits.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if img := listenerImage(int32(cmd.Process.Pid)); listenerKnown(img) {
		t.Errorf("a listener that exited, not yet reaped, recorded as %q, a known image: the unchanged plugin behind its socket is refused once it is reaped", img)
	}
	// The honest case: a live process's image is known, its program file read.
	if img := listenerImage(int32(unix.Getpid())); !listenerKnown(img) || strings.Contains(img, "exe ?") {
		t.Errorf("this live process's image %q: want it known, its program file read", img)
	}
}
