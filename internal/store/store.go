// Package store is volctl's state: one SQLite file (volctl.db) in the state directory, with
// embedded numbered migrations, a transaction helper and a typed API per entity. It is the only
// package that contains SQL.
//
// Every write goes through Update, which takes SQLite's write lock up front (BEGIN IMMEDIATE), so
// concurrent volctl processes queue for it instead of failing with "database is locked". Reads go
// through View, on separate read-only connections, and never take the write lock. Connections
// are kept open with their prepared statements, so SQLite parses each statement once per
// connection rather than once per call.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/backoff"
	"github.com/volctl/volctl/internal/pathtrust"
)

// FileName is the name of the database file inside the state directory.
const FileName = "volctl.db"

// The defaults Open uses unless an Option says otherwise.
const (
	DefaultBusyTimeout  = 30 * time.Second
	DefaultEventLimit   = 10000
	DefaultHistoryLimit = 10000
)

// walAutocheckpoint is the WAL size, in pages, at which a commit checkpoints it into the
// database file. A volctl command leaves the WAL to the next process (CloseAtExit), which reads it
// back when it opens the database, so the WAL is kept small: reading back 100 pages is cheaper
// than the checkpoint and fsyncs every exit would otherwise cost. SQLite's default is 1000.
const walAutocheckpoint = 100

// A process writing in bulk (a reconcile restoring many claims, the agent, a large group run)
// checkpoints less often: once it has committed bulkWrites writes, its write connection
// checkpoints at walBulkAutocheckpoint pages, SQLite's default. A checkpoint runs inside the
// commit that crosses the threshold, on the one write connection, so every writer of the process
// queues behind its two fsyncs and its copy; at 100 pages a 1,000-claim restore spent a third of
// its time there (BENCHMARKS.md, Restore). A command's few writes stay under bulkWrites and keep
// the 100-page bound, and a bulk process checkpoints what it wrote before it exits (CloseAtExit),
// so what the next command reads back stays small either way.
const (
	bulkWrites            = 32
	walBulkAutocheckpoint = 1000
)

// readConns bounds the read connections: enough for the dashboard and the agent to read
// concurrently, few enough that an idle process holds little. They are opened as needed.
const readConns = 4

// readCacheKiB is a read connection's page cache, in KiB (SQLite's default is 2,000). A read
// connection scans whole tables (a list, the dashboard): a scan of a database larger than the
// cache gains nothing from it, since each page is read once and then evicted, while every
// cache slot costs an allocation and, in a volctl process that starts with none, the page
// faults of fresh memory. `volume status` over 10,000 volumes (a 4.8 MB database) spent a
// sixth of its time filling a 2 MB cache it never read again (BENCHMARKS.md). A small state
// fits in this one whole; pages not cached are read from the kernel's page cache.
const readCacheKiB = 256

// Store is an open state database. It is safe for concurrent use by multiple goroutines; several
// processes may have the same database open at once.
type Store struct {
	// goneHere holds the secret values commits through this Store took out of the state, for
	// the life of the process (ForgottenHere).
	goneHere goneValues

	path        string
	lock        *os.File // the open lock (openlock.go), held shared until Close or the exit
	w           *pool    // one connection: in-process writers queue here, not in SQLite's busy loop
	r           *pool    // query_only connections for View
	busyTimeout time.Duration
	// stoppedWait is how long a writer waits for the write lock once every holder is stopped
	// by a signal (retryBusy); DefaultStoppedWait, shorter in tests.
	stoppedWait  time.Duration
	eventLimit   int
	historyLimit int
	now          func() time.Time
	log          *slog.Logger
	commits      [3]atomic.Int64 // committed transactions, indexed by txKind
	rolledBack   atomic.Int64    // write transactions begun and rolled back (Stats)
	// unsynced says the last write committed was progress (synchronous=NORMAL): the WAL holds
	// commits not yet forced to disk, which CloseAtExit forces there.
	unsynced atomic.Bool
	// writes counts the write transactions committed since Open, a reader's writes on the side
	// (TryUpdateProgress) left out: from bulkWrites on, the process writes in bulk
	// (walBulkAutocheckpoint). A read command that records the health of many plugins stays
	// a command, and pays no checkpoint at its exit.
	writes atomic.Int64
	closed atomic.Bool  // Close closed the lock file
	rows   atomic.Int64 // rows read by collect (RowsRead)
	// file is the database file opened (replaced.go): a write checks the path still leads to it.
	file fileID
	// roErr is every write's error when the state dir is on a read-only file system
	// (readonly.go), which leaves w nil, or is reached through another path than the one it
	// is used at (statepath.go).
	roErr error
	// migrating is set when the store was opened for reading while another volctl migrated
	// the database (readMigrating): it reads without the open lock, and writes nothing.
	migrating error
	// ro is how a store on a read-only file system reads (readonly.go); nil otherwise.
	ro *readOnlyState
	// forget scrubs the event log of the secret values a transaction took out of the state
	// (forget.go); nil leaves it as it is.
	forget func(values []string) func(string) string
	// secretsInWAL says a commit took secret values out of the state and the WAL, whose
	// frames before that commit hold them, could not yet be truncated (wipeWAL).
	secretsInWAL atomic.Bool
	// marked says the schema has the state mark (markVersion on), which every commit that
	// changes a row updates (walpair.go).
	marked bool
	// keyed says the schema has the storage keys (keysVersion on, storagekeys.go), which
	// every write of an external or snapshot ID sets.
	keyed bool
	// debts says the state mark records the wipes of secrets owed (debtVersion on,
	// securedelete.go); vacuumOwed that this Open's migration recorded the VACUUM owed, and
	// vacuumTried that this process tried it.
	debts, vacuumOwed bool
	vacuumTried       atomic.Bool
	// vacuumSQL replaces "VACUUM" when set: a test's way to make the VACUUM fail.
	vacuumSQL string
}

// Stats counts the transactions this Store has committed since Open, by kind, and the write
// transactions it rolled back. Tests and benchmarks read it to pin what an operation costs in
// commits, in forced writes to disk, and in write transactions that commit nothing.
type Stats struct {
	Reads          int64 // View
	DurableWrites  int64 // Update: each one waits for the disk
	ProgressWrites int64 // UpdateProgress: on disk with the next durable commit
	// RolledBack counts the write transactions begun and not committed (fn's error, a refusal
	// included): each took the write lock, ran its statements and wrote nothing.
	RolledBack int64
}

// Stats returns the commit counts so far.
func (s *Store) Stats() Stats {
	return Stats{
		Reads:          s.commits[readOnly].Load(),
		DurableWrites:  s.commits[durable].Load(),
		ProgressWrites: s.commits[relaxed].Load(),
		RolledBack:     s.rolledBack.Load(),
	}
}

// RowsRead counts the rows the queries that list (collect) have read since Open: tests pin
// with it what a read that must not grow with a table costs.
func (s *Store) RowsRead() int64 { return s.rows.Load() }

// Option configures Open.
type Option func(*options)

type options struct {
	busyTimeout  time.Duration
	eventLimit   int
	historyLimit int
	now          func() time.Time
	log          *slog.Logger
	forget       func(values []string) func(string) string
	reading      bool // ForReading
}

