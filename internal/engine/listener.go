package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

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
// plugin it started and exited), or shows without a program (exiting, or a zombie), is
// listenerGone: nothing of what runs behind the socket, which
// a later process given the same pid would seem to change (listenerKnown). "" when nothing
// answers on the socket.
//
// It cannot tell a plugin started anew by a process that keeps the socket and listened on it
// itself (systemd socket activation, a supervisor that listens and starts the plugin): the
// listener is that process, which stays; such a plugin's connections are accepted by another
// process, which acceptedBy tells (docs/architecture.md, Plugins behind a held socket).
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
	fi, err := os.Stat(filepath.Join(dir, "exe"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No program, no memory: the process is exiting, or a zombie, its descriptors about
		// to close (a launcher that handed its socket on and exits: its exit can take seconds
		// on a loaded machine). It is as gone as one /proc no longer shows: recorded as it, a
		// fingerprint taken meanwhile refused every connection once it was reaped ("another
		// process than the one that listened there"), the plugin behind the socket healthy.
		// (Another user's process reads EACCES, not this: it is compared by pid and start.)
		return fmt.Sprintf("pid %d %s", pid, listenerGone)
	case err == nil:
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

// What accepted the connection a plugin was fingerprinted through (acceptedBy), as
// store.SocketIdentity.Accepts records it.
const (
	acceptsListener = "listener"        // the process that listens holds the connection's other end
	acceptsOther    = "another process" // it does not (a supervisor's plugin), or it is gone
	acceptsUnknown  = "unknown"         // it could not be told (no sock_diag, another user's /proc)
)

// acceptedBy says whether the process pid, the one that listens on a plugin's socket
// (SO_PEERCRED), holds the other end of nc, a connection to that socket that some process has
// accept()ed (its first data arrived): acceptsListener when it does, acceptsOther when it does
// not or is gone, acceptsUnknown when that cannot be told. A plugin that listens itself answers
// on what it accepts; behind systemd's socket activation, or a supervisor that listens and
// starts the plugin on the descriptor, the listener stays while the plugin behind it is started
// anew, with other flags maybe: nothing SO_PEERCRED or the socket file tells changes then.
//
// The other end is found by the kernel's socket diagnostics (NETLINK_SOCK_DIAG, UNIX_DIAG_PEER:
// one request), and looked for among the listener's descriptors (/proc/<pid>/fd: one readlink
// each). A forwarding proxy that accepts and connects on to the plugin holds the other end
// itself, and reads as the listener.
//
// A listener gone (no /proc/<pid>: a launcher that handed its socket on and exited) is told
// before the socket diagnostics are asked: it needs none, and where the kernel has none
// (CONFIG_UNIX_DIAG off) the plugin it launched is still fingerprinted on each process's first
// connection, as round 28 had it.
func acceptedBy(nc net.Conn, pid int32) string {
	if pid <= 0 {
		return acceptsUnknown
	}
	dir := filepath.Join(procRoot, strconv.Itoa(int(pid)), "fd")
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return acceptsOther // the listener is gone: a launcher that handed its socket on
	}
	if err != nil {
		return acceptsUnknown
	}
	defer f.Close()
	peer, err := peerInodeOf(nc)
	if err != nil || peer == 0 {
		return acceptsUnknown
	}
	// In chunks, each looked through as it is read: a listener with many descriptors (pid 1
	// under socket activation) costs what the ones before the connection's cost, not a read of
	// every name first (BenchmarkAcceptedByManyDescriptors).
	want := "socket:[" + strconv.FormatUint(uint64(peer), 10) + "]"
	for {
		names, err := f.Readdirnames(128)
		for _, n := range names {
			if l, err := os.Readlink(filepath.Join(dir, n)); err == nil && l == want {
				return acceptsListener
			}
		}
		if errors.Is(err, io.EOF) {
			return acceptsOther
		}
		if err != nil {
			return acceptsUnknown
		}
	}
}

// peerInodeOf is peerInode; a test makes it fail, as a kernel without unix socket diagnostics
// does.
var peerInodeOf = peerInode

// peerInode is the inode of the socket at the other end of the unix socket connection nc, as
// the kernel's unix socket diagnostics report it (UNIX_DIAG_PEER); 0 when it reports none.
func peerInode(nc net.Conn) (uint32, error) {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("a %T, not a unix socket connection", nc)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var st unix.Stat_t
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, err
	}
	defer unix.Close(s)
	_ = unix.SetsockoptTimeval(s, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1})
	// struct nlmsghdr, then struct unix_diag_req: family, protocol, pad, states, ino, show,
	// cookie (none: INET_DIAG_NOCOOKIE twice).
	const udiagShowPeer, unixDiagPeer = 0x4, 2
	ne := binary.NativeEndian
	req := make([]byte, 16+24)
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1)
	req[16] = unix.AF_UNIX
	ne.PutUint32(req[20:], ^uint32(0))
	ne.PutUint32(req[24:], uint32(st.Ino))
	ne.PutUint32(req[28:], udiagShowPeer)
	ne.PutUint32(req[32:], ^uint32(0))
	ne.PutUint32(req[36:], ^uint32(0))
	if err := unix.Sendto(s, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, err
	}
	buf := make([]byte, 512)
	n, _, err := unix.Recvfrom(s, buf, 0)
	if err != nil {
		return 0, err
	}
	buf = buf[:n]
	if len(buf) < 16 {
		return 0, errors.New("sock_diag: short answer")
	}
	if ne.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		if len(buf) >= 20 {
			return 0, fmt.Errorf("sock_diag: %w", unix.Errno(-int32(ne.Uint32(buf[16:]))))
		}
		return 0, errors.New("sock_diag: error")
	}
	if l := int(ne.Uint32(buf[0:])); l < len(buf) {
		buf = buf[:l]
	}
	// struct unix_diag_msg (16 bytes), then its attributes (struct rtattr, 4-byte aligned).
	if len(buf) < 32 {
		return 0, errors.New("sock_diag: short answer")
	}
	for a := buf[32:]; len(a) >= 4; {
		l := int(ne.Uint16(a))
		if l < 4 || l > len(a) {
			break
		}
		if ne.Uint16(a[2:]) == unixDiagPeer && l >= 8 {
			return ne.Uint32(a[4:]), nil
		}
		if l = (l + 3) &^ 3; l > len(a) {
			break
		}
		a = a[l:]
	}
	return 0, nil
}

