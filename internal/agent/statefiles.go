package agent

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/volctl/volctl/internal/store"
)

// The agent's files in the state dir (run/*.pid, logs/*.log) are opened without following a
// symlink and without blocking: a named pipe put in one's place would hold the agent in open(2)
// (a writer waits there for a reader, a reader for a writer), where neither a signal nor its
// context reaches it. One that is not a regular file is refused, naming it.
const stateFileFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// openStateFile opens path with flag and stateFileFlags and makes sure it is a regular file.
func openStateFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|stateFileFlags, 0o600)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return nil, notRegular(path, fi)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func notRegular(path string, fi os.FileInfo) error {
	return fmt.Errorf("%s is %s, not a regular file as the agent makes them: remove it", path, store.FileKind(fi.Mode()))
}

// readStateFile is os.ReadFile through openStateFile.
func readStateFile(path string) ([]byte, error) {
	f, err := openStateFile(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeStateFile is os.WriteFile (mode 0600) through openStateFile. A full file system says so
// and what to do, as the store's errors do: the agent retries a plugin's start (retry_in) while its pid
// file cannot be written, and meanwhile commands find no plugin on the socket
// (TestPidFileOnAFullDiskSaysWhatToDo). A write that fails removes the file: truncated, it
// would name no process to whoever reads it (a plugin's pid file is written to a temporary
// one and renamed, so its last record stays; the agent's is its own, under the agent lock).
func writeStateFile(path string, data []byte) (err error) {
	defer func() { err = store.NoSpace(err) }()
	f, err := openStateFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}
