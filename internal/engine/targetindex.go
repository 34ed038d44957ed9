package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// targetIndexDir is the index of the publish tree by volume (docs/architecture.md, State on
// disk): <state>/targets/<volume> lists, one a line, the allocs under whose publish directory
// volctl made a directory for the volume (publish/<alloc>/<volume>). The release's look for
// targets no claim records (checkUnrecordedTargets) reads the volume's list instead of looking
// in every alloc's directory, so its cost no longer grows with the other claims on the host.
//
// The index is kept outside the state database on purpose: what the look guards against is a
// database older than the mounts (a backup restored), which no record in it can show. It needs
// no fsync: it stands for mounts, and none outlives what loses the page cache (a power cut,
// a kernel crash). A line is added before NodePublishVolume can mount there (makeTargetParent,
// under the directory lock), so no directory volctl mounts in is missing from it; a line whose
// directory is gone is stale and costs one lookup, until a release's look or the next claim of
// the volume drops it. The directory's existence says the index is whole: a state dir from
// before it has publish directories no line names, so the first look builds it from one walk
// of the publish tree, under the directory lock held exclusively (the additions hold it
// shared), and moves it into place whole.
const targetIndexDir = "targets"

// targetIndexCompact is the size past which an addition rewrites a volume's list without its
// stale lines: a volume claimed and released by many allocs while one claim keeps it staged
// has no look to drop them.
const targetIndexCompact = 4096

// indexTarget adds the alloc of target (<state>/publish/<alloc>/<volume>/<usage>) to the
// volume's list in the target index, if the index exists (the first look builds it, walking the
// publish directories made before). The caller holds the directory lock (shared) and the volume
// lock, and has made the target's parent directory: the line goes in before any mount can.
func (l *locker) indexTarget(target string) error {
	stateDir := filepath.Dir(l.dir)
	alloc, volume, ok := targetAllocVolume(stateDir, target)
	if !ok {
		return nil
	}
	index := filepath.Join(stateDir, targetIndexDir)
	dir, err := unix.Open(index, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // not built yet: its build walks the publish tree, this directory with it
	}
	if err != nil {
		return targetIndexError(index, index, "open", err)
	}
	defer unix.Close(dir)
	if !writtenByVolctl(dir) {
		// Put back from a backup, or changed by hand: this line would make its times new and
		// hide that. Moved away whole, it is built again by the next look.
		return discardTargetIndex(index)
	}
	fd, err := unix.Openat(dir, volume, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return targetIndexError(index, filepath.Join(index, volume), "open", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return targetIndexError(index, filepath.Join(index, volume), "open", fmt.Errorf("not a regular file as volctl makes them"))
	}
	if !timesOfAWrite(&st) {
		_ = unix.Close(fd)
		return discardTargetIndex(index)
	}
	if st.Size > targetIndexCompact {
		_ = unix.Close(fd)
		allocs, err := readTargetIndex(dir, volume)
		if errors.Is(err, errIndexNotVolctls) {
			return discardTargetIndex(index)
		}
		if err != nil {
			return err
		}
		live := liveTargetAllocs(filepath.Join(stateDir, publishDir), volume, allocs)
		if !slices.Contains(live, alloc) {
			live = append(live, alloc)
		}
		return writeTargetIndex(dir, index, volume, live)
	}
	_, err = unix.Write(fd, []byte(alloc+"\n"))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return targetIndexError(index, filepath.Join(index, volume), "write", err)
	}
	return nil
}

