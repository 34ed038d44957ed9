package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/shellquote"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// lockDir holds the flock files that serialize work across volctl processes. The kernel drops
// a flock when its process dies, so a killed volctl never leaves a lock behind (a lock row in
// SQLite would).
const lockDir = "locks"

// lockRetry is how often a waiting process retries a held lock.
const lockRetry = 5 * time.Millisecond

// locker takes the per-volume and per-plugin locks of the lock order (docs/architecture.md, Lock order): volume, then the
// plugin's publish lock (shared), then its controller lock, then short SQLite transactions. The directory lock (dirs) is a leaf
// held only around mkdir and rmdir calls, never while taking another lock or sending an RPC.
type locker struct {
	dir string
	// stoppedWait is how long a wait for a lock lasts once every holder is stuck (stopped by a signal,
	// or blocked in the kernel: await); store.DefaultStoppedWait, shorter in tests.
	stoppedWait time.Duration
	// held are the exclusive locks this process holds, by lock name (*heldLock): the file each is
	// on, which stillHeld compares with the file at its path (docs/architecture.md, Locks).
	held sync.Map
	// before is Config.BeforeLock, called as each lock file is opened (file).
	before func()
	// caseless says the state dir looks names up without regard to case (caseInsensitive):
	// every lock is refused (file), and with it whatever would name something after an ID.
	caseless bool
	// readOnly is the store's CheckWritable: the error of every write to a state dir on a
	// read-only file system, which a lock file that cannot be made there is too (onReadOnly).
	readOnly func() error
	// scrub is what a lock holder's words are shown through as progress: the engine's
	// Redactor (a holder's command line, read from /proc, may hold a value the state keeps
	// secret); nil, as they are.
	scrub func(context.Context, string) string
}

// onReadOnly is err, a lock file's open or lock, as the store words every write to a state dir
// on a read-only file system (`volctl can read the state there but not change it`), when it
// failed for that: a lock file not made before the state dir went read-only cannot be made
// (EROFS), and the command, which would write, stops there. Before, `volume register`, `group
// run` and `snapshot delete` of an ID with no lock file yet said only `lock volume "r3": open
// .../locks/volume-r3.lock: read-only file system`, where claim, create and release of one with
// a lock file said what it is and what to do (TestReadOnlyStateDirLockNotMadeSaysTheStateDirIsReadOnly).
func (l *locker) onReadOnly(err error) error {
	if err == nil || l.readOnly == nil || !errors.Is(err, syscall.EROFS) {
		return err
	}
	if ro := l.readOnly(); ro != nil {
		return ro
	}
	return err
}

// heldLock is a lock file this process holds a volume's lock on, as the device and inode of the
// file it locked.
type heldLock struct {
	path     string
	dev, ino uint64
}

// lockReopens bounds how many times a lock is taken again because its file was no longer at its
// path once locked (lockedAtPath): a path replaced that often is someone's doing, and said so.
const lockReopens = 10

// errNotAtPath is a lock taken on a file no longer at its path (lockedAtPath).
var errNotAtPath = errors.New("the lock file was removed or replaced while this volctl took its lock")

// lockedAtPath returns the file fl locked when it is the file at fl's path: one opened just before
// another process removed it (by hand; or volctl, holding it: removeHeld) and made a new one,
// which that process locks, guards nothing, and its lock is errNotAtPath. The caller unlocks it
// and takes the lock again, on the file at the path.
func lockedAtPath(fl *flock.Flock) (heldLock, error) {
	fi, err := fl.Stat()
	if err != nil {
		return heldLock{}, err
	}
	if !fi.Mode().IsRegular() { // opened anew during a wait, after file's check
		return heldLock{}, notRegularLockErr(fl.Path(), fi.Mode())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return heldLock{}, fmt.Errorf("lock file %s: no device and inode", fl.Path())
	}
	h := heldLock{path: fl.Path(), dev: uint64(st.Dev), ino: st.Ino}
	if !h.atPath() {
		return h, errNotAtPath
	}
	return h, nil
}

// atPath says whether h's file is still the one at its path.
func (h heldLock) atPath() bool {
	var st syscall.Stat_t
	return syscall.Lstat(h.path, &st) == nil && uint64(st.Dev) == h.dev && st.Ino == h.ino
}

// errLockLost marks a volume operation stopped because its lock file is no longer the one it
// locked (stillHeld): no RPC is sent and nothing written after it, not even the claim's failure
// (recordFailure), since another process may hold the volume's lock and be driving the claim.
var errLockLost = errors.New("the volume's lock was lost")

