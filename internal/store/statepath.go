package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/atomicfile"
	"github.com/volctl/volctl/internal/backoff"
)

// A state dir is used at one path. The stagings and publish targets volctl makes are under it,
// and the paths are built from the state dir each process is given: a process reaching the
// same directory through a bind mount of it at another path (a container's view, a bind made
// by hand, the state dir bound into another tree) would stage and publish under its own path,
// mounts which the agent and every other command, looking under the first path, see as missing
// (a reconcile restores the claim a second time, and the plugin refuses a second staging) or
// never see at all (a release through the first path frees the claim and leaves those mounts,
// and the plugin's record of its staging, for good). So the path is recorded in the state dir
// (PathFileName), the first time a process writes there, and a store opened through another
// path to that same directory refuses every write, saying which path to use; it reads, so a
// dashboard or `volume status` on a (read-only) bind still works. A state dir moved or copied
// elsewhere is no longer the same directory at the recorded path, and is used at its new one.

// PathFileName is the file in the state dir that records the path it is used at.
const PathFileName = "volctl.path"

// ErrOtherPath is matched by the error of a write through another path to a state dir than
// the one it is used at.
var ErrOtherPath = errors.New("the state dir is used at another path")

// checkPath returns the error every write through dir (absolute) must fail with when dir is the
// state dir recorded at another path, nil otherwise, recording dir's real path when nothing is
// recorded yet or the recorded path no longer leads to this directory. A failure to read or
// write the record is logged, not fatal: the check guards against a misuse, and the state is
// whole without it.
//
// A record is made or replaced by one process at a time: two processes opening the state dir
// at once through two paths, both finding nothing recorded, or both finding the stale record of
// a move, would otherwise both record, the last rename winning, and both write, each making its
// mounts under its own path. So a process about to record takes the state dir's path lock
// (lockPathRecord) and reads the record again under it: the one that finds a record made
// meanwhile checks against it. On a file system without flock the first record is still made
// exclusively (linked into place, never renamed over another); a stale one is replaced as before.
func checkPath(ctx context.Context, dir string, wait time.Duration, log *slog.Logger) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	file := filepath.Join(dir, PathFileName)
	locked := false
	for {
		b, err := os.ReadFile(file)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("state dir: cannot read the path it is used at", "file", file, "err", err)
			return nil
		}
		recorded := strings.TrimSpace(string(b))
		switch {
		case recorded == real:
			return nil
		case recorded != "" && sameDir(recorded, real):
			return &DirError{Dir: dir, Named: true, Err: fmt.Errorf("state dir %s is %s reached through a bind mount of it (%w): volctl's mounts for it are made and looked for under %s, by the agent and every other command, so nothing is changed through %s; run volctl with VOLCTL_STATE_DIR=%s (or --state-dir %s). Only with no volume claimed or staged, remove %s to use it at %s from now on",
				dir, recorded, ErrOtherPath, recorded, dir, recorded, recorded, filepath.Join(recorded, PathFileName), real)}
		}
		if !locked {
			if beforePathRecord != nil {
				beforePathRecord()
			}
			unlock, err := lockPathRecord(ctx, dir, wait, log)
			if err != nil {
				return err
			}
			defer unlock()
			locked = true
			continue // read again under the lock: another process may have recorded meanwhile
		}
		if errors.Is(err, fs.ErrNotExist) {
			err = atomicfile.WriteNew(file, []byte(real+"\n"), 0o600)
			if errors.Is(err, fs.ErrExist) {
				continue // recorded meanwhile by another process: check against it
			}
		} else {
			err = atomicfile.Write(file, []byte(real+"\n"), 0o600) // a moved state dir's stale record, or an empty one
		}
		if err != nil {
			log.Warn("state dir: cannot record the path it is used at", "file", file, "err", err)
		}
		return nil
	}
}

// beforePathRecord, when set (by tests), runs after checkPath read the record and found it must
// write one, before it takes the path lock.
var beforePathRecord func()

// lockPathRecord takes the state dir's path lock, an exclusive flock on the directory dir
// itself (the same directory whatever path reaches it, and nothing else volctl locks), waiting
// up to wait while another process records, and returns what releases it. A process holds it
// for a read and a write of a small file, so a wait that long means the holder is stopped: the
// error then refuses writes (the record cannot be checked), naming the holder. Where the file
// system has no flock, or the directory cannot be opened to lock, it is not taken (logged): the
// record is written as before.
func lockPathRecord(ctx context.Context, dir string, wait time.Duration, log *slog.Logger) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		log.Warn("state dir: cannot open it to lock the path it is used at", "dir", dir, "err", err)
		return func() {}, nil
	}
	deadline := time.Now().Add(wait)
	waits := backoff.New(time.Millisecond, 50*time.Millisecond)
	for {
		ok, err := flockFile(f, unix.LOCK_EX)
		if err != nil {
			f.Close()
			if !unsupportedLock(err) {
				log.Warn("state dir: cannot lock the path it is used at", "dir", dir, "err", err)
			}
			return func() {}, nil
		}
		if ok {
			return func() { f.Close() }, nil // closing the only descriptor releases the flock
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("state dir %s: another volctl%s has held the lock on the path it is used at (%s) for %s, so which path is its own cannot be checked and nothing is changed through it: try again, and if that process is stopped, continue or end it", dir, holders(f), filepath.Join(dir, PathFileName), wait)
		} else if cerr := sleepCtx(ctx, backoff.Jitter(waits.Next())); cerr != nil {
			err = fmt.Errorf("state dir %s: interrupted while waiting for another volctl to record the path it is used at: %w", dir, cerr)
		}
		if err != nil {
			f.Close()
			return nil, &DirError{Dir: dir, Named: true, Err: err}
		}
	}
}

// sameDir reports whether the paths a and b lead to one directory (device and inode).
func sameDir(a, b string) bool {
	ia, err := idAt(a)
	if err != nil {
		return false
	}
	ib, err := idAt(b)
	return err == nil && ia == ib
}