// WithClock sets the clock that stamps created/updated times, for deterministic tests.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithLogger sets where the store reports what it fixed on its own (e.g. tightened permissions).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// ForReading is for a process that reads and may never write (a list, a status): Open reads
// an existing database's schema version on a read connection, which the process's reads then
// use, and the write connection is opened by the first write, if one comes. Each connection
// SQLite opens reads and parses the schema: the write connection opened for that one version
// read was a twentieth of `volume status`'s CPU, and the command never wrote. A new database,
// or one to migrate, is still made and migrated on the write connection.
func ForReading() Option { return func(o *options) { o.reading = true } }

// Open opens the state database in dir, creating the directory (0700) and the database (0600) if
// they do not exist, and migrates its schema to the one this binary knows. A database written by
// a newer volctl is refused with ErrNewerSchema, a state dir or database another user owns with
// ErrNotOwned, and another program's SQLite file is refused rather than converted.
func Open(ctx context.Context, dir string, opts ...Option) (*Store, error) {
	return open(ctx, dir, len(migrations), opts...)
}

// open is Open with the schema version to migrate to, so tests can build older databases.
func open(ctx context.Context, dir string, target int, opts ...Option) (*Store, error) {
	o := options{
		busyTimeout:  DefaultBusyTimeout,
		eventLimit:   DefaultEventLimit,
		historyLimit: DefaultHistoryLimit,
		now:          time.Now,
		log:          slog.New(slog.DiscardHandler),
	}
	for _, opt := range opts {
		opt(&o)
	}
	if dir == "" {
		return nil, errors.New("open state: no state directory given")
	}
	if o.eventLimit < 1 || o.historyLimit < 1 || o.busyTimeout <= 0 {
		return nil, fmt.Errorf("open state: busy timeout, event and history limits must be positive (got %v, %d and %d)",
			o.busyTimeout, o.eventLimit, o.historyLimit)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, &DirError{Dir: dir, Err: fmt.Errorf("open state %s: %w", dir, err), Named: true}
	}
	readOnly, err := checkFS(abs, o.log)
	if err != nil {
		return nil, err
	}
	if readOnly {
		return openLookingAgain(ctx, abs, target, o)
	}
	st, err := openWritable(ctx, abs, target, o)
	if _, serr := os.Stat(abs); errors.Is(err, syscall.EROFS) && serr == nil {
		// statfs said read-write and the file system refused a write: an ext4 the kernel made
		// read-only after an error (errors=remount-ro) keeps its mount's rw flag. Nothing could
		// be changed there, so it opens as a read-only file system does: status and the
		// dashboard still read the state, when they are needed most. A state dir the refusal
		// kept from being made has nothing to read: its error says what to do (denied).
		o.log.Warn("the state dir's file system refuses writes though it is mounted read-write (made read-only after an error? see dmesg): opened for reading", "dir", abs)
		st, err := openLookingAgain(ctx, abs, target, o)
		if err == nil {
			st.roErr = &DirError{Dir: abs, Err: fmt.Errorf("%w: its file system refuses writes though it is mounted read-write (made read-only after an error: see dmesg); volctl can read the state there but not change it: repair the file system (fsck), mount it read-write again, then run volctl reconcile", ErrReadOnlyFS)}
		}
		return st, err
	}
	return st, err
}

// openWritable is open for a state dir on a file system statfs says is writable.
func openWritable(ctx context.Context, abs string, target int, o options) (*Store, error) {
	// From here every error is about the state dir or a file in it, and names that path.
	held, err := checkDir(abs)
	if err != nil {
		return nil, inDir(abs, err)
	}
	// Nothing is changed, of the dir or of a file in it, before the database is known to be
	// volctl's or new (identify.go): another program's file there is refused as it was found.
	path := filepath.Join(abs, FileName)
	sizes, err := checkFiles(path)
	blank := false
	if err == nil {
		blank, err = identify(path, sizes[path], sizes[path+"-wal"])
	}
	if err == nil {
		err = checkWALPair(path, sizes[path], sizes[path+"-wal"])
	}
	if err == nil {
		// Before prepareFile's lost-database checks: a WAL removed under a live process on a
		// new state dir leaves a file with no table, which that process's exit can still make
		// whole (TestWALRemovedUnderALiveProcessOnANewStateDirNamesIt).
		err = checkWALGone(path, sizes, blank)
	}
	if err != nil {
		return nil, inDir(abs, err)
	}
	if err := tighten(abs, 0o700, held, o.log); err != nil {
		return nil, inDir(abs, fmt.Errorf("open state: state directory: %w", err))
	}
	if err := prepareFile(path, sizes, blank, o.log); err != nil {
		return nil, inDir(abs, err)
	}

	file, err := idAt(path)
	if err != nil {
		return nil, inDir(abs, fmt.Errorf("open state: %w", err))
	}
	lock, err := openLockFile(path)
	if err != nil {
		return nil, inDir(abs, err)
	}
	if err := checkSHMGone(path, sizes, lock); err != nil {
		lock.Close()
		return nil, inDir(abs, err)
	}
	s := &Store{
		path:         path,
		file:         file,
		lock:         lock,
		busyTimeout:  o.busyTimeout,
		stoppedWait:  DefaultStoppedWait,
		eventLimit:   o.eventLimit,
		historyLimit: o.historyLimit,
		// Readings are cut to what the database keeps, so a value returned by a write equals the
		// one read back.
		now:    func() time.Time { return decTime(o.now().UnixNano()) },
		log:    o.log,
		forget: o.forget,
	}
	wdb, err := openDB(dsn(path, o.busyTimeout, false))
	if err != nil {
		lock.Close()
		return nil, inDir(abs, fmt.Errorf("open state %s: %w", path, err))
	}
	s.w = newPool(wdb, 1)
	// Neither pool has a connection yet: each opens its first when it is first used.
	rdb, err := openDB(dsn(path, o.busyTimeout, true))
	if err != nil {
		s.w.close()
		lock.Close()
		return nil, inDir(abs, fmt.Errorf("open state %s: %w", path, err))
	}
	s.r = newPool(rdb, readConns)
	versions := s.w
	if o.reading && sizes[path] > 0 {
		versions = s.r
	}
	if err := s.migrateTo(ctx, versions, target); err != nil {
		s.r.close()
		s.w.close()
		lock.Close()
		return nil, inDir(abs, openFailed(path, err))
	}
	s.marked = target >= markVersion
	s.keyed = target >= keysVersion
	if s.debts = target >= debtVersion; s.vacuumOwed {
		s.payAtOpen()
	} else if s.debts && s.migrating == nil {
		s.payOwedWipe(versions)
	}
	// SQLite creates -wal and -shm with the database's mode, but only while that mode survives
	// the umask intact; make sure neither is readable by others whatever the umask was.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := tighten(path+suffix, 0o600, true, o.log); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.r.close()
			s.w.close()
			lock.Close()
			return nil, inDir(abs, fmt.Errorf("open state %s: %w", path, err))
		}
	}
	// The path record says the state dir's database is made (checkUsedWithoutDatabase), which
	// at target 0 (the tests' empty database, no table in it) it is not.
	if target > 0 {
		s.roErr = checkPath(ctx, abs, o.busyTimeout, o.log)
	}
	if s.roErr == nil && s.migrating != nil {
		s.roErr = s.migrating
	}
	if s.keyed && !o.reading && s.roErr == nil {
		s.rekeyAtOpen(ctx)
	}
	return s, nil
}

