package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
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
// (a symlinked directory, a bind-mounted one: sameEntry) are one process, and not refused,
// unless p's socket was in another directory when p was last fingerprinted (its stored Entry):
// p's directory replaced since by a symlink to the other's, or the other's bind-mounted on it.
// Nor is a plugin whose own listener bound its path when another plugin's path is the link
// (that plugin is refused). Where the listener's bound name tells nothing (a relative or
// unnamed address, or one that is neither path: a listener in a container, a name renamed
// after binding), a symlink at p's path to the file at another plugin's path is refused, and
// so is a hard link or a bind mount of the file when the other plugin was last fingerprinted
// through that very file at its own path (device and inode, this boot) and p was not
// (recordedThrough): before, nothing was checked, and p's RPCs went to the other's process.
//
// The other registered plugins on one of these files under another name are held to the same
// rule afterwards (aliasesOf, forgetAliases), p among them: a link made before p was registered,
// or before p bound its path, is refused at that plugin's next connection, not only after a
// restart.
//
// It runs where the plugin is fingerprinted afresh (its socket files are new), before any RPC:
// one connect per socket, and a read of the plugin rows only when one is not where it was bound
// (or its bound name is unknown) or its directory is not the one it was in.
func (e *Engine) anotherPluginsSocket(ctx context.Context, p store.Plugin, ids []socketID) error {
	var others []store.Plugin
	list := func() ([]store.Plugin, error) {
		if others == nil {
			var err error
			if others, err = viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Plugin, error) { return tx.Plugins().List() }); err != nil {
				return nil, err
			}
		}
		return others, nil
	}
	for _, s := range ids {
		if s.inode == 0 {
			continue
		}
		if err := aliasRefusal(p, s, list); err != nil {
			return err
		}
	}
	return nil
}

// aliasRefusal is anotherPluginsSocket's rule for socket s of plugin p against the plugins
// registered (list reads them): the conflict naming the plugin whose socket s is, or nil.
func aliasRefusal(p store.Plugin, s socketID, list func() ([]store.Plugin, error)) error {
	var was *socketEntry
	if en, ok := storedEntry(p, s.path); ok {
		was = &en
	}
	// Its directory is not the one it was in (another at its path now, or its path another's):
	// whose name it is now is told by the other plugins' names.
	// Not was.same: a directory bind-mounted on p's keeps p's resolved path, and only its inode
	// tells; a directory made again at a reboot is let go below, by the other plugin's entry.
	moved := was != nil && *was != entryOf(s.path)
	bound := boundName(s.path)
	if bound != "" && sameEntry(bound, s.path) && !moved {
		return nil // its listener bound it here
	}
	link := ""
	if fi, err := os.Lstat(s.path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		link, _ = os.Readlink(s.path)
	}
	others, err := list()
	if err != nil {
		return err
	}
	for _, o := range others {
		if o.ID == p.ID {
			continue
		}
		for _, q := range pluginSockets(o) {
			if q == s.path {
				continue // one path is never another name, whatever its directory is now
			}
			if qid := identify(q); qid[0].inode == 0 || qid[0].dev != s.dev || qid[0].inode != s.inode {
				continue
			}
			if sameEntry(q, s.path) {
				if was == nil || was.same(entryOf(q)) {
					continue // one entry, as it was when p was fingerprinted
				}
				if theirs, ok := storedEntry(o, q); ok && was.same(theirs) {
					continue // one entry when each was last fingerprinted: moved together (a directory made again at a reboot, a release symlink switched)
				}
				return conflictf("socket %s of plugin %q is now plugin %q's socket %s: its directory %s is %s's directory now (a symlink to it, or a bind mount of it, made since plugin %q was fingerprinted with its socket at %s), another plugin's process, which would be sent plugin %q's volume RPCs and answer them about its own storage; no RPC goes to it: "+
					"put plugin %q's own directory back at %s (remove the symlink, or umount the bind mount) and start plugin %q there again; if the two are one plugin process on purpose, register %q again (volctl plugin register)",
					spec.QuoteName(s.path), p.ID, o.ID, spec.QuoteName(q), spec.QuoteName(filepath.Dir(s.path)), o.ID, p.ID, spec.QuoteName(was.resolved), p.ID,
					p.ID, spec.QuoteName(filepath.Dir(s.path)), p.ID, p.ID)
			}
			switch {
			case bound != "" && sameEntry(bound, s.path):
				continue // p's listener bound p's path: q is the other name
			case bound != "" && sameEntry(bound, q):
			case link == "" && (!recordedThrough(o, q, s) || recordedThrough(p, s.path, s)):
				// A hard link or a bind mount of the file, and nothing in the names tells whose.
				// The records do when o was fingerprinted through this very file at q and p
				// through another at its path: the file is o's, at p's path since
				// (TestHardLinkOfAnotherPluginsSocketWhoseBoundNameTellsNothing).
				continue
			}
			return conflictf("socket %s of plugin %q is plugin %q's socket %s under another name (%s): another plugin's process, which would be sent plugin %q's volume RPCs and answer them about its own storage; no RPC goes to it: "+
				"remove %s (umount it, if a bind mount) and start plugin %q on its own socket again; if the two are one plugin process on purpose, register %q on %s",
				spec.QuoteName(s.path), p.ID, o.ID, spec.QuoteName(q), aliasWords(s.path, link), p.ID, spec.QuoteName(s.path), p.ID, p.ID, spec.QuoteName(q))
		}
	}
	return nil
}