// acceptsRecorded says whether stored records, for each socket that answered, what accepted
// the connection the plugin was fingerprinted through (a record from before round 29 does not:
// the plugin is fingerprinted once again).
func acceptsRecorded(stored []store.SocketIdentity) bool {
	for _, s := range stored {
		if s.Listener != "" && s.Accepts == "" {
			return false
		}
	}
	return true
}

// acceptedElsewhere says whether a socket of stored was answered by another process than its
// listener when the plugin was fingerprinted, or by one that could not be told
// (mayBeAcceptedElsewhere), or its listener was gone then (whatever accepts records): nothing
// but asking the plugin tells it started anew, or exec'd another driver, behind the same
// listener (connectPlugin fingerprints it on a process's first connection).
func acceptedElsewhere(stored []store.SocketIdentity) bool {
	for _, s := range stored {
		if mayBeAcceptedElsewhere(s.Accepts) || s.Listener != "" && !listenerKnown(s.Listener) {
			return true
		}
	}
	return false
}

// mayBeAcceptedElsewhere says whether accepts, what accepted a plugin's connection
// (acceptedBy), leaves open that another process than the listener serves the plugin: one did,
// or it could not be told (`unknown`: no socket diagnostics in the kernel, or the listener's
// descriptors another user's). An unknown reused as the listener's had a plugin restarted behind
// its supervisor's socket with another max_volumes_per_node sent the next process's claim past
// it (TestSupervisedPluginWithoutSocketDiagnostics): nothing but asking the plugin tells it.
func mayBeAcceptedElsewhere(accepts string) bool {
	return accepts == acceptsOther || accepts == acceptsUnknown
}