// inDir makes err, whose text names the state dir or a path in it, Open's *DirError, saying
// what to do when the disk under it failed (diskFailed); one that is a *DirError already is
// left as it is.
func inDir(dir string, err error) error {
	if de := (*DirError)(nil); errors.As(err, &de) {
		return err
	}
	if advice := diskFailed(filepath.Join(dir, FileName), err); advice != "" {
		err = fmt.Errorf("%w (%s)", err, advice)
	}
	return &DirError{Dir: dir, Err: err, Named: true}
}

// dsn builds the driver's connection string. The path goes in a file: URI, escaped, so a state
// directory with '?' or '#' in its name still works.
func dsn(path string, busy time.Duration, readOnly bool) string {
	q := url.Values{}
	// The write connection waits for another process's write lock in Go (retryBusy, up to the
	// busy timeout), not in SQLite's busy handler, which sleeps through a cancelled context:
	// Ctrl-C must end a command queued behind another volctl. A connection has no busy handler
	// until one is set, so the write connection's DSN sets none: a PRAGMA busy_timeout(0)
	// there was one more statement prepared and run by every process that writes
	// (TestWriteConnectionWaitsInGoOnly).
	if readOnly {
		q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	}
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "cache_size(-"+strconv.Itoa(readCacheKiB)+")")
		q.Set("_query_only", "1")
	} else {
		// Write transactions take the lock at BEGIN, so two processes never both hold a read
		// snapshot they then try to upgrade (which SQLite answers with SQLITE_BUSY at once,
		// without waiting). Update says BEGIN IMMEDIATE itself; this covers any other BEGIN.
		q.Set("_txlock", "immediate")
		q.Add("_pragma", "journal_mode(WAL)")
		// FULL, not WAL's usual NORMAL: a claim state the engine committed before sending
		// ControllerPublish must survive a power cut, or the attachment is orphaned.
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(walAutocheckpoint)+")")
		// A row deleted or rewritten leaves no copy of its bytes in the freed space of its
		// page or in a freed page: a volume's secrets must not outlive it on disk (wipeWAL).
		q.Add("_pragma", "secure_delete(1)")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// checkDir creates the state directory 0700, or checks that an existing one may be made 0700:
// it holds secrets and mount targets, and the mode must not depend on the umask or on whoever
// created it. held says it holds state (Open tightens it, and warns that others had access).
func checkDir(dir string) (held bool, err error) {
	// Before anything is made there: a state dir made in a directory another user controls is
	// theirs to replace.
	if err := checkAncestors(dir); err != nil {
		return false, fmt.Errorf("open state: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		// MkdirAll names the directory it failed to make, which is a parent of dir when it is
		// the parent that is missing its way (a file, no permission).
		var pe *fs.PathError
		named := errors.As(err, &pe) && pe.Path == dir
		return false, &DirError{Dir: dir, Err: fmt.Errorf("open state: create state directory: %w%s%s%s", err, brokenLink(dir), denied(err), notDirectory(dir, err)), Named: named}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return false, fmt.Errorf("open state: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("open state: %s is not a directory", dir)
	}
	// Stat followed a symlinked dir to its target, which is what must be ours; name the target too.
	shown := dir
	if target, err := filepath.EvalSymlinks(dir); err == nil && target != dir {
		shown = dir + " (-> " + target + ")"
	}
	if err := checkOwner(fi, "state dir", shown, "redirect volctl's mounts"); err != nil {
		return false, fmt.Errorf("open state: %w", err)
	}
	if fi.Mode().Perm() == 0o700 {
		return true, nil
	}
	if held, err = checkAdoptable(dir, shown, fi.Mode().Perm()); err != nil {
		return false, err
	}
	return held, checkPlanted(dir, shown, fi.Mode().Perm())
}

// checkAncestors refuses a state dir that another user could replace while volctl uses it
// (pathtrust.Ancestors): one reached through a directory or symlink another user owns, or
// through a directory other users may write that is not sticky. Such a user could rename the
// state dir away and put one of theirs in its place, whose staging and publish directories,
// lock files and database volctl, often root and an agent for days, goes on using by their
// paths: checking the dir itself at Open (checkOwner) settles nothing after it.
func checkAncestors(dir string) error {
	if p := pathtrust.Ancestors(dir); p != nil {
		return &ancestorError{dir: dir, path: p.Path, why: p.Why}
	}
	return nil
}

// denied says what to do when this user may not make the state dir (a parent that is root's, as
// root's own state dir is to any other user): nothing volctl can do, as this user, changes it.
func denied(err error) string {
	if errors.Is(err, syscall.EROFS) {
		return " (its file system is mounted read-only: give a state dir on a writable one with --state-dir or VOLCTL_STATE_DIR)"
	}
	if !errors.Is(err, fs.ErrPermission) {
		return ""
	}
	return fmt.Sprintf(" (volctl runs as uid %d, which may not make it there: run volctl as root, or give a state dir this user may write with --state-dir or VOLCTL_STATE_DIR)", os.Geteuid())
}

// brokenLink says why a state dir that is a symlink could not be made, for MkdirAll's words
// alone ("mkdir DIR: file exists", of a path that exists as nothing): where it points and what
// to do. "" when dir is not a symlink, or one whose target Stat reaches.
func brokenLink(dir string) string {
	target, err := os.Readlink(dir)
	if err != nil {
		return ""
	}
	switch _, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf(" (it is a symlink to %s, which does not exist: create that directory, or remove the symlink and volctl makes the state dir there)", target)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Sprintf(" (it is a symlink to %s, a loop of symlinks that never reaches a directory: remove or fix the symlink)", target)
	}
	return ""
}

// notDirectory says what stands where the state dir, or a directory above it, was to be, for
// MkdirAll's "not a directory" alone, and what to do: a mistyped VOLCTL_STATE_DIR naming a
// file was told only "mkdir FILE: not a directory" (TestEngineStateDirErrors). "" for any
// other error.
func notDirectory(dir string, err error) string {
	if !errors.Is(err, syscall.ENOTDIR) {
		return ""
	}
	const give = "give a directory with --state-dir or VOLCTL_STATE_DIR, or "
	for p := dir; ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			kind := pathtrust.FileKind(fi.Mode())
			switch target, err := os.Readlink(p); {
			case p != dir:
				return fmt.Sprintf(" (%s is %s: %smove it away)", p, kind, give)
			case err == nil:
				return fmt.Sprintf(" (it is a symlink to %s, %s: %spoint the symlink at a directory)", target, kind, give)
			default:
				return fmt.Sprintf(" (it is %s: %smove it away)", kind, give)
			}
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}

// checkAdoptable refuses to make private (0700) a directory that is not a state dir: one that
// holds other files and no database (nor its -wal or -shm: prepareFile says what a WAL alone means). A mistyped --state-dir (/var/lib, /usr, a home directory)
// or a symlink another user planted at the path would otherwise have its mode changed under
// everyone who uses it, as root /var/lib's. A state dir (its database there: held) or an empty
// directory is volctl's to tighten.
func checkAdoptable(dir, shown string, mode fs.FileMode) (held bool, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return false, fmt.Errorf("open state: %w", err)
	}
	defer d.Close()
	var others []string
	for {
		names, err := d.Readdirnames(64)
		for _, name := range names {
			if name == FileName || strings.HasPrefix(name, FileName+"-") { // its -wal, -shm
				return true, nil
			}
			others = append(others, name)
		}
		if err != nil || len(names) == 0 {
			break
		}
	}
	if len(others) == 0 {
		return false, nil
	}
	slices.Sort(others)
	list := strings.Join(others[:min(len(others), shownNames)], ", ")
	if len(others) > shownNames {
		list += ", ..."
	}
	return false, fmt.Errorf("open state: %s is not a volctl state dir (no %s, and it holds other files: %s), and its mode %#o would have to become 0700 (it holds secrets): use a new or empty directory as the state dir, or chmod 700 this one to make it one",
		shown, FileName, list, uint32(mode))
}

