package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrNotFound is matched (errors.Is) by every error about a row that does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is matched (errors.Is) by every error about a write the schema refuses: a duplicate
// key, a row still referenced by another, a value outside its allowed set.
var ErrConflict = errors.New("conflict")

// ErrNewerSchema is matched by the error Open returns for a database written by a newer volctl.
var ErrNewerSchema = errors.New("database schema is newer than this volctl")

// ErrInUse is matched by the error Open returns when it would migrate the database while other
// volctl processes have it open.
var ErrInUse = errors.New("state database is in use by other volctl processes")

// ErrBusy is matched by the error a transaction returns when another process held the write lock
// for longer than the busy timeout.
var ErrBusy = errors.New("state database is busy")

// ErrNotOwned is matched by the error Open returns for a state directory or database file that
// another user owns.
var ErrNotOwned = errors.New("state is owned by another user")

// DirError is Open's error about the state directory: the directory itself, or the database
// files in it (and, from engine.Open, its lock directory). Its text names the directory once:
// the cause's text when that names the directory or a path in it already (Named), else "state
// dir <Dir>: " and the cause. Callers that add the state dir to other errors (cli's Factory)
// tell the two apart with errors.As, not by looking for the path in the text.
type DirError struct {
	Dir   string // the state directory, absolute, as Open was given it (before symlinks)
	Err   error  // what went wrong
	Named bool   // Err's text names Dir, or a path below it, already
}

func (e *DirError) Error() string {
	if e.Named {
		return e.Err.Error()
	}
	return "state dir " + e.Dir + ": " + e.Err.Error()
}

func (e *DirError) Unwrap() error { return e.Err }

// ownerError names the path, its owner and this process's user, says what that owner could do
// and how to fix it, and matches ErrNotOwned.
type ownerError struct {
	what, path string // "state dir", "/var/lib/volctl"
	owner, uid int
	risk       string // what the owner could do through it: "redirect volctl's mounts"
}

func (e *ownerError) Error() string {
	if e.owner == 0 {
		// Root's state (made with sudo, or the tour's root shell), met by a user: root's is
		// used as root. A chown would hand that user root's state and, through it, its mounts.
		return fmt.Sprintf("%s %s is owned by uid 0 (root), not by this user (uid %d): run volctl as root (sudo) to use it, or use another --state-dir",
			e.what, e.path, e.uid)
	}
	return fmt.Sprintf("%s %s is owned by uid %d, not by this user (uid %d): another user could %s through it; chown it to this user or use another --state-dir",
		e.what, e.path, e.owner, e.uid, e.risk)
}
func (e *ownerError) Is(target error) bool { return target == ErrNotOwned }

// ancestorError is a state dir reached through a directory or symlink another user controls
// (checkAncestors); it matches ErrNotOwned.
type ancestorError struct {
	dir, path string // the state dir; the directory or "symlink PATH" on the way to it
	why       string // "is owned by uid 4242, ...", "is writable by other users (mode 0777)"
}

func (e *ancestorError) Error() string {
	return fmt.Sprintf("state dir %s is reached through %s, which %s: another user could replace the state dir with one of theirs while volctl uses it, "+
		"and redirect volctl's mounts; use a state dir whose every parent directory (and symlink) is root's or this user's and writable by no other user, "+
		"or a sticky one such as /tmp (chown or chmod %s, or use another --state-dir)",
		e.dir, e.path, e.why, strings.TrimPrefix(e.path, "symlink "))
}
func (e *ancestorError) Is(target error) bool { return target == ErrNotOwned }

// plantedError is a state dir other users could write that holds entries they own
// (checkPlanted); it matches ErrNotOwned.
type plantedError struct {
	dir  string
	mode fs.FileMode
	list string // the entries, with their owners
}

func (e *plantedError) Error() string {
	return fmt.Sprintf("open state: state dir %s is writable by other users (mode %#o) and holds what other users own: %s; "+
		"they could go on changing it after volctl made the dir private, to redirect volctl's mounts or break its locks: "+
		"check and remove those (volctl changed nothing), then run the command again, or use another --state-dir",
		e.dir, uint32(e.mode), e.list)
}
func (e *plantedError) Is(target error) bool { return target == ErrNotOwned }

