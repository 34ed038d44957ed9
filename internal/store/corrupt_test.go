package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A page in the middle of volctl.db is damaged (zeroed, as a disk or a copy cut short leaves
// one): Open reads no more than the schema version and succeeds, and the first transaction
// that reads the page fails. Its error names the database and says what to do, as Open's does
// for a damaged first page, not SQLite's "database disk image is malformed (11)" alone.
func TestDamagedPageFoundByATransactionSaysWhatToDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		update(t, s, func(tx *Tx) error {
			return tx.Volumes().Insert(&Volume{ID: fmt.Sprintf("v%03d", i), PluginID: "p", State: VolumeReady,
				Secrets: map[string]string{"k": strings.Repeat("s", 200)}})
		})
	}
	var root, size int64
	view(t, s, func(tx *Tx) error {
		if err := tx.queryRow(`SELECT rootpage FROM sqlite_schema WHERE name = 'volumes'`).Scan(&root); err != nil {
			return err
		}
		return tx.queryRow(`PRAGMA page_size`).Scan(&size)
	})
	path := s.Path()
	if err := s.Close(); err != nil { // checkpoints the WAL into the file
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, size), (root-1)*size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, dir)
	if err != nil {
		t.Fatalf("Open: %v (it reads no volume)", err)
	}
	defer s.Close()
	want := []string{path, "volctl cannot read it as its state", "restore a backup"}
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s of a damaged table succeeded", what)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s of a damaged table: %v\nwant it to say %q", what, err, w)
			}
		}
		if !Unusable(fmt.Errorf("a pass: %w", err)) {
			t.Errorf("%s of a damaged table: %v; want Unusable (the agent stops on it)", what, err)
		}
	}
	check("View", s.View(ctx, func(tx *Tx) error { _, err := tx.Volumes().List(VolumeFilter{}); return err }))
	check("Update", s.Update(ctx, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "new", PluginID: "p", State: VolumeReady})
	}))
}
