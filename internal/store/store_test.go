package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// newStore opens a store in a fresh temporary state directory and closes it when the test ends.
func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "state"), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func update(t testing.TB, s *Store, fn func(tx *Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func view(t testing.TB, s *Store, fn func(tx *Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// allEvents reads every event in s, as Events().Recent(0, ...) lists them.
func allEvents(t testing.TB, s *Store) []Event {
	t.Helper()
	var evs []Event
	view(t, s, func(tx *Tx) (err error) { evs, err = tx.Events().Recent(0, EventFilter{}); return err })
	return evs
}

// holdWriteLock starts an Update on s that runs fn (if any) and then holds the write lock until
// the returned release is called; release waits for the Update to commit and fails the test if
// it did not.
func holdWriteLock(t *testing.T, s *Store, fn func(tx *Tx) error) (release func()) {
	t.Helper()
	locked, unblock, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(tx *Tx) error {
			if fn != nil {
				if err := fn(tx); err != nil {
					return err
				}
			}
			close(locked)
			<-unblock
			return nil
		})
	}()
	select {
	case <-locked:
	case err := <-done:
		t.Fatalf("taking the write lock: %v", err)
	}
	return func() {
		t.Helper()
		close(unblock)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// waitForLockWait returns once a goroutine that test started waits between two tries for
// another process's write lock, SQLite having answered busy (retryBusy's sleep): a wait
// cancelled from then on is one for another volctl's lock.
func waitForLockWait(t *testing.T, test string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "store."+test+".") && strings.Contains(g, "store.retryBusy(") && strings.Contains(g, "store.sleepCtx(") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine of %s waited for the write lock within 30 s", test)
		}
	}
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// Not parallel: it sets the process umask, which parallel tests would inherit.
func TestOpenCreatesPrivateFilesWhateverTheUmask(t *testing.T) {
	// The test's own directory before the umask: made under umask 0 it would be writable by
	// every user, a parent Open refuses (TestStateDirOthersCouldReplaceIsRefused).
	dir := filepath.Join(t.TempDir(), "nested", "state")
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Write something so the WAL and shared-memory files exist.
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "test"}) })

	if got := perm(t, dir); got != 0o700 {
		t.Errorf("state dir mode = %v, want 0700", got)
	}
	if s.Path() != filepath.Join(dir, FileName) {
		t.Errorf("Path() = %q, want %q", s.Path(), filepath.Join(dir, FileName))
	}
	for _, name := range []string{FileName, FileName + "-wal", FileName + "-shm"} {
		if got := perm(t, filepath.Join(dir, name)); got != 0o600 {
			t.Errorf("%s mode = %v, want 0600", name, got)
		}
	}
}

func TestOpenTightensLoosePermissions(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, FileName)
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	// What volctl shows by default (cli's Logger): warnings and errors.
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Open(context.Background(), dir, WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := perm(t, dir); got != 0o700 {
		t.Errorf("state dir mode = %v, want 0700", got)
	}
	if got := perm(t, db); got != 0o600 {
		t.Errorf("db mode = %v, want 0600", got)
	}
	// Others could read the secrets in it until now: whoever runs volctl is told, by default.
	for _, path := range []string{dir, db} {
		want := fmt.Sprintf(`level=WARN msg="tightened permissions: other users had access to it until now" path=%s was=`, path)
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log = %q, want a warning naming %s", logged.String(), path)
		}
	}
}