// stillHeld checks, before a step of an operation holding volume id's lock (every checkpoint of
// a claim or a release: the commit before each RPC, and the last; and each step of a create, a
// delete, an expand and a snapshot's create or delete: before each write and each RPC, and once
// an RPC has answered, before its answer is recorded), that the file it locked is still the one
// at its path. One removed (by hand, or by a cleanup of the state dir) while held
// lets a second volctl make a new file there and lock it, and two processes would work on the
// volume at once: this one stops instead, with an error naming the file and what to do, leaving
// the claim where its last commit put it, which the other process, or the next command or
// reconcile, resumes. It costs one lstat(2); a volume whose lock this process does not hold
// (none taken through locker.volume or tryVolume) passes.
func (l *locker) stillHeld(id string) error {
	return l.stillHeldNamed(volumeLockPrefix+id, fmt.Sprintf("volume %q", id), "the volume",
		"`"+shellquote.Command("volctl volume status", id)+"` shows where the volume and its claims are")
}

// snapshotStillHeld is stillHeld for a snapshot's lock (locker.snapshot), which a snapshot's
// delete holds from its record to its end: checked before its DeleteSnapshot is sent and before
// its answer is recorded. One removed while held lets another volctl's create of the same name,
// answered with the snapshot being deleted, take the lock on a new file instead of waiting for
// the delete, record the snapshot as made, and have the delete delete it
// (TestSnapshotLockFileRemovedBeforeTheDeleteIsSentStopsTheDelete); one removed while a create
// that waited for a delete holds it, another volctl's delete to delete what the create records
// (TestSnapshotCreateThatWaitedForADeleteStopsOnALostSnapshotLock).
func (l *locker) snapshotStillHeld(pluginID, snapshotID string) error {
	return l.stillHeldNamed(snapshotLockName(pluginID, snapshotID), fmt.Sprintf("snapshot %q of plugin %q", snapshotID, pluginID), "the snapshot",
		"`"+shellquote.Command("volctl volume snapshot list "+shellquote.Flag("--plugin", pluginID))+"` shows what is recorded of it and what the plugin has")
}

// stillHeldNamed is stillHeld for lock name, what's (the volume, the snapshot: it in the
// message), status saying where to see it now.
func (l *locker) stillHeldNamed(name, what, it, status string) error {
	v, ok := l.held.Load(name)
	if !ok {
		return nil
	}
	h := v.(*heldLock)
	if h.atPath() {
		return nil
	}
	how := "removed"
	if _, err := os.Lstat(h.path); err == nil {
		how = "removed, and another file made at its path,"
	}
	return &kindError{kind: errLockLost, msg: fmt.Sprintf("%s's lock file %s was %s while this volctl held its lock (volctl removes a lock file only while it holds its lock itself; something else did): "+
		"another volctl may hold the lock on the new file and be working on %s, so this one stopped before its next step, leaving what it did recorded; "+
		"%s, and `volctl reconcile` resumes what was cut short once no other volctl is working on %s; never remove the files in %s",
		what, h.path, how, it, status, it, filepath.Dir(h.path))}
}

// holding is fn, a write of an operation holding volume id's lock, run only while that lock is
// still held (stillHeld): checked inside the transaction, so that nothing fn writes is written
// once another volctl may hold the volume.
func (l *locker) holding(id string, fn func(*store.Tx) error) func(*store.Tx) error {
	return func(tx *store.Tx) error {
		if err := l.stillHeld(id); err != nil {
			return err
		}
		return fn(tx)
	}
}

// volumeLockPrefix begins the name of every volume's lock: locks/volume-ID.lock.
const volumeLockPrefix = "volume-"

// removeHeld removes the file of lock name, which this process holds exclusively, if it is
// still the file at its path: the only removal of a lock file volctl makes (a volume's the state
// has nothing of, tidyLocks; a snapshot's, or a plugin socket's, no longer recorded, tidyNamedLocks;
// a purged group's, forgetGroup), safe
// because whoever locks the file after it finds it gone from its path and locks a new one
// (lockedAtPath). The lock's record is dropped first, so that nothing this process does before
// its unlock takes the lock for lost (stillHeld).
func (l *locker) removeHeld(name string) {
	v, ok := l.held.Load(name)
	if !ok {
		return
	}
	h := v.(*heldLock)
	if !h.atPath() {
		return
	}
	l.held.CompareAndDelete(name, v)
	_ = os.Remove(h.path)
}

// hold keeps the record of a volume lock this process took (stillHeld) and returns its release.
func (l *locker) hold(name string, fl *flock.Flock, h heldLock) func() {
	rec := &h
	l.held.Store(name, rec)
	return func() {
		l.held.CompareAndDelete(name, rec)
		_ = fl.Unlock()
	}
}

func newLocker(stateDir string) (*locker, error) {
	dir := filepath.Join(stateDir, lockDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock dir: %w", err)
	}
	return &locker{dir: dir, stoppedWait: store.DefaultStoppedWait, caseless: caseInsensitive(stateDir)}, nil
}