// checkPlanted refuses a state dir that other users could write (group or other write bit)
// and that holds an entry another user owns: a locks, staging or publish directory planted
// there, which its owner keeps writing through a descriptor held open (a shell's working
// directory) once volctl has made the state dir private, to swap in symlinks between volctl's
// check and a plugin's mount or to remove lock files from under volctl's flocks. Making the
// state dir private cannot take that away, so nothing is changed: the dir is refused as it is,
// naming what to remove. A state dir volctl made (0700) pays nothing for it.
func checkPlanted(dir, shown string, mode fs.FileMode) error {
	if mode&0o022 == 0 {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	uid := os.Geteuid()
	var planted []string
	for _, e := range entries {
		fi, err := e.Info() // lstat: a symlink is judged by its own owner
		if err != nil {
			continue // gone meanwhile
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
			planted = append(planted, fmt.Sprintf("%s (uid %d)", e.Name(), st.Uid))
		}
	}
	if len(planted) == 0 {
		return nil
	}
	list := strings.Join(planted[:min(len(planted), shownNames)], ", ")
	if len(planted) > shownNames {
		list += ", ..."
	}
	return &plantedError{dir: shown, mode: mode, list: list}
}

// prepareFile creates the database file 0600 before SQLite sees it, so its mode never depends on
// the umask, and tightens an existing one that is looser. sizes are what checkFiles found; blank
// says the database holds no state (identify), which a new state dir's does not, nor does one
// whose state was lost: missing or empty, or with no table left in it, the commits that made
// them in a WAL that is gone (a volctl command leaves them there, CloseAtExit).
func prepareFile(path string, sizes map[string]int64, blank bool, log *slog.Logger) error {
	if blank {
		lost := "is missing or empty"
		if sizes[path] > 0 {
			lost = fmt.Sprintf("holds no state (no table of volctl's: the commits that made them, which a volctl command leaves in its write-ahead log, are not in the file, and %s is gone or empty: removed by hand or by a cleanup of the state dir?)", path+"-wal")
		}
		if err := checkMountsWithoutDatabase(path, lost); err != nil {
			return err
		}
		if err := checkUsedWithoutDatabase(path, lost); err != nil {
			return err
		}
	}
	if err := ownerReadWrite(path, sizes, log); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwner(fi, "state database", path, "rewrite volctl's state")
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	if err := tighten(path, 0o600, true, log); err != nil {
		return fmt.Errorf("open state: %w", err)
	}
	return nil
}

// ownerReadWrite gives the database, and its -wal and -shm, that exist (sizes: checkFiles found
// them, and found them this user's) read and write for their owner where they lack it: a state
// restored or copied read-only (`install -m 0400`, read-only media, `chmod a-w`). volctl writes
// them even to read (the write-ahead log), and sets their mode as it sets a looser one
// (tighten), with a warning. Before, a user's own 0400 database could not be opened at all, not
// even by `volume status`, the bare "permission denied" saying nothing of what to do
// (TestReadOnlyDatabaseOfItsOwnUserIsMadeWritable; root, whom the mode does not stop, had it
// made 0600 by tighten already).
func ownerReadWrite(path string, sizes map[string]int64, log *slog.Logger) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, ok := sizes[p]; !ok {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o600 == 0o600 {
			continue
		}
		if err := os.Chmod(p, 0o600); err != nil {
			return fmt.Errorf("open state: state database %s is mode %s, which its owner cannot both read and write, and volctl writes it even to read it: making it 0600 failed: %w; run `chmod 600 %s` as its owner",
				p, fi.Mode().Perm(), err, p)
		}
		log.Warn("the state database was not readable and writable by its owner: made it 0600, as volctl keeps it (volctl writes it even to read it, through its write-ahead log)",
			"path", p, "was", fi.Mode().Perm().String())
	}
	return nil
}

// checkFiles refuses a database, or a -wal or -shm beside it, that another user owns or that is
// not a regular file (SQLite answers a named pipe with "disk I/O error"), and a write-ahead log
// left without its database. It returns the sizes of those that exist.
func checkFiles(path string) (sizes map[string]int64, err error) {
	sizes = map[string]int64{}
	// The WAL before the database: a WAL seen with frames had its database's first page
	// written before them, so a volctl creating the database at this moment is not mistaken
	// for one that lost it (below).
	for _, p := range []string{path + "-wal", path + "-shm", path} {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// SQLite resolves a symlinked database and keeps its -wal and -shm beside the
			// target, where every check here of the state dir's (a log without its database,
			// another database's log, their owner) never looks, and two state dirs linking one
			// database share it without sharing the locks beside it; a dangling one was
			// followed to create the database wherever it pointed
			// (TestOpenRefusesASymlinkedDatabase).
			target, _ := os.Readlink(p)
			err = fmt.Errorf("state database %s is a symlink (to %q), not a regular file: SQLite would keep its write-ahead log beside the target, out of volctl's sight; "+
				"nothing was opened: with no volctl running, move the file it points to (and its -wal and -shm) into its place, or remove the symlink", p, target)
		}
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("state database %s is %s, not a regular file: SQLite cannot use it; move it out of the state dir", p, pathtrust.FileKind(fi.Mode()))
		}
		if err == nil {
			err = checkOwner(fi, "state database", p, "rewrite volctl's state")
		}
		if err != nil {
			return nil, fmt.Errorf("open state: %w", err)
		}
		sizes[p] = fi.Size()
	}
	// SQLite writes the database's first page before the first frame of its WAL, so a WAL with
	// frames beside a missing or empty database lost it (removed, truncated, not restored with
	// it). SQLite would start an empty database over it and reset it, discarding every commit it
	// holds, which with CloseAtExit is most recent ones.
	if wal := sizes[path+"-wal"]; wal > walHeaderSize && sizes[path] == 0 {
		return nil, fmt.Errorf("open state: state database %s is missing or empty, but its write-ahead log %s holds %d bytes of commits: "+
			"opening it would discard them; restore %s beside it, or move %s away to start with an empty state",
			path, path+"-wal", wal, FileName, path+"-wal")
	}
	return sizes, nil
}

