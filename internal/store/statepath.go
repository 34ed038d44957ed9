package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
// The first record is made exclusively (linked into place, never renamed over another): two
// processes opening the state dir at once through two paths, both finding nothing recorded,
// would otherwise both record, the last rename winning, and both write, each making its mounts
// under its own path. The one that finds the record made meanwhile checks against it.
func checkPath(dir string, log *slog.Logger) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	file := filepath.Join(dir, PathFileName)
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
		if beforePathRecord != nil {
			beforePathRecord()
		}
		if errors.Is(err, fs.ErrNotExist) {
			err = writeNew(file, []byte(real+"\n"))
			if errors.Is(err, fs.ErrExist) {
				continue // recorded meanwhile by another process: check against it
			}
		} else {
			err = writeAtomic(file, []byte(real+"\n")) // a moved state dir's stale record, or an empty one
		}
		if err != nil {
			log.Warn("state dir: cannot record the path it is used at", "file", file, "err", err)
		}
		return nil
	}
}

// beforePathRecord, when set (by tests), runs after checkPath read the record and before it
// writes one.
var beforePathRecord func()

// sameDir reports whether the paths a and b lead to one directory (device and inode).
func sameDir(a, b string) bool {
	ia, err := idAt(a)
	if err != nil {
		return false
	}
	ib, err := idAt(b)
	return err == nil && ia == ib
}

// writeAtomic replaces the file at path with data, mode 0600: written beside it and renamed over
// it, so a reader finds the old content or the new, never a part.
func writeAtomic(path string, data []byte) error {
	return writeBeside(path, data, os.Rename)
}

// writeNew is writeAtomic for a file that must not exist yet: linked into place, it fails with
// fs.ErrExist, changing nothing, when another process made it first.
func writeNew(path string, data []byte) error {
	return writeBeside(path, data, func(tmp, path string) error {
		err := os.Link(tmp, path)
		_ = os.Remove(tmp)
		return err
	})
}

// writeBeside writes data to a new file beside path (mode 0600) and puts it in place with
// place(tmp, path); the temporary file goes if that fails.
func writeBeside(path string, data []byte, place func(tmp, path string) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = place(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
