package agent

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/volctl/volctl/internal/atomicfile"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// openStateFile opens one of the agent's files in the state dir (run/*.pid, logs/*.log) with
// flag, through pathtrust.OpenRegular: without following a symlink and without blocking (a named
// pipe put in one's place would hold the agent in open(2), where neither a signal nor its context
// reaches it). One that is not a regular file is refused, naming it.
func openStateFile(path string, flag int) (*os.File, error) {
	f, err := pathtrust.OpenRegular(path, flag, 0o600)
	if nr := (*pathtrust.NotRegularError)(nil); errors.As(err, &nr) {
		return nil, notRegularError{path: path, kind: nr.Kind}
	}
	return f, err
}

// notRegularError is openStateFile's refusal of a path that is not a regular file.
type notRegularError struct{ path, kind string }

func (e notRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file as the agent makes them: remove it", e.path, e.kind)
}

// maxRunFileSize bounds what is read of a pid file: the agent writes one line of a few numbers
// and a token (writePidFile), well under it.
const maxRunFileSize = 4 << 10

// readStateFile is os.ReadFile through openStateFile, of a file of at most maxRunFileSize
// bytes: a larger one is not as the agent writes them, and is refused, naming it, after that
// many bytes are read. Before, a pid file grown huge (a damaged file system, a tool writing
// through the run dir, a sparse file truncated up) was read whole into memory, by the agent
// adopting its plugins at start and by a second agent naming the first, whose refusal printed
// all of it (TestAgentPidFileGrownHugeIsRefused).
func readStateFile(path string) ([]byte, error) {
	f, err := openStateFile(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRunFileSize+1))
	if err == nil && len(b) > maxRunFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes, not a pid file as the agent writes them: remove it", path, maxRunFileSize)
	}
	return b, err
}

// writeRunFile writes a pid file (a plugin's, run/<id>.pid, or the agent's, run/agent.pid)
// with internal/atomicfile, mode 0600: written beside it, synced, and renamed over it, so that
// whoever reads it (a later agent adopting the plugin, a second agent naming the first, after a
// crash or a power loss) finds the last record or the new one, never an empty or partial file
// that names no process or the wrong one, and whatever was at its place (a named pipe, a
// symlink) is replaced, not opened. A full file system says so and what to do, as the store's
// errors do: the agent retries a plugin's start (retry_in) while its pid file cannot be written,
// and meanwhile commands find no plugin on the socket (TestPidFileOnAFullDiskSaysWhatToDo).
func writeRunFile(path string, data []byte) error {
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("pid file %s: %w", spec.QuoteName(path), store.NoSpace(err))
	}
	return nil
}