// A state dir or database file that another user owns is refused, and left as it was: that user
// could have put a symlink where volctl mounts, or rows naming paths of their choosing.
func TestOpenRefusesStateOwnedByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another user")
	}
	t.Parallel()
	const nobody = 65534
	chown := func(t *testing.T, path string) {
		t.Helper()
		if err := os.Lchown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	// closedStore makes a state dir with a database in it, and returns the dir.
	closedStore := func(t *testing.T) string {
		t.Helper()
		s := newStore(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(s.Path())
	}
	tests := []struct {
		name string
		// setup returns the dir to open and the start of the error, after "open state: ".
		setup func(t *testing.T) (dir, want string)
	}{
		{"state dir", func(t *testing.T) (string, string) {
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			chown(t, dir)
			return dir, "state dir " + dir
		}},
		{"symlinked state dir", func(t *testing.T) (string, string) {
			target := filepath.Join(t.TempDir(), "real")
			if err := os.Mkdir(target, 0o755); err != nil {
				t.Fatal(err)
			}
			chown(t, target)
			link := filepath.Join(t.TempDir(), "state")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link, "state dir " + link + " (-> " + target + ")"
		}},
		{"database", func(t *testing.T) (string, string) {
			dir := closedStore(t)
			chown(t, filepath.Join(dir, FileName))
			return dir, "state database " + filepath.Join(dir, FileName)
		}},
		{"wal", func(t *testing.T) (string, string) {
			dir := closedStore(t)
			wal := filepath.Join(dir, FileName+"-wal")
			if err := os.WriteFile(wal, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			chown(t, wal)
			return dir, "state database " + wal
		}},
		{"shm", func(t *testing.T) (string, string) {
			dir := closedStore(t)
			shm := filepath.Join(dir, FileName+"-shm")
			if err := os.WriteFile(shm, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			chown(t, shm)
			return dir, "state database " + shm
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, want := tt.setup(t)
			mode := perm(t, dir)
			s, err := Open(context.Background(), dir)
			if err == nil {
				s.Close()
				t.Fatal("Open of state owned by another user succeeded")
			}
			if !errors.Is(err, ErrNotOwned) {
				t.Errorf("err = %v, want ErrNotOwned", err)
			}
			want = fmt.Sprintf("open state: %s is owned by uid %d, not by this user (uid %d): another user could ", want, nobody, os.Geteuid())
			if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; chown it to this user or use another --state-dir") {
				t.Errorf("err = %q, want it to start %q and say what to do", err, want)
			}
			if got := perm(t, dir); got != mode {
				t.Errorf("refused state dir's mode changed from %v to %v", mode, got)
			}
		})
	}
}

// A state dir may be a symlink (e.g. /var/lib/volctl to a bigger disk): what must be ours is
// the directory it leads to.
func TestOpenFollowsSymlinkedStateDir(t *testing.T) {
	t.Parallel()
	target := filepath.Join(t.TempDir(), "real")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), link)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(filepath.Join(target, FileName)); err != nil {
		t.Errorf("database not in the symlink's target: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := t.TempDir()
	if err := os.WriteFile(filepath.Join(notDB, FileName), []byte("this is not a database, just text long enough to be read as a header"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		dir    string
		opts   []Option
		want   string
		dirErr bool // the error is about the state dir: a *DirError naming dir
	}{
		{"empty dir", "", nil, "no state directory", false},
		{"dir is a file", file, nil, "create state directory", true},
		{"not a database", notDB, nil, "open state " + filepath.Join(notDB, FileName), true},
		{"bad limit", t.TempDir(), []Option{WithEventLimit(0)}, "must be positive (got 30s, 0 and 10000)", false},
		{"bad busy timeout", t.TempDir(), []Option{WithBusyTimeout(0)}, "must be positive (got 0s, 10000 and 10000)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(context.Background(), tt.dir, tt.opts...)
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open error = %q, want it to contain %q", err, tt.want)
			}
			var de *DirError
			if got := errors.As(err, &de) && de.Dir == tt.dir; got != tt.dirErr {
				t.Errorf("Open error %q is a *DirError for %s: %v, want %v", err, tt.dir, got, tt.dirErr)
			}
		})
	}
}

// A state directory is a user-chosen path: characters that mean something in a URI must not
// change which file is opened.
func TestOpenPathWithURICharacters(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "my state?mode=ro#x%20y")
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "k", Message: "hello"}) })
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Fatalf("database not where expected: %v", err)
	}
	s, err = Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs := allEvents(t, s)
	if len(evs) != 1 || evs[0].Message != "hello" {
		t.Fatalf("events after reopen = %+v, want the one written", evs)
	}
}

