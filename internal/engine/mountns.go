package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/procfs"
	"github.com/volctl/volctl/internal/store"
)

// Mounts are per mount namespace. A node plugin mounts a volume in its own namespace, and
// volctl checks the mount in its own (the mount table, a target's mount ID). A volctl started
// in another namespace than the plugin's (`unshare -m`, a shell left in one, a unit with
// PrivateMounts=) whose state dir is not shared with the plugin's sees what the plugin mounted
// since as nothing: its claim was rolled back as "the plugin did not publish the volume there",
// and its reconcile took every claim published since for a lost mount, recording each degraded
// and node-staged while its mount was in place (chaos15). So the operations that act on mounts
// (claim, release, detach, a group's run and stop, reconcile and the claim GC) first compare
// their mount namespace with that of the running agent (the holder of the agent lock), whose
// plugins mount where it runs, or, with no agent, of each registered plugin's node socket's
// server (SO_PEERCRED), and refuse, changing nothing, when it is another and the mount holding
// the state dir is not in a peer group both namespaces share (a mount made on either side then
// appears on the other: `unshare --propagation unchanged`, a containerized plugin given the
// state dir rshared, as docs/agent.md says to). The agent, not its plugins, when it runs: a
// plugin misplaced in a namespace of its own (a container without rshared) fails its own
// claims, and must not stop the agent's passes for every other plugin. Reads (status, the
// dashboard) are left alone.

// procRoot is where the mount namespaces are read; a test points it at a tree of its own.
var procRoot = "/proc"

// checkMountView is the error the operations that act on mounts fail with when the agent's, or
// without one a registered plugin's, mounts are not this process's (above), nil otherwise, and
// with a mount table of the caller's (a test's fake, which is no namespace's). An operation on
// one volume (claim, release, detach) names it: only its plugin is asked, the one whose mounts
// the operation acts on; one on many (a group, reconcile, the claim GC), or a volume not found
// by the ID as given (byStoredID finds it in another normal form, or it is not there), asks
// every registered plugin.
func (e *Engine) checkMountView(ctx context.Context, volumeID string) error {
	return e.checkMountViewOf(ctx, func() (plugins []store.Plugin, err error) {
		// A short read, on the write connection of a command that has no read connection open
		// (ViewShort), through the statements admission and release use next on it.
		err = e.store.ViewShort(ctx, func(tx *store.Tx) (err error) { plugins, err = mountViewPlugins(tx, volumeID); return err })
		return plugins, err
	})
}

// checkMountViewOf is checkMountView asking the plugins read returns, read only when no agent
// runs (a claim passes those its preview read: claimPreview).
func (e *Engine) checkMountViewOf(ctx context.Context, read func() ([]store.Plugin, error)) error {
	if _, ok := e.cfg.Mounts.(kernelMounts); !ok {
		return nil
	}
	if hs := e.agentHolders(); len(hs) > 0 {
		return mountView(e.cfg.StateDir, hs[0].Pid, fmt.Sprintf("the agent (pid %d)", hs[0].Pid))
	}
	plugins, err := read()
	if err != nil {
		return err
	}
	for _, p := range plugins {
		sp := p.Spec()
		socket := csi.ConfigFromSpec(&sp).NodeSocket
		if socket == "" {
			continue
		}
		id := identify(socket)[0]
		if _, ok := e.sharedViews.Load(id); ok && id.inode != 0 {
			continue // the same server as when it was found sharing them
		}
		e.peerDials.Add(1)
		if pid := SocketPeer(socket); pid > 0 {
			if err := mountView(e.cfg.StateDir, pid, fmt.Sprintf("plugin %q (pid %d, socket %s)", p.ID, pid, socket)); err != nil {
				return err
			}
			e.sharedViews.Store(id, struct{}{})
		}
	}
	return nil
}

// mountViewPlugins is the plugins checkMountView asks: volumeID's, or every registered one
// when volumeID is "" or not found as given.
func mountViewPlugins(tx *store.Tx, volumeID string) ([]store.Plugin, error) {
	if volumeID != "" {
		v, err := tx.Volumes().Get(volumeID)
		if err == nil {
			p, err := tx.Plugins().Get(v.PluginID)
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil // the operation says its plugin is not registered
			}
			return []store.Plugin{p}, err
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return tx.Plugins().List()
}

// SocketPeer is the pid SO_PEERCRED reports for a connection to the unix socket at path: the
// process that called listen() on it. 0 when nothing answers there.
func SocketPeer(path string) int {
	if cred := socketCred(path); cred != nil {
		return int(cred.Pid)
	}
	return 0
}

// socketCred is what SO_PEERCRED reports for a connection to the unix socket at path: the
// process that called listen() on it, its user and group. nil when nothing answers there.
func socketCred(path string) *unix.Ucred {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil
	}
	defer c.Close()
	cred, err := csi.PeerCred(c)
	if err != nil {
		return nil
	}
	return cred
}