// caseInsensitive reports whether the state dir's names are looked up without regard to case
// (vfat, an ext4 or tmpfs directory with the casefold attribute, which its new subdirectories
// inherit): its locks directory is found as LOCKS too. One lstat, which fails on any other.
func caseInsensitive(stateDir string) bool {
	var upper, lower unix.Stat_t
	if unix.Lstat(filepath.Join(stateDir, "LOCKS"), &upper) != nil {
		return false
	}
	return unix.Lstat(filepath.Join(stateDir, lockDir), &lower) == nil && upper.Dev == lower.Dev && upper.Ino == lower.Ino
}

// caselessError refuses a lock in a case-insensitive state dir. Lock files, staging and publish
// directories are named after volume, plugin and alloc IDs, which may differ in case alone: there
// two of them would be one file, one volume's lock or mount another's.
func caselessError(stateDir string) error {
	return fmt.Errorf("state dir %s is case-insensitive (vfat, or a directory with the casefold attribute): volctl names its lock files and its "+
		"staging and publish directories after volume, plugin and alloc IDs, and two that differ only in case (\"db\" and \"DB\") would share one, "+
		"one volume's lock or mount taken for the other's; nothing done: use a state dir on a case-sensitive file system (--state-dir or VOLCTL_STATE_DIR); "+
		"volctl still reads this one, to list what to move", stateDir)
}

// lockOpen is how a lock file is opened: created 0600 if missing, never through a symlink, and
// without blocking, so a named pipe put in its place cannot hold a command in open(2), where
// neither its context nor a signal reaches it (file checks the type too, to say so).
const lockOpen = os.O_CREATE | os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// file is the flock on locks/<name>.lock. A lock path that is not a regular file (a symlink, a
// named pipe, a directory: nothing volctl makes) is refused, naming it and what to do.
func (l *locker) file(name string) (*flock.Flock, error) {
	if l.caseless {
		return nil, caselessError(filepath.Dir(l.dir))
	}
	if l.before != nil {
		l.before()
	}
	path := filepath.Join(l.dir, name+".lock")
	if err := notRegularLock(path); err != nil {
		return nil, err
	}
	if err := l.dirBack(); err != nil {
		return nil, err
	}
	return flock.New(path, flock.SetFlag(lockOpen), flock.SetPermissions(0o600)), nil
}

// dirBack makes the locks directory again where it was removed (by hand, under a running agent
// or dashboard), as start-up makes it: before, every lock failed with a bare "no such file or
// directory" until the process started again (TestLocksDirRemovedUnderARunningEngineIsMadeAgain).
// Only the directory itself: a state dir removed is not made again empty. A lock held across
// the removal is found gone by its holder (stillHeld), as a lock file removed is. One that
// cannot be made is worded as a lock file that cannot be: a read-only state dir opened without
// its locks directory is named read-only, not "removed"
// (TestReadOnlyStateDirWithoutLocksDirSaysReadOnly).
func (l *locker) dirBack() error {
	if _, err := os.Lstat(l.dir); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.Mkdir(l.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		if ro := l.onReadOnly(err); ro != err {
			return ro
		}
		return store.NoSpace(fmt.Errorf("the locks directory %s is missing, and making it failed: %w", l.dir, err))
	}
	return nil
}

// notRegularLock refuses a lock path that is not a regular file (a symlink, a named pipe, a
// directory: nothing volctl makes), naming it and what to do; nil otherwise, or when it cannot
// be read. Checked before a lock's first open (file) and again where a wait opened it anew: one
// put in place during a wait gave "too many levels of symbolic links" for a symlink, and a named
// pipe was locked (lockedAtPath; TestLockFileReplacedWhileWaitedForIsRefusedByName).
func notRegularLock(path string) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return notRegularLockErr(path, fi.Mode())
	}
	return nil
}

func notRegularLockErr(path string, mode os.FileMode) error {
	return fmt.Errorf("lock file %s is %s, not a regular file as volctl makes them: remove it, and volctl makes it again", path, pathtrust.FileKind(mode))
}

// volume locks one volume for one operation (claim, release, delete, expand, ...). The ID names
// a file, so one that could leave the lock dir is refused.
func (l *locker) volume(ctx context.Context, id string) (func(), error) {
	if err := spec.ValidateID("volume ID", id); err != nil {
		return nil, invalidf("%v", err)
	}
	return l.take(ctx, volumeLockPrefix+id, fmt.Sprintf("volume %q", id))
}

// group locks one group for a `group run`'s recording of the group and its allocs' claims
// (runGroup): a second run of the group waits for the first, rather than reporting as held a
// claim the first then releases (it undoes what it took for an alloc one of whose claims
// failed). It is taken before any volume's lock. The name is hashed, as any ID may be a
// group's.
func (l *locker) group(ctx context.Context, name string) (func(), error) {
	return l.take(ctx, groupLockName(name), fmt.Sprintf("group %q (another `volctl group run` of it)", name))
}