func TestUpdateRollsBack(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	boom := errors.New("boom")
	err := s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.Events().Append(&Event{Kind: "lost"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want the function's error", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "panic in tx" {
				t.Errorf("recovered %v, want the function's panic", r)
			}
		}()
		_ = s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.Events().Append(&Event{Kind: "lost"}); err != nil {
				return err
			}
			panic("panic in tx")
		})
	}()
	// The connection went back to the pool without a transaction open on it: this must commit.
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "kept"}) })
	evs := allEvents(t, s)
	if len(evs) != 1 || evs[0].Kind != "kept" {
		t.Fatalf("events = %+v, want only the committed one", evs)
	}
}

func TestViewIsReadOnly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	err := s.View(context.Background(), func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "x"}) })
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Fatalf("write inside View: err = %v, want a read-only error", err)
	}
}

// Reads never take the write lock: a View, here and in another "process" (a second Store on the
// same file, with its own connections), completes while an Update holds the lock, and sees the
// last committed state. The other store's busy timeout is tiny, so a View that did wait for the
// lock would fail rather than hang.
func TestViewDoesNotWaitForWriters(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	other, err := Open(context.Background(), filepath.Dir(s.Path()), WithBusyTimeout(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "committed"}) })

	release := holdWriteLock(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "uncommitted"}) })
	for name, st := range map[string]*Store{"same store": s, "other store": other} {
		var evs []Event
		if err := st.View(context.Background(), func(tx *Tx) (err error) {
			evs, err = tx.Events().Recent(0, EventFilter{})
			return err
		}); err != nil {
			t.Errorf("%s: View while a write is open: %v", name, err)
		} else if len(evs) != 1 || evs[0].Kind != "committed" {
			t.Errorf("%s: View saw %+v, want only the committed event", name, evs)
		}
	}
	// And a writer in the other store does wait, then gives up with ErrBusy.
	err = other.Update(context.Background(), func(tx *Tx) error { return nil })
	if !errors.Is(err, ErrBusy) {
		t.Errorf("Update while another store holds the lock: err = %v, want ErrBusy", err)
	}
	release()
}

// In-process writers are serialized: concurrent read-modify-write transactions lose no update.
func TestUpdatesSerialize(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "counter", PluginID: "p", State: VolumeReady})
	})
	const workers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := s.Update(context.Background(), func(tx *Tx) error {
					v, err := tx.Volumes().Get("counter")
					if err != nil {
						return err
					}
					v.CapacityBytes++
					return tx.Volumes().Update(&v)
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var v Volume
	view(t, s, func(tx *Tx) (err error) { v, err = tx.Volumes().Get("counter"); return err })
	if v.CapacityBytes != workers*each {
		t.Fatalf("counter = %d, want %d", v.CapacityBytes, workers*each)
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Update(ctx, func(tx *Tx) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with canceled context: err = %v, want context.Canceled", err)
	}
	// A context canceled inside fn fails the transaction and leaves the store usable.
	ctx, cancel = context.WithCancel(context.Background())
	err := s.Update(ctx, func(tx *Tx) error {
		cancel()
		return tx.Events().Append(&Event{Kind: "x"})
	})
	if err == nil {
		t.Fatal("Update whose context was canceled inside fn succeeded")
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "after"}) })
}