// checkMountsWithoutDatabase refuses to start a new, empty state in a state dir where something
// is mounted below (a claim's target under publish/, a volume's staging path): those are the
// claims and stagings of a database that was lost (removed, moved aside, not restored), which an
// empty state would forget and leave mounted for good, a volume's data reachable at a path
// nothing releases. Only a missing or empty database pays for it (one read of the mount table).
func checkMountsWithoutDatabase(path, lost string) error {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path)) // as the mount table spells it
	if err != nil {
		return nil // not made yet: nothing can be mounted in it
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		// Unread, the table cannot say nothing is mounted where volctl mounts: a state dir
		// that has such paths is refused rather than started empty over them (an empty one
		// has nothing there to lose).
		for _, sub := range []string{"publish", "staging"} {
			if entries, rerr := os.ReadDir(filepath.Join(dir, sub)); rerr == nil && len(entries) > 0 {
				return fmt.Errorf("open state: state database %s %s, and whether paths below %s are mounted, claims and stagings of a lost database, cannot be told: %w",
					path, lost, filepath.Join(dir, sub), MountTableUnreadable(err))
			}
		}
		return nil
	}
	var below []string
	for _, m := range mounts {
		// Only where volctl mounts (the engine's publish and staging dirs): a disk the admin
		// mounted elsewhere below the state dir is no lost state's.
		ours := strings.HasPrefix(m.Mountpoint, dir+"/publish/") || strings.HasPrefix(m.Mountpoint, dir+"/staging/")
		if ours && !slices.Contains(below, m.Mountpoint) {
			below = append(below, m.Mountpoint)
		}
	}
	if len(below) == 0 {
		return nil
	}
	slices.Sort(below)
	list := strings.Join(below[:min(len(below), shownNames)], ", ")
	if len(below) > shownNames {
		list += fmt.Sprintf(", ... (%d in all)", len(below))
	}
	return fmt.Errorf("open state: state database %s %s, but paths below the state dir are mounted: %s; "+
		"a state dir's claims and stagings, whose database was lost, which a new, empty state would forget and leave mounted: "+
		"restore %s (with its -wal and -shm) from a backup, or unmount them (`umount PATH`) to start with an empty state, or use another --state-dir",
		path, lost, list, FileName)
}

// checkUsedWithoutDatabase refuses to start a new, empty state in a state dir that held a
// database once: its path record (PathFileName), which a process writes only once the database
// is made (checkPath runs after the migrations commit), is there. A database so lost (truncated
// by a disk that filled up, a copy cut short, removed by hand) with no mount left below it (a
// reboot took them) was taken for a first run's, and the state started empty: every volume,
// claim and staging it recorded forgotten, the plugin's volumes and attachments with them, the
// allocs' claims never restored. A first run cut short before its first write has no record.
func checkUsedWithoutDatabase(path, lost string) error {
	dir := filepath.Dir(path)
	record := filepath.Join(dir, PathFileName)
	if _, err := os.Lstat(record); err != nil {
		return nil // none (a new state dir), or unreadable: the check guards, the mounts' is above
	}
	// Read after the record: another process's first open, which wrote the database's first page
	// and then its first commit, to the WAL, before its record, made it meanwhile (two commands
	// run at once on a new state dir); or a checkpoint since moved that commit into the file.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > walHeaderSize {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		if blank, err := identify(path, fi.Size(), 0); err != nil || !blank {
			return nil
		}
	}
	var left []string
	for _, sub := range []string{"publish", "staging"} {
		if entries, err := os.ReadDir(filepath.Join(dir, sub)); err == nil && len(entries) > 0 {
			left = append(left, filepath.Join(dir, sub))
		}
	}
	also := ""
	if len(left) > 0 {
		also = fmt.Sprintf(" (and the claims and stagings it recorded left directories in %s)", strings.Join(left, " and "))
	}
	return fmt.Errorf("open state: state database %s %s, but the state dir held one: %s, which volctl writes once its database is made, is there%s; "+
		"the database was lost (a disk that filled up, a copy cut short, a file removed), and a new, empty state would forget every volume, claim and staging it recorded: "+
		"restore %s (with its -wal and -shm) from a backup, or, to start with an empty state, remove %s",
		path, lost, record, also, FileName, record)
}

// walHeaderSize is the size of a WAL file's header; a WAL no larger holds no commit.
const walHeaderSize = 32

// checkOwner refuses a state file or directory that another user owns: that user could swap in
// symlinks or rows that make volctl, often running as root, mount or unmount where they choose.
// Mode bits cannot fix that (the owner can always chmod back), so it is refused, not tightened.
func checkOwner(fi fs.FileInfo, what, path, risk string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owner to check: not a Unix file system, and volctl only runs on Linux
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return &ownerError{what: what, path: path, owner: int(st.Uid), uid: uid, risk: risk}
	}
	return nil
}

// tighten sets path's permission bits to want when they differ. Taking other users' access to
// state (held: a state dir, not an empty directory being made one) is a warning, shown by
// default: it holds secrets, and whoever runs volctl should learn that others could read (or
// change) them until now.
func tighten(path string, want fs.FileMode, held bool, log *slog.Logger) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if got := fi.Mode().Perm(); got != want {
		if err := os.Chmod(path, want); err != nil {
			return err
		}
		if others := got &^ want & 0o077; held && others != 0 {
			log.Warn("tightened permissions: other users had access to it until now", "path", path, "was", got.String(), "now", want.String())
		} else {
			log.Info("tightened permissions", "path", path, "was", got.String(), "now", want.String())
		}
	}
	return nil
}

// Close closes the database: its prepared statements, then its connections. A transaction that
// starts afterwards fails; one still running has its connection closed when it ends.
func (s *Store) Close() error {
	err := s.reader().close()
	s.wipeWALAtClose()
	if s.w != nil {
		err = errors.Join(err, s.w.close())
	}
	// After the connections: the lock says this store no longer writes.
	return errors.Join(err, s.closeLock())
}

// closeLock closes the open lock's file, once.
func (s *Store) closeLock() error {
	if s.lock == nil || !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	return s.lock.Close()
}

// CloseAtExit is Close for a process about to exit: transactions that start afterwards fail as
// after Close, but the connections are left for the exit to close. The last connection to a
// database that closes makes SQLite checkpoint the WAL into the database file and delete it: an
// fsync of the WAL and one of the database, the unlink, and for the next process a new WAL, whose
// first commit fsyncs its header. (The directory is fsynced once by every process's first sync
// of the WAL either way: SQLite marks a WAL it opens with O_CREAT for a directory sync whether
// or not the file was there, so keeping the WAL saves no directory fsync.) Left to the exit, the WAL stays; the next
// process to open the database reads it back (SQLite's recovery, as after a crash) and a commit
// checkpoints it once it holds walAutocheckpoint pages. Nothing committed is lost: every commit
// is in the WAL, each durable one fsynced when it committed ("The engine", Durability). Progress
// committed after the last durable commit is forced to disk here, one fdatasync of the WAL (syncFile), as the
// close's checkpoint did: what a command reported done must not come undone by a power cut after
// it exited (a claim reported published found back at admission after a reboot could be rolled
// back by reconcile). A process that wrote in bulk (walBulkAutocheckpoint) checkpoints the WAL
// first, so the next process does not read back up to a thousand pages. Only a process that
// exits right after may call it; any other must Close.
func (s *Store) CloseAtExit() error {
	s.reader().abandon()
	if s.w == nil {
		return nil // read-only: nothing written
	}
	s.wipeWALAtClose()
	if s.bulk() || walRemoved(s.path) {
		// A WAL removed under this process (walgone.go) has its commits in this process
		// alone, its own or the commands' before it, which it has open whether it wrote or
		// only read (an idle agent, the dashboard): the checkpoint copies them into the file,
		// which the exit would lose.
		s.checkpointNow()
	}
	s.w.abandon()
	if !s.unsynced.Load() {
		return nil
	}
	// A WAL gone was checkpointed, and synced, by the last process to close the database.
	if err := syncFile(s.path + "-wal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("state %s: forcing the last commits to disk: %w (they are committed; a power cut before the next write may undo them, and `volctl reconcile` re-drives what it undoes)", s.path, err)
	}
	return nil
}