// recordedThrough says whether plugin pl was last fingerprinted through socket file s (its
// device and inode, in this boot: another boot's numbers may be another file's) at path.
func recordedThrough(pl store.Plugin, path string, s socketID) bool {
	for _, r := range pl.Fingerprint.Sockets {
		if r.Path == path && r.Dev == s.dev && r.Inode == s.inode && r.Boot != "" && r.Boot == bootID() {
			return true
		}
	}
	return false
}

// aliasesOf are the plugins of all, the registered ones, other than p with a socket that is one
// of p's socket files now (ids) under a name that is not one entry with p's: a stat of each
// socket, no RPC. The caller reads all in a transaction it makes anyway (connectPlugin's record
// of the fingerprint) where it can, and holds what it finds to anotherPluginsSocket's rule
// after (forgetAliases).
func aliasesOf(p store.Plugin, ids []socketID, all []store.Plugin) []store.Plugin {
	var out []store.Plugin
	for _, o := range all {
		if o.ID == p.ID {
			continue
		}
		if slices.ContainsFunc(identify(pluginSockets(o)...), func(q socketID) bool {
			return q.inode != 0 && slices.ContainsFunc(ids, func(s socketID) bool {
				return s.dev == q.dev && s.inode == q.inode && !sameEntry(s.path, q.path)
			})
		}) {
			out = append(out, o)
		}
	}
	return out
}

// forgetAliases holds the plugins aliasesOf found (aliases: on one of p's socket files under
// another name) to anotherPluginsSocket's rule, p registered as it is (all: the registered
// plugins, p's row replaced): one it refuses has the file identity stored with its fingerprint
// forgotten and its connection in this process retired, so that its next connection
// fingerprints it afresh and is refused before any RPC (a symlink made while p was not
// registered, or before p's listener bound p's path, was reused as fingerprinted through until
// its plugin restarted). Failing to forget is logged: the plugin stays as it was. A probe
// (wait false: plugin status, the dashboard) does not wait for another process's write lock,
// nor takes it when the row has nothing to forget: busy, it lets it go, and the next fresh
// fingerprint finds the alias again.
func (e *Engine) forgetAliases(ctx context.Context, p store.Plugin, aliases, all []store.Plugin, wait bool) {
	if len(aliases) == 0 {
		return
	}
	all = append(slices.DeleteFunc(slices.Clone(all), func(o store.Plugin) bool { return o.ID == p.ID }), p)
	list := func() ([]store.Plugin, error) { return all, nil }
	for _, o := range aliases {
		var refused error
		for _, q := range identify(pluginSockets(o)...) {
			if q.inode != 0 {
				if refused = aliasRefusal(o, q, list); refused != nil {
					break
				}
			}
		}
		if refused == nil {
			continue
		}
		e.mu.Lock()
		if c := e.conns[o.ID]; c != nil {
			e.retire(c)
		}
		e.mu.Unlock()
		recorded := slices.ContainsFunc(o.Fingerprint.Sockets, func(s store.SocketIdentity) bool { return s.Inode != 0 })
		update := e.store.UpdateProgress
		if !recorded {
			update = func(context.Context, func(*store.Tx) error) error { return nil } // o's row, as read, has nothing to forget: no lock taken
		} else if !wait {
			update = e.store.TryUpdateProgress
		}
		if err := update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
			cur, err := tx.Plugins().Get(o.ID)
			if err != nil {
				return err
			}
			known := false
			for i := range cur.Fingerprint.Sockets {
				s := &cur.Fingerprint.Sockets[i]
				known = known || s.Inode != 0
				s.Dev, s.Inode, s.CtimeNs = 0, 0, 0 // who served it, and where, stay (forgetFingerprintSockets)
			}
			if !known {
				return nil
			}
			return tx.Plugins().SetFingerprint(o.ID, cur.Fingerprint)
		}); !wait && errors.Is(err, store.ErrBusy) {
			continue // another process writes: the next fresh fingerprint finds it again
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			e.log.Warn("forgetting the fingerprint of a plugin on another plugin's socket", "plugin", o.ID, "err", err)
			continue
		}
		e.log.Warn(fmt.Sprintf("plugin %q will be fingerprinted again at its next connection: %v", o.ID, refused), "plugin", o.ID)
	}
}