// rawDB opens the store's file directly, for tests that must see or shape what the API hides.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func rawCount(t testing.TB, db *sql.DB, table string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s", table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// realBusyError provokes a genuine SQLITE_BUSY from the driver: a second connection with no busy
// timeout asks for the write lock while the store holds it.
func realBusyError(t *testing.T) error {
	t.Helper()
	s := newStore(t)
	release := holdWriteLock(t, s, nil)
	db, err := sql.Open("sqlite", dsn(s.Path(), 0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, busy := db.Exec("BEGIN IMMEDIATE")
	release()
	if !isBusy(busy) {
		t.Fatalf("expected SQLITE_BUSY, got %v", busy)
	}
	return busy
}

// SQLite sometimes answers busy without waiting (WAL recovery or a checkpoint in another
// process); begin and commit retry those until the busy timeout.
func TestRetryBusy(t *testing.T) {
	t.Parallel()
	busy := realBusyError(t)
	s := newStore(t, WithBusyTimeout(time.Minute))

	calls := 0
	err := s.retry(context.Background(), func() error {
		if calls++; calls <= 3 {
			return busy
		}
		return nil
	})
	if err != nil || calls != 4 {
		t.Errorf("retry of a transient busy: err = %v after %d calls, want success on the 4th", err, calls)
	}

	calls = 0
	other := errors.New("disk on fire")
	if err := s.retry(context.Background(), func() error { calls++; return other }); err != other || calls != 1 {
		t.Errorf("retry of a non-busy error: err = %v after %d calls, want it returned at once", err, calls)
	}

	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = s.retry(ctx, func() error {
		if calls++; calls == 2 {
			cancel()
		}
		return busy
	})
	if !errors.Is(err, context.Canceled) || !isBusy(err) {
		t.Errorf("retry canceled while busy: err = %v, want both the busy error and context.Canceled", err)
	}

	short := &Store{busyTimeout: time.Nanosecond}
	if err := short.retry(context.Background(), func() error { return busy }); !isBusy(err) {
		t.Errorf("retry past the busy timeout: err = %v, want the busy error", err)
	}
	if err := mapBusy(busy); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "database is busy") {
		t.Errorf("mapBusy = %v, want ErrBusy", err)
	}
	// A wait its context ended (Ctrl-C while a connection was being opened, say) is not a lock
	// held too long: it says it was interrupted, and is the context's error.
	for _, ctxErr := range []error{context.Canceled, context.DeadlineExceeded} {
		err := mapBusy(errors.Join(busy, ctxErr))
		if !errors.Is(err, ctxErr) || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "interrupted while waiting for another volctl") {
			t.Errorf("mapBusy of a busy wait ended by %v = %v, want it interrupted, not ErrBusy", ctxErr, err)
		}
	}
}

// A writer in this process waiting for another one gives up after the busy timeout, as a writer
// in another process would, instead of queueing forever.
func TestInProcessWriterWaitIsBounded(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithBusyTimeout(10*time.Millisecond))
	err := s.Update(context.Background(), func(tx *Tx) error {
		return s.Update(context.Background(), func(tx *Tx) error { return nil })
	})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "another transaction in this process") {
		t.Fatalf("nested Update: err = %v, want ErrBusy naming this process", err)
	}
}

// Opening a new connection turns a fresh file to WAL, which needs the write lock. While another
// process holds it (migrating the file it just created, say), SQLite answers that with busy at
// once rather than waiting, because the opener holds a read lock by then. Open waits it out
// within the busy timeout, and past it fails with ErrBusy naming the database.
func TestOpenWaitsForAnotherProcessOnAFreshFile(t *testing.T) {
	t.Parallel()
	// holdFresh creates an empty database file and takes its write lock from a connection
	// outside the store, still in rollback-journal mode, as another volctl starting up would.
	holdFresh := func(t *testing.T) (dir string, release func()) {
		dir = t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		return dir, func() {
			once.Do(func() {
				if _, err := c.ExecContext(context.Background(), "ROLLBACK"); err != nil {
					t.Error(err)
				}
				c.Close()
			})
		}
	}

	t.Run("released", func(t *testing.T) {
		t.Parallel()
		dir, release := holdFresh(t)
		timer := time.AfterFunc(200*time.Millisecond, release)
		defer timer.Stop()
		s, err := Open(context.Background(), dir, WithBusyTimeout(time.Minute))
		if err != nil {
			t.Fatalf("Open while another connection held the write lock for 200ms: %v", err)
		}
		defer s.Close()
		update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "opened"}) })
	})
	t.Run("held past the busy timeout", func(t *testing.T) {
		t.Parallel()
		dir, release := holdFresh(t)
		defer release()
		s, err := Open(context.Background(), dir, WithBusyTimeout(300*time.Millisecond))
		if err == nil {
			s.Close()
			t.Fatal("Open succeeded while another connection held the write lock throughout")
		}
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
			t.Errorf("Open: err = %v, want ErrBusy naming the database", err)
		}
	})
}

