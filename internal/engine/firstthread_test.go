package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/procfs/procfstest"
)

// firstThreadExitsEnv, set to a socket path, makes the test binary a plugin server whose first
// thread exits: it listens there, prints "ready", and ends its first thread alone (a C plugin
// whose main calls pthread_exit), its other threads answering on the socket until its stdin
// closes.
const firstThreadExitsEnv = "VOLCTL_TEST_FIRST_THREAD_EXITS"

// init acts as firstThreadExitsEnv says (procfstest.Child).
func init() {
	procfstest.Child(firstThreadExitsEnv, func(path string) (string, any) {
		_ = os.Remove(path)
		return path, nil
	})
}

// startFirstThreadExits starts the test binary as firstThreadExitsEnv's server on socket, in a
// mount namespace of its own when privateNS, and returns its pid once /proc shows its first
// thread a zombie while the server answers on the socket.
func startFirstThreadExits(t *testing.T, socket string, privateNS bool) int {
	t.Helper()
	var sys *syscall.SysProcAttr
	if privateNS {
		sys = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	}
	pid := procfstest.Start(t, firstThreadExitsEnv, socket, sys)
	for deadline := time.Now().Add(5 * time.Second); SocketPeer(socket) != pid; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d: socket peer %d: want it answering on %s", pid, SocketPeer(socket), socket)
		}
	}
	return pid
}

// The adversary: a node plugin in a mount namespace of its own (a container without the state
// dir rshared) whose first thread has exited while its others serve the socket (a C plugin
// whose main calls pthread_exit). /proc/<pid>/ns/mnt of such a process cannot be read and its
// mountinfo fails, and the mount-view check took "cannot be told" for "the same": every claim
// went ahead against mounts volctl cannot see (rolled back as not published; a reconcile
// recorded claims degraded while their mounts were in place). The namespace is read through a
// thread that runs, and the operation refused as for any plugin in another namespace.
func TestMountViewOfAPluginWhoseFirstThreadExited(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process in a mount namespace of its own")
	}
	h := kernelHarness(t, nil)
	h.stopServe()
	pid := startFirstThreadExits(t, h.socket, true)
	err := h.e.checkMountView(h.ctx, "")
	want := fmt.Sprintf(`plugin "mem" (pid %d, socket %s)`, pid, h.socket)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nsenter -t "+strconv.Itoa(pid)) {
		t.Fatalf("mount view with the plugin's server (pid %d, first thread exited) in a namespace of its own: %v, want a refusal naming %s and nsenter", pid, err, want)
	}
}

// The same server in volctl's own mount namespace is let act: reading through a running
// thread finds the same namespace, not a refusal.
func TestMountViewOfAPluginWhoseFirstThreadExitedSameNamespace(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.stopServe()
	startFirstThreadExits(t, h.socket, false)
	if err := h.e.checkMountView(h.ctx, ""); err != nil {
		t.Fatalf("mount view with the plugin's server in volctl's namespace: %v", err)
	}
}