// conflictError carries a readable reason and matches ErrConflict.
type conflictError struct {
	reason string
	cause  error
}

func (e *conflictError) Error() string        { return e.reason }
func (e *conflictError) Is(target error) bool { return target == ErrConflict }
func (e *conflictError) Unwrap() error        { return e.cause }

// busyError says who held the lock, keeps the driver's error if there is one, and matches ErrBusy.
type busyError struct {
	why   string
	cause error
}

func (e *busyError) Error() string {
	if e.cause == nil {
		return "database is busy (" + e.why + ")"
	}
	return "database is busy (" + e.why + "): " + e.cause.Error()
}
func (e *busyError) Is(target error) bool { return target == ErrBusy }
func (e *busyError) Unwrap() error        { return e.cause }

// sqliteCode is the extended result code of a driver error, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// openFailed is Open's error err, saying what to do when SQLite could not read the database
// as one (SQLITE_NOTADB, SQLITE_CORRUPT) or found its file system full (SQLITE_FULL), whose
// words alone are "file is not a database (26)", "database or disk is full (13)". Any other
// err is returned as it is, and so is one of a disk that failed (diskFailed), to which inDir
// adds what to do.
func openFailed(path string, err error) error {
	if diskFailed(path, err) != "" {
		return err
	}
	if isFull(path, err) {
		where, free := fullWhere(path)
		if strings.Contains(err.Error(), where) {
			return err // explained already, by the migration's transaction (explain): said once (TestDiskFullDuringMigrationSaysItOnce)
		}
		return fmt.Errorf("%w (%s: %s, then run the command again)", err, where, free)
	}
	switch sqliteCode(err) & 0xff {
	case sqlite3.SQLITE_CANTOPEN:
		return outOfFiles(err)
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("%w (%s)", err, damagedAdvice)
	}
	return err
}

// outOfFiles is err, SQLite's "unable to open database file (14)" (SQLITE_CANTOPEN), which
// keeps the errno of the open that failed to itself, wrapping EMFILE or ENFILE when the process
// (its open files limit, ulimit -n) or the system has fewer than minFreeFiles descriptors left:
// the error then says so, and the command line what to raise (cli's Report), where SQLite's
// words alone send the reader to the file's permissions. The probe comes after the failure,
// when SQLite has closed what it opened for the connection (the database and its -wal, the
// -shm failing) and Open its lock file, so one free descriptor now proves nothing.
func outOfFiles(err error) error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for range minFreeFiles {
		fd, oerr := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(oerr, unix.EMFILE) || errors.Is(oerr, unix.ENFILE) {
			return fmt.Errorf("%w: %w", err, oerr)
		}
		if oerr != nil {
			return err
		}
		fds = append(fds, fd)
	}
	return err
}

// minFreeFiles is fewer descriptors than any volctl command needs beside those it holds from
// start: a SQLite connection in WAL mode holds three (the database, its -wal and -shm), a
// command a write and a read connection, and the state's lock file, a volume's and a
// plugin's lock files and a plugin's socket one each.
const minFreeFiles = 8

// damagedAdvice is what to do about a database SQLite cannot read as one.
const damagedAdvice = "volctl cannot read it as its state: a damaged file, or another file put there. " +
	"Move it aside with its -wal and -shm and restore a backup of the three (see Backups in docs/architecture.md), or use another --state-dir"