// TryUpdateProgress does not wait for another process's write lock: with the default 30 s busy
// timeout it returns ErrBusy at once, without running fn, and leaves the connection waiting as
// usual for the next Update.
func TestTryUpdateProgressDoesNotWait(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	other, err := Open(context.Background(), filepath.Dir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	release := holdWriteLock(t, other, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second) // far under 30 s
	defer cancel()
	ran := false
	start := time.Now()
	err = s.TryUpdateProgress(ctx, func(tx *Tx) error { ran = true; return nil })
	if !errors.Is(err, ErrBusy) || ran || ctx.Err() != nil {
		t.Fatalf("TryUpdateProgress with the lock held elsewhere: err = %v, fn ran = %v, after %v; want ErrBusy at once", err, ran, time.Since(start))
	}
	if !strings.Contains(err.Error(), s.Path()) {
		t.Errorf("error %q does not name the database", err)
	}

	release()

	// The next Update still waits for a lock held elsewhere instead of failing at once.
	release = holdWriteLock(t, other, nil)
	waited := make(chan error, 1)
	go func() { waited <- s.Update(context.Background(), func(tx *Tx) error { return nil }) }()
	time.Sleep(300 * time.Millisecond) // long enough for an Update that does not wait to fail
	release()
	if err := <-waited; err != nil {
		t.Errorf("Update after TryUpdateProgress, the lock held elsewhere for a moment: %v; want it to wait for the lock", err)
	}
	if err := s.TryUpdateProgress(context.Background(), func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "try"}) }); err != nil {
		t.Fatalf("TryUpdateProgress with the lock free: %v", err)
	}
	if evs := allEvents(t, s); len(evs) != 1 {
		t.Errorf("events = %v, want the one TryUpdateProgress appended", evs)
	}
}

// A writer queued behind another process's write lock stops waiting when its context ends
// (Ctrl-C), saying so, instead of sleeping in SQLite's busy handler until the lock is free or
// the busy timeout (30 s) has passed.
func TestUpdateWaitingForTheLockEndsWithItsContext(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithBusyTimeout(time.Minute))
	other, err := Open(context.Background(), filepath.Dir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	release := holdWriteLock(t, other, nil)
	defer release()

	for _, w := range []struct {
		name   string
		update func(context.Context, func(*Tx) error) error
	}{{"Update", s.Update}, {"UpdateProgress", s.UpdateProgress}} {
		ctx, cancel := context.WithCancel(context.Background())
		ran := false
		done := make(chan error, 1)
		go func() { done <- w.update(ctx, func(tx *Tx) error { ran = true; return nil }) }()
		// Cancelled once it waits for the lock, not after a sleep: on a loaded machine 500 ms
		// could pass before its BEGIN met the lock, and the cancellation then came before the
		// transaction began ("interrupted before the transaction began", no word of another
		// volctl), which is not the case under test.
		waitForLockWait(t, "TestUpdateWaitingForTheLockEndsWithItsContext")
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) || ran {
				t.Fatalf("%s cancelled while waiting for the lock: err = %v, fn ran = %v; want context.Canceled, fn not run", w.name, err, ran)
			}
			for _, want := range []string{s.Path(), "another volctl", "nothing written"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s's error %q does not say %q", w.name, err, want)
				}
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s still waiting for the lock 15 s after its context was cancelled", w.name)
		}
	}
}

