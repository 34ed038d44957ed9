package engine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// tidyDirs removes the empty directories under the state dir's staging and publish trees that
// nothing accounts for any more: what a delete, a deregistration or a release killed between its
// commit and its tidying left behind (each removes its own directories otherwise). The pass's
// snapshot rules out the directories in use at a map lookup each; any other is checked again
// under its volume's lock, taken without waiting (a claim or release holds it while it makes,
// mounts on and removes those directories, so one in progress is skipped, not raced), and
// removed only while empty and not a mount point (removeEmptyChain). It is tidying: what it
// cannot check or remove stays, and is not a problem to report.
func (e *Engine) tidyDirs(ctx context.Context, vols []store.Volume, claims []store.Claim) {
	pluginOf := make(map[string]string, len(vols))
	for _, v := range vols {
		pluginOf[v.ID] = v.PluginID
	}
	type allocVolume struct{ alloc, volume string }
	claimed := make(map[allocVolume]bool, len(claims))
	for _, cl := range claims {
		claimed[allocVolume{cl.Alloc, cl.VolumeID}] = true
	}

	stagingRoot := filepath.Join(e.cfg.StateDir, stagingDir)
	for _, plugin := range subdirs(stagingRoot) {
		for _, vol := range subdirs(filepath.Join(stagingRoot, plugin)) {
			if pluginOf[vol] == plugin {
				continue // kept while the volume is registered
			}
			e.tidyUnused(ctx, vol, stagingPath(e.cfg.StateDir, plugin, vol), stagingRoot, func(tx *store.Tx) (bool, error) {
				v, err := tx.Volumes().Get(vol)
				return err == nil && v.PluginID == plugin, err
			})
		}
		e.locks.removeEmptyDirs(ctx, filepath.Join(stagingRoot, plugin), stagingRoot)
	}

	publishRoot := filepath.Join(e.cfg.StateDir, publishDir)
	for _, alloc := range subdirs(publishRoot) {
		for _, vol := range subdirs(filepath.Join(publishRoot, alloc)) {
			if claimed[allocVolume{alloc, vol}] {
				continue
			}
			dir := filepath.Join(publishRoot, alloc, vol)
			targets := subdirs(dir)
			if len(targets) == 0 {
				targets = []string{""} // the volume's directory alone
			}
			for _, target := range targets {
				e.tidyUnused(ctx, vol, filepath.Join(dir, target), publishRoot, func(tx *store.Tx) (bool, error) {
					_, err := tx.Claims().Find(vol, alloc)
					return err == nil, err
				})
			}
		}
		e.locks.removeEmptyDirs(ctx, filepath.Join(publishRoot, alloc), publishRoot)
	}
}

// tidyUnused removes path and its empty parents up to root if, under volumeID's lock, inUse
// says nothing uses it any more; a store.ErrNotFound from inUse means nothing does.
func (e *Engine) tidyUnused(ctx context.Context, volumeID, path, root string, inUse func(*store.Tx) (bool, error)) {
	unlock, ok, err := e.locks.tryVolume(volumeID)
	if err != nil || !ok {
		return // not a volume ID, or an operation on the volume is running: it tidies itself
	}
	defer unlock()
	var used bool
	err = e.store.View(ctx, func(tx *store.Tx) (err error) {
		used, err = inUse(tx)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		used, err = false, nil
	}
	if err != nil || used {
		return
	}
	e.locks.removeEmptyDirs(ctx, path, root)
}

// tidyLocks removes the lock files of volume IDs the state has nothing of: no volume, claim or
// staging. Each command locks the volume it names before it looks it up, so every ID ever
// typed, and every volume deleted or deregistered, left its locks/volume-ID.lock for good: a
// state dir that creates and deletes a volume per CI job filled its locks directory without end.
// A file is removed only while this process holds its lock (taken without waiting, so one in
// use is skipped) and is still the file at its path, and only once the state, read under that
// lock, has nothing of the ID: any volctl that opened it before the removal finds, once it has
// the lock, that its file is no longer at its path, and takes the lock again on a new one
// (lockedAtPath), so the lock still excludes as before. It is tidying: what it cannot check or
// remove stays.
func (e *Engine) tidyLocks(ctx context.Context, vols []store.Volume, claims []store.Claim, stagings []store.Staging) {
	known := make(map[string]bool, len(vols)+len(claims)+len(stagings))
	for _, v := range vols {
		known[v.ID] = true
	}
	for _, cl := range claims {
		known[cl.VolumeID] = true
	}
	for _, st := range stagings {
		known[st.VolumeID] = true
	}
	var snapshotLocks, socketLockFiles []string
	for _, name := range entryNames(e.locks.dir) {
		name, ok := strings.CutSuffix(name, ".lock")
		if !ok || ctx.Err() != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, snapshotLockPrefix):
			snapshotLocks = append(snapshotLocks, name)
		case isSocketLock(name):
			socketLockFiles = append(socketLockFiles, name)
		}
		if id, ok := strings.CutPrefix(name, volumeLockPrefix); ok && !known[id] {
			e.tidyLock(ctx, id)
		}
	}
	// Each snapshot's delete and deregister, and a delete of an ID of none, lock it, so a state
	// dir that snapshots and deletes per CI job kept a lock file per snapshot; each plugin
	// socket used kept its controller and publish locks (socketLocks) after its deregistration,
	// a file or two per temporary socket.
	e.tidyNamedLocks(ctx, snapshotLocks, e.snapshotLockNames)
	e.tidyNamedLocks(ctx, socketLockFiles, e.socketLockNames)
}