// groupLockName names group name's lock: hashed, as any ID may be a group's.
func groupLockName(name string) string { return "group-" + lockHash(name) }

// snapshot locks one snapshot of one plugin, for a delete of it (the user's, or one reconcile
// finishes), a deregister of it and a create answered with it while its delete is recorded
// (taken after the source volume's lock, before a controller's). The key is hashed, as a
// snapshot ID may be anything. Each holder checks it is still held (snapshotStillHeld) before
// it acts on the plugin and inside the transaction that records what it did: a create that
// waited for a delete, after its second answer and in its record (finishSnapshot); a
// deregister in its transaction (deregisterSnapshotStored).
func (l *locker) snapshot(ctx context.Context, pluginID, snapshotID string) (func(), error) {
	return l.take(ctx, snapshotLockName(pluginID, snapshotID), fmt.Sprintf("snapshot %q of plugin %q", snapshotID, pluginID))
}

// snapshotLockPrefix begins the name of every snapshot's lock: locks/snapshot-HASH.lock.
const snapshotLockPrefix = "snapshot-"

// snapshotLockName names the lock of snapshot snapshotID of plugin pluginID: hashed, as a
// snapshot ID may be anything.
func snapshotLockName(pluginID, snapshotID string) string {
	return snapshotLockPrefix + lockHash(pluginID+"\x00"+snapshotID)
}

// trySnapshot is snapshot without waiting: ok is false when another operation holds the lock
// (a delete of the snapshot in flight).
func (l *locker) trySnapshot(pluginID, snapshotID string) (release func(), ok bool, err error) {
	return l.exclusive(snapshotLockName(pluginID, snapshotID))
}

// volumeHold is a volume's lock an operation holds (locker.volume), which it may let go while it
// waits for another volctl's operation that needs no lock of the volume, and take again: a
// snapshot create waiting for a delete of the snapshot the plugin answered with
// (finishSnapshot), which holding it made every claim and release of the volume wait for as long
// as the plugin hung on that DeleteSnapshot. nil holds nothing (a snapshot with no source volume
// recorded).
type volumeHold struct {
	locks  *locker
	id     string
	unlock func() // nil while let go
}

// holdVolume takes volume id's lock as a volumeHold.
func (l *locker) holdVolume(ctx context.Context, id string) (*volumeHold, error) {
	unlock, err := l.volume(ctx, id)
	if err != nil {
		return nil, err
	}
	return &volumeHold{locks: l, id: id, unlock: unlock}, nil
}

// release lets the lock go, if held; the operation's deferred release after a retake that failed
// does nothing.
func (h *volumeHold) release() {
	if h != nil && h.unlock != nil {
		h.unlock()
		h.unlock = nil
	}
}

// retake takes the lock again after release, waiting while ctx lasts.
func (h *volumeHold) retake(ctx context.Context) error {
	unlock, err := h.locks.volume(ctx, h.id)
	if err != nil {
		return err
	}
	h.unlock = unlock
	return nil
}

// tryVolume takes a volume's lock only if it is free now; ok is false when another operation
// holds it.
func (l *locker) tryVolume(id string) (release func(), ok bool, err error) {
	if err := spec.ValidateID("volume ID", id); err != nil {
		return nil, false, invalidf("%v", err)
	}
	return l.exclusive(volumeLockPrefix + id)
}

// controller serializes controller RPCs to one controller: the plugin process on socket, which
// any number of plugin IDs may be registered on, each spelling the path its own way
// (docs/architecture.md, Lock order). pluginID only names the lock in messages.
func (l *locker) controller(ctx context.Context, pluginID, socket string) (func(), error) {
	what := fmt.Sprintf("plugin %q controller", pluginID)
	if socket != "" {
		what += " (socket " + socket + ")"
	}
	return l.all(ctx, socketLocks("controller", pluginID, socket), what, false)
}

// socketLocks names the locks of the plugin process serving socket (kind: "controller",
// "publish"), which any number of plugin IDs may be registered on, each spelling the path its
// own way; a process takes all of them, in this order. The first is the socket's path once
// every symlink is resolved; the second, when the socket's directory is there, is that
// directory as a file (its device and inode: one directory however reached, through a bind
// mount too) and the socket's name in it. Neither alone is enough: a bind mount is another
// path to the same directory, and a directory removed and made again at its path (a service
// manager's runtime directory, at each start of the plugin) is another inode for the same
// socket, under which a second command would otherwise run beside one holding the lock of the
// old inode. A plugin restarted in its directory keeps its lock files. Without a socket, the
// lock is the plugin ID's.
func socketLocks(kind, pluginID, socket string) []string {
	if socket == "" {
		return []string{"plugin-" + pluginID + "." + kind}
	}
	name := socketName(socket)
	names := []string{kind + ".path-" + lockHash(name)}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(name), &st); err == nil {
		names = append(names, kind+"-"+lockHash(fmt.Sprintf("%d:%d/%s", st.Dev, st.Ino, filepath.Base(name))))
	}
	return names
}

