package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// idleConns returns the pool's idle connections, most recently used last.
func idleConns(p *pool) []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*conn(nil), p.idle...)
}

// cached returns the statement c keeps for query, or nil.
func cached(c *conn, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.stmts[query]; st != nil {
		return st.s
	}
	return nil
}

func prepared(c *conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prepared
}

// breakConn makes database/sql close c's driver connection under the store, as it does when a
// driver reports driver.ErrBadConn: every later statement on it fails with sql.ErrConnDone.
func breakConn(t *testing.T, c *conn) {
	t.Helper()
	if err := c.sc.Raw(func(any) error { return driver.ErrBadConn }); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("breaking the connection: %v", err)
	}
}

// Transactions after the first prepare nothing: each connection keeps its statements, and the
// same *sql.Stmt serves every later transaction.
func TestStatementsAreReusedAcrossTransactions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "v", PluginID: "p", State: VolumeReady})
	})
	write := func(i int) {
		update(t, s, func(tx *Tx) error {
			return tx.Events().Append(&Event{Kind: "k", VolumeID: "v", Message: fmt.Sprint(i)})
		})
	}
	read := func() {
		view(t, s, func(tx *Tx) error { _, err := tx.Volumes().Get("v"); return err })
	}
	write(0)
	read()
	w, r := idleConns(s.w), idleConns(s.r)
	if len(w) != 1 || len(r) != 1 {
		t.Fatalf("idle connections: %d write, %d read; want 1 each", len(w), len(r))
	}
	getQuery := `SELECT ` + volumeReadColumns + ` FROM volumes WHERE id = ?`
	getStmt := cached(r[0], getQuery)
	if getStmt == nil {
		t.Fatalf("the read connection did not keep the statement of Volumes().Get")
	}
	wPrepared, rPrepared := prepared(w[0]), prepared(r[0])

	for i := 1; i <= 20; i++ {
		write(i)
		read()
	}
	if got := prepared(w[0]); got != wPrepared {
		t.Errorf("write connection prepared %d statements after warm-up, want 0", got-wPrepared)
	}
	if got := prepared(r[0]); got != rPrepared {
		t.Errorf("read connection prepared %d statements after warm-up, want 0", got-rPrepared)
	}
	if cached(r[0], getQuery) != getStmt {
		t.Errorf("Volumes().Get's statement was replaced")
	}
	if got := s.w.opened.Load(); got != 1 {
		t.Errorf("write connections opened = %d, want 1", got)
	}
	if got := s.r.opened.Load(); got != 1 {
		t.Errorf("read connections opened = %d for serial reads, want 1", got)
	}
	evs := allEvents(t, s)
	if len(evs) != 21 || evs[0].Message != "20" {
		t.Fatalf("events after reused statements: %d, newest %+v; want 21, newest \"20\"", len(evs), evs[0])
	}
}

// One SQLite statement runs one execution at a time, so a statement whose result is still open
// must not be reused under it: the second use runs unprepared and both results stay right.
func TestBusyStatementIsNotReusedUnderAnOpenResult(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		for _, id := range []string{"a", "b", "c"} {
			if err := tx.Volumes().Insert(&Volume{ID: id, PluginID: "p", State: VolumeReady}); err != nil {
				return err
			}
		}
		return nil
	})
	const q = `SELECT id FROM volumes ORDER BY id`
	view(t, s, func(tx *Tx) error {
		outer, err := tx.query(q)
		if err != nil {
			return err
		}
		var got []string
		for outer.rows.Next() {
			var id string
			if err := outer.rows.Scan(&id); err != nil {
				return err
			}
			// The same query again while the outer result is open.
			inner, err := collectIDs(tx.query(q))
			if err != nil {
				return fmt.Errorf("inner query: %w", err)
			}
			got = append(got, id+":"+strings.Join(inner, ""))
		}
		if err := outer.close(); err != nil {
			return err
		}
		if want := "a:abc b:abc c:abc"; strings.Join(got, " ") != want {
			t.Errorf("nested results = %q, want %q", strings.Join(got, " "), want)
		}
		// Released when the outer result closed: the cached statement serves again.
		if st, err := tx.c.stmt(tx.ctx, q); err != nil || st == nil {
			t.Errorf("statement after its result closed: %v, %v; want the cached one", st, err)
		} else {
			tx.c.release(st)
		}
		return nil
	})
}

