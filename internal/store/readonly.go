package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/volctl/volctl/internal/backoff"
)

// A state dir on a read-only file system (a backup mounted read-only, a snapshot, a read-only
// bind mount) is opened for reading: View works, every write fails with ErrReadOnlyFS naming the
// directory. Nothing is created, tightened or migrated there.
//
// The WAL is what makes this delicate: a volctl command leaves its commits in volctl.db-wal
// (CloseAtExit), so the database file alone is not the state. SQLite reads a WAL-mode database
// on a read-only file system when its -wal and -shm files exist: it reads the WAL into memory
// instead of through the -shm it cannot write, and still takes its locks, so a writer that
// reaches the same files another way (the read-write path under a read-only bind mount) is
// coordinated with. Only when there is no -wal is the database opened immutable (no locks, no
// WAL): then the file holds every commit. That is safe only while nothing writes it, and a
// read-only bind of a live state dir is not that: a volctl writing there makes a WAL first, and
// checkpoints it into the database file later. An immutable store kept open (a dashboard) would
// read neither, and show the state as it was when it opened; so each View of an immutable store
// first looks whether a WAL is there or the database file changed (two stats), and reopens its
// connections if so, with mode=ro and the WAL once there is one (readPool).

// ErrReadOnlyFS is matched by the error of a write to a state dir on a read-only file system,
// and of opening one that cannot be read there.
var ErrReadOnlyFS = errors.New("read-only file system")

// CheckWritable returns the error every write would return, nil when the store can be written:
// on a read-only file system, a whole operation that writes (a reconcile, the agent) fails
// up front, saying so once, rather than item by item.
func (s *Store) CheckWritable() error { return s.roErr }

// readOnlyError is the error of a write to the state in dir, on a read-only file system.
func readOnlyError(dir string) error {
	return &DirError{Dir: dir, Err: fmt.Errorf("%w: volctl can read the state there but not change it; run commands that change it on a writable state dir", ErrReadOnlyFS)}
}

// errWALWithoutSHM is matched by openReadOnly's refusal of a WAL without its -shm.
var errWALWithoutSHM = errors.New("a write-ahead log without its index")

// afterReadOnlyLook, when set (by a test), runs once openReadOnly has looked at the files and
// before it opens them: what another volctl does through a writable path meanwhile.
var afterReadOnlyLook func()

// readOnlyRelook is how long openLookingAgain looks again at a read-only state dir's files that
// another volctl, through a writable path to them, was making or removing as they were looked at.
const readOnlyRelook = 2 * time.Second

// openLookingAgain is openReadOnly, run again for up to readOnlyRelook while its error is one of
// files changing under it: a WAL without its -shm (a volctl's open makes the WAL first, its
// close removes the -shm first), SQLite unable to open a WAL looked at just before (removed by
// a close meanwhile), or finding its index being recovered. Each is gone a moment later, and
// was a refusal advising a copy of the state dir, or SQLite's bare "unable to open database file
// (14)" (TestReadOnlyStateOpenedWhileItsWALIsRemovedReadsTheState,
// TestReadOnlyStateOpenedWhileItsIndexIsMadeIsNotRefused).
func openLookingAgain(ctx context.Context, dir string, target int, o options) (*Store, error) {
	deadline := time.Now().Add(readOnlyRelook)
	waits := backoff.New(5*time.Millisecond, 100*time.Millisecond)
	for {
		s, err := openReadOnly(ctx, dir, target, o)
		if err == nil || !filesChanging(err) || time.Now().After(deadline) {
			return s, err
		}
		if sleepCtx(ctx, backoff.Jitter(waits.Next())) != nil {
			return nil, err
		}
	}
}

// filesChanging reports an error of openReadOnly that files changing under it explain.
func filesChanging(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY_RECOVERY:
		return true
	}
	return errors.Is(err, errWALWithoutSHM)
}