// A writer queued behind another process's write lock waits in Go (the write connection has no
// busy handler) for the whole busy timeout, not failing at the first SQLITE_BUSY, and then says
// the database was busy, naming it; Update and UpdateProgress alike.
func TestWriterBehindAnotherProcessWaitsTheBusyTimeout(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	const wait = 400 * time.Millisecond
	other, err := Open(context.Background(), filepath.Dir(s.Path()), WithBusyTimeout(wait))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	release := holdWriteLock(t, s, nil)
	defer release()
	for name, update := range map[string]func(context.Context, func(*Tx) error) error{
		"Update": other.Update, "UpdateProgress": other.UpdateProgress,
	} {
		start := time.Now()
		err := update(context.Background(), func(tx *Tx) error { return nil })
		elapsed := time.Since(start)
		if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "database is busy") || !strings.Contains(err.Error(), s.Path()) {
			t.Errorf("%s behind another process's lock: err = %v; want ErrBusy saying the database %s was busy", name, err, s.Path())
		}
		if elapsed < wait {
			t.Errorf("%s gave up after %v, before the busy timeout (%v)", name, elapsed, wait)
		}
	}
}

// A directory that holds other files and no database is not a state dir: Open refuses to make it
// private (0700) rather than change the mode of, say, /var/lib under everyone else who uses it
// (a mistyped --state-dir, or a symlink another user planted where the state dir was to be).
// It is left as it was, without a database in it. An empty directory is made a state dir.
func TestOpenRefusesToMakeAForeignDirectoryPrivate(t *testing.T) {
	t.Parallel()
	foreign := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "shared")
		if err := os.MkdirAll(filepath.Join(dir, "postgresql"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "README"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("directory", func(t *testing.T) {
		t.Parallel()
		dir := foreign(t)
		_, err := Open(context.Background(), dir)
		want := "open state: " + dir + " is not a volctl state dir (no volctl.db, and it holds other files: README, postgresql), and its mode 0755 would have to become 0700"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Open of a foreign directory: err = %v, want it to start %q", err, want)
		}
		if got := perm(t, dir); got != 0o755 {
			t.Errorf("foreign directory's mode changed to %v", got)
		}
		if _, err := os.Lstat(filepath.Join(dir, FileName)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a database was made in the foreign directory: %v", err)
		}
	})
	t.Run("symlink to it", func(t *testing.T) {
		t.Parallel()
		dir := foreign(t)
		link := filepath.Join(t.TempDir(), "state")
		if err := os.Symlink(dir, link); err != nil {
			t.Fatal(err)
		}
		_, err := Open(context.Background(), link)
		if err == nil || !strings.Contains(err.Error(), link+" (-> "+dir+") is not a volctl state dir") {
			t.Fatalf("Open through a symlink to a foreign directory: err = %v, want it to name both", err)
		}
		if got := perm(t, dir); got != 0o755 {
			t.Errorf("foreign directory's mode changed to %v", got)
		}
	})
	t.Run("empty directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var logged strings.Builder
		s, err := Open(context.Background(), dir, WithLogger(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got := perm(t, dir); got != 0o700 {
			t.Errorf("empty directory's mode = %v, want 0700", got)
		}
		// Nothing was exposed in it: no warning (TestOpenTightensLoosePermissions has one).
		if logged.Len() != 0 {
			t.Errorf("making an empty directory the state dir logged %q", logged.String())
		}
	})
}

// forgottenAsGone is a forget scrubber (WithForget) that writes "[GONE]" for each value leaving
// the state: what the tests of secrets leaving the state look for.
func forgottenAsGone(values []string) func(string) string {
	return func(msg string) string {
		for _, x := range values {
			msg = strings.ReplaceAll(msg, x, "[GONE]")
		}
		return msg
	}
}