func collectIDs(rows *cursor, err error) ([]string, error) {
	return collect(rows, err, func(sc scanner) (string, error) {
		var id string
		err := sc.Scan(&id)
		return id, err
	})
}

// A connection that breaks mid-transaction fails that transaction, which leaves nothing behind,
// and is replaced: the next transaction runs on a new connection.
func TestBrokenConnectionIsReplaced(t *testing.T) {
	t.Parallel()
	// A broken connection that kept its write lock would make the next Update wait this long
	// and fail, rather than the default 30 s.
	s := newStore(t, WithBusyTimeout(5*time.Second))
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "before"}) })
	view(t, s, func(tx *Tx) error { _, err := tx.Events().Recent(1, EventFilter{}); return err })

	err := s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.Events().Append(&Event{Kind: "lost"}); err != nil {
			return err
		}
		breakConn(t, tx.c)
		return tx.Events().Append(&Event{Kind: "lost too"})
	})
	if !errors.Is(err, sql.ErrConnDone) {
		t.Fatalf("Update on a connection that broke: err = %v, want sql.ErrConnDone", err)
	}
	err = s.View(context.Background(), func(tx *Tx) error {
		breakConn(t, tx.c)
		_, err := tx.Events().Recent(1, EventFilter{})
		return err
	})
	if !errors.Is(err, sql.ErrConnDone) {
		t.Fatalf("View on a connection that broke: err = %v, want sql.ErrConnDone", err)
	}

	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "after"}) })
	evs := allEvents(t, s)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "after,before" {
		t.Errorf("events = %s, want after,before: the broken transaction must leave nothing", got)
	}
	if got := s.w.opened.Load(); got != 2 {
		t.Errorf("write connections opened = %d, want 2 (the first, and its replacement)", got)
	}
	if got := s.r.opened.Load(); got != 2 {
		t.Errorf("read connections opened = %d, want 2 (the first, and its replacement)", got)
	}
	if n := s.w.db.Stats().OpenConnections; n != 1 {
		t.Errorf("write database has %d open connections, want 1: the broken one must be closed", n)
	}
}

// A kept connection that broke while idle is found at BEGIN, before fn runs, and replaced
// without failing the transaction.
func TestConnectionBrokenWhileIdleIsReplacedAtBegin(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "first"}) })
	view(t, s, func(tx *Tx) error { _, err := tx.Events().Recent(1, EventFilter{}); return err })
	for _, p := range []*pool{s.w, s.r} {
		idle := idleConns(p)
		if len(idle) != 1 {
			t.Fatalf("%d idle connections, want 1", len(idle))
		}
		breakConn(t, idle[0])
	}
	runs := 0
	update(t, s, func(tx *Tx) error { runs++; return tx.Events().Append(&Event{Kind: "second"}) })
	evs := allEvents(t, s)
	if runs != 1 || len(evs) != 2 {
		t.Errorf("fn ran %d times, %d events; want once and 2", runs, len(evs))
	}
	if w, r := s.w.opened.Load(), s.r.opened.Load(); w != 2 || r != 2 {
		t.Errorf("connections opened: %d write, %d read; want 2 each", w, r)
	}
}

// Views run side by side on up to readConns connections, while a writer commits; one more
// waits, and gives up after the busy timeout like a writer does.
func TestConcurrentReaders(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithBusyTimeout(50*time.Millisecond))
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "committed"}) })

	var entered, release sync.WaitGroup
	entered.Add(readConns)
	release.Add(1)
	errs := make(chan error, readConns)
	for range readConns {
		go func() {
			errs <- s.View(context.Background(), func(tx *Tx) error {
				evs, err := tx.Events().Recent(0, EventFilter{})
				entered.Done()
				release.Wait()
				if err == nil && len(evs) != 1 {
					err = fmt.Errorf("saw %d events, want the 1 committed before the snapshot", len(evs))
				}
				return err
			})
		}()
	}
	// Returns only once readConns Views hold a snapshot at the same time.
	entered.Wait()
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "while reading"}) })
	err := s.View(context.Background(), func(tx *Tx) error { return nil })
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "another transaction in this process") {
		t.Errorf("View with every read connection in use: err = %v, want ErrBusy naming this process", err)
	}
	release.Done()
	for range readConns {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := s.r.opened.Load(); got != readConns {
		t.Errorf("read connections opened = %d, want %d", got, readConns)
	}

	// Many readers and a writer at once, with the default busy timeout: all succeed, on no more
	// than readConns connections.
	s = newStore(t)
	var wg sync.WaitGroup
	fail := make(chan error, 16)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				var err error
				if g == 0 {
					err = s.Update(context.Background(), func(tx *Tx) error {
						return tx.Events().Append(&Event{Kind: "w", Message: fmt.Sprint(i)})
					})
				} else {
					err = s.View(context.Background(), func(tx *Tx) error {
						_, err := tx.Events().Recent(5, EventFilter{})
						return err
					})
				}
				if err != nil {
					fail <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Error(err)
	}
	if got := s.r.opened.Load(); got > readConns {
		t.Errorf("read connections opened = %d, want at most %d", got, readConns)
	}
}