// explain is a transaction's error err, naming the database when err does not and saying what
// to do, when SQLite found the state's file system full (SQLITE_FULL: nothing of the
// transaction was written), or a page of the database damaged (SQLITE_CORRUPT, SQLITE_NOTADB:
// Open reads no more than the schema version, so a damaged table is met by the first
// transaction that reads it), whose words alone are "database or disk is full (13)" and
// "database disk image is malformed (11)", or the disk under it failed (diskFailed). Any other
// err is returned as it is.
func (s *Store) explain(err error) error {
	if se := (*sqlite.Error)(nil); s.turnedReadOnly(err) && errors.As(err, &se) {
		return &DirError{Dir: filepath.Dir(s.path), Err: fmt.Errorf("%w: its file system turned read-only under volctl (the kernel does so after an error on the disk, errors=remount-ro: see dmesg), "+
			"so what this command meant to change may not be recorded (SQLite: %v); repair the file system (fsck), mount it read-write again, "+
			"then run the command again and `volctl reconcile`, which finishes what was left half-done", ErrReadOnlyFS, se)}
	}
	advice := diskFailed(s.path, err)
	switch code := sqliteCode(err) & 0xff; {
	case advice != "":
	case isFull(s.path, err):
		where, free := fullWhere(s.path)
		advice = where + ", and this change was not recorded: " +
			free + ", then run the command again; `volctl reconcile` finishes anything an earlier step left half-done"
	case code == sqlite3.SQLITE_NOTADB, code == sqlite3.SQLITE_CORRUPT:
		advice = damagedAdvice
	case code == sqlite3.SQLITE_CANTOPEN:
		return outOfFiles(err)
	default:
		return err
	}
	if strings.Contains(err.Error(), advice) {
		return err // explained already, by a transaction within this one's function
	}
	if !strings.Contains(err.Error(), s.path) {
		err = fmt.Errorf("state %s: %w", s.path, err)
	}
	return fmt.Errorf("%w (%s)", err, advice)
}

// isBusy reports whether err is SQLite's "try again later": SQLITE_BUSY or SQLITE_LOCKED, with
// any extended code.
func isBusy(err error) bool {
	switch sqliteCode(err) & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// mapBusy makes SQLite's busy error, once the store gave up retrying it, ErrBusy; or, when the
// retry ended because its context did (retryBusy joins the two), the context's error, saying
// what it interrupted.
func mapBusy(err error) error {
	if !isBusy(err) {
		return err
	}
	for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, ctxErr) {
			return interruptedWait(ctxErr)
		}
	}
	if be := (*busyError)(nil); errors.As(err, &be) {
		return err // retryBusy's, naming the holders
	}
	return &busyError{why: "another volctl held the write lock too long", cause: err}
}

// interruptedWait is the error of a transaction whose wait for another process's lock ended
// with its context: nothing it would have written was committed.
func interruptedWait(ctxErr error) error {
	return fmt.Errorf("interrupted while waiting for another volctl's lock on the state database, nothing written: %w", ctxErr)
}

// wrap names the thing an error is about and maps driver errors to ErrNotFound / ErrConflict.
// onForeignKey is the reason given for a foreign-key violation, which only the caller can phrase
// (a missing parent on insert, a remaining child on delete).
func wrap(err error, what, onForeignKey string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	code := sqliteCode(err)
	if code&0xff == sqlite3.SQLITE_CONSTRAINT {
		var reason string
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			reason = "already exists"
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			reason = onForeignKey
		case sqlite3.SQLITE_CONSTRAINT_TRIGGER:
			// ON DELETE RESTRICT is enforced by a trigger SQLite makes, whose RAISE reports
			// this code and says "FOREIGN KEY constraint failed". volctl's schema has no trigger
			// of its own (TestSchemaHasNoTriggers), so any other is one added by hand, whose
			// refusal is its own, not a conflict with volctl's rows.
			if msg := detail(err); !strings.Contains(msg, "FOREIGN KEY constraint failed") {
				return fmt.Errorf("%s: refused by a trigger that volctl did not make (one added to the state database by hand): %s", what, msg)
			}
			reason = onForeignKey
		default:
			reason = "invalid: " + detail(err)
		}
		return fmt.Errorf("%s: %w", what, &conflictError{reason: reason, cause: err})
	}
	if code&0xff == sqlite3.SQLITE_READONLY {
		return fmt.Errorf("%s: %w", what, &readOnlyWrite{cause: err})
	}
	return fmt.Errorf("%s: %w", what, mapBusy(err))
}

// errReadOnly is a programming error: a write inside View, whose connections are query-only.
var errReadOnly = errors.New("write inside a read-only transaction (use Store.Update)")

// readOnlyWrite is SQLite's refusal of a write (SQLITE_READONLY), cause: inside View, whose
// connections are query-only, errReadOnly; in Update, the state's file system turned read-only
// under the store, which explain says instead (turnedReadOnly reads the code from cause).
type readOnlyWrite struct{ cause error }

func (e *readOnlyWrite) Error() string   { return errReadOnly.Error() }
func (e *readOnlyWrite) Unwrap() []error { return []error{errReadOnly, e.cause} }