// openReadOnly is Open for a state dir on a read-only file system.
func openReadOnly(ctx context.Context, dir string, target int, o options) (*Store, error) {
	// The directories on the way to it are checked as a writable one's (checkDir): a user
	// owning one could move their own state dir into its place, for volctl to show as the host's.
	if err := checkAncestors(dir); err != nil {
		return nil, inDir(dir, fmt.Errorf("open state: %w", err))
	}
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a directory", dir)
	}
	if err == nil {
		err = checkOwner(fi, "state dir", dir, "redirect volctl's mounts")
	}
	if err != nil {
		return nil, &DirError{Dir: dir, Err: fmt.Errorf("open state: %w", err), Named: true}
	}
	path := filepath.Join(dir, FileName)
	sizes, err := checkFiles(path)
	if err == nil {
		err = checkWALPair(path, sizes[path], sizes[path+"-wal"])
		if wp := (*walPairRefusal)(nil); errors.As(err, &wp) {
			return nil, &DirError{Dir: dir, Err: fmt.Errorf("%w: %s", ErrReadOnlyFS, wp.readOnly())}
		}
	}
	if err == nil {
		// A copy of a state dir (a backup, a snapshot) whose WAL was left out or removed would be
		// opened immutable and shown as of its last checkpoint, what was recorded since missing.
		// Said for a read-only dir, where nothing can be removed nor reconciled: before, the
		// writable path's advice, both of whose steps failed there
		// (TestReadOnlyStateWhoseWALIsGoneIsNotToldToRemoveFilesThere).
		err = checkWALGone(path, sizes, false)
		if wg := (*walGoneError)(nil); errors.As(err, &wg) {
			return nil, &DirError{Dir: dir, Err: fmt.Errorf("%w: %s", ErrReadOnlyFS, wg.readOnly())}
		}
	}
	if err != nil {
		return nil, inDir(dir, err)
	}
	if sizes[path] == 0 {
		return nil, &DirError{Dir: dir, Err: fmt.Errorf("%w: it holds no state database (%s), and volctl cannot make one there", ErrReadOnlyFS, FileName)}
	}
	_, hasWAL := sizes[path+"-wal"]
	if _, hasSHM := sizes[path+"-shm"]; hasWAL && !hasSHM {
		// SQLite cannot read a WAL there without its -shm file, nor make one; opened immutable
		// it would leave out every commit the WAL holds.
		return nil, &DirError{Dir: dir, Err: fmt.Errorf("%w: its write-ahead log %s cannot be read there without %s: copy the state dir to a writable place to read it (%w)",
			ErrReadOnlyFS, FileName+"-wal", FileName+"-shm", errWALWithoutSHM)}
	}
	if afterReadOnlyLook != nil {
		afterReadOnlyLook()
	}
	s := &Store{
		path:         path,
		busyTimeout:  o.busyTimeout,
		stoppedWait:  DefaultStoppedWait,
		eventLimit:   o.eventLimit,
		historyLimit: o.historyLimit,
		now:          func() time.Time { return decTime(o.now().UnixNano()) },
		log:          o.log,
		roErr:        readOnlyError(dir),
	}
	// A volctl migrating the database through a writable path to the same files is waited
	// for, as Open waits; there is no lock file to hold where none was made.
	s.lock, err = os.OpenFile(path+lockSuffix, lockFileFlags, 0)
	if err == nil {
		if fi, err := s.lock.Stat(); err != nil || !fi.Mode().IsRegular() {
			s.lock.Close()
			s.lock = nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, &DirError{Dir: dir, Err: fmt.Errorf("open state: lock file: %w", err), Named: true}
	} else {
		s.lock = nil
	}
	// The file opened, which checkFile compares the path with: left unset, every check said
	// the database was replaced, and a dashboard or `events --follow` on a read-only bind of
	// the state dir failed at every read, a restart no help
	// (TestDashboardOnAReadOnlyBindOfTheStateDirReadsTheState).
	if s.file, err = idAt(path); err != nil {
		s.closeLock()
		return nil, inDir(dir, fmt.Errorf("open state %s: %w", path, err))
	}
	s.ro = &readOnlyState{immutable: !hasWAL, first: s.file}
	if !hasWAL {
		// Stamped before the open: a change from here on is seen at the next View.
		s.ro.file, _ = stampAt(path)
	}
	rdb, err := openDB(readOnlyDSN(path, o.busyTimeout, !hasWAL))
	if err != nil {
		s.closeLock()
		return nil, inDir(dir, fmt.Errorf("open state %s: %w", path, err))
	}
	s.r = newPool(rdb, readConns) // no connection yet: the first is opened when it is used
	if s.lock != nil {
		// The lock held exclusive by a volctl migrating: the state at this volctl's version is
		// read as last committed at once, as Open reads it (readMigrating). Before, a reader
		// through a read-only path waited out the busy timeout, 30 s, then failed
		// (TestReadOnlyPathReaderDoesNotWaitForAMigration).
		whenHeld := func() (bool, error) { return s.readMigrating(ctx, s.r, target) }
		if _, err := s.lockShared(ctx, time.Now().Add(s.busyTimeout), whenHeld); err != nil {
			s.r.close()
			s.closeLock()
			return nil, inDir(dir, err)
		}
	}
	// The schema's names too, for a file at version 0, as Open reads them: without them another
	// program's file, or volctl's with its version lost, was taken for an older volctl's state
	// (TestDatabaseNotVolctlsOnAReadOnlyFileSystemIsNamedForWhatItIs).
	var version, appID int
	var names []string
	err = s.View(ctx, func(tx *Tx) (err error) {
		version, appID, names, err = inspect(ctx, tx.c.sc)
		return err
	})
	if err == nil {
		err = s.checkVersion(version, appID, names)
	}
	if err == nil && version < target {
		err = &DirError{Dir: dir, Err: fmt.Errorf("%w: its state database is at schema version %d, older than this volctl's %d, and cannot be migrated there: read it with the volctl that wrote it, or copy the state dir to a writable place",
			ErrReadOnlyFS, version, target)}
	}
	if err != nil {
		s.Close()
		return nil, inDir(dir, err)
	}
	return s, nil
}

