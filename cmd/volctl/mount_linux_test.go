package main

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// canMount reports whether this process may bind-mount (root with CAP_SYS_ADMIN, not a
// restricted container), by trying it once.
func canMount() bool {
	dir, err := os.MkdirTemp("", "volctl-mountcheck-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if os.Mkdir(src, 0o700) != nil || os.Mkdir(dst, 0o700) != nil {
		return false
	}
	if unix.Mount(src, dst, "", unix.MS_BIND, "") != nil {
		return false
	}
	_ = unix.Unmount(dst, unix.MNT_DETACH)
	return true
}