// checkpointNow copies what the WAL holds into the database file (a passive checkpoint: it
// waits for no one, and copies what no reader still needs) if the write connection is free. It
// is tidying: a checkpoint not made leaves the WAL to the next process, which reads it back.
func (s *Store) checkpointNow() {
	c, err := s.w.get(context.Background(), 0)
	if err != nil {
		return
	}
	defer s.w.put(c)
	tx := &Tx{ctx: context.Background(), c: c, s: s}
	if _, err := tx.exec("PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		s.log.Debug("checkpoint at exit", "path", s.path, "err", err)
	}
}

// syncFile forces the file at path to disk; a variable so tests can see it called. It is
// fdatasync, as SQLite syncs its WAL where it can: the data, and the size that reads it back,
// without the timestamps, whose journal commit an fsync adds (about a third of its cost on
// ext4 when the WAL is overwritten in place, as it is between checkpoints).
var syncFile = func(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = unix.Fdatasync(int(f.Fd()))
	for errors.Is(err, unix.EINTR) {
		err = unix.Fdatasync(int(f.Fd()))
	}
	if err != nil {
		err = &fs.PathError{Op: "fdatasync", Path: path, Err: err}
	}
	return errors.Join(err, f.Close())
}

// Update runs fn in a write transaction and commits it if fn returns nil; an error or a panic
// rolls it back. The write lock is taken when the transaction begins, so fn sees the latest state
// and no other process writes until it returns: keep fn short and never send an RPC inside it.
// Do not nest transactions: an Update inside an Update's fn waits for itself until the busy
// timeout, and a View inside it does not see the enclosing Update's uncommitted writes.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	return s.run(ctx, s.w, "BEGIN IMMEDIATE", durable, fn)
}

// UpdateProgress is Update for progress that a power loss makes moot: its commit is not forced
// to disk. It survives a crash of this process (the operating system holds the data), and only a
// power loss or kernel crash before the next Update, whose commit forces it to disk with every
// commit before it, can undo it. The engine uses it for a claim's node-local steps between the
// durable commits that bracket them: a reboot undoes the mounts those steps record anyway, and
// reconcile re-drives a claim from whatever earlier state survives.
func (s *Store) UpdateProgress(ctx context.Context, fn func(tx *Tx) error) error {
	return s.run(ctx, s.w, "BEGIN IMMEDIATE", relaxed, fn)
}

// TryUpdateProgress is UpdateProgress for a write a reader makes on the side, such as the plugin
// health that a status command records after probing: it never waits for another process's
// write lock. When another process holds the lock, fn does not run and the error, which matches
// ErrBusy, comes back at once; the caller skips the write (the reading is taken again next
// time) rather than delay its output by up to the busy timeout. Writers in this process are
// still queued for as with Update: their transactions are short.
func (s *Store) TryUpdateProgress(ctx context.Context, fn func(tx *Tx) error) error {
	return s.run(ctx, s.w, beginNoWait, relaxed, fn)
}

// beginNoWait is the begin statement of TryUpdateProgress: BEGIN IMMEDIATE tried once, not
// retried while another process holds the lock.
const beginNoWait = "BEGIN IMMEDIATE -- no wait"

// View runs fn in a read-only transaction: a consistent snapshot that never blocks writers and is
// never blocked by them.
func (s *Store) View(ctx context.Context, fn func(tx *Tx) error) error {
	r, err := s.readPool()
	if err != nil {
		return err
	}
	stamp, immutable := s.immutableStamp()
	err = s.run(ctx, r, "BEGIN", readOnly, fn)
	if immutable {
		if cerr := s.changedWhileRead(stamp); cerr != nil {
			return cerr
		}
	}
	return err
}

// ViewShort is View for a short read a process makes before it reads anything else: the check
// an operation on mounts makes before it acts (the engine's checkMountView), in a command that
// otherwise reads and writes on the write connection only (a claim, a release). While no read
// connection has been opened and the write connection is open and free, it reads there, in a
// read-only transaction as View's: opening a read connection (SQLite reading and parsing the
// schema) was 4.5% of a claim process's CPU, and all it read was the registered plugins.
// Otherwise it is View. A writer of this process that comes meanwhile waits for the read, as
// for another writer; fn must be short and must not begin a transaction of its own.
func (s *Store) ViewShort(ctx context.Context, fn func(tx *Tx) error) error {
	if s.ro == nil && s.w != nil {
		if s.reader().unopened() && s.w.free() {
			return s.run(ctx, s.w, "BEGIN", readOnly, fn)
		}
	}
	return s.View(ctx, fn)
}

// txKind is what a transaction does and, for a write, how durable its commit is.
type txKind int

const (
	readOnly txKind = iota
	durable         // synchronous=FULL: on disk when COMMIT returns
	relaxed         // synchronous=NORMAL: WAL written, fsync left to the next durable commit
)

// snapshotQuery is View's first read, which takes the transaction's snapshot: it reads the
// database header's schema cookie, which SQLite reads at the start of every transaction anyway,
// so nothing beyond page 1. It was `SELECT count(*) FROM sqlite_schema`, which walked the
// schema table's pages too (four), none of which fn's reads need: after a commit on another
// connection, whose WAL frames empty this connection's page cache, three reads of the file
// more per View (BenchmarkViewAfterAWrite: 7.1 preads per write and View, 4.1 now).
const snapshotQuery = "PRAGMA schema_version"

// versionQuery is snapshotQuery for a store read while another volctl migrates: the schema
// version, from the same header page.
const versionQuery = "PRAGMA user_version"

// run drives one transaction by hand on one of the store's connections rather than through
// sql.Tx, so a COMMIT answered with SQLITE_BUSY can be retried in place instead of being rolled
// back (which is what the driver does) and fn run again.
func (s *Store) run(ctx context.Context, p *pool, begin string, kind txKind, fn func(tx *Tx) error) (err error) {
	if kind != readOnly && s.roErr != nil {
		return s.roErr
	}
	tx, err := s.begin(ctx, p, begin, kind)
	if err != nil {
		return err
	}
	defer p.put(tx.c)

	done := false
	defer func() {
		if done {
			return
		}
		// fn failed or panicked: the transaction must not stay open on a kept connection.
		s.rollback(tx.c)
		if kind != readOnly {
			s.rolledBack.Add(1)
		}
	}()
	if kind != readOnly {
		if err := s.checkFile(); err != nil {
			return err
		}
	}
	if err := fn(tx); err != nil {
		return s.explain(interrupted(ctx, "before the transaction committed", err))
	}
	if err := tx.forgetGone(); err != nil {
		return s.explain(err)
	}
	notCommitted := func(err error) error {
		if cerr := ctx.Err(); cerr != nil && !isBusy(err) && errors.Is(err, cerr) {
			// The COMMIT was not run, or SQLite stopped it: the rollback below undoes fn's writes.
			return fmt.Errorf("state %s: commit: interrupted before it committed, nothing written: %w", s.path, cerr)
		}
		return s.explain(fmt.Errorf("state %s: commit: %w", s.path, mapBusy(err)))
	}
	var owed debts
	if kind != readOnly && tx.wrote && s.marked {
		// Last before the COMMIT: the commit's frames carry the state mark (walpair.go), and
		// the wipes of secrets owed (securedelete.go), this commit's included.
		var err error
		if s.debts {
			forgot := 0
			if tx.forgot {
				forgot = 1
			}
			err = tx.queryRow(markOwing, forgot).Scan(&owed.seq, &owed.walSecrets, &owed.vacuum)
		} else {
			_, err = tx.exec(markUpdate)
		}
		if err != nil {
			return notCommitted(fmt.Errorf("update the state mark: %w", err))
		}
	}
	if err := s.retry(ctx, func() error {
		_, err := tx.exec("COMMIT")
		return err
	}); err != nil {
		return notCommitted(err)
	}
	done = true
	s.commits[kind].Add(1)
	if len(tx.gone) > 0 {
		s.goneHere.add(tx.gone)
	}
	switch {
	case kind == readOnly:
	case s.debts && s.marked:
		s.pay(tx, owed)
	case tx.forgot || s.secretsInWAL.Load():
		s.wipeWAL(tx)
	}
	if kind != readOnly && begin != beginNoWait {
		s.writes.Add(1)
	}
	// Still on the write connection: writes update it in commit order. A durable commit
	// forces the WAL to disk, everything before it included. A reader's write on the side
	// (TryUpdateProgress: a health reading) leaves it as it was, so a read command pays no fsync.
	switch {
	case kind == relaxed && begin != beginNoWait:
		s.unsynced.Store(true)
	case kind == durable:
		s.unsynced.Store(false)
	}
	return nil
}