// turnedReadOnly reports whether err, a write's, is the state dir's file system refusing it
// now: SQLite's write failed (SQLITE_IOERR, whose errno SQLite keeps to itself) or was refused
// as one to a read-only database (SQLITE_READONLY, SQLite's answer once a write failed so),
// and a file can no longer be made in the state dir (EROFS). An ext4 the kernel made
// read-only after an error (errors=remount-ro) keeps its mount's rw flag, which Open's check
// reads, so only a write tells. The file made to ask, O_TMPFILE, has no name: nothing is left
// where the file system is writable still; one that cannot make such a file is not judged.
func (s *Store) turnedReadOnly(err error) bool {
	switch sqliteCode(err) & 0xff {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY:
	default:
		return false
	}
	if s.roErr != nil || sqliteCode(err) == sqlite3.SQLITE_IOERR_NOMEM {
		return false
	}
	fd, oerr := unix.Open(filepath.Dir(s.path), unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if oerr == nil {
		unix.Close(fd)
	}
	return errors.Is(oerr, unix.EROFS)
}

// detail is the driver message without its generic prefix and numeric code, e.g.
// "CHECK constraint failed: state IN (...)". SQLite's constraint messages name columns and
// expressions, never the values, so no secret can leak through them.
func detail(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "constraint failed: ")
	if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	return msg
}

// notFound is the error for a row a write expected but did not find.
func notFound(what string) error { return fmt.Errorf("%s: %w", what, ErrNotFound) }

// affected turns "no row changed" into ErrNotFound for updates and deletes by key.
func affected(res sql.Result, err error, what, onForeignKey string) error {
	if err != nil {
		return wrap(err, what, onForeignKey)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(err, what, onForeignKey)
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}

// diskFailed is the advice for err, an error of the state database at path, when the disk
// under it failed: err is an I/O error (EIO, SQLITE_IOERR), or SQLite's words for a file it
// could not open or read as a database (SQLITE_CANTOPEN, SQLITE_CORRUPT, SQLITE_NOTADB) while
// the file reads with EIO. It names the disk (mountedFrom) and is empty for any other error:
// a disk that fails is not a damaged file, and the advice for one (move the database aside,
// restore a backup) would throw away every claim recorded since the backup.
func diskFailed(path string, err error) string {
	switch code := sqliteCode(err) & 0xff; {
	case sqliteCode(err) == sqlite3.SQLITE_IOERR_NOMEM: // memory, not the disk
		return ""
	case code == sqlite3.SQLITE_IOERR && !errors.Is(err, unix.EIO) && fsFull(path):
		return "" // full, not failed: SQLite says IOERR_SHMSIZE, IOERR_WRITE (isFull)
	case errors.Is(err, unix.EIO) || code == sqlite3.SQLITE_IOERR:
	case code == sqlite3.SQLITE_CANTOPEN || code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB:
		if !readsWithEIO(path) {
			return ""
		}
	default:
		return ""
	}
	return fmt.Sprintf("an I/O error: the disk holding the state dir (%s) failed to read or write it, so what this command meant to change may not be recorded; "+
		"check that disk and the kernel's log (dmesg), and once it reads and writes again run the command again and `volctl reconcile`, which finishes what was left half-done. "+
		"The database may well be whole: do not move it aside or restore a backup over it because of this error", mountedFrom(path))
}

// isFull reports whether err, an error of the state database at path, is its file system being
// full: SQLITE_FULL, or an I/O error SQLite gives when a file cannot grow (the -shm made anew
// at an open after a clean close: SQLITE_IOERR_SHMSIZE) while the file system has no room
// left. Before, the latter was taken for a failed disk, "check dmesg", every command, a
// read's too, refused so (TestDiskFullAtTheNextCommandsOpenSaysSo).
func isFull(path string, err error) bool {
	switch sqliteCode(err) & 0xff {
	case sqlite3.SQLITE_FULL:
		return true
	case sqlite3.SQLITE_IOERR:
		return !errors.Is(err, unix.EIO) && fsFull(path)
	}
	return false
}

// fullWhere says which file system a SQLITE_FULL of the state database at path found full,
// and what to free: the state dir's; or, when that one has room and SQLite's temporary
// directory has none, that directory, where SQLite writes what a statement sorts beyond its
// memory (a migration's CREATE INDEX over a large table). It blamed the state dir's file system
// always, and freeing space there, as it advised, changed nothing
// (TestMigrationWithTempDirFullIsNotBlamedOnTheStateDir).
func fullWhere(path string) (where, free string) {
	if tmp := sqliteTempDir(); tmp != "" && !fsFull(path) && fsFull(filepath.Join(tmp, "x")) {
		return fmt.Sprintf("SQLite's temporary directory %s is full (the file system holding the state dir has room): SQLite writes there what a statement sorts beyond its memory", tmp),
			"free space there, or set SQLITE_TMPDIR to a directory with room"
	}
	return "the file system holding the state dir is full", "free space there"
}

// sqliteTempDir is the directory SQLite writes its temporary files in, as it chooses one on
// Unix: the first of SQLITE_TMPDIR, TMPDIR, /var/tmp, /usr/tmp and /tmp that is a directory it
// may write and search; "" when none is.
func sqliteTempDir() string {
	for _, dir := range []string{os.Getenv("SQLITE_TMPDIR"), os.Getenv("TMPDIR"), "/var/tmp", "/usr/tmp", "/tmp"} {
		if fi, err := os.Stat(dir); dir != "" && err == nil && fi.IsDir() && unix.Access(dir, unix.W_OK|unix.X_OK) == nil {
			return dir
		}
	}
	return ""
}

// fsFull reports whether the file system holding path has less than 64 KiB free for this
// process (statfs of its directory: the blocks free to all for a user, and for root those its
// file system reserves for root too, which root writes into): too little for SQLite to grow a
// file there. Before, root's reserve was left out, and a disk that failed with only that
// reserve free was said full (TestFailedDiskWithOnlyRootsReserveFreeIsNotSaidFull).
func fsFull(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return false
	}
	free := st.Bavail
	if os.Geteuid() == 0 {
		free = st.Bfree
	}
	return free*uint64(st.Bsize) < 64<<10
}

