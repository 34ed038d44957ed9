package engine

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// anotherPluginsSocket refuses plugin p when a socket file on its paths now (ids) is another
// registered plugin's socket reached under another name: the file at that plugin's path, which
// its listener bound there (getpeername names where), not at p's. A symlink to it, a hard link
// of it or a bind mount of the file put at p's path keeps the driver's name (the same driver
// serving other storage), so the fingerprint that a new file gets passed checkIdentity, and p's
// volume RPCs went to the other plugin's process: a claim published its volume of the same
// external ID to p's volume's alloc. Plugin IDs on one socket however its directory is spelled
// (a symlinked directory, a bind-mounted one: sameEntry) are one process, and not refused; nor
// is a plugin whose own listener bound its path when another plugin's path is the link (that
// plugin is refused). Where the listener's bound name tells nothing (a relative or unnamed
// address), a symlink at p's path to the file at another plugin's path is refused.
//
// It runs where the plugin is fingerprinted afresh (its socket files are new), before any RPC:
// one connect per socket, and a read of the plugin rows only when one is not where it was bound.
func (e *Engine) anotherPluginsSocket(ctx context.Context, p store.Plugin, ids []socketID) error {
	var others []store.Plugin
	for _, s := range ids {
		if s.inode == 0 {
			continue
		}
		bound := boundName(s.path)
		if bound != "" && sameEntry(bound, s.path) {
			continue // its listener bound it here
		}
		link := ""
		if fi, err := os.Lstat(s.path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			link, _ = os.Readlink(s.path)
		}
		if bound == "" && link == "" {
			continue // nothing tells whose name this is
		}
		if others == nil {
			var err error
			if others, err = viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Plugin, error) { return tx.Plugins().List() }); err != nil {
				return err
			}
		}
		for _, o := range others {
			if o.ID == p.ID {
				continue
			}
			for _, q := range pluginSockets(o) {
				if qid := identify(q); qid[0].inode == 0 || qid[0].dev != s.dev || qid[0].inode != s.inode || sameEntry(q, s.path) {
					continue
				}
				if bound != "" && !sameEntry(bound, q) {
					continue
				}
				return conflictf("socket %s of plugin %q is plugin %q's socket %s under another name (%s): another plugin's process, which would be sent plugin %q's volume RPCs and answer them about its own storage; no RPC goes to it: "+
					"remove %s (umount it, if a bind mount) and start plugin %q on its own socket again; if the two are one plugin process on purpose, register %q on %s",
					spec.QuoteName(s.path), p.ID, o.ID, spec.QuoteName(q), aliasWords(s.path, link), p.ID, spec.QuoteName(s.path), p.ID, p.ID, spec.QuoteName(q))
			}
		}
	}
	return nil
}

// aliasWords says what the entry at path is, another name of a socket file (a symlink to link
// when link is set), and who owns it: who made it so.
func aliasWords(path, link string) string {
	what := "the same file: a hard link of it, or a bind mount of the file"
	if link != "" {
		what = "a symlink to " + spec.QuoteName(link)
	}
	if fi, err := os.Lstat(path); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			what += fmt.Sprintf(", owned by uid %d", st.Uid)
		}
	}
	return what
}

// boundName is the name the process listening on the unix socket at path bound it to, as the
// kernel reports it to a client (getpeername): absolute, else "" (a relative name, an abstract
// or unnamed socket, or nothing answering).
func boundName(path string) string {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return ""
	}
	var sa unix.Sockaddr
	if err := raw.Control(func(fd uintptr) { sa, _ = unix.Getpeername(int(fd)) }); err != nil {
		return ""
	}
	if u, ok := sa.(*unix.SockaddrUnix); ok && filepath.IsAbs(u.Name) {
		return u.Name
	}
	return ""
}

// sameEntry says whether socket paths a and b are one name in one directory: the same name, in
// directories alike once cleaned and their symlinks resolved (resolvedSocket), or one directory
// (a bind-mounted one). Not another name of the file (a symlink at the name, a hard link, a bind
// mount of the file itself), which oneSocket takes for one socket.
func sameEntry(a, b string) bool {
	if filepath.Base(a) != filepath.Base(b) {
		return false
	}
	if resolvedSocket(a) == resolvedSocket(b) {
		return true
	}
	var sa, sb syscall.Stat_t
	return syscall.Stat(filepath.Dir(a), &sa) == nil && syscall.Stat(filepath.Dir(b), &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}