// begin takes a connection from p and begins a transaction on it. A connection found broken at
// BEGIN is replaced once: nothing has run on it yet, so starting over on a new one is safe.
func (s *Store) begin(ctx context.Context, p *pool, begin string, kind txKind) (*Tx, error) {
	write := kind != readOnly
	for attempt := 0; ; attempt++ {
		// Writers in this process queue for the one write connection here, not in SQLite's busy
		// handler; they give up after the same busy timeout as a writer in another process would.
		c, err := p.get(ctx, s.busyTimeout)
		if err != nil {
			return nil, s.explain(fmt.Errorf("state %s: %w", s.path, interrupted(ctx, "before the transaction began", mapBusy(err))))
		}
		tx := &Tx{ctx: ctx, c: c, s: s}
		if begin == beginNoWait {
			if err := tx.beginNoWait(); err != nil {
				s.endTx(c)
				broken := c.broken.Load()
				p.put(c)
				if isBusy(err) {
					return nil, fmt.Errorf("state %s: begin: %w", s.path, &busyError{why: "another volctl holds the write lock", cause: err})
				}
				if !broken || attempt > 0 {
					return nil, s.explain(fmt.Errorf("state %s: begin: %w", s.path, interrupted(ctx, "before the transaction began", err)))
				}
				continue
			}
			return tx, nil
		}
		waited := false // SQLite said busy at least once: another process holds the lock
		err = s.retry(ctx, func() error {
			if err := tx.setDurability(kind); err != nil {
				return err
			}
			if err := tx.setCheckpointing(kind); err != nil {
				return err
			}
			if _, err := tx.exec(begin); err != nil {
				waited = waited || isBusy(err)
				return err
			}
			if write {
				return nil
			}
			// A deferred BEGIN takes no lock; the first read does. Take the snapshot here, inside
			// the retry, so fn's own reads can no longer meet a busy database.
			var n int
			if s.migrating != nil {
				// Opened without the open lock while another volctl migrated (readMigrating):
				// its migration may have committed since, and this volctl's queries would
				// read the newer schema's rows as if they were its own, a row moved showing
				// as empty, without a word (TestReaderDuringAMigrationDoesNotReadTheNewerSchemaAfterItCommits).
				// The snapshot is taken by the version's read, and refused past this volctl's.
				if err := tx.queryRow(versionQuery).Scan(&n); err != nil {
					s.rollback(c)
					return err
				}
				if n != len(migrations) {
					s.rollback(c)
					return fmt.Errorf("%w: another volctl migrated the state database to schema version %d while this command read it (this volctl reads version %d): nothing more is read; run the command again with that volctl",
						ErrNewerSchema, n, len(migrations))
				}
				return nil
			}
			if err := tx.queryRow(snapshotQuery).Scan(&n); err != nil {
				s.rollback(c)
				return err
			}
			return nil
		})
		if err == nil {
			return tx, nil
		}
		s.endTx(c)
		broken := c.broken.Load()
		p.put(c)
		if waited && ctx.Err() != nil {
			return nil, fmt.Errorf("state %s: begin: %w", s.path, interruptedWait(ctx.Err()))
		}
		if !broken || attempt > 0 {
			return nil, s.explain(fmt.Errorf("state %s: begin: %w", s.path, interrupted(ctx, "before the transaction began", mapBusy(err))))
		}
	}
}

// interrupted is a transaction's error err, saying so when it is the end of its context (^C, a
// signal, the agent stopping) met when, before the transaction began or while it ran, whose
// words alone are "context canceled": the transaction is rolled back, so nothing was written.
func interrupted(ctx context.Context, when string, err error) error {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) || strings.Contains(err.Error(), "interrupted") {
		return err
	}
	return fmt.Errorf("interrupted %s, nothing written: %w", when, err)
}

// beginNoWait begins a write transaction if the write lock is free now: SQLITE_BUSY is not
// retried (the write connection has no busy handler: see dsn).
func (tx *Tx) beginNoWait() error {
	if err := tx.setDurability(relaxed); err != nil {
		return err
	}
	if err := tx.setCheckpointing(relaxed); err != nil {
		return err
	}
	_, err := tx.exec("BEGIN IMMEDIATE")
	return err
}

// setDurability sets the write connection's PRAGMA synchronous for the transaction about to
// begin (it cannot change inside one), when it differs from what the connection has.
func (tx *Tx) setDurability(kind txKind) error {
	if kind == readOnly || (kind == relaxed) == tx.c.relaxed {
		return nil
	}
	pragma := "PRAGMA synchronous=FULL"
	if kind == relaxed {
		pragma = "PRAGMA synchronous=NORMAL"
	}
	if _, err := tx.exec(pragma); err != nil {
		return err
	}
	tx.c.relaxed = kind == relaxed
	return nil
}

// bulk says the process writes in bulk: it has committed bulkWrites writes.
func (s *Store) bulk() bool { return s.writes.Load() >= bulkWrites }

// setCheckpointing raises the write connection's WAL autocheckpoint to walBulkAutocheckpoint
// once the process writes in bulk, before the transaction about to begin (a connection opened
// after a broken one was replaced starts at walAutocheckpoint again, and is raised here too).
func (tx *Tx) setCheckpointing(kind txKind) error {
	if kind == readOnly || tx.c.bulk || !tx.s.bulk() {
		return nil
	}
	if _, err := tx.exec("PRAGMA wal_autocheckpoint=" + strconv.Itoa(walBulkAutocheckpoint)); err != nil {
		return err
	}
	tx.c.bulk = true
	return nil
}

// rollback ends the connection's transaction. If that fails the connection is marked broken, so
// it is replaced rather than kept with a transaction still open on it.
func (s *Store) rollback(c *conn) {
	tx := &Tx{ctx: context.Background(), c: c, s: s}
	if _, err := tx.exec("ROLLBACK"); err != nil {
		c.broken.Store(true)
	}
}