// isSocketLock reports whether lock name is one socketLocks names.
func isSocketLock(name string) bool {
	for _, kind := range []string{"controller", "publish"} {
		if strings.HasPrefix(name, kind+".path-") || strings.HasPrefix(name, kind+"-") ||
			strings.HasPrefix(name, "plugin-") && strings.HasSuffix(name, "."+kind) {
			return true
		}
	}
	return false
}

// lockHash is a lock file's name for key, which may be a path of any length.
func lockHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:12])
}

// dirs takes the lock on the shared directories under the state dir: shared to make them,
// exclusive to remove them (makeDirs, removeEmptyDirs), on the file at its path (lockedAtPath).
// It returns the lock as taken too, whose atPath says whether its file is still the one at the
// path; withDirs is how it is used.
func (l *locker) dirs(ctx context.Context, exclusive bool) (func(), heldLock, error) {
	for range lockReopens {
		fl, err := l.file("dirs")
		if err != nil {
			return nil, heldLock{}, fmt.Errorf("lock the state dir's directories: %w", err)
		}
		lock := fl.TryRLock
		if exclusive {
			lock = fl.TryLock
		}
		ok, err := lock()
		if err == nil && !ok {
			// Waited for as every lock is (await): its holder named as it goes, given up on
			// once stopped, and by a pass within its bound. Waited for with flock's own retry,
			// a claim behind a holder stopped with ^Z waited silently for as long as its
			// context lasted, for good in a script, and the error named nobody
			// (TestClaimBehindAStoppedHolderOfTheDirectoryLockGivesUpNamingIt,
			// TestPassDoesNotWaitForeverForTheDirectoryLock).
			err = l.awaitInPass(ctx, "dirs", fl, lock, "the state dir's directories (locks/dirs.lock)")
			ok = err == nil
		}
		if ro := l.onReadOnly(err); ro != err {
			_ = fl.Close()
			return nil, heldLock{}, ro
		}
		err = store.NoSpace(err) // dirs.lock made anew in a full state dir
		if err != nil || !ok {
			_ = fl.Close()
			if err == nil {
				err = ctx.Err()
			}
			return nil, heldLock{}, fmt.Errorf("lock the state dir's directories: %w", err)
		}
		h, err := lockedAtPath(fl)
		if err == nil {
			return func() { _ = fl.Unlock() }, h, nil
		}
		_ = fl.Unlock()
		if !errors.Is(err, errNotAtPath) {
			return nil, heldLock{}, fmt.Errorf("lock the state dir's directories: %w", err)
		}
	}
	return nil, heldLock{}, fmt.Errorf("lock the state dir's directories: %w", reopenedTooOften(filepath.Join(l.dir, "dirs.lock")))
}

// errDirsLost is what a step run under the directory lock (withDirs) returns when it finds,
// before an act it must not do unguarded, that the lock's file is no longer the one at its path.
var errDirsLost = errors.New("the directory lock's file was removed while held")

// withDirs runs fn under the directory lock (dirs), and runs it again, whole, under the lock
// taken anew at its path, when fn returned errDirsLost or the lock's file was no longer the one
// at its path once fn returned. Removed while held (by hand: volctl never removes dirs.lock),
// it let another volctl lock a new file at the path and make or remove directories beside fn,
// which made a level that the other then removed (ENOENT), or built the target index without
// a directory fn made (TestDirsLockFileDeletedWhileTheTargetIndexIsBuiltKeepsTheClaimsLine). So
// fn must be idempotent; lost tells it whether the lock was lost so far, to check before an
// act another holder must not see half-done (a removal, the build's move into place).
func (l *locker) withDirs(ctx context.Context, exclusive bool, fn func(lost func() bool) error) error {
	for range lockReopens {
		unlock, h, err := l.dirs(ctx, exclusive)
		if err != nil {
			return err
		}
		lost := func() bool { return !h.atPath() }
		err = fn(lost)
		again := errors.Is(err, errDirsLost) || lost()
		unlock()
		if !again {
			return err
		}
	}
	return fmt.Errorf("lock the state dir's directories: %w", reopenedTooOften(filepath.Join(l.dir, "dirs.lock")))
}

// exclusive takes a named lock without waiting (e.g. one agent per state dir); ok is false when
// another process holds it.
func (l *locker) exclusive(name string) (release func(), ok bool, err error) {
	for range lockReopens {
		fl, err := l.file(name)
		if err != nil {
			return nil, false, err
		}
		ok, err = fl.TryLock()
		if err != nil || !ok {
			_ = fl.Close()
			return nil, ok, store.NoSpace(l.onReadOnly(err))
		}
		h, err := lockedAtPath(fl)
		if err == nil {
			return l.hold(name, fl, h), true, nil
		}
		_ = fl.Unlock()
		if !errors.Is(err, errNotAtPath) {
			return nil, false, err
		}
	}
	return nil, false, reopenedTooOften(filepath.Join(l.dir, name+".lock"))
}

