package engine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// SocketExposure says why another user could stand in for the plugin at socket, or drive it,
// or "": its directory is another user's, or other users may write it (a sticky one, /tmp,
// too: while the plugin does not listen, as when it restarts, anyone may bind the name first),
// or the socket file there is another user's, or every user may connect to it (its mode lets
// others write it, in a directory they may enter: any local user could send the plugin
// NodePublishVolume, as the plugin's user, root most often). volctl, root, would send another
// user's process every request for the plugin's volumes, their secrets included. A warning,
// not a refusal: a plugin may well run as its own user, and the admin chose the path. `plugin
// register` says it; every connection that fingerprints the plugin afresh (its socket files
// are new: it restarted) says it again (exposedSockets), since a restart may have made them so.
func SocketExposure(socket string) string {
	if socket == "" {
		return ""
	}
	dir := filepath.Dir(socket)
	uid := uint32(os.Geteuid())
	trusted := func(u uint32) bool { return u == 0 || u == uid }
	const risk = "another user could listen there while the plugin does not, and be sent volctl's requests, secrets included; " +
		"put the socket in a directory only root (or this user) may write, such as /run/csi"
	enterable := false
	if fi, err := os.Stat(dir); err == nil {
		st, _ := fi.Sys().(*syscall.Stat_t)
		mode := fi.Mode().Perm()
		enterable = mode&0o001 != 0
		switch {
		case st != nil && !trusted(st.Uid):
			return fmt.Sprintf("socket %s is in %s, which uid %d owns: %s", spec.QuoteName(socket), spec.QuoteName(dir), st.Uid, risk)
		case st != nil && pathtrust.OthersMayWrite(st.Mode, st.Gid):
			// pathtrust's rule, the agent's for a plugin's command: a group of root alone (no
			// other member) is root's, one with another member is others'.
			who := ""
			if w := pathtrust.Writers(st.Mode, st.Gid); w != "other users" {
				who = ": " + w
			}
			return fmt.Sprintf("socket %s is in %s, which other users may write (mode %#o)%s: %s", spec.QuoteName(socket), spec.QuoteName(dir), st.Mode&0o7777, who, risk)
		case st == nil && mode&0o002 != 0:
			return fmt.Sprintf("socket %s is in %s, which other users may write (mode %#o): %s", spec.QuoteName(socket), spec.QuoteName(dir), uint32(mode), risk)
		}
		real := dir
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			real = r // the ACL read is of the directory, not of a symlink to it
		}
		if st != nil {
			if who := pathtrust.ACLWriter(real, st.Mode); who != "" {
				return fmt.Sprintf("socket %s is in %s, which %s may write through its ACL (getfacl shows it): %s", spec.QuoteName(socket), spec.QuoteName(dir), who, risk)
			}
		}
	}
	fi, err := os.Lstat(socket)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case ok && !trusted(st.Uid):
		return fmt.Sprintf("socket %s is owned by uid %d, another user, whose process may be what listens there; if it is not the plugin, %s", spec.QuoteName(socket), st.Uid, risk)
	case fi.Mode()&os.ModeSocket != 0 && fi.Mode().Perm()&0o002 != 0 && enterable:
		return fmt.Sprintf("socket %s may be connected to by every user (mode %#o), in %s, which every user may enter: "+
			"any local user could send the plugin requests, NodePublishVolume of a volume wherever they like among them, carried out as the plugin's user; "+
			"start the plugin with a socket only root (or its user) may write (mode 0660 or 0600), or in a directory only they may enter",
			spec.QuoteName(socket), uint32(fi.Mode().Perm()), spec.QuoteName(dir))
	}
	return ""
}

// exposedSockets is a warning for each of c's sockets that SocketExposure finds exposed,
// naming the plugin: a connection that fingerprints the plugin afresh logs them and records
// them as plugin-exposed events with the fingerprint (connectPlugin).
func exposedSockets(c *conn) []string {
	var out []string
	for _, s := range c.sockets {
		if w := SocketExposure(s.path); w != "" {
			out = append(out, fmt.Sprintf("plugin %q: %s", c.plugin.ID, w))
		}
	}
	return out
}

