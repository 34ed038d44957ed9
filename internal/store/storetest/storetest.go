// Package storetest gives tests of other packages a state database to start from: one at the
// current schema version, nothing in it, made by store.Open once per test process and copied
// into each test's state dir. A new database's schema and migrations, run by store.Open for each
// of the hundreds of engines the engine's, cli's and agent's tests open, were a sixth of their
// CPU time under -race; a copy is found at the current version and migrates nothing. What Open
// does with a new or an older database is the store's tests' to prove, and volctl's scripts',
// which start every state from nothing.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/store"
)

// schemaDB is the database's file, made once per test process.
var schemaDB = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "volctl-schema-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	// The last connection's close checkpoints the WAL into the file and deletes it: the file
	// alone is the whole database.
	if _, err := os.Stat(filepath.Join(dir, store.FileName+"-wal")); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the schema database's WAL is left after its close (%v): the file alone is not the database", err)
	}
	return os.ReadFile(filepath.Join(dir, store.FileName))
})

// Seed puts a copy of the schema database in the state dir dir, as store.Open would leave a new
// one (the dir 0700, the file 0600), creating dir if it is missing. The dir must hold no
// database yet: Seed fails the test rather than replace one.
func Seed(t testing.TB, dir string) {
	t.Helper()
	db, err := schemaDB()
	if err == nil {
		err = os.MkdirAll(dir, 0o700)
	}
	if err == nil {
		// O_EXCL: a database already there is the test's, never overwritten.
		var f *os.File
		if f, err = os.OpenFile(filepath.Join(dir, store.FileName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			_, err = f.Write(db)
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil {
		t.Fatalf("the state database with the schema, in %s: %v", dir, err)
	}
}

// Restore puts content over the state database in the state dir dir as a backup restored would
// be: written beside it, then renamed over it, so that the path leads to another file (inode)
// than the one a running volctl opened. nil content is the database file's own, read now.
func Restore(t testing.TB, dir string, content []byte) {
	t.Helper()
	db := filepath.Join(dir, store.FileName)
	if content == nil {
		b, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		content = b
	}
	if err := os.WriteFile(db+".restored", content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(db+".restored", db); err != nil {
		t.Fatal(err)
	}
}