// reopenedTooOften is the error of a lock whose file was not at its path lockReopens times over.
func reopenedTooOften(path string) error {
	return fmt.Errorf("lock file %s was removed or replaced %d times while volctl took its lock: stop whatever removes the files in %s (volctl removes a lock file only while it holds it: a volume's, a snapshot's or a plugin socket's it has nothing of, a purged group's)",
		path, lockReopens, filepath.Dir(path))
}

// exclusiveAll takes the named locks, in order, without waiting: all of them, or none when
// another process holds one (ok false).
func (l *locker) exclusiveAll(names []string) (release func(), ok bool, err error) {
	var held []func()
	release = func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	for _, name := range names {
		unlock, ok, err := l.exclusive(name)
		if err != nil || !ok {
			release()
			return nil, ok, err
		}
		held = append(held, unlock)
	}
	return release, true, nil
}

// LockAgent takes the state dir's agent lock without waiting, so that one agent runs per state
// dir. It is an ErrConflict when another process holds it, naming that process as /proc/locks
// does ("pid 12: volctl agent"), with named true; named is false when none can be named (no
// /proc, a holder in another PID namespace). The kernel drops the lock when the holder dies.
//
// The lock is two flocks: on locks/agent.lock, which older volctls take, and on agent.lock at
// the top of the state dir (agentPinName), which no removal of locks/ takes from under the
// agent. With the first alone, the whole locks directory removed under a running agent (made
// again by the next command, dirBack) let a second agent take a new agent.lock and run beside
// the first, both supervising the same plugins
// (TestSecondAgentIsRefusedAfterTheLocksDirWasRemovedUnderTheFirst). It is a file, not the
// state dir itself: a plugin whose socket is in the state dir flocks its socket's directory
// while it starts (hostpath.Listen, RemoveStaleSocket), and an agent holding the state dir kept
// every such plugin from starting (TestPluginSocketInTheStateDirStartsWhileTheAgentRuns). A
// state dir where that file cannot be made (read-only) has the first alone.
func (e *Engine) LockAgent() (release func(), named bool, err error) {
	msg := "another volctl agent is running on state dir " + e.cfg.StateDir
	refused := func() (func(), bool, error) {
		if hs := e.agentHolders(); len(hs) > 0 {
			return nil, true, conflictf("%s (%s)", msg, store.LockHolders(hs))
		}
		return nil, false, conflictf("%s", msg)
	}
	releaseFile, ok, err := e.locks.exclusive("agent")
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("agent lock: %w", err)
	case !ok:
		return refused()
	}
	pin, err := os.OpenFile(filepath.Join(e.cfg.StateDir, agentPinName), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
	if err != nil {
		if errors.Is(err, unix.EROFS) {
			return releaseFile, false, nil // nothing to make it in: the file's alone
		}
		releaseFile()
		return nil, false, fmt.Errorf("agent lock: %w", err)
	}
	if fi, err := pin.Stat(); err != nil || !fi.Mode().IsRegular() {
		pin.Close()
		releaseFile()
		return nil, false, fmt.Errorf("agent lock: %s is not a regular file as volctl makes it: remove it, and the agent makes it again", filepath.Join(e.cfg.StateDir, agentPinName))
	}
	switch err := unix.Flock(int(pin.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		pin.Close()
		releaseFile()
		return refused()
	case err != nil:
		pin.Close() // no flock there: the file's alone
		return releaseFile, false, nil
	}
	return func() {
		pin.Close()
		releaseFile()
	}, false, nil
}

// agentPinName is the agent's second lock file, at the top of the state dir (LockAgent).
const agentPinName = "agent.lock"

// agentHolders are the processes holding the agent lock (LockAgent) as /proc/locks names them:
// locks/agent.lock's, else the state dir's agent.lock's (an agent whose locks directory was
// removed under it holds that one still).
func (e *Engine) agentHolders() []store.LockHolder {
	for _, p := range []string{filepath.Join(e.locks.dir, "agent.lock"), filepath.Join(e.cfg.StateDir, agentPinName)} {
		if fi, err := os.Stat(p); err == nil {
			if hs := store.FlockHolders(fi, filepath.Dir(p)); len(hs) > 0 {
				return hs
			}
		}
	}
	return nil
}

// publishing takes a plugin's publish lock shared, waiting for it: every publish holds it for
// its RPCs (publish.go), and every undoing of a staging or an attachment for its own
// (undoUnused, a forced detach), so that the agent, which takes it exclusively to count the plugin's
// mounts and stop it (HoldPluginMountsOf), never stops the plugin between a count that missed a
// claim and that claim's NodeStageVolume or NodePublishVolume, nor under a release's
// ControllerUnpublishVolume sent once the store shows no mount. It is the node socket's (the
// process the mounts go through, whichever plugin ID they are sent through) and the controller
// socket's (the process the attachments go through): publishLocks.
func (l *locker) publishing(ctx context.Context, p store.Plugin) (func(), error) {
	return l.all(ctx, publishLocks(p), fmt.Sprintf("plugin %q's publishes and releases (the agent stops it under it)", p.ID), true)
}

// publishLocks names a plugin's publish locks: its node socket's (socketLocks), and its
// controller socket's where that is another. A split plugin's ControllerPublishVolume and
// ControllerUnpublishVolume go to the process serving its controller socket, which may be
// another plugin ID's process (a monolith's, its controller socket being that one's): the agent
// stops that process under that plugin ID's publish lock, which took the node socket's alone,
// and counted no mount and no publish under way while a release sent it a
// ControllerUnpublishVolume (TestReleaseHoldsThePublishLockOfTheControllerSocketItSendsThrough).
// Sorted, one order for every holder: the agent takes several plugins' at once, waiting.
func publishLocks(p store.Plugin) []string {
	sp := p.Spec()
	cfg := csi.ConfigFromSpec(&sp)
	names := socketLocks("publish", p.ID, cfg.NodeSocket)
	if cfg.ControllerSocket != "" && cfg.ControllerSocket != cfg.NodeSocket {
		for _, name := range socketLocks("publish", p.ID, cfg.ControllerSocket) {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// all takes the named locks in order, each as lock does, and releases them in reverse.
func (l *locker) all(ctx context.Context, names []string, what string, shared bool) (func(), error) {
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
	}
	for _, name := range names {
		unlock, err := l.lock(ctx, name, what, shared)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, unlock)
	}
	return release, nil
}

func (l *locker) take(ctx context.Context, name, what string) (func(), error) {
	return l.lock(ctx, name, what, false)
}

// lock takes a named lock, exclusive or shared, waiting for it while ctx lasts and saying so
// as progress, on the file at its path (lockedAtPath).
func (l *locker) lock(ctx context.Context, name, what string, shared bool) (func(), error) {
	for range lockReopens {
		fl, err := l.lockOnce(ctx, name, what, shared)
		if err != nil {
			return nil, err
		}
		h, err := lockedAtPath(fl)
		if err == nil {
			if shared {
				return func() { _ = fl.Unlock() }, nil
			}
			return l.hold(name, fl, h), nil
		}
		_ = fl.Unlock()
		if !errors.Is(err, errNotAtPath) {
			return nil, fmt.Errorf("lock %s: %w", what, err)
		}
	}
	return nil, fmt.Errorf("lock %s: %w", what, reopenedTooOften(filepath.Join(l.dir, name+".lock")))
}

// lockOnce takes a named lock on the file its open finds, which lock checks is still at its path.
func (l *locker) lockOnce(ctx context.Context, name, what string, shared bool) (*flock.Flock, error) {
	fl, err := l.file(name)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", what, err)
	}
	try := fl.TryLock
	if shared {
		try = fl.TryRLock
	}
	ok, err := try()
	if err == nil && !ok {
		err = l.awaitInPass(ctx, name, fl, try, what)
		ok = err == nil
	} else if ro := l.onReadOnly(err); ro != err {
		err = ro
	} else if err != nil {
		err = fmt.Errorf("lock %s: %w", what, store.NoSpace(err))
	}
	if err != nil || !ok {
		_ = fl.Close()
		if err == nil {
			err = fmt.Errorf("lock %s: not acquired", what)
		}
		return nil, err
	}
	return fl, nil
}

// await waits for the lock fl, which another process holds, trying it every lockRetry while
// ctx lasts. It says who holds it (store.FlockHolders: pid, command, stopped) as progress, and
// again when that changes, and in every error it returns. It gives up past ctx's bound
// (withLockWait: a background pass), and once every holder has been stopped by a signal (^Z,
// SIGSTOP), or blocked in the kernel in one sleep (a FUSE daemon or NFS server that does not
// answer), for stoppedWait: such a process holds the lock until someone resumes or ends it, and
// a command waiting for it would otherwise wait, in a script silently, for as long as that
// takes (docs/architecture.md, Lock waits).
func (l *locker) await(ctx context.Context, fl *flock.Flock, try func() (bool, error), what string) error {
	start, bound := time.Now(), lockWaitOf(ctx)
	watch := store.NewHolderWatch(func() []store.LockHolder { return lockHolders(fl) })
	said := ""
	tick := time.NewTicker(lockRetry)
	defer tick.Stop()
	for {
		now := time.Now()
		stopped := watch.Look(now)
		if step := "waiting for the lock on " + what + " (" + heldBy(watch.Holders()) + ")"; step != said {
			shown := step
			if l.scrub != nil {
				// Scrubbed as the wait's error is: the progress line drew a secret in a
				// holder's arguments every tick (TestProgressLineShowsNoSecretInTheLockHoldersCommand).
				shown = l.scrub(ctx, step)
			}
			csi.ReportProgress(ctx, shown)
			said = step
		}
		if stopped > 0 && stopped >= l.stoppedWait {
			return &waitedOut{fmt.Errorf("the lock on %s is %s", what, store.StuckHolders(watch.Holders(), stopped))}
		}
		if bound > 0 && now.Sub(start) >= bound {
			var by string
			if hs := watch.Holders(); len(hs) > 0 {
				by = " (" + store.LockHolders(hs) + ")"
			}
			return &waitedOut{fmt.Errorf("the lock on %s: another volctl%s has held it for more than %s (an operation still running, or a process stopped or hung while holding it); left for the next pass",
				what, by, bound)}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return fmt.Errorf("interrupted while waiting for the lock on %s (%s): %w", what, heldBy(watch.Holders()), ctx.Err())
			}
			return fmt.Errorf("waiting for the lock on %s (%s): %w", what, heldBy(watch.Holders()), ctx.Err())
		case <-tick.C:
		}
		if ok, err := try(); err != nil {
			if kind := notRegularLock(fl.Path()); kind != nil {
				err = kind // a symlink put in its place: ELOOP, which says nothing of it
			}
			return fmt.Errorf("lock %s: %w", what, err)
		} else if ok {
			return nil
		}
	}
}