// Close closes every statement and connection, kept or still in use, and later transactions
// fail rather than reopening anything.
func TestCloseWithStatementsCached(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "k"}) })
	view(t, s, func(tx *Tx) error { _, err := tx.Events().Recent(0, EventFilter{}); return err })
	if n := prepared(idleConns(s.w)[0]); n == 0 {
		t.Fatal("no statement cached on the write connection")
	}

	// A View still running when Close is called finishes, and its connection closes after it.
	inView, closed := make(chan struct{}), make(chan struct{})
	viewErr := make(chan error)
	go func() {
		viewErr <- s.View(context.Background(), func(tx *Tx) error {
			close(inView)
			<-closed
			_, err := tx.Events().Recent(0, EventFilter{})
			return err
		})
	}()
	<-inView
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	close(closed)
	if err := <-viewErr; err != nil {
		t.Errorf("View running across Close: %v", err)
	}
	for name, p := range map[string]*pool{"write": s.w, "read": s.r} {
		if n := p.db.Stats().OpenConnections; n != 0 {
			t.Errorf("%s connections open after Close: %d, want 0", name, n)
		}
	}
	if err := s.Update(context.Background(), func(tx *Tx) error { return nil }); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Update after Close: err = %v, want a closed error", err)
	}
	if err := s.View(context.Background(), func(tx *Tx) error { return nil }); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("View after Close: err = %v, want a closed error", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// waitSpy is a context that reports when a caller first selects on Done, which the store does
// only when it has to wait for a connection.
type waitSpy struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *waitSpy) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

// A writer waiting for the write connection gives up as soon as its context is cancelled, with
// the context's error, not the busy timeout's, and its fn never runs.
func TestCancelWhileWaitingForWriteConnection(t *testing.T) {
	t.Parallel()
	s := newStore(t) // the default 30 s busy timeout: only the cancellation can end the wait
	locked, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- s.Update(context.Background(), func(tx *Tx) error {
			close(locked)
			<-release
			return tx.Events().Append(&Event{Kind: "holder"})
		})
	}()
	<-locked

	ctx, cancel := context.WithCancel(context.Background())
	spy := &waitSpy{Context: ctx, waiting: make(chan struct{})}
	waiterErr := make(chan error)
	ran := false
	go func() {
		waiterErr <- s.Update(spy, func(tx *Tx) error { ran = true; return nil })
	}()
	<-spy.waiting
	cancel()
	err := <-waiterErr
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrBusy) {
		t.Errorf("cancelled waiter: err = %v, want context.Canceled", err)
	}
	if ran {
		t.Error("the cancelled waiter's fn ran")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "after"}) })
}

// View's snapshot is taken when it begins, not at fn's first read: a write committed after
// View began is invisible to fn, with the snapshot statement prepared once and reused.
func TestViewSnapshotIsTakenAtBegin(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "before"}) })
	for i := range 2 { // the second time on the kept connection and statement
		view(t, s, func(tx *Tx) error {
			update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "during"}) })
			evs, err := tx.Events().Recent(0, EventFilter{})
			if err == nil && len(evs) != 1+i {
				t.Errorf("view %d saw %d events, want %d: the write committed after it began leaked in", i, len(evs), 1+i)
			}
			return err
		})
	}
}