// targetAllocVolume takes the alloc and volume out of a claim's target path,
// <state>/publish/<alloc>/<volume>/<usage>; ok is false for a path laid out otherwise.
func targetAllocVolume(stateDir, target string) (alloc, volume string, ok bool) {
	rel, err := filepath.Rel(filepath.Join(stateDir, publishDir), filepath.Clean(target))
	if err != nil {
		return "", "", false
	}
	parts := strings.Split(rel, "/")
	if len(parts) != 3 || parts[0] == ".." {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// indexedTargetDirs is volumeTargetDirs read from the target index: the <alloc>/<volume>
// directories under the publish directory that the volume's list names and that are there. The
// list is dropped when none is. The index is built first when it is missing. ok is false when
// the index cannot be used (a state dir volctl cannot write): the caller walks the tree.
func (e *Engine) indexedTargetDirs(ctx context.Context, volume string) (dirs []string, ok bool) {
	index := filepath.Join(e.cfg.StateDir, targetIndexDir)
	dir, err := unix.Open(index, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		if err := e.buildTargetIndex(ctx); err != nil {
			e.log.Warn(fmt.Sprintf("the index of the publish tree by volume could not be built (%v): the release looks in every alloc's publish directory", err))
			return nil, false
		}
		dir, err = unix.Open(index, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, false
	}
	// The directory's times first: the list read next may be dropped, which makes them new.
	var live []string
	err = errIndexNotVolctls
	if writtenByVolctl(dir) {
		live, err = e.liveTargetList(dir, volume)
	}
	if errors.Is(err, errIndexNotVolctls) {
		// Not as volctl left it (docs/architecture.md, State on disk): a line it lacks would
		// hide a target. Built again from the publish tree, once.
		_ = unix.Close(dir)
		e.log.Warn(fmt.Sprintf("the index of volctl's publish directories by volume, %s, is not as volctl left it (put back from a backup, or changed by hand): it is built again from the publish directories", index))
		if err := discardTargetIndex(index); err != nil {
			e.log.Warn(err.Error())
			return nil, false
		}
		if err := e.buildTargetIndex(ctx); err != nil {
			e.log.Warn(fmt.Sprintf("the index of the publish tree by volume could not be built (%v): the release looks in every alloc's publish directory", err))
			return nil, false
		}
		if dir, err = unix.Open(index, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return nil, false
		}
		live, err = e.liveTargetList(dir, volume)
	}
	defer unix.Close(dir)
	if err != nil {
		return nil, false
	}
	for _, a := range live {
		dirs = append(dirs, a+"/"+volume)
	}
	return dirs, true
}

// dropTargetList removes the volume's list from the target index when no publish directory it
// names is there: what a volume deleted or deregistered leaves when no release looked (its
// plugin neither stages nor attaches). The caller holds the volume lock.
func (e *Engine) dropTargetList(volume string) {
	dir, err := unix.Open(filepath.Join(e.cfg.StateDir, targetIndexDir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(dir)
	if !writtenByVolctl(dir) {
		// Dropping the list would make the directory's times new, and hide that.
		_ = discardTargetIndex(filepath.Join(e.cfg.StateDir, targetIndexDir))
		return
	}
	_, _ = e.liveTargetList(dir, volume)
}

// liveTargetList is the allocs of the volume's list in the index directory dir whose publish
// directory holds one for the volume; the list is removed when it names none (every line
// stale). The caller holds the volume lock.
func (e *Engine) liveTargetList(dir int, volume string) ([]string, error) {
	allocs, err := readTargetIndex(dir, volume)
	if err != nil {
		return nil, err
	}
	live := liveTargetAllocs(e.realPath(filepath.Join(e.cfg.StateDir, publishDir)), volume, allocs)
	if len(live) == 0 && len(allocs) > 0 {
		_ = unix.Unlinkat(dir, volume, 0)
	}
	return live, nil
}

// readTargetIndex reads the volume's list from the index directory dir: its allocs, each once.
// No list is none.
func readTargetIndex(dir int, volume string) ([]string, error) {
	fd, err := unix.Openat(dir, volume, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), volume)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s in the target index is not a regular file as volctl makes them", volume)
	}
	if !timesOfAWrite(&st) {
		return nil, fmt.Errorf("%s in the target index: %w", volume, errIndexNotVolctls)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	// volctl writes whole lines, each an alloc ID, and removes a list it would leave empty.
	text, whole := strings.CutSuffix(buf.String(), "\n")
	if !whole {
		return nil, fmt.Errorf("%s in the target index: %w", volume, errIndexNotVolctls)
	}
	var allocs []string
	for line := range strings.SplitSeq(text, "\n") {
		if spec.ValidateID("alloc ID", line) != nil {
			return nil, fmt.Errorf("%s in the target index: %w", volume, errIndexNotVolctls)
		}
		if !slices.Contains(allocs, line) {
			allocs = append(allocs, line)
		}
	}
	return allocs, nil
}

// errIndexNotVolctls is a list of the target index that volctl did not leave as it is: its
// contents are not whole lines of alloc IDs, or its times are not a write's (timesOfAWrite).
var errIndexNotVolctls = errors.New("not as volctl left it")

// indexTimeSlack is how far past its last write (mtime) the last change of a target index
// file's inode (ctime) may be and still be volctl's: its rename of a list written, or of the
// index built, just after the write, and a file system whose times count whole seconds.
const indexTimeSlack = 2 * time.Second

// timesOfAWrite says whether the times of st, a file or directory of the target index, are
// those its last write left: every change volctl makes to one (a line appended, a list or the
// index renamed into place, a list added or removed) sets its ctime with, or just after, its
// mtime. A copy put back with its times as they were (tar, cp -a, rsync -a: a backup of the
// state dir restored whole), or touched since by hand (chmod, touch -d), has its ctime, which
// no program can set, past its mtime: it may lack a line for a directory made since, and the
// release's look would find no target there.
func timesOfAWrite(st *unix.Stat_t) bool {
	ctime := time.Unix(st.Ctim.Unix())
	mtime := time.Unix(st.Mtim.Unix())
	return ctime.Sub(mtime) <= indexTimeSlack
}

// writtenByVolctl is timesOfAWrite of the index directory open at dir.
func writtenByVolctl(dir int) bool {
	var st unix.Stat_t
	return unix.Fstat(dir, &st) == nil && timesOfAWrite(&st)
}

// discardTargetIndex moves the target index at index away, to a name of its own, and removes
// it there: the next look builds it again from the publish tree. The move is atomic, so a
// claim adding a line meanwhile (under the directory lock, shared, as the caller may hold it)
// writes into the index moved away, or finds none (and the build's walk sees its directory),
// never into a half-removed one that would then read as whole.
func discardTargetIndex(index string) error {
	aside := fmt.Sprintf("%s.old-%d-%d", index, os.Getpid(), time.Now().UnixNano())
	if err := os.Rename(index, aside); err != nil && !errors.Is(err, os.ErrNotExist) {
		return targetIndexError(index, index, "move aside", err)
	}
	_ = os.RemoveAll(aside)
	return nil
}

// liveTargetAllocs is the allocs of allocs whose publish directory holds a directory for
// volume: one lookup each, relative to the publish directory pub opened once.
func liveTargetAllocs(pub, volume string, allocs []string) []string {
	if len(allocs) == 0 {
		return nil
	}
	f, err := os.Open(pub)
	if err != nil {
		return nil
	}
	defer f.Close()
	var live []string
	var st unix.Stat_t
	for _, a := range allocs {
		if unix.Fstatat(int(f.Fd()), a+"/"+volume, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			live = append(live, a)
		}
	}
	return live
}

// writeTargetIndex replaces the volume's list in the index directory dir (at path index) with
// allocs, or removes it when there are none. The new list is written beside it under a name no
// volume ID can have (IDs do not start with "-") and renamed over it.
func writeTargetIndex(dir int, index, volume string, allocs []string) error {
	if len(allocs) == 0 {
		if err := unix.Unlinkat(dir, volume, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return targetIndexError(index, filepath.Join(index, volume), "remove", err)
		}
		return nil
	}
	tmp := "-" + volume
	fd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return targetIndexError(index, filepath.Join(index, tmp), "open", err)
	}
	_, err = unix.Write(fd, []byte(strings.Join(allocs, "\n")+"\n"))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, volume)
	}
	if err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return targetIndexError(index, filepath.Join(index, volume), "write", err)
	}
	return nil
}