// checkServers refuses a plugin whose socket is served by a process of a user who could have
// put it there only as "any user" (serverRefused), or of another user than the one who served
// it when the plugin was last fingerprinted (servers.refused), before any RPC: asked of each
// socket when the plugin is fingerprinted afresh (its socket files are new), as checkIdentity
// asks the driver's name; srv then holds who serves each. Every connection the plugin's client
// makes afterwards, gRPC's own reconnects after the plugin went away among them, is asked the
// same by the client itself (csi.Config.CheckPeer, set by dialCSI): a check of one connection
// says nothing of the next, which may reach whoever bound the name since.
func checkServers(sockets []socketID, srv *servers) error {
	for _, s := range sockets {
		cred := socketCred(s.path)
		if cred == nil {
			continue // nothing answers: the fingerprint says so
		}
		if err := srv.refused(s.path, cred); err != nil {
			return err
		}
		srv.set(s.path, cred.Uid)
		srv.setListener(s.path, listenerImage(cred.Pid))
		if !srv.seenElsewhereOn(s) {
			srv.setAccepts(s.path, "") // told by the connection that fingerprints it (checkAccepted)
		}
	}
	return nil
}

// servers is who served a plugin's sockets when it was last fingerprinted, the uid of each
// socket's listener by its path, kept with the fingerprint (store.SocketIdentity.ServerUID).
// The path is the one the client dials (serverKey): the plugin's row keeps the socket as the
// user wrote it, and one registered as /run/hp//csi.sock had each connection the client made
// asked about /run/hp/csi.sock, which no uid was recorded for, and let any user's listener in.
// serverRefused lets a user serve from a directory it owns, in one only root may write; but a
// plugin registered while root served it there is not that user's to serve: any process of
// theirs (nobody's: every daemon that runs as nobody) could bind the name while the plugin
// restarts. Registering the plugin again takes whoever serves it then (registerPlugin
// connects with a declaration, no fingerprint).
type servers struct {
	plugin string
	mu     sync.Mutex
	uid    map[string]uint32
	// listener is what each socket's listener ran then (listenerImage), by the same key; a
	// listener gone then is recorded as such, and not compared (listenerKnown).
	listener map[string]string
	// execd is set once a connection found a socket's listener running another image than
	// listener records (checkPeer), or accepted by another process than accepts records
	// (checkAccepted): the connection's fingerprint is stale.
	execd bool
	// accepts is what accepted the connection the plugin was fingerprinted through (acceptedBy),
	// by the same key: recorded with the fingerprint, or told by this client's first connection
	// when not recorded. answered counts the connections accepted on each socket since.
	accepts  map[string]string
	answered map[string]int
	// againElsewhere is set once a socket accepted by another process than its listener accepted
	// another connection of this client (gRPC's reconnect): the process behind it may have been
	// started anew, so the next operation's connection fingerprints the plugin again.
	againElsewhere bool
	// files is the identity of each socket file the row's fingerprint was taken through
	// (serversOf; zero when forgotten: a stale fingerprint), by the same key.
	files map[string]socketID
	// elsewhere is each socket a refusal found accepted by another process than its listener
	// that accepted the fingerprint's connection (checkAccepted), with its file then: the
	// engine records it on the plugin's row (recordAcceptedElsewhere), which takes it.
	elsewhere map[string]socketID
}

// serversOf is who served p's sockets when it was last fingerprinted, as its row records.
func serversOf(p store.Plugin) *servers {
	srv := &servers{plugin: p.ID, uid: map[string]uint32{}, listener: map[string]string{}, accepts: map[string]string{}, answered: map[string]int{},
		files: map[string]socketID{}, elsewhere: map[string]socketID{}}
	for _, s := range p.Fingerprint.Sockets {
		srv.files[serverKey(s.Path)] = socketID{path: s.Path, dev: s.Dev, inode: s.Inode, ctime: s.CtimeNs}
		if s.Accepts != "" {
			srv.accepts[serverKey(s.Path)] = s.Accepts
		}
		if s.ServerKnown {
			srv.uid[serverKey(s.Path)] = s.ServerUID
		}
		if s.Listener != "" {
			srv.listener[serverKey(s.Path)] = s.Listener
		}
	}
	return srv
}

