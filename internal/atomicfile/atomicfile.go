// Package atomicfile replaces small files whole: a reader, or the file system after a crash or
// a power loss, finds the old content or the new, never a part of it, nor an empty file where
// the old one was. It is volctl's one way to write a file in place (an exported Nomad file, the
// state dir's path record, the hostpath plugin's records).
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// TempPrefix begins the name of the temporary file written beside the destination. It starts
// with a dot: a reader listing the directory for its files (the hostpath plugin's loadDir)
// skips what a crash left, and so does ls.
const TempPrefix = ".volctl-tmp-"

// Write replaces the file at path with data, mode perm (set before any byte is written, and
// whatever the umask): written to a temporary file beside it, synced, renamed over it, and the
// directory synced, so that once Write returns the new content survives a power loss.
func Write(path string, data []byte, perm fs.FileMode) error {
	return writeBeside(path, data, perm, os.Rename)
}

// WriteNew is Write for a file that must not exist yet: linked into place rather than renamed,
// it fails with fs.ErrExist, changing nothing, when another process made it first.
func WriteNew(path string, data []byte, perm fs.FileMode) error {
	return writeBeside(path, data, perm, os.Link)
}

// writeBeside writes data to a new temporary file beside path, syncs it, puts it in place with
// place(tmp, path), and syncs the directory. The temporary file is gone when it returns.
func writeBeside(path string, data []byte, perm fs.FileMode, place func(tmp, path string) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a rename, nothing is there; after a link, the second name goes
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		// On disk before it is in place: a rename the disk has and content it has not would
		// leave an empty or partial file after a power loss.
		err = syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := place(tmp, path); err != nil {
		return err
	}
	_ = os.Remove(tmp) // WriteNew's second name, gone before the directory is synced
	// The new name on disk before the caller says the file was written: without it, a power
	// loss may bring back the old file, or none.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return syncFile(d)
}

// syncFile is (*os.File).Sync; tests record what is synced, and when.
var syncFile = (*os.File).Sync