// lockBatch bounds the locks tidyNamedLocks holds at once.
const lockBatch = 64

// tidyNamedLocks removes, of the lock files named (locks/NAME.lock), those whose names inUse
// leaves out: the names of the snapshots, or the plugin sockets, the state has (their names are
// hashes, so the state's keys are hashed to find which files are in use). The rest are removed
// as tidyLock removes a volume's: each under its lock, taken without waiting, in batches, once
// inUse read under them still leaves it out, and only while the file is still at its path,
// safe by the lock protocol (lockedAtPath).
func (e *Engine) tidyNamedLocks(ctx context.Context, names []string, inUse func(context.Context) (map[string]bool, error)) {
	if len(names) == 0 {
		return
	}
	used, err := inUse(ctx)
	if err != nil {
		return
	}
	names = slices.DeleteFunc(names, func(n string) bool { return used[n] })
	for batch := range slices.Chunk(names, lockBatch) {
		if ctx.Err() != nil {
			return
		}
		e.tidyLockBatch(ctx, batch, inUse)
	}
}

// tidyLockBatch is tidyNamedLocks for one batch of names, whose locks it holds together across
// one inUse.
func (e *Engine) tidyLockBatch(ctx context.Context, batch []string, inUse func(context.Context) (map[string]bool, error)) {
	var held []string
	for _, name := range batch {
		unlock, ok, err := e.locks.exclusive(name)
		if err != nil || !ok {
			continue // in use
		}
		defer unlock()
		held = append(held, name)
	}
	used, err := inUse(ctx)
	if err != nil {
		return
	}
	for _, name := range held {
		if !used[name] {
			e.locks.removeHeld(name)
		}
	}
}

// snapshotLockNames is the set of the lock names (snapshotLockName) of every snapshot the state
// names.
func (e *Engine) snapshotLockNames(ctx context.Context) (map[string]bool, error) {
	var keys []store.SnapshotKey
	err := e.store.View(ctx, func(tx *store.Tx) (err error) {
		keys, err = tx.Snapshots().Keys()
		return err
	})
	named := make(map[string]bool, len(keys))
	for _, k := range keys {
		named[snapshotLockName(k.PluginID, k.SnapshotID)] = true
	}
	return named, err
}

// tidyLock removes volume id's lock file under its lock when the state has nothing of id.
func (e *Engine) tidyLock(ctx context.Context, id string) {
	unlock, ok, err := e.locks.tryVolume(id)
	if err != nil || !ok {
		return // not a volume ID volctl would lock, or an operation on it is running
	}
	defer unlock()
	used := true
	err = e.store.View(ctx, func(tx *store.Tx) error {
		if _, err := tx.Volumes().Get(id); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if n, err := tx.Claims().CountByVolume(id); err != nil || n > 0 {
			return err
		}
		if _, err := tx.Stagings().Get(id); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		used = false
		return nil
	})
	if err != nil || used {
		return
	}
	e.locks.removeHeld(volumeLockPrefix + id)
}

// subdirs lists the directories in dir by name, symlinks and other files left out; a directory
// that cannot be read has none.
func subdirs(dir string) []string {
	return readNames(dir, fs.DirEntry.IsDir)
}

// entryNames is the names of every entry of dir, nil when it cannot be read.
func entryNames(dir string) []string {
	return readNames(dir, func(fs.DirEntry) bool { return true })
}

func readNames(dir string, keep func(fs.DirEntry) bool) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, en := range entries {
		if keep(en) {
			names = append(names, en.Name())
		}
	}
	return names
}

// socketLockNames is the set of the names of the controller and publish locks (socketLocks) of
// every plugin registered.
func (e *Engine) socketLockNames(ctx context.Context) (map[string]bool, error) {
	var plugins []store.Plugin
	err := e.store.View(ctx, func(tx *store.Tx) (err error) {
		plugins, err = tx.Plugins().List()
		return err
	})
	named := map[string]bool{}
	for _, p := range plugins {
		sp := p.Spec()
		for _, name := range append(socketLocks("controller", p.ID, csi.ConfigFromSpec(&sp).ControllerSocket), publishLocks(p)...) {
			named[name] = true
		}
	}
	return named, err
}

// tidyLeftPlugins removes what forced deregistrations kept of plugins (store.LeftPlugin) that no
// volume of vols names any more: nothing is left for them to tie to a socket. It writes only
// when there is one to remove; a failure is left for the next pass.
func (e *Engine) tidyLeftPlugins(ctx context.Context, vols []store.Volume, left []store.LeftPlugin) {
	named := func(l store.LeftPlugin) bool {
		return slices.ContainsFunc(vols, func(v store.Volume) bool { return v.PluginID == l.ID })
	}
	if !slices.ContainsFunc(left, func(l store.LeftPlugin) bool { return !named(l) }) {
		return
	}
	if err := e.store.Update(ctx, func(tx *store.Tx) error { _, err := tx.Plugins().TidyLeft(); return err }); err != nil {
		e.log.Warn("reconcile: forget the sockets of plugins deregistered with --force", "err", err)
	}
}
