package hostpath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The socket's chmod by name fails (a container without /proc mounted, where the plugin reaches
// the file through /proc/self/fd): Listen failed, and left the socket file it had bound, which
// nothing listens on, for a CO to connect to and be refused, taken for a plugin that crashed.
// A failed Listen leaves nothing: the socket it bound is removed with its listener.
func TestListenThatCannotChmodItsSocketLeavesNoSocket(t *testing.T) {
	was := chmodFile
	chmodFile = func(string, os.FileMode) error { return syscall.ENOENT }
	t.Cleanup(func() { chmodFile = was })
	dir := filepath.Join(t.TempDir(), "csi")
	path := filepath.Join(dir, "csi.sock")
	l, err := Listen(path)
	if err == nil {
		l.Close()
		t.Fatal("Listen succeeded though the socket could not be made private")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("Listen: %v, want it to name the socket", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket Listen bound is left at %s after it failed (lstat: %v)", path, err)
	}
}