// CloseAtExit leaves the connections, and so the WAL, for the exit: later transactions fail as
// after Close, and what was committed is in the WAL for the next opener.
func TestCloseAtExitLeavesTheWAL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "k"}) })
	view(t, s, func(tx *Tx) error { _, err := tx.Events().Recent(0, EventFilter{}); return err })
	s.CloseAtExit()
	t.Cleanup(func() { // what the exit would do
		for _, p := range []*pool{s.w, s.r} {
			for _, c := range idleConns(p) {
				c.close()
			}
			p.db.Close()
		}
	})
	if err := s.Update(context.Background(), func(tx *Tx) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("Update after CloseAtExit: %v, want %v", err, errClosed)
	}
	if err := s.View(context.Background(), func(tx *Tx) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("View after CloseAtExit: %v, want %v", err, errClosed)
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName+"-wal")); err != nil || fi.Size() == 0 {
		t.Fatalf("WAL after CloseAtExit: %v; want it left, with the commit in it", err)
	}
	again, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	view(t, again, func(tx *Tx) error {
		evs, err := tx.Events().Recent(0, EventFilter{})
		if err == nil && len(evs) != 1 {
			t.Errorf("events after CloseAtExit and Open: %d, want the 1 committed", len(evs))
		}
		return err
	})
}

// CloseAtExit forces to disk the progress committed after the last durable commit, as the
// close's checkpoint did, and only that: a command that ends on a progress commit (a claim
// published, a release freed) is not undone by a power cut after it exited. Not parallel: it
// replaces syncFile.
func TestCloseAtExitSyncsTrailingProgress(t *testing.T) {
	var synced []string
	failWith := error(nil)
	orig := syncFile
	syncFile = func(path string) error { synced = append(synced, path); return failWith }
	t.Cleanup(func() { syncFile = orig })
	event := func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "k"}) }
	for _, tt := range []struct {
		name   string
		writes []func(*Store) error
		sync   bool
	}{
		{name: "nothing written"},
		{name: "durable last", writes: []func(*Store) error{
			func(s *Store) error { return s.UpdateProgress(context.Background(), event) },
			func(s *Store) error { return s.Update(context.Background(), event) }}},
		{name: "progress last", sync: true, writes: []func(*Store) error{
			func(s *Store) error { return s.Update(context.Background(), event) },
			func(s *Store) error { return s.UpdateProgress(context.Background(), event) }}},
		{name: "a reader's write on the side only", writes: []func(*Store) error{
			func(s *Store) error { return s.TryUpdateProgress(context.Background(), event) }}},
		{name: "progress, then a reader's write on the side", sync: true, writes: []func(*Store) error{
			func(s *Store) error { return s.UpdateProgress(context.Background(), event) },
			func(s *Store) error { return s.TryUpdateProgress(context.Background(), event) }}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synced = nil
			dir := t.TempDir()
			s, err := Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.writes {
				if err := w(s); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CloseAtExit(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeLeftForExit(s) })
			want := []string(nil)
			if tt.sync {
				want = []string{filepath.Join(dir, FileName+"-wal")}
			}
			if fmt.Sprint(synced) != fmt.Sprint(want) {
				t.Errorf("CloseAtExit synced %q, want %q", synced, want)
			}
		})
	}
	// progressThenExit commits progress in a new store in dir and returns what CloseAtExit says.
	progressThenExit := func(t *testing.T, dir string) error {
		s, err := Open(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateProgress(context.Background(), event); err != nil {
			t.Fatal(err)
		}
		err = s.CloseAtExit()
		t.Cleanup(func() { closeLeftForExit(s) })
		return err
	}
	t.Run("a WAL gone is not an error", func(t *testing.T) {
		failWith = &fs.PathError{Op: "open", Path: "volctl.db-wal", Err: fs.ErrNotExist}
		defer func() { failWith = nil }()
		if err := progressThenExit(t, t.TempDir()); err != nil {
			t.Errorf("CloseAtExit with the WAL checkpointed and removed by another process = %v, want nil", err)
		}
	})
	t.Run("a failed sync is an error naming the database", func(t *testing.T) {
		failWith = errors.New("EIO")
		dir := t.TempDir()
		err := progressThenExit(t, dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) || !strings.Contains(err.Error(), "EIO") {
			t.Errorf("CloseAtExit with a failing fsync = %v, want an error naming %s and the cause", err, filepath.Join(dir, FileName))
		}
	})
}

// closeLeftForExit closes what CloseAtExit left open, as the process's exit would.
func closeLeftForExit(s *Store) {
	for _, p := range []*pool{s.w, s.r} {
		for _, c := range idleConns(p) {
			c.close()
		}
		p.db.Close()
	}
}