// serverKey is socket as servers keys it: the path the plugin's client dials and asks
// CheckPeer about (csi.SocketPath), however the plugin's row spells it.
func serverKey(socket string) string {
	if abs, err := csi.SocketPath(socket); err == nil {
		return abs
	}
	return filepath.Clean(socket)
}

// uidOf is who served socket when the plugin was fingerprinted, if known.
func (srv *servers) uidOf(socket string) (uint32, bool) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	uid, ok := srv.uid[serverKey(socket)]
	return uid, ok
}

func (srv *servers) set(socket string, uid uint32) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.uid[serverKey(socket)] = uid
}

// listenerOf is what socket's listener ran when the plugin was fingerprinted, "" if not known.
func (srv *servers) listenerOf(socket string) string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.listener[serverKey(socket)]
}

func (srv *servers) setListener(socket, image string) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if image == "" {
		delete(srv.listener, serverKey(socket))
		return
	}
	srv.listener[serverKey(socket)] = image
}

// acceptsOf is what accepted the connection the plugin was fingerprinted through on socket, ""
// if not known.
func (srv *servers) acceptsOf(socket string) string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.accepts[serverKey(socket)]
}

// setAccepts records what accepts on socket ("" to have the next connection tell it), the
// connections counted from none.
func (srv *servers) setAccepts(socket, accepts string) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if accepts == "" {
		delete(srv.accepts, serverKey(socket))
	} else {
		srv.accepts[serverKey(socket)] = accepts
	}
	delete(srv.answered, serverKey(socket))
}

// seenElsewhereOn says whether another process than the listener was seen accepting on the
// socket file s, as the row records (its file identity that of s, or forgotten since): the
// socket is never recorded as the listener's again, a fingerprint's connection the listener
// happens to accept (pre-forked workers beside it) notwithstanding, until its file changes.
func (srv *servers) seenElsewhereOn(s socketID) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	key := serverKey(s.path)
	if srv.accepts[key] != acceptsOther {
		return false
	}
	f := srv.files[key]
	return f.inode == 0 || f.dev == s.dev && f.inode == s.inode && f.ctime == s.ctime
}

// takeElsewhere is what refusals found accepted elsewhere since it was last taken (elsewhere);
// nil of none, or of no servers (a connection made without a client's checks).
func (srv *servers) takeElsewhere() map[string]socketID {
	if srv == nil {
		return nil
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.elsewhere) == 0 {
		return nil
	}
	seen := srv.elsewhere
	srv.elsewhere = map[string]socketID{}
	return seen
}

// giveBack hands seen, taken by takeElsewhere and not recorded (a probe's try-transaction that
// did not get the write lock), back to srv: the next operation's connection records it
// (connectPlugin, noteAcceptedElsewhere) before it reads the plugin's row. A socket refused
// again since keeps its newer file.
func (srv *servers) giveBack(seen map[string]socketID) {
	if srv == nil || len(seen) == 0 {
		return
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for k, f := range seen {
		if _, ok := srv.elsewhere[k]; !ok {
			srv.elsewhere[k] = f
		}
	}
}

// execdSince says whether a connection found a listener that exec()ed since the plugin was
// fingerprinted (checkPeer), or found the plugin's connections accepted otherwise than then
// (checkAccepted): the connection is not kept for the next operation.
func (srv *servers) execdSince() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.execd || srv.againElsewhere
}

