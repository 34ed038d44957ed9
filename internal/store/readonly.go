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
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
// read-only bind of a live state dir is not that; a volctl writing there makes a WAL first,
// though, which the next read-only open finds.

// ErrReadOnlyFS is matched by the error of a write to a state dir on a read-only file system,
// and of opening one that cannot be read there.
var ErrReadOnlyFS = errors.New("read-only file system")

// readOnlyFS says dir is on a file system mounted read-only. A dir that does not exist is not.
func readOnlyFS(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_RDONLY != 0
}

// CheckWritable returns the error every write would return, nil when the store can be written:
// on a read-only file system, a whole operation that writes (a reconcile, the agent) fails
// up front, saying so once, rather than item by item.
func (s *Store) CheckWritable() error { return s.roErr }

// readOnlyError is the error of a write to the state in dir, on a read-only file system.
func readOnlyError(dir string) error {
	return &DirError{Dir: dir, Err: fmt.Errorf("%w: volctl can read the state there but not change it; run commands that change it on a writable state dir", ErrReadOnlyFS)}
}

// openReadOnly is Open for a state dir on a read-only file system.
func openReadOnly(ctx context.Context, dir string, target int, o options) (*Store, error) {
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
		return nil, &DirError{Dir: dir, Err: fmt.Errorf("%w: its write-ahead log %s cannot be read there without %s: copy the state dir to a writable place to read it",
			ErrReadOnlyFS, FileName+"-wal", FileName+"-shm")}
	}
	s := &Store{
		path:         path,
		busyTimeout:  o.busyTimeout,
		eventLimit:   o.eventLimit,
		historyLimit: o.historyLimit,
		now:          func() time.Time { return decTime(o.now().UnixNano()) },
		log:          o.log,
		roErr:        readOnlyError(dir),
	}
	// A volctl migrating the database through a writable path to the same files is waited
	// for, as Open waits; there is no lock file to hold where none was made.
	s.lock, err = os.OpenFile(path+lockSuffix, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
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
	if s.lock != nil {
		if _, err := s.lockShared(ctx, time.Now().Add(s.busyTimeout)); err != nil {
			s.lock.Close()
			return nil, inDir(dir, err)
		}
	}
	rdb, err := openDB(readOnlyDSN(path, o.busyTimeout, !hasWAL))
	if err != nil {
		s.closeLock()
		return nil, inDir(dir, fmt.Errorf("open state %s: %w", path, err))
	}
	s.r = newPool(rdb, readConns)
	var version, appID int
	err = s.View(ctx, func(tx *Tx) (err error) {
		version, appID, err = schemaVersion(ctx, tx.c.sc)
		return err
	})
	if err == nil {
		err = s.checkVersion(version, appID, nil)
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
	q.Set("_query_only", "1")
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}