// A command that reads once before it writes (a claim's mount-view check reads the registered
// plugins) reads on its write connection, open already, rather than opening a read connection
// of its own for it (SQLite reading and parsing the schema again); and a ViewShort that meets
// the write connection in use, by an Update of this goroutine itself among others, reads on a
// read connection instead of waiting for it.
func TestViewShortReadsOnTheWriteConnectionUntilAReadConnectionIsOpen(t *testing.T) {
	s := newStore(t, WithBusyTimeout(200*time.Millisecond))
	update(t, s, func(tx *Tx) error {
		return tx.Events().Append(&Event{Kind: "k", VolumeID: "v", Message: "written"})
	})
	short := func() []Event {
		t.Helper()
		var evs []Event
		if err := s.ViewShort(context.Background(), func(tx *Tx) (err error) {
			evs, err = tx.Events().Recent(0, EventFilter{})
			return err
		}); err != nil {
			t.Fatalf("ViewShort: %v", err)
		}
		return evs
	}
	if evs := short(); len(evs) != 1 || evs[0].Message != "written" {
		t.Fatalf("ViewShort read %+v, want the one event written", evs)
	}
	if n, st := s.ReadConns(), s.Stats(); n != 0 || st.Reads != 1 {
		t.Fatalf("after one ViewShort: %d read connection(s) opened, %d read(s); want none opened, one read", n, st.Reads)
	}
	// Inside an Update the write connection is this goroutine's: waiting for it would wait for
	// itself until the busy timeout.
	update(t, s, func(tx *Tx) error {
		if evs := short(); len(evs) != 1 {
			t.Errorf("ViewShort inside an Update read %d events, want 1 (the Update's own write unseen)", len(evs))
		}
		return tx.Events().Append(&Event{Kind: "k", VolumeID: "v", Message: "second"})
	})
	if n := s.ReadConns(); n != 1 {
		t.Fatalf("ViewShort inside an Update: %d read connection(s) opened, want 1", n)
	}
	// With a read connection open, ViewShort is View.
	if evs := short(); len(evs) != 2 {
		t.Fatalf("ViewShort read %d events, want 2", len(evs))
	}
	if got := s.w.opened.Load(); got != 1 {
		t.Errorf("write connections opened = %d, want 1", got)
	}
	if idle := idleConns(s.r); len(idle) != 1 {
		t.Errorf("idle read connections: %d, want the one ViewShort opened and reused", len(idle))
	}
}

// A store opened ForReading on an up-to-date database reads its schema version on a read
// connection, which its reads then reuse, and opens no write connection (SQLite reading and
// parsing the schema again) until something writes; a new database, or one at an older schema
// version, is still made or migrated, on the write connection.
func TestForReadingOpensNoWriteConnectionUntilAWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state")
	fresh, err := Open(ctx, dir, ForReading())
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := schemaVersion(ctx, fresh.w.db); err != nil || v != SchemaVersion() {
		t.Fatalf("a new database opened ForReading is at version %d (%v), want %d", v, err, SchemaVersion())
	}
	update(t, fresh, func(tx *Tx) error {
		return tx.Events().Append(&Event{Kind: "k", VolumeID: "v", Message: "written"})
	})
	fresh.Close()

	s, err := Open(ctx, dir, ForReading())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []Event
	view(t, s, func(tx *Tx) (err error) {
		evs, err = tx.Events().Recent(0, EventFilter{})
		return err
	})
	if len(evs) != 1 || evs[0].Message != "written" {
		t.Fatalf("read %+v, want the one event written", evs)
	}
	if w, r := s.w.opened.Load(), s.ReadConns(); w != 0 || r != 1 {
		t.Fatalf("after Open ForReading and a View: %d write and %d read connection(s) opened, want 0 and 1", w, r)
	}
	update(t, s, func(tx *Tx) error {
		return tx.Events().Append(&Event{Kind: "k", VolumeID: "v", Message: "second"})
	})
	if w := s.w.opened.Load(); w != 1 {
		t.Fatalf("after a write: %d write connection(s) opened, want 1", w)
	}
}

// ForReading on a database at an older schema version migrates it as Open always does.
func TestForReadingMigratesAnOlderDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	old, err := open(ctx, dir, SchemaVersion()-1)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := Open(ctx, dir, ForReading())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _, err := schemaVersion(ctx, s.r.db); err != nil || v != SchemaVersion() {
		t.Fatalf("opened ForReading, the database is at version %d (%v), want %d", v, err, SchemaVersion())
	}
}
