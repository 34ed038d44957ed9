package procfs

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir reads through the first thread while it runs, through a running thread once it is a
// zombie, and through the first again when no thread runs (the process has ended: reads fail
// or answer as they always did).
func TestDir(t *testing.T) {
	root := t.TempDir()
	stat := func(path, state string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("7 (a (b) c) "+state+" 1 7 7 0 -1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, first, other, want string
	}{
		{"first runs", "S", "S", "7"},
		{"first a zombie, another runs", "Z", "R", "7/task/9"},
		{"every thread a zombie", "Z", "Z", "7"},
		{"dead", "X", "R", "7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stat(filepath.Join(root, "7", "stat"), c.first)
			stat(filepath.Join(root, "7", "task", "7", "stat"), c.first)
			stat(filepath.Join(root, "7", "task", "9", "stat"), c.other)
			if got := Dir(root, 7); got != filepath.Join(root, c.want) {
				t.Errorf("Dir: %s, want %s", got, filepath.Join(root, c.want))
			}
		})
	}
	if got := Dir(root, 8); got != filepath.Join(root, "8") {
		t.Errorf("Dir of a pid /proc does not list: %s, want %s", got, filepath.Join(root, "8"))
	}
}