// checkAliases is aliasesOf and forgetAliases for a caller that has no transaction to read the
// plugins in (a registration, a probe, a connection made mid-operation): one read more.
func (e *Engine) checkAliases(ctx context.Context, p store.Plugin, ids []socketID, wait bool) {
	all, err := viewOne(ctx, e.store, func(tx *store.Tx) ([]store.Plugin, error) { return tx.Plugins().List() })
	if err != nil {
		e.log.Warn("reading the plugins on another name of a plugin's socket", "plugin", p.ID, "err", err)
		return
	}
	e.forgetAliases(ctx, p, aliasesOf(p, ids, all), all, wait)
}

// socketEntry is where a socket's name is: its path with its directory's symlinks resolved, and
// that directory's device and inode (entryOf).
type socketEntry struct {
	resolved   string
	dev, inode uint64
}

// entryOf is where the name path is now.
func entryOf(path string) socketEntry {
	en := socketEntry{resolved: resolvedSocket(path)}
	var st syscall.Stat_t
	if syscall.Stat(filepath.Dir(path), &st) == nil {
		en.dev, en.inode = st.Dev, st.Ino
	}
	return en
}

// entriesOf is where the names of ids are now.
func entriesOf(ids []socketID) []socketEntry {
	out := make([]socketEntry, len(ids))
	for i, s := range ids {
		out[i] = entryOf(s.path)
	}
	return out
}

// storedEntry is where p's socket path was when p was last fingerprinted, if that was recorded.
func storedEntry(p store.Plugin, path string) (socketEntry, bool) {
	for _, r := range p.Fingerprint.Sockets {
		if r.Path == path && r.Entry != "" {
			return socketEntry{resolved: r.Entry, dev: r.DirDev, inode: r.DirInode}, true
		}
	}
	return socketEntry{}, false
}

// storedEntries is where the names of p's sockets were when p was last fingerprinted.
func storedEntries(p store.Plugin) []socketEntry {
	out := make([]socketEntry, len(p.Fingerprint.Sockets))
	for i, s := range p.Fingerprint.Sockets {
		out[i] = socketEntry{resolved: s.Entry, dev: s.DirDev, inode: s.DirInode}
	}
	return out
}

// same says whether a and b are one entry, as sameEntry says of two paths: one name in
// directories alike once resolved, or in one directory.
func (a socketEntry) same(b socketEntry) bool {
	if filepath.Base(a.resolved) != filepath.Base(b.resolved) {
		return false
	}
	return a.resolved == b.resolved || a.inode != 0 && a.dev == b.dev && a.inode == b.inode
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

// moveTogether records anew, for the other plugins in all, the entry of each socket that was one
// entry with one of p's at both last fingerprints and is one entry with it now (a directory
// bind-mounted at another and made again at a reboot: a new inode for both), as p's is being
// recorded: the one fingerprinted second would otherwise compare its old entry with p's new one
// and be refused as moved into p's directory.
func moveTogether(tx *store.Tx, p store.Plugin, all []store.Plugin) error {
	for _, o := range all {
		if o.ID == p.ID {
			continue
		}
		changed := false
		for i := range o.Fingerprint.Sockets {
			r := &o.Fingerprint.Sockets[i]
			theirs, ok := storedEntry(o, r.Path)
			if !ok {
				continue
			}
			for _, ps := range pluginSockets(p) {
				if mine, ok := storedEntry(p, ps); ok && mine.same(theirs) && sameEntry(ps, r.Path) {
					if now := entryOf(r.Path); now != theirs {
						r.Entry, r.DirDev, r.DirInode = now.resolved, now.dev, now.inode
						changed = true
					}
					break
				}
			}
		}
		if changed {
			if err := tx.Plugins().SetFingerprint(o.ID, o.Fingerprint); err != nil {
				return err
			}
		}
	}
	return nil
}
