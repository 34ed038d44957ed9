package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/store"
)

// listenerImage names what the process pid, the one SO_PEERCRED says listens on a plugin's
// socket, runs now: its pid and start time (which process), the device and inode of its
// program file (/proc/<pid>/exe), and where the kernel placed its stack and arguments when it
// last exec()ed (stat fields 28 and 48, randomised at every exec). A plugin process that
// exec()s another program keeping its listening descriptor (a wrapper exec'ing the driver it
// is configured with, a plugin re-exec'ing itself with other flags) keeps its pid, its start
// time and the socket file, whose identity reusableFingerprint trusts; its program file, or its
// stack's place, tells the new image apart (the same program exec'd again with the kernel's
// randomisation off and arguments of the same length is not told apart). A field /proc does
// not show (another user's process to a volctl that is not root; a process gone) is "?": the
// same process reads the same way each time. "" when nothing answers on the socket.
//
// It cannot tell a plugin started anew by a process that keeps the socket and listened on it
// itself (systemd socket activation, a supervisor that listens and starts the plugin): the
// listener is that process, which stays (docs/architecture.md, Plugins behind a held socket).
func listenerImage(pid int32) string {
	if pid <= 0 {
		return ""
	}
	field := func(f []string, n int) string { // stat field n (1-based), f from the third on
		if n-3 < len(f) {
			return f[n-3]
		}
		return "?"
	}
	start := "?"
	if f, err := procfs.StatFields(filepath.Join(procRoot, strconv.Itoa(int(pid)), "stat")); err == nil {
		start = field(f, 22) // the first thread's, which an exec by another thread keeps
	}
	// What the threads share, the program and its memory, through a thread that runs
	// (procfs.Dir): a first thread that exited shows none of it.
	dir := procfs.Dir(procRoot, int(pid))
	stack, args := "?", "?"
	if f, err := procfs.StatFields(filepath.Join(dir, "stat")); err == nil {
		stack, args = field(f, 28), field(f, 48)
	}
	exe := "?"
	if fi, err := os.Stat(filepath.Join(dir, "exe")); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			exe = fmt.Sprintf("%d:%d", st.Dev, st.Ino)
		}
	}
	return fmt.Sprintf("pid %d start %s exe %s stack %s args %s", pid, start, exe, stack, args)
}

// socketListener is listenerImage of the process listening on the unix socket at path, ""
// when nothing answers there.
func socketListener(path string) string {
	if cred := socketCred(path); cred != nil {
		return listenerImage(cred.Pid)
	}
	return ""
}

// sameListeners says whether the processes listening on ids now run what the stored
// fingerprint of p recorded they ran (socketListener): a fingerprint is reused only then. One
// recorded by an older volctl, without it, is not: the plugin is fingerprinted once again.
func sameListeners(stored []store.SocketIdentity, ids []socketID) bool {
	for i, s := range stored {
		if ids[i].inode == 0 {
			continue
		}
		if now := socketListener(ids[i].path); now != "" && now != s.Listener {
			return false
		}
	}
	return true
}
