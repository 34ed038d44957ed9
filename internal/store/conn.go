package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The store keeps its connections itself instead of checking one out of database/sql's pool per
// transaction: a statement prepared on a *sql.Conn dies with it, and modernc.org/sqlite keeps the
// compiled program in the prepared statement. A kept connection with its kept statements runs
// each statement's SQL through SQLite's parser once, not once per call.

// maxStmts bounds each connection's statement cache. The store's SQL is built from constants and
// from which filter fields are set, never from values, so the set is small (under 100 texts);
// past the bound a statement runs unprepared rather than growing the cache.
const maxStmts = 128

// errClosed is the error of a transaction started after Close.
var errClosed = errors.New("state database is closed")

// pool is a fixed number of long-lived connections. A transaction holds one for its whole length.
// Connections are opened when first needed, so a process that reads once opens one read
// connection, and are kept until the store closes or one breaks.
type pool struct {
	db     *sql.DB
	tokens chan struct{} // one per connection in use; its capacity is the pool's size

	mu     sync.Mutex
	idle   []*conn // open and not in use; the most recently used last, so it is reused first
	closed bool

	opened atomic.Int64 // connections opened so far, for tests
}

func newPool(db *sql.DB, size int) *pool {
	// The pool bounds and keeps the connections itself: database/sql keeps none idle, so a
	// connection the store lets go is closed at once rather than lingering in a second pool.
	db.SetMaxIdleConns(0)
	return &pool{db: db, tokens: make(chan struct{}, size)}
}

// get takes a connection, waiting up to wait for one to be free, as a writer in another process
// waits up to the busy timeout for SQLite's write lock.
func (p *pool) get(ctx context.Context, wait time.Duration) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case p.tokens <- struct{}{}:
	default:
		t := time.NewTimer(wait)
		select {
		case p.tokens <- struct{}{}:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
			return nil, &busyError{why: fmt.Sprintf("another transaction in this process held it for %v", wait)}
		}
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.tokens
		return nil, errClosed
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	// Opening a connection sets the journal mode, which on a file not yet in WAL mode needs the
	// write lock; SQLite answers busy at once, without waiting, when another process holds it.
	var sc *sql.Conn
	err := retryBusy(ctx, wait, func() (err error) {
		sc, err = p.db.Conn(ctx)
		return err
	}, nil)
	if err != nil {
		<-p.tokens
		return nil, err
	}
	p.opened.Add(1)
	return &conn{sc: sc, stmts: map[string]*stmt{}}, nil
}

// free says the pool has a connection open and not in use. Another goroutine may take it
// right after: it is an answer for now (Store.ViewShort).
func (p *pool) free() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && len(p.idle) > 0 && len(p.tokens) < cap(p.tokens)
}

// unopened says the pool has never opened a connection.
func (p *pool) unopened() bool { return p.opened.Load() == 0 }

// put gives a connection back. A broken one, or any once the store is closed, is closed instead,
// its statements first.
func (p *pool) put(c *conn) {
	p.mu.Lock()
	keep := !p.closed && !c.broken.Load()
	if keep {
		p.idle = append(p.idle, c)
	}
	p.mu.Unlock()
	if !keep {
		_ = c.close()
	}
	<-p.tokens
}

// close closes the idle connections and the database. A connection in use is closed when its
// transaction gives it back.
func (p *pool) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	var errs []error
	for _, c := range idle {
		errs = append(errs, c.close())
	}
	return errors.Join(append(errs, p.db.Close())...)
}

// isClosed reports whether close or abandon ran.
func (p *pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// abandon marks the pool closed, as close does, but leaves its connections open for the
// process's exit to close (Store.CloseAtExit).
func (p *pool) abandon() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
}

// conn is one long-lived connection and the statements prepared on it.
type conn struct {
	sc     *sql.Conn
	broken atomic.Bool // a statement said the connection is unusable: put replaces it
	// relaxed says the connection's PRAGMA synchronous is NORMAL (UpdateProgress) rather than
	// the FULL it opens with. Only the transaction holding the connection touches it.
	relaxed bool
	// bulk says the write connection checkpoints at walBulkAutocheckpoint pages, not
	// walAutocheckpoint (Store.bulk). Only the transaction holding the connection touches it.
	bulk bool

	mu       sync.Mutex
	stmts    map[string]*stmt // by SQL text
	prepared int              // statements prepared so far, for tests
}

// stmt is a prepared statement and whether a statement call or an open result is using it: one
// SQLite statement runs one execution at a time.
type stmt struct {
	s    *sql.Stmt
	busy bool // guarded by conn.mu
}

// stmt returns the connection's statement for query, preparing it on first use, and marks it busy
// until release. It returns nil, and query should run unprepared, when the statement is busy
// (a result of it still open, or a second goroutine in the transaction) or the cache is full.
func (c *conn) stmt(ctx context.Context, query string) (*stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.stmts[query]
	if !ok {
		if len(c.stmts) >= maxStmts {
			return nil, nil
		}
		ps, err := c.sc.PrepareContext(ctx, query)
		if err != nil {
			return nil, err
		}
		st = &stmt{s: ps}
		c.stmts[query] = st
		c.prepared++
	}
	if st.busy {
		return nil, nil
	}
	st.busy = true
	return st, nil
}

func (c *conn) release(st *stmt) {
	if st == nil {
		return
	}
	c.mu.Lock()
	st.busy = false
	c.mu.Unlock()
}

// check marks the connection broken when err says it is, and returns err.
func (c *conn) check(err error) error {
	if err != nil && (errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)) {
		c.broken.Store(true)
	}
	return err
}

// close closes the statements, then the connection. A broken connection is discarded, not handed
// back to database/sql: it may still have a transaction open.
func (c *conn) close() error {
	c.mu.Lock()
	var errs []error
	for q, st := range c.stmts {
		errs = append(errs, st.s.Close())
		delete(c.stmts, q)
	}
	c.mu.Unlock()
	if c.broken.Load() {
		// Raw returning ErrBadConn makes database/sql close the driver connection. Errors are
		// not news here: the connection is known to be broken.
		_ = c.sc.Raw(func(any) error { return driver.ErrBadConn })
		_ = c.sc.Close()
		return nil
	}
	return errors.Join(append(errs, c.sc.Close())...)
}

// row is the result of Tx.queryRow: a *sql.Row that gives its statement back when scanned.
type row struct {
	r   *sql.Row
	c   *conn
	st  *stmt
	err error // from preparing the statement
}

// Scan copies the row's columns into dest, as (*sql.Row).Scan does.
func (r row) Scan(dest ...any) error {
	defer r.c.release(r.st)
	if r.err != nil {
		return r.c.check(r.err)
	}
	return r.c.check(r.r.Scan(dest...))
}

// cursor is the result of Tx.query: *sql.Rows that give their statement back when closed.
type cursor struct {
	rows *sql.Rows
	c    *conn
	st   *stmt
	s    *Store // counts the rows read (RowsRead)
}

func (cu *cursor) close() error {
	err := cu.rows.Close()
	cu.c.release(cu.st)
	cu.st = nil
	return cu.c.check(err)
}