// buildTargetIndex makes the target index from one walk of the publish tree, under the
// directory lock held exclusively, so that no claim makes a publish directory meanwhile
// without its line: it is written whole under targets.new and renamed into place (the
// directory's existence says the index is whole). A partial one a killed build left is
// removed first. A build whose lock file was removed while it walked is not moved into place: it
// walks again under the lock at the path (withDirs); one removed after the last check, before the
// move, is moved in, then discarded and built again.
func (e *Engine) buildTargetIndex(ctx context.Context) error {
	moved := false // this build moved an index into place
	return e.locks.withDirs(ctx, true, func(lost func() bool) error {
		index := filepath.Join(e.cfg.StateDir, targetIndexDir)
		if _, err := os.Lstat(index); err == nil {
			if !moved {
				return nil // another process built it first
			}
			// This build's own, moved in after its last check of the lock, which was lost
			// before the move: a claim may have made a directory meanwhile and added no line.
			if err := discardTargetIndex(index); err != nil {
				return err
			}
			moved = false
		}
		tmp := index + ".new"
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
		if left, _ := filepath.Glob(index + ".old-*"); len(left) > 0 { // discardTargetIndex's, cut short
			for _, l := range left {
				_ = os.RemoveAll(l)
			}
		}
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return err
		}
		lists := map[string][]string{}
		pub := e.realPath(filepath.Join(e.cfg.StateDir, publishDir))
		for _, alloc := range subdirs(pub) {
			for _, volume := range subdirs(filepath.Join(pub, alloc)) {
				lists[volume] = append(lists[volume], alloc)
			}
		}
		testHookTargetIndexWalked()
		dir, err := unix.Open(tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(dir)
		for volume, allocs := range lists {
			if err := writeTargetIndex(dir, tmp, volume, allocs); err != nil {
				return err
			}
		}
		if lost() {
			// A claim may have made a directory after the walk, found no index and added no
			// line, under a lock on the file made anew: walked again under that lock.
			_ = os.RemoveAll(tmp)
			return errDirsLost
		}
		testHookTargetIndexBeforeMove()
		if err := os.Rename(tmp, index); err != nil {
			return err
		}
		moved = true
		return nil
	})
}

// testHookTargetIndexBeforeMove runs, in tests, once a build of the target index has checked its
// lock for the last time, before it moves the index into place.
var testHookTargetIndexBeforeMove = func() {}

// testHookTargetIndexWalked runs, in tests, once a build of the target index has walked the
// publish tree, under the directory lock.
var testHookTargetIndexWalked = func() {}

// targetIndexError says that a file of the target index could not be used, and what to do.
func targetIndexError(index, path, op string, err error) error {
	return fmt.Errorf("the index of volctl's publish directories by volume: %s %s: %w; volctl makes %s and the files in it: "+
		"if something else is there, remove %s whole (`rm -r %s`) and volctl builds it again from the publish directories",
		op, path, err, index, index, index)
}