// awaitInPass is await of lock name, which a background pass waits out once: waited out
// already in this pass, for another claim or the staging of the same volume, it is not waited
// for again, and the error says so in the first wait's words. Each of them waited the bound
// again (or a stopped holder's wait), a pass held n+1 times it by one hung holder
// (TestPassWaitsForAHeldVolumesLockOncePerPass, TestPassWaitsForAStoppedHoldersLockOncePerPass,
// and for locks/dirs.lock TestPassWaitsOutTheDirectoryLockOncePerPass).
func (l *locker) awaitInPass(ctx context.Context, name string, fl *flock.Flock, try func() (bool, error), what string) error {
	w := lockWaitsOf(ctx)
	if w != nil {
		if why := w.outwaited(name); why != "" {
			return fmt.Errorf("%s (waited out once in this pass already, for another of its items)", why)
		}
	}
	err := l.await(ctx, fl, try, what)
	if wo := (*waitedOut)(nil); errors.As(err, &wo) && w != nil {
		w.note(name, wo.Error())
	}
	return err
}

// lockHolders is who holds fl, as /proc names them; nil when it cannot say.
func lockHolders(fl *flock.Flock) []store.LockHolder {
	fi, err := fl.Stat()
	if err != nil {
		return nil
	}
	return store.FlockHolders(fi, filepath.Dir(fl.Path()))
}

