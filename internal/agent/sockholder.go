package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/spec"
)

// SO_PEERCRED names the process that called listen() on a unix socket, not the one that holds
// it now: a server that listens, then daemonises, hands the listening socket to its daemon and
// exits, and the credentials name the exited process (or whatever process got its pid since).
// The agent then finds the holder by the listening socket's inode: the kernel's socket
// diagnostics (sock_diag, the netlink interface `ss` reads) list each listening unix socket
// with the inode of the file it is bound to, which is the socket path's, and a process holding
// the socket has a descriptor linked to socket:[<its inode>] in /proc/<pid>/fd.

// socketHolder returns the process holding the listening socket at path: peer, SO_PEERCRED's
// answer, when it holds it, or when that cannot be told (no sock_diag; its descriptors are
// another user's); else the process among those ours accepts that holds it, or peer when none
// does. ours is asked before any descriptor is read, so only the plugin's processes are
// looked into.
func socketHolder(path string, peer int, ours func(pid int) bool) int {
	pid, _ := holderOf(path, peer, ours)
	return pid
}

// holderOf is socketHolder, saying too whether the pid it returns was seen holding the socket
// (seen), which peer, returned when it cannot be told or nothing ours holds it, may not be.
func holderOf(path string, peer int, ours func(pid int) bool) (pid int, seen bool) {
	ino, err := listenerInode(path)
	if err != nil {
		return peer, false
	}
	if held, err := holdsSocket(peer, ino); held || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
		return peer, held
	}
	for _, pid := range procPids() {
		if pid == peer || !ours(pid) {
			continue
		}
		if held, _ := holdsSocket(pid, ino); held {
			return pid, true
		}
	}
	return peer, false
}

// servedBy is how a log line names the process serving the socket at path, one the agent does
// not supervise (a plugin it did not start), as slog attributes. SO_PEERCRED names the process
// that called listen(), which may have handed the socket on and exited (a plugin that listens,
// then daemonises), its pid free for another process: the holder is looked for among all
// processes (only to name it: nothing is signalled), and when it cannot be found, the pid that
// listened is named as that, with whether it still runs, never as the server.
func servedBy(path string) []any {
	peer := peerPid(path)
	if peer <= 0 {
		return []any{"served_by_pid", "unknown (no credentials from the socket)"}
	}
	pid, seen := holderOf(path, peer, func(int) bool { return true })
	if seen {
		return []any{"served_by_pid", pid}
	}
	if _, live := procGroup(peer); live {
		return []any{"served_by_pid", "unknown", "listened_by_pid", peer,
			"note", "the process that called listen() on the socket runs, but was not seen holding it"}
	}
	return []any{"served_by_pid", "unknown", "listened_by_pid", peer,
		"note", "the process that called listen() on the socket has exited, handing it on, and no process holding it could be read"}
}

// foreignServer is what serves the socket at path of a plugin the agent found live at its
// start, not started by an agent of its state dir, for the plugin's record (plugin status): the
// pid seen holding the listening socket (0 when none is) and a sentence naming it, and whether it
// carries a volctl agent's plugin instance in its environment (another agent, on another state
// dir, runs it, or an earlier one whose pid file is gone). Looked for as servedBy looks.
func foreignServer(path string) (pid int, note string) {
	sock := spec.QuoteName(path)
	peer := peerPid(path)
	if peer <= 0 {
		return 0, fmt.Sprintf("its socket %s was live when the agent started it, served by a process it could not name (no credentials from the socket), which no agent of this state dir started", sock)
	}
	pid, seen := holderOf(path, peer, func(int) bool { return true })
	if !seen {
		if _, live := procGroup(peer); !live {
			return 0, fmt.Sprintf("its socket %s was live when the agent started it; pid %d listened on it and has exited, handing it on to a process the agent could not read; no agent of this state dir started it", sock, peer)
		}
		return peer, fmt.Sprintf("its socket %s was live when the agent started it, listened on by pid %d (not seen holding it), which no agent of this state dir started", sock, peer)
	}
	whose := "which no agent of this state dir started"
	if agentInstance(pid) {
		whose = "which carries a volctl agent's plugin instance in its environment but is not this agent's: another agent (on another state dir) runs it, or one whose pid file is gone"
	}
	return pid, fmt.Sprintf("its socket %s was live when the agent started it, served by pid %d, %s", sock, pid, whose)
}

