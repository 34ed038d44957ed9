package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// recordSyncs replaces syncFile for the test with one that records the names it syncs and
// checks, at each file's sync, that path does not hold that file's content yet.
func recordSyncs(t *testing.T, path string, data []byte) *[]string {
	t.Helper()
	var synced []string
	old := syncFile
	t.Cleanup(func() { syncFile = old })
	syncFile = func(f *os.File) error {
		if fi, err := f.Stat(); err == nil && !fi.IsDir() {
			if b, err := os.ReadFile(path); err == nil && string(b) == string(data) {
				t.Errorf("%s was synced after it was put in place at %s", f.Name(), path)
			}
		}
		synced = append(synced, f.Name())
		return old(f)
	}
	return &synced
}

// onlyFiles fails unless dir holds exactly names: no temporary file left.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Errorf("%s holds %q, want %q (a temporary file left behind?)", dir, got, names)
	}
}

// TestWriteSyncsTheFileBeforeItsRenameAndTheDirectoryAfter: without the first sync a power loss
// could leave an empty or partial file at path; without the second, the old file, or none,
// after Write said it wrote the new one.
func TestWriteSyncsTheFileBeforeItsRenameAndTheDirectoryAfter(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(string, []byte, fs.FileMode) error
		old   bool // a file is at path already
	}{
		{"Write over a file", Write, true},
		{"Write a new file", Write, false},
		{"WriteNew", WriteNew, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.hcl")
			if tt.old {
				if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data := []byte("new\n")
			synced := recordSyncs(t, path, data)
			if err := tt.write(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			s := *synced
			if len(s) != 2 || filepath.Dir(s[0]) != dir || !strings.HasPrefix(filepath.Base(s[0]), TempPrefix) || s[1] != dir {
				t.Fatalf("synced %q; want the temporary file in %s, then %s", s, dir, dir)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != string(data) {
				t.Errorf("%s holds %q (%v), want %q", path, b, err, data)
			}
			onlyFiles(t, dir, "f.hcl")
		})
	}
}

// TestWriteSetsTheModeWhateverTheUmask: the mode asked for, not one the umask narrowed or a
// replaced file's, from before the first byte is written (an exported file may hold secrets).
func TestWriteSetsTheModeWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, perm := range []fs.FileMode{0o644, 0o600} {
		if err := Write(path, []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != perm {
			t.Errorf("after Write(%o): %v %v, want %v", perm, fi.Mode(), err, perm)
		}
	}
}

// TestWriteNewLeavesAFileMadeFirst: a file another process made is neither replaced nor
// touched, and the error says it exists.
func TestWriteNewLeavesAFileMadeFirst(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "volctl.path")
	if err := os.WriteFile(path, []byte("theirs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(path, []byte("mine\n"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("WriteNew over a file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs\n" {
		t.Errorf("the file made first now holds %q", b)
	}
	onlyFiles(t, dir, "volctl.path")
}

// TestWriteThatFailsLeavesTheOldFile: a write that fails before the rename (here, its sync)
// leaves the old content at path and no temporary file.
func TestWriteThatFailsLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	eio := errors.New("input/output error")
	old := syncFile
	defer func() { syncFile = old }()
	syncFile = func(*os.File) error { return eio }
	if err := Write(path, []byte("new"), 0o600); !errors.Is(err, eio) {
		t.Fatalf("Write with a failing sync: %v, want %v", err, eio)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after a failed Write the file holds %q, want the old content", b)
	}
	onlyFiles(t, dir, "f")
}

// TestWriteReplacesASymlinkAndLeavesWhatItPointsTo: the destination's name is replaced, not
// followed: a link planted there does not make volctl write where it points.
func TestWriteReplacesASymlinkAndLeavesWhatItPointsTo(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "theirs" {
		t.Errorf("Write followed the symlink: %s holds %q", victim, b)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s after Write: %v %v, want a regular file", path, fi.Mode(), err)
	}
}