// checkAccepted is the plugin client's CheckAccepted: every connection it makes, once some
// process accepted it, is asked which (acceptedBy). The first tells it when the fingerprint
// does not record it. A connection to a socket whose listener accepted the one the plugin was
// fingerprinted through, now accepted by another process (the listener handed its socket to a
// plugin it started, without an exec), is refused, nothing sent, and the next operation's
// connection fingerprints the plugin again: the refusal is recorded on the plugin's row, the
// socket as accepted by another process (recordAcceptedElsewhere), which the next operation
// reads, in this process or another. One made again to a socket another process
// accepted on (gRPC's reconnect, after the plugin closed its connections, or exited and was
// started anew behind the same listener) is let through: the plugin closing idle connections
// is no sign of a new one; but the connection is not kept for the next operation, whose first
// connection fingerprints the plugin again (connectPlugin).
func (srv *servers) checkAccepted(socket string, cred *unix.Ucred, nc net.Conn) error {
	now := acceptedBy(nc, cred.Pid)
	key := serverKey(socket)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	was, n := srv.accepts[key], srv.answered[key]
	srv.answered[key] = n + 1
	switch {
	case was == "":
		srv.accepts[key] = now
	case mayBeAcceptedElsewhere(was) && n > 0:
		srv.againElsewhere = true
	case was == acceptsListener && now == acceptsOther:
		srv.execd = true
		srv.accepts[key] = acceptsOther
		if ids := identify(key); len(ids) == 1 {
			srv.elsewhere[key] = ids[0]
		}
		return conflictf("socket %s of plugin %q is listened on by pid %d, which accepted the connection the plugin was fingerprinted through, and this one was accepted by another process "+
			"(the listener handed its socket to a process it started): nothing is sent to it before the next operation fingerprints the plugin again (and refuses another driver)",
			spec.QuoteName(key), srv.plugin, cred.Pid)
	}
	return nil
}

// checkPeer is the plugin client's CheckPeer: every connection it makes, gRPC's reconnects
// included, is refused as refused says, and when the process listening runs another image than
// when the plugin was fingerprinted (listenerImage): a plugin that exec()ed another program, or
// itself again, keeping its listening socket, closes the connections it had (a Go program's are
// closed on exec) and its next one reaches the new image, which may be another driver, or the
// same one with other capabilities, that the fingerprint held by a long-lived connection (the
// agent's) says nothing of. Nothing is sent over it, and the next operation's connection
// fingerprints the plugin again (connectPlugin).
func (srv *servers) checkPeer(socket string, cred *unix.Ucred) error {
	if err := srv.refused(socket, cred); err != nil {
		return err
	}
	was := srv.listenerOf(socket)
	if !listenerKnown(was) {
		return nil // not recorded, or gone when recorded: nothing to compare
	}
	now := listenerImage(cred.Pid)
	if now == was {
		return nil
	}
	srv.mu.Lock()
	srv.execd = true
	srv.mu.Unlock()
	what := "which runs another program image than when the plugin was fingerprinted (it exec()ed since, keeping its listening socket"
	if nowProc, _, _ := strings.Cut(now, " exe "); !strings.HasPrefix(was, nowProc+" exe ") {
		// Another pid or start time: the process that listened is gone, and its pid is another's
		// or nobody's (a listener that forked the plugin and exited).
		what = "another process than the one that listened there when the plugin was fingerprinted (that one is gone"
	}
	return conflictf("socket %s of plugin %q is served by pid %d, %s: %s, was %s): nothing is sent to it before the next operation fingerprints it again "+
		"(and refuses another driver)",
		spec.QuoteName(serverKey(socket)), srv.plugin, cred.Pid, what, now, was)
}

// refused refuses the process cred that listens on socket as serverRefused does, and when it
// is neither root's nor this user's, unless its user is the one who served the socket when the
// plugin was fingerprinted (or that is not known). It names socket as the client dials it
// (serverKey): a held connection's check and a fresh fingerprint's say the same path.
func (srv *servers) refused(socket string, cred *unix.Ucred) error {
	socket = serverKey(socket)
	if err := serverRefused(socket, cred); err != nil {
		return err
	}
	if cred.Uid == 0 || int(cred.Uid) == os.Geteuid() {
		return nil
	}
	was, ok := srv.uidOf(socket)
	if !ok || was == cred.Uid {
		return nil
	}
	return conflictf("socket %s of plugin %q was served by uid %d when the plugin was fingerprinted, and is served now by pid %d of uid %d: "+
		"any process of that user's may have bound the socket's name while the plugin was not listening, and would be sent the requests for its volumes, secrets included; "+
		"no RPC goes to it: if that process is not the plugin, stop it and start the plugin again; "+
		"if the plugin runs as uid %d now on purpose, register it again (volctl plugin register) to have volctl take that user's process for it",
		spec.QuoteName(socket), srv.plugin, was, cred.Pid, cred.Uid, cred.Uid)
}