// readOnlyDSN is the connection string of a read-only state database: SQLite's mode=ro, and
// immutable when there is no WAL to read (see above).
func readOnlyDSN(path string, busy time.Duration, immutable bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	q.Add("_pragma", "cache_size(-"+strconv.Itoa(readCacheKiB)+")")
	q.Set("_query_only", "1")
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// readOnlyState is how a store on a read-only file system reads: whether its read pool has the
// database open immutable, and the file as it was when it did.
type readOnlyState struct {
	mu        sync.Mutex // held to check and replace s.r
	immutable bool
	file      fileStamp
	// first is the file opened first, which readPool never changes (CheckFirstFile).
	first fileID
}

// fileStamp is what changes when a file is written or replaced.
type fileStamp struct {
	id           fileID
	size         int64
	mtime, ctime syscall.Timespec
}

// stampAt is the stamp of the file at path.
func stampAt(path string) (fileStamp, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileStamp{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileStamp{id: fileID{dev: st.Dev, ino: st.Ino}, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, nil
}

// reader is the read pool, as readPool last left it.
func (s *Store) reader() *pool {
	if s.ro == nil {
		return s.r
	}
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	return s.r
}

// readPool is the pool a View reads through. For a store opened immutable on a read-only file
// system, it is opened again first when a WAL has appeared beside the database (mode=ro, which
// reads it and takes SQLite's locks) or the database file changed (immutable again): see the
// top of this file. A WAL without its -shm cannot be read there; the pool is kept, and reads
// what it read.
// immutableStamp is the file the read pool has open immutable, as it was when opened, and
// whether it does (a store on a read-only file system with no WAL to read).
func (s *Store) immutableStamp() (fileStamp, bool) {
	if s.ro == nil {
		return fileStamp{}, false
	}
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	return s.ro.file, s.ro.immutable
}

// changedWhileRead refuses what a View of an immutable store read when the file is no longer
// stamp, as it was when the View began: SQLite takes no locks on a file opened immutable and
// never checks its cache again, and another volctl writing through a writable path (a commit
// and a checkpoint) changed the pages under the View, which mixed two states, failing "database
// disk image is malformed", said a damaged file whose backup to restore, or reading a count of
// 0 beside a list of 201 (TestReadOnlyViewStraddledByAnotherVolctlIsNotCalledDamaged). The
// next View reads the file as it is then (readPool).
func (s *Store) changedWhileRead(stamp fileStamp) error {
	if now, err := stampAt(s.path); err == nil && now == stamp {
		return nil
	}
	return &DirError{Dir: filepath.Dir(s.path), Err: fmt.Errorf("read state: %w: %s changed while this volctl read it (another volctl wrote it through a writable path; "+
		"this one reads it through a read-only one, without locks): what was read may mix two states, so none of it is used; nothing is damaged: run the command again", ErrChangedWhileRead, s.path)}
}

// walEmpty reports whether the write-ahead log at path holds no frame (no commit): empty, or
// its header alone.
func walEmpty(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Size() <= walHeaderSize
}

// ErrChangedWhileRead matches the refusal of a read-only View whose file another volctl changed
// under it (changedWhileRead): harmless, the next read reads the file as it is then. A reader
// that goes on (events --follow, the agent's, the redaction of an error) reads again.
var ErrChangedWhileRead = errors.New("the state changed while it was read")

func (s *Store) readPool() (*pool, error) {
	if s.ro == nil {
		return s.r, nil
	}
	s.ro.mu.Lock()
	defer s.ro.mu.Unlock()
	if !s.ro.immutable || s.r.isClosed() {
		return s.r, nil
	}
	_, werr := os.Lstat(s.path + "-wal")
	_, serr := os.Lstat(s.path + "-shm")
	hasWAL := werr == nil
	stamp, err := stampAt(s.path)
	if err != nil {
		return nil, &DirError{Dir: filepath.Dir(s.path), Err: fmt.Errorf("read state: %w", err)}
	}
	if hasWAL && serr != nil && stamp != s.ro.file && walEmpty(s.path+"-wal") {
		// A writer opening makes its WAL a moment before its -shm, with nothing in it yet: the
		// file holds every commit, and the pool opened on an older one would read pages of
		// two states (changedWhileRead refused every read then: an events --follow died on
		// another volctl's open, TestEventsFollowOnAReadOnlyBindOutlivesAnotherVolctlsWrite).
		hasWAL = false
	}
	if hasWAL && serr != nil || !hasWAL && stamp == s.ro.file {
		return s.r, nil
	}
	rdb, err := openDB(readOnlyDSN(s.path, s.busyTimeout, !hasWAL))
	if err != nil {
		return nil, &DirError{Dir: filepath.Dir(s.path), Err: fmt.Errorf("read state %s again: %w", s.path, err)}
	}
	old := s.r
	s.r = newPool(rdb, readConns)
	// The file checkFile compares with is the one opened now: left the first one's, a store
	// that reads a WAL now said its state was replaced at the next check
	// (TestReadOnlyStoreThatFollowedAReplacedFileChecksTheNewOne).
	s.ro.immutable, s.ro.file, s.file = !hasWAL, stamp, stamp.id
	_ = old.close() // a View still on it has its connection closed when it ends
	return s.r, nil
}