// endTx makes sure the connection is in no transaction after a begin that failed: a BEGIN
// that ran but whose context ended before the driver returned (it then reports the context's
// error) leaves its transaction open, and the connection, kept, would refuse every later BEGIN
// ("cannot start a transaction within a transaction"). Rolling back outside a transaction is
// SQLite's "no transaction is active", which is no fault; any other failure marks the
// connection broken, so it is replaced.
func (s *Store) endTx(c *conn) {
	tx := &Tx{ctx: context.Background(), c: c, s: s}
	if _, err := tx.exec("ROLLBACK"); err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		c.broken.Store(true)
	}
}

// retry runs op again while SQLite answers SQLITE_BUSY or SQLITE_LOCKED, for up to the busy
// timeout; see retryBusy.
func (s *Store) retry(ctx context.Context, op func() error) error {
	return retryBusy(ctx, s.busyTimeout, op, s.writeLockWatch())
}

// writeLockWatch watches who holds the state database's write lock, for retryBusy.
func (s *Store) writeLockWatch() *busyWatch {
	return &busyWatch{HolderWatch: NewHolderWatch(s.writeLockHolders), stoppedWait: s.stoppedWait}
}

// busyWatch is a wait for SQLite's write lock: who holds it, and how long to wait once every
// holder is stuck (stopped by a signal, or blocked in the kernel).
type busyWatch struct {
	*HolderWatch
	stoppedWait time.Duration
}

// retryBusy runs op again while SQLite answers SQLITE_BUSY or SQLITE_LOCKED. The busy timeout
// already waits inside SQLite; this covers the cases where SQLite returns busy without waiting,
// with jittered backoff bounded by timeout and the context. SQLite does that when waiting could
// deadlock: a connection holding a read lock that needs the write lock another holds (a new
// connection turning a fresh file to WAL while another process migrates it, for one), and during
// a WAL checkpoint or recovery in another process.
//
// With a watch, a wait that SQLite answered busy looks at who holds the write lock: one that
// ends at the timeout names them, and one whose every holder has been stuck (stopped by a
// signal, ^Z or SIGSTOP, or blocked in the kernel) for the watch's stoppedWait ends then, saying
// so: such a process keeps the lock until someone resumes or ends it.
func retryBusy(ctx context.Context, timeout time.Duration, op func() error, watch *busyWatch) error {
	deadline := time.Now().Add(timeout)
	waits := backoff.New(time.Millisecond, 100*time.Millisecond)
	for {
		err := op()
		if err == nil || !isBusy(err) {
			return err
		}
		now := time.Now()
		if watch != nil {
			if d := watch.Look(now); d > 0 && d >= watch.stoppedWait {
				return &busyError{why: "the write lock is " + StuckHolders(watch.Holders(), d), cause: err}
			}
			if now.After(deadline) {
				return &busyError{why: "another volctl" + parenthesized(LockHolders(watch.Holders())) + " held the write lock too long", cause: err}
			}
		}
		if now.After(deadline) {
			return err
		}
		if serr := sleepCtx(ctx, backoff.Jitter(waits.Next())); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// sleepCtx sleeps for d or until ctx ends, and returns ctx's error then.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Tx is one transaction. Its entity accessors share the transaction; it is valid only inside the
// function given to Update or View.
type Tx struct {
	ctx context.Context
	c   *conn
	s   *Store
	// secretsBefore are the secret values the state held before the transaction's first
	// change that may remove some (forget.go); noted says they were read.
	secretsBefore []string
	noted         bool
	// forgot says forgetGone found secret values gone: after the commit the WAL, whose old
	// frames still hold them, is wiped (wipeWAL); gone are those values, which the Store
	// remembers once committed (ForgottenHere).
	forgot bool
	gone   []string
	// wrote says a statement of the transaction changed a row (or may have: an INSERT, UPDATE
	// or DELETE with RETURNING, read as rows), so its commit updates the state mark (walpair.go).
	wrote bool
}

// exec runs a statement that returns no rows, prepared once per connection.
func (tx *Tx) exec(query string, args ...any) (sql.Result, error) {
	st, err := tx.c.stmt(tx.ctx, query)
	if err != nil {
		return nil, tx.c.check(err)
	}
	if st == nil {
		res, err := tx.c.sc.ExecContext(tx.ctx, query, args...)
		tx.noteWrite(query, res, err)
		return res, tx.c.check(err)
	}
	defer tx.c.release(st)
	res, err := st.s.ExecContext(tx.ctx, args...)
	tx.noteWrite(query, res, err)
	return res, tx.c.check(err)
}

// noteWrite records that a statement run by exec changed a row. Only an INSERT, UPDATE or
// DELETE is asked: the count of rows changed is SQLite's sqlite3_changes, which any other
// statement (BEGIN, a PRAGMA) leaves as the last such statement on the connection set it.
func (tx *Tx) noteWrite(query string, res sql.Result, err error) {
	if err != nil || tx.wrote || !changesRows(query) {
		return
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		tx.wrote = true
	}
}

// changesRows says whether the statement query is one whose rows-changed count is its own.
func changesRows(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n")
	for _, verb := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		if len(q) > len(verb) && strings.EqualFold(q[:len(verb)], verb) {
			return true
		}
	}
	return false
}

// noteReturning records that a statement read as rows may change some: its RETURNING clause.
func (tx *Tx) noteReturning(query string) {
	if !tx.wrote && strings.Contains(query, "RETURNING") {
		tx.wrote = true
	}
}

// execOnce runs SQL that runs once per database, such as a migration, without keeping its
// statement.
func (tx *Tx) execOnce(query string) error {
	_, err := tx.c.sc.ExecContext(tx.ctx, query)
	return tx.c.check(err)
}

// query runs a statement that returns rows, prepared once per connection; collect reads and
// closes the result.
func (tx *Tx) query(query string, args ...any) (*cursor, error) {
	tx.noteReturning(query)
	st, err := tx.c.stmt(tx.ctx, query)
	if err != nil {
		return nil, tx.c.check(err)
	}
	var rows *sql.Rows
	if st == nil {
		rows, err = tx.c.sc.QueryContext(tx.ctx, query, args...)
	} else {
		rows, err = st.s.QueryContext(tx.ctx, args...)
	}
	if err != nil {
		tx.c.release(st)
		return nil, tx.c.check(err)
	}
	return &cursor{rows: rows, c: tx.c, st: st, s: tx.s}, nil
}

// queryRow runs a statement that returns at most one row, prepared once per connection.
func (tx *Tx) queryRow(query string, args ...any) row {
	tx.noteReturning(query)
	st, err := tx.c.stmt(tx.ctx, query)
	if err != nil {
		return row{c: tx.c, err: err}
	}
	if st == nil {
		return row{r: tx.c.sc.QueryRowContext(tx.ctx, query, args...), c: tx.c}
	}
	return row{r: st.s.QueryRowContext(tx.ctx, args...), c: tx.c, st: st}
}

// now is the store clock's reading, as the database will keep it, for created/updated columns.
func (tx *Tx) now() time.Time { return tx.s.now() }

// MountTableUnreadable is the error of a read of the kernel's mount table that failed, saying
// what to do when it is because /proc is not mounted where volctl runs (a mount namespace
// without it, a chroot): volctl cannot tell what is mounted without it, and does not guess.
func MountTableUnreadable(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read mount table: %w (/proc is not mounted where volctl runs, and volctl learns what is mounted there: mount it, `mount -t proc proc /proc`, or run volctl where it is)", err)
	}
	return fmt.Errorf("read mount table: %w", err)
}