// readsWithEIO reports whether reading path's first page fails with EIO.
func readsWithEIO(path string) bool {
	f, err := os.Open(path)
	if err == nil {
		_, err = f.Read(make([]byte, 4096))
		f.Close()
	}
	return errors.Is(err, unix.EIO)
}

// mountedFrom names the file system holding path: its source (the device) and mount point,
// "/dev/sdb1 mounted at /var/lib"; or, when the mount table cannot be read, the directory the
// database is in.
func mountedFrom(path string) string {
	mounts, err := mountinfo.GetMounts(mountinfo.ParentsFilter(path))
	if err != nil || len(mounts) == 0 {
		return filepath.Dir(path)
	}
	// The deepest mount point; of mounts stacked on one, the last mounted, the one seen.
	m := mounts[0]
	for _, o := range mounts[1:] {
		if len(o.Mountpoint) >= len(m.Mountpoint) {
			m = o
		}
	}
	return m.Source + " mounted at " + m.Mountpoint
}

// NoSpace is err, volctl's failure to make a file or directory under the state dir (a lock
// file, a staging or publish directory: an *os.PathError naming it), saying what to do when
// the file system holding it had no room for it: out of space, out of inodes (which df, showing
// space free, does not show: `df -i` does), or over the user's quota. Any other err is returned
// as it is.
func NoSpace(err error) error {
	var pe *os.PathError
	if !errors.As(err, &pe) {
		return err
	}
	dir := filepath.Dir(pe.Path)
	switch {
	case errors.Is(err, unix.EDQUOT):
		return fmt.Errorf("%w (this user's disk quota on the file system holding the state dir (%s) is used up: free space there or raise the quota, then run the command again)", err, mountedFrom(dir))
	case !errors.Is(err, unix.ENOSPC):
		return err
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) == nil && st.Files > 0 && st.Ffree == 0 {
		return fmt.Errorf("%w (the file system holding the state dir (%s) has no free inodes left, though it may have space free: `df -i %s` shows them; remove files there, or give it more inodes, then run the command again)",
			err, mountedFrom(dir), dir)
	}
	return fmt.Errorf("%w (the file system holding the state dir is full (%s): free space there, then run the command again)", err, mountedFrom(dir))
}
