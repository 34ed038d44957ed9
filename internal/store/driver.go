package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"
)

// The store keeps prepared statements on its connections for as long as the connections live.
// database/sql, though, closes a connection on its own when the driver reports it bad, and does
// not close the statements prepared on a *sql.Conn first. SQLite closes a connection that still
// has statements only halfway: it stays open, transaction and locks included, until they are
// finalized, which after the close nothing can do. So the store opens its connections through
// this thin wrapper, whose Close finalizes the connection's statements before closing it.

// openDB opens a database whose connections finalize their statements when they close.
func openDB(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector{c}), nil
}

type connector struct{ driver.Connector }

// Connect opens a connection and wraps it.
func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ic, ok := dc.(innerConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks a method the store uses", dc)
	}
	return &trackedConn{innerConn: ic, stmts: map[*trackedStmt]struct{}{}}, nil
}

// innerConn is what the store needs of a driver connection; modernc.org/sqlite's has it all.
type innerConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
}

// innerStmt is what the store needs of a driver statement.
type innerStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// trackedConn is a driver connection that knows its open statements. It forwards everything;
// only preparing and closing do more.
type trackedConn struct {
	innerConn
	mu    sync.Mutex
	stmts map[*trackedStmt]struct{} // nil once closed
}

// Prepare prepares a statement that the connection closes with itself.
func (c *trackedConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext prepares a statement that the connection closes with itself.
func (c *trackedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	ds, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	is, ok := ds.(innerStmt)
	if !ok {
		ds.Close()
		return nil, fmt.Errorf("sqlite driver statement %T lacks a method the store uses", ds)
	}
	s := &trackedStmt{innerStmt: is, c: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stmts == nil {
		is.Close()
		return nil, driver.ErrBadConn
	}
	c.stmts[s] = struct{}{}
	return s, nil
}

// Close finalizes the connection's open statements, then closes it.
func (c *trackedConn) Close() error {
	c.mu.Lock()
	stmts := c.stmts
	c.stmts = nil
	c.mu.Unlock()
	var first error
	for s := range stmts {
		if err := s.innerStmt.Close(); err != nil && first == nil {
			first = err
		}
	}
	if err := c.innerConn.Close(); err != nil {
		return err
	}
	return first
}

// trackedStmt is a statement of a trackedConn.
type trackedStmt struct {
	innerStmt
	c *trackedConn
}

// Close finalizes the statement, unless its connection already did.
func (s *trackedStmt) Close() error {
	s.c.mu.Lock()
	_, open := s.c.stmts[s]
	delete(s.c.stmts, s)
	s.c.mu.Unlock()
	if !open {
		return nil
	}
	return s.innerStmt.Close()
}