// agentInstance reports whether pid's environment holds a volctl agent's plugin instance
// (instanceEnv), whichever agent's.
func agentInstance(pid int) bool {
	b, err := os.ReadFile(filepath.Join(procfs.Dir("/proc", pid), "environ"))
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if strings.HasPrefix(kv, instanceEnv+"=") {
			return true
		}
	}
	return false
}

// holdsSocket reports whether pid has a descriptor on the socket with inode ino; an error when
// its descriptors cannot be read (it has exited: fs.ErrNotExist; another user's: permission).
// They are read through a thread that runs: a process whose first thread has exited shows
// none through it (procfs).
func holdsSocket(pid int, ino uint32) (bool, error) {
	dir := filepath.Join(procfs.Dir("/proc", pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	want := "socket:[" + strconv.FormatUint(uint64(ino), 10) + "]"
	for _, en := range entries {
		if link, err := os.Readlink(dir + "/" + en.Name()); err == nil && link == want {
			return true, nil
		}
	}
	return false, nil
}

// The parts of <linux/sock_diag.h> and <linux/unix_diag.h> the lookup uses; x/sys/unix has
// the netlink family and message type only.
const (
	udiagShowVFS  = 0x2 // UDIAG_SHOW_VFS: the bound file's inode and device
	unixDiagVFS   = 1   // UNIX_DIAG_VFS attribute
	tcpListen     = 10  // TCP_LISTEN: unix sockets report their state in TCP's terms
	unixDiagReqSz = 24  // struct unix_diag_req
	unixDiagMsgSz = 16  // struct unix_diag_msg
)

// listenerInode returns the inode of the listening unix socket bound to the file at path, as
// sock_diag lists it (the inode /proc/<pid>/fd names sockets by).
func listenerInode(path string) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return 0, fmt.Errorf("%s is not a socket", spec.QuoteName(path))
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 2}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	ne := binary.NativeEndian
	req := make([]byte, unix.NLMSG_HDRLEN+unixDiagReqSz)
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], 1) // sequence
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_UNIX
	ne.PutUint32(r[4:], 1<<tcpListen) // udiag_states: listeners only
	ne.PutUint32(r[12:], udiagShowVFS)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return 0, fmt.Errorf("sock_diag: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return 0, fmt.Errorf("sock_diag: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return 0, errors.New("no listening socket is bound to " + path)
			case unix.NLMSG_ERROR:
				return 0, errors.New("sock_diag: the kernel refused the query")
			}
			if len(m.Data) < unixDiagMsgSz {
				continue
			}
			ino := ne.Uint32(m.Data[4:])
			for a := m.Data[unixDiagMsgSz:]; len(a) >= unix.SizeofRtAttr; {
				l, typ := int(ne.Uint16(a[0:])), ne.Uint16(a[2:])
				if l < unix.SizeofRtAttr || l > len(a) {
					break
				}
				if typ == unixDiagVFS && l >= unix.SizeofRtAttr+8 {
					vino, vdev := ne.Uint32(a[4:]), ne.Uint32(a[8:])
					// The kernel's dev_t: major in the top 12 bits, minor in the low 20.
					if vino == uint32(st.Ino) && vdev>>20 == unix.Major(st.Dev) && vdev&(1<<20-1) == unix.Minor(st.Dev) {
						return ino, nil
					}
				}
				a = a[min(len(a), (l+unix.RTA_ALIGNTO-1)&^(unix.RTA_ALIGNTO-1)):]
			}
		}
	}
}