// mountView says whether this process's mounts under stateDir are those of the process pid
// (who names it): nil when they are, or when that cannot be told (the process is gone). Its
// namespace is read through a thread that runs (procfs.Dir): through a first thread that has
// exited (a plugin whose main called pthread_exit) it cannot be read, and "cannot be told"
// would let every operation act on mounts it does not see. Its ns/mnt link may be unreadable
// where its mount table is not: a volctl without CAP_SYS_PTRACE (Docker's default set, a unit's
// CapabilityBoundingSet) is refused the link of a process holding capabilities it lacks, or of
// a non-dumpable one. Then the mount holding the state dir, by its mount ID (each mount's own:
// a namespace made by copying another gets new ones), tells: any of this process's mounts
// listed in that process's table, it is the same namespace; none, the namespace is another;
// an empty table (a process chrooted below every mount point) cannot tell.
func mountView(stateDir string, pid int, who string) error {
	self, err := os.Readlink(filepath.Join(procRoot, "self/ns/mnt"))
	if err != nil {
		return nil
	}
	dir := procfs.Dir(procRoot, pid)
	theirs, nsErr := os.Readlink(filepath.Join(dir, "ns/mnt"))
	if nsErr == nil && theirs == self {
		return nil
	}
	ours, err := holdingMount(filepath.Join(procRoot, "self/mountinfo"), stateDir)
	if err != nil {
		return nil
	}
	if nsErr != nil {
		ids, err := mountIDs(filepath.Join(procRoot, "self/mountinfo"))
		if err != nil {
			return nil
		}
		same, listed, err := sharesMountID(filepath.Join(dir, "mountinfo"), ids)
		if err != nil || same || !listed {
			return nil // gone, the same namespace, or a table that tells nothing (chrooted)
		}
		theirs = fmt.Sprintf("another (its %s is unreadable here, %v, and its mount table lists none of the mounts here, not mount %d, which holds the state dir here)",
			filepath.Join(dir, "ns/mnt"), errors.Unwrap(nsErr), ours.ID)
	}
	if group := peerGroup(ours); group != "" {
		if shared, err := hasPeerGroup(filepath.Join(dir, "mountinfo"), group); err != nil || shared {
			return nil
		}
	}
	how := "private to it"
	if strings.Contains(ours.Optional, "master:") {
		how = "a slave of another: mounts made here reach no other namespace"
	}
	return fmt.Errorf("volctl runs in mount namespace %s, %s in %s, and the mount holding the state dir %s (%s) is %s: the mounts the plugins make are not the ones volctl would check here, so nothing is mounted or unmounted from here; run volctl in that mount namespace (nsenter -t %d -m -- volctl ...), or share the state dir's mount with it (unshare --propagation unchanged)",
		self, who, theirs, stateDir, ours.Mountpoint, how, pid)
}

// sharesMountID reports whether the mount table at path lists a mount whose ID is one of ids
// (mount IDs are each mount's own: a namespace made by copying another gets new ones, so one
// shared means the same namespace), and whether the table lists any mount at all: a process
// chrooted where no mount point is below its root sees an empty table, which tells nothing.
func sharesMountID(path string, ids map[int]bool) (shared, listed bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	mounts, err := mountinfo.GetMountsFromReader(f, func(m *mountinfo.Info) (skip, stop bool) {
		listed = true
		return !ids[m.ID], ids[m.ID]
	})
	return len(mounts) > 0, listed, err
}

// mountIDs is the IDs of the mounts in the table at path.
func mountIDs(path string) (map[int]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ids := map[int]bool{}
	_, err = mountinfo.GetMountsFromReader(f, func(m *mountinfo.Info) (skip, stop bool) {
		ids[m.ID] = true
		return true, false
	})
	return ids, err
}

// holdingMount is the mount, in the table at path, that dir is on: the last listed (topmost)
// of those whose mount point is dir or above it.
func holdingMount(path, dir string) (*mountinfo.Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mounts, err := mountinfo.GetMountsFromReader(f, func(m *mountinfo.Info) (skip, stop bool) {
		return !underOrAt(dir, m.Mountpoint), false
	})
	if err != nil {
		return nil, err
	}
	var best *mountinfo.Info
	for _, m := range mounts {
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no mount holds %s", dir)
	}
	return best, nil
}

// underOrAt reports whether path is dir or below it.
func underOrAt(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}

// peerGroup is the shared peer group ("shared:N") of m, "" when m is not shared.
func peerGroup(m *mountinfo.Info) string {
	for f := range strings.FieldsSeq(m.Optional) {
		if strings.HasPrefix(f, "shared:") {
			return f
		}
	}
	return ""
}

// hasPeerGroup reports whether a mount in the table at path is in the peer group.
func hasPeerGroup(path, group string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	mounts, err := mountinfo.GetMountsFromReader(f, func(m *mountinfo.Info) (skip, stop bool) {
		return peerGroup(m) != group, peerGroup(m) == group
	})
	return len(mounts) > 0, err
}