// serverRefused refuses the process cred that listens on socket unless its user is root, this
// user, the owner of the socket's directory, or of its group where the group may write it. Any
// other user bound the socket's name in a directory everyone may write (/tmp) while the plugin
// was not listening (a restart), and would be sent every request for the plugin's volumes, their
// secrets included, and answer them about storage of theirs. A plugin that runs as a user of
// its own serves from a directory that user (or its group) may write; but a directory in one
// every user may write, sticky or not (/tmp), any user may have made, once the plugin's was
// gone (its cleanup, a reboot): owning that one vouches for nothing (socketDirOf).
func serverRefused(socket string, cred *unix.Ucred) error {
	if cred.Uid == 0 || int(cred.Uid) == os.Geteuid() {
		return nil
	}
	dir := filepath.Dir(socket)
	ours, madeByAnyone := socketDirOf(dir, cred) // dir's symlinks resolved: where it is
	if ours && madeByAnyone == "" {
		return nil
	}
	if ours {
		return conflictf("socket %s is served by pid %d of uid %d, whose %s is (its owner, or its group where the group may write it), but that directory is in %s, which other users may write: "+
			"any user could have made it once the plugin's was gone, and bound the socket's name in it, and would be sent the requests for the plugin's volumes, secrets included; "+
			"no RPC goes to it: if that process is not the plugin, stop it, remove %s and start the plugin again; "+
			"a plugin that runs as uid %d on purpose needs its socket directory in one only root may write, such as /run",
			spec.QuoteName(socket), cred.Pid, cred.Uid, spec.QuoteName(dir), spec.QuoteName(madeByAnyone), spec.QuoteName(dir), cred.Uid)
	}
	return conflictf("socket %s is served by pid %d of uid %d, neither root, this user (uid %d), nor the owner of %s (or a member of its group where the group may write it): "+
		"another user may have bound the socket's name while the plugin was not listening, and would be sent the requests for its volumes, secrets included; "+
		"no RPC goes to it: stop that process and start the plugin again (and move its socket to a directory only root may write, such as /run/csi); "+
		"a plugin that runs as uid %d on purpose needs a socket directory that uid owns",
		spec.QuoteName(socket), cred.Pid, cred.Uid, os.Geteuid(), spec.QuoteName(dir), cred.Uid)
}

// socketDirOf says whether dir is the user's cred names (its owner, or its group where the
// group may write it) and, if so, the first directory above it, its symlinks resolved (where
// the directory is), that is not that user's as well, when other users may write it (sticky or
// not; by its mode or its ACL): where anyone could have made dir, and the user's own
// directories between (/tmp/x/hp: x is theirs too, and /tmp anyone's); "" where not.
func socketDirOf(dir string, cred *unix.Ucred) (ours bool, madeByAnyone string) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil || !listenersDir(&st, cred) {
		return false, ""
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return true, filepath.Dir(dir) // cannot tell where it is: not vouched for
	}
	for p := filepath.Dir(resolved); ; p = filepath.Dir(p) {
		if err := syscall.Stat(p, &st); err != nil {
			return true, p
		}
		if listenersDir(&st, cred) && p != "/" {
			continue // theirs too: made by them, maybe in one anyone may write
		}
		if pathtrust.OthersMayWrite(st.Mode, st.Gid) || pathtrust.ACLWriter(p, st.Mode) != "" {
			return true, p
		}
		return true, ""
	}
}

// listenersDir reports whether the directory st is the user's cred names: its owner, or its
// group where the group may write it.
func listenersDir(st *syscall.Stat_t, cred *unix.Ucred) bool {
	return st.Uid == cred.Uid || st.Mode&0o020 != 0 && st.Gid == cred.Gid
}
