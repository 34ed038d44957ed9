package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/store"
)

// listenerImage names what the process pid, the one SO_PEERCRED says listens on a plugin's
// socket, runs now: its pid and start time (which process), the device and inode of its
// program file (/proc/<pid>/exe), and where the kernel placed its stack when it last exec()ed
// (stat field 28, randomised at every exec; a process title change keeps it). A plugin process that exec()s another program keeping its
// listening descriptor (a wrapper exec'ing the driver it is configured with, a plugin
// re-exec'ing itself with other flags) keeps its pid, its start time and the socket file,
// whose identity reusableFingerprint trusts; its program file, or its stack's place, tells the
// new image apart (the same program exec'd again with the kernel's randomisation off is not
// told apart; nor is a new image that sets field 28 back on purpose, prctl(PR_SET_MM_MAP)
// letting it, when the old place lies in its own stack). Where the arguments lie (field 48) is
// not read: any process moves it without an exec, setting a process title longer than its
// arguments (the same prctl, no capability needed), and an unchanged plugin was refused
// (TestProcessTitleChangeIsNoExec).
// Another user's process, to a volctl that is not root, shows its stack as 0 and its program
// file as "?": the same process reads the same way each time, and only its pid and start time
// tell anything.
//
// A process /proc does not show (gone: a launcher that listened, handed the socket to the
// plugin it started and exited) is listenerGone: nothing of what runs behind the socket, which
// a later process given the same pid would seem to change (listenerKnown). "" when nothing
// answers on the socket.
//
// It cannot tell a plugin started anew by a process that keeps the socket and listened on it
// itself (systemd socket activation, a supervisor that listens and starts the plugin): the
// listener is that process, which stays (docs/architecture.md, Plugins behind a held socket).
//
// It reads /proc/<pid>/stat once and stats /proc/<pid>/exe: a second stat read only when the
// first thread has exited and another runs (procfs.Dir).
func listenerImage(pid int32) string {
	if pid <= 0 {
		return ""
	}
	proc := filepath.Join(procRoot, strconv.Itoa(int(pid)))
	f, err := procfs.StatFields(filepath.Join(proc, "stat"))
	if err != nil || len(f) < 28-2 {
		return fmt.Sprintf("pid %d %s", pid, listenerGone)
	}
	start := f[22-3] // the first thread's, which an exec by another thread keeps
	// What the threads share, the program and its memory, through a thread that runs
	// (procfs.Dir): a first thread that exited shows none of it.
	dir := proc
	if f[0] == "Z" {
		dir = procfs.Dir(procRoot, int(pid))
		if dir != proc {
			if tf, err := procfs.StatFields(filepath.Join(dir, "stat")); err == nil && len(tf) >= 28-2 {
				f = tf
			}
		}
	}
	stack := f[28-3]
	exe := "?"
	if fi, err := os.Stat(filepath.Join(dir, "exe")); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			exe = fmt.Sprintf("%d:%d", st.Dev, st.Ino)
		}
	}
	return fmt.Sprintf("pid %d start %s exe %s stack %s", pid, start, exe, stack)
}

// listenerGone ends listenerImage's record of a listener /proc does not show.
const listenerGone = "gone, not compared"

// listenerKnown says whether image, a listenerImage, names what a process runs: one of a
// listener gone says nothing of the socket's server (the plugin the gone launcher started
// runs on), and is never compared; a process given its pid later would read as a change.
func listenerKnown(image string) bool {
	return image != "" && !strings.HasSuffix(image, " "+listenerGone)
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
		if s.Listener != "" && !listenerKnown(s.Listener) {
			continue // a listener gone when it was recorded: nothing to compare
		}
		if now := socketListener(ids[i].path); now != "" && now != s.Listener {
			return false
		}
	}
	return true
}

// listenersGone says whether a listener of stored was gone when it was recorded: nothing tells
// an exec of the plugin behind that socket (connectPlugin asks the driver its name).
func listenersGone(stored []store.SocketIdentity) bool {
	for _, s := range stored {
		if s.Listener != "" && !listenerKnown(s.Listener) {
			return true
		}
	}
	return false
}