// heldBy says who holds a lock: "held by pid 12: volctl volume claim db", or "another volctl is
// working on it" when /proc does not say (a holder in this process, or in another PID namespace).
func heldBy(holders []store.LockHolder) string {
	if len(holders) == 0 {
		return "another volctl is working on it"
	}
	return "held by " + store.LockHolders(holders)
}

// lockWaitKey is the context key of a bound on lock waits (withLockWait).
type lockWaitKey struct{}

// lockWaits is a background pass's bound on a wait for a lock another process holds, and the
// locks it waited out: each is waited for once a pass.
type lockWaits struct {
	bound time.Duration
	mu    sync.Mutex
	out   map[string]string // the locks waited out, each with its wait's error
}

// outwaited is the error of the wait for lock name this pass gave up, "" for none.
func (w *lockWaits) outwaited(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out[name]
}

func (w *lockWaits) note(name, why string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.out == nil {
		w.out = map[string]string{}
	}
	w.out[name] = why
}

// waitedOut is await's error for a lock held past the pass's bound, or by a holder stopped or
// stuck for stoppedWait: a wait given up.
type waitedOut struct{ err error }

func (w *waitedOut) Error() string { return w.err.Error() }
func (w *waitedOut) Unwrap() error { return w.err }

// withLockWait returns ctx under which a wait for a lock another process holds ends after d
// (none when d is 0), a lock waited out once not waited for again: a background pass's
// (Config.PassLockWait).
func withLockWait(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, lockWaitKey{}, &lockWaits{bound: d})
}

// lockWaitsOf is what withLockWait put on ctx, or nil.
func lockWaitsOf(ctx context.Context) *lockWaits {
	w, _ := ctx.Value(lockWaitKey{}).(*lockWaits)
	return w
}

// lockWaitOf is the bound withLockWait put on ctx, or 0.
func lockWaitOf(ctx context.Context) time.Duration {
	if w := lockWaitsOf(ctx); w != nil {
		return w.bound
	}
	return 0
}
