package store

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// standInFS makes statFS answer typ for every path under root, as statfs answers on a file
// system mounted there; not parallel: statFS is the package's.
func standInFS(t *testing.T, root string, typ int64) {
	real := statFS
	statFS = func(path string) (fsInfo, error) {
		if path == root || strings.HasPrefix(path, root+"/") {
			if _, err := os.Stat(path); err != nil {
				return fsInfo{}, err
			}
			return fsInfo{typ: typ}, nil
		}
		return real(path)
	}
	t.Cleanup(func() { statFS = real })
}

// A state dir on NFS (or SMB, 9p, ...) is refused before anything is made there, naming the
// path and the file system, saying why and what to do: SQLite's WAL and volctl's locks work
// between the processes of one host only. Before, volctl made its state there and went on.
func TestStateDirOnANetworkFileSystemIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		typ  int64
		fs   string
	}{{"NFS", unix.NFS_SUPER_MAGIC, "NFS"}, {"SMB", unix.SMB2_SUPER_MAGIC, "SMB2"}, {"9p", unix.V9FS_MAGIC, "9p"}} {
		t.Run(tt.name, func(t *testing.T) {
			mnt := t.TempDir()
			standInFS(t, mnt, tt.typ)
			for _, dir := range []string{mnt, filepath.Join(mnt, "not", "made")} {
				s, err := Open(context.Background(), dir)
				if err == nil {
					s.Close()
					t.Fatalf("Open of a state dir on %s succeeded", tt.fs)
				}
				for _, want := range []string{mnt, "network file system (" + tt.fs + ")", "one host", "local disk"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Open of %s on %s: %v\nwant it to say %q", dir, tt.fs, err, want)
					}
				}
				entries, _ := os.ReadDir(mnt)
				if len(entries) != 0 {
					t.Errorf("Open of %s on %s made %d entries there", dir, tt.fs, len(entries))
				}
			}
		})
	}
}

// A state dir on FUSE, which may be local or reach another host, is opened with a warning.
func TestStateDirOnFUSEWarns(t *testing.T) {
	mnt := t.TempDir()
	standInFS(t, mnt, unix.FUSE_SUPER_MAGIC)
	var logged bytes.Buffer
	s, err := Open(context.Background(), mnt, WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatalf("Open of a state dir on FUSE: %v", err)
	}
	s.Close()
	if !strings.Contains(logged.String(), "FUSE") || !strings.Contains(logged.String(), mnt) {
		t.Errorf("Open of a state dir on FUSE logged:\n%s\nwant a warning naming it", logged.String())
	}
}

// TestOpenReadsTheFileSystemOnce: Open judges the state dir's file system (network, FUSE,
// mounted read-only) from one statfs of it.
func TestOpenReadsTheFileSystemOnce(t *testing.T) {
	dir := t.TempDir()
	real := statFS
	calls := 0
	statFS = func(path string) (fsInfo, error) { calls++; return real(path) }
	t.Cleanup(func() { statFS = real })
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if calls != 1 {
		t.Errorf("Open of an existing state dir ran statfs %d times, want 1", calls)
	}
}
