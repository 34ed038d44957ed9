package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/pathtrust"
	"github.com/volctl/volctl/internal/spec"
)

// ErrSocketInUse is returned by Listen when another process is accepting connections on the
// socket: two plugins on one socket would split the orchestrator's calls between them.
var ErrSocketInUse = errors.New("another plugin instance is listening on it")

// ParseEndpoint returns the socket path of a CSI endpoint, given as a path or as unix:///PATH
// or unix:/PATH (the forms supervisors pass in CSI_ENDPOINT), made absolute. Other schemes, a
// host:port and a unix: URL of a relative path are refused (spec.SocketEndpoint): CSI plugins
// are reached on unix sockets.
func ParseEndpoint(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("endpoint is empty")
	}
	path, problem := spec.SocketEndpoint("endpoint", endpoint)
	if problem != "" {
		return "", errors.New(strings.TrimSuffix(problem, "."))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("endpoint %s: %w", spec.QuoteName(endpoint), err)
	}
	return abs, nil
}

// socketMode is the plugin socket's mode, whatever the umask: whoever can connect can have the
// plugin (running as root) bind-mount its volumes anywhere, so only the socket's owner may.
const socketMode = 0o600

// Listen listens on the unix socket at path, creating its directory if needed. A stale socket,
// one nothing accepts connections on (a plugin that was killed), is replaced; a live one is
// ErrSocketInUse, and a path that is not a socket is left alone and refused. Closing the
// listener removes the socket, if it is still the one Listen created.
func Listen(path string) (net.Listener, error) {
	// bind(2) would say only "invalid argument" about a path too long for sun_path.
	if problem := spec.SocketPathProblem("socket "+path, path); problem != "" {
		return nil, errors.New(strings.TrimSuffix(problem, "."))
	}
	// A directory Listen makes is private (0700), as the socket is: the README's tour serves
	// the plugin in the directory it then uses as volctl's state dir, which volctl makes
	// private and would refuse to take over from others (store.checkDir, checkAdoptable).
	dir := filepath.Dir(path)
	// Checked before MkdirAll too, which would follow a symlink planted on the way and make
	// the missing directories at its target (the walk stops at the first missing part), and
	// after it, on the directories it made.
	if err := checkSocketDir(path); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("socket %q: %w", path, err)
	}
	if err := checkSocketDir(path); err != nil {
		return nil, err
	}
	// Two plugins starting together could each find the socket stale, and the second would
	// delete the first one's fresh socket. The directory lock makes check-remove-listen atomic.
	unlock, err := lockSocketDir(dir)
	if err != nil {
		return nil, fmt.Errorf("socket %q: %w", path, err)
	}
	defer unlock()
	if err := removeStale(path); err != nil {
		return nil, err
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		// bind(2) gives the socket file the unbound socket's mode less the umask: set it first,
		// so that the socket is never open to others, not even between bind and the chmod below.
		var err error
		if cerr := c.Control(func(fd uintptr) { err = unix.Fchmod(int(fd), socketMode) }); cerr != nil {
			return cerr
		}
		return err
	}}
	l, err := lc.Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, fmt.Errorf("socket %q: %w", path, err)
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // socketListener.Close removes it, and only if it is still ours
	// And by name, whatever the kernel made of the mode of an unbound socket.
	fi, err := chmodSocket(path)
	if err != nil {
		if fi != nil {
			// The socket bound, not made private: removed (while it is the file found there)
			// with the listener, so that a failed Listen leaves nothing behind
			// (TestListenThatCannotChmodItsSocketLeavesNoSocket).
			_ = (&socketListener{UnixListener: ul, path: path, info: fi}).Close()
		} else {
			ul.Close() // nothing found there is the plugin's to remove
		}
		return nil, fmt.Errorf("socket %q: %w", path, err)
	}
	return &socketListener{UnixListener: ul, path: path, info: fi}, nil
}

// checkSocketDir refuses a socket whose directory another user controls: owns it, may write it
// (a sticky one aside, /tmp: its entries are their owners' alone), or may replace it (a directory
// on the way that they own or may write: pathtrust.Ancestors, the state dir's and --root's rule).
// They could take the socket's name from the plugin, which serves as root, while it serves, and a
// client that does not check who listens (Nomad, a CSI sidecar; volctl does) would send them the
// requests for its volumes, secrets included (TestListenRefusesASocketDirectoryAnotherUserControls).
func checkSocketDir(path string) error {
	pr := pathtrust.Ancestors(path)
	if pr == nil {
		return nil
	}
	return fmt.Errorf("socket %q: its directory is reached through %s, which %s: another user could take the socket's name while the plugin serves, "+
		"and be sent the requests for its volumes, secrets included; chown or chmod go-w %s, or serve the socket in a directory only root may write, such as /run/csi",
		path, pr.Path, pr.Why, pr.Dir())
}

// chmodSocket gives the socket file at path socketMode through a descriptor opened without
// following a symlink, and returns what it is. Whoever else may write the socket's directory
// could swap the file for a symlink between the bind and a chmod by name, which the plugin, as
// root, would follow: to /etc/passwd, made 0600, and no user could log in
// (TestListenDoesNotChmodThroughASymlinkSwappedIn). What is not a socket is refused, naming
// the directory. A socket whose chmod failed is returned with the failure, for the caller to
// remove.
func chmodSocket(path string) (fs.FileInfo, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("replaced as soon as it was bound, by something that is no socket (mode %s): another user may write its directory %s; "+
			"serve the socket in a directory only root may write, such as /run/csi", fi.Mode(), filepath.Dir(path))
	}
	// An O_PATH descriptor takes no fchmod; its /proc/self/fd link reaches the very file.
	if err := chmodFile("/proc/self/fd/"+strconv.Itoa(fd), socketMode); err != nil {
		return fi, fmt.Errorf("making it private (mode %v): %w", fs.FileMode(socketMode), err)
	}
	return fi, nil
}

// chmodFile is os.Chmod; tests make it fail, as it does where /proc is not mounted.
var chmodFile = os.Chmod

// RemoveStaleSocket removes the socket file at path if nothing listens on it (connecting is
// refused), under the lock Listen takes on its directory. A path that is not a socket, or a
// socket something answers on (ErrSocketInUse), is left and named in the error. The agent
// calls it before starting a plugin: a plugin killed with SIGKILL leaves its socket file, and
// a plugin that binds with a plain listen cannot start again while the file is there.
func RemoveStaleSocket(path string) error {
	unlock, err := lockSocketDir(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %q: %w", path, err)
	}
	defer unlock()
	return removeStale(path)
}

// removeStale removes the socket at path if nothing is listening on it.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %q: %w", path, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("socket %q: the path exists and is not a socket; refusing to replace it", path)
	}
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("socket %q: %w", path, ErrSocketInUse)
	}
	if !errors.Is(err, unix.ECONNREFUSED) && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("socket %q: checking for a live plugin: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("socket %q: removing stale socket: %w", path, err)
	}
	return nil
}

// socketLockWait bounds the wait for the lock on a socket's directory. Its holder, another
// plugin starting there, holds it for a check, a remove and a listen: milliseconds, up to the 2 s
// a dial to a socket whose listener does not accept may take (removeStale).
const socketLockWait = 5 * time.Second

// lockSocketDir takes the lock on a socket's directory (lockDir), waiting at most
// socketLockWait. Any user who may read the directory (/tmp, a /run/csi made 0755) may take
// that lock too, a flock on the directory opened for reading: a wait without end would let
// them keep the plugin, and the agent starting it, blocked in flock(2) for good, where neither
// a context nor a signal reaches.
func lockSocketDir(dir string) (func(), error) {
	f, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(socketLockWait); ; time.Sleep(20 * time.Millisecond) {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("the lock on its directory %s has been held by another process for %v, longer than a plugin starting there holds it: "+
					"any user who may read the directory may hold it, to keep plugins from starting; `lslocks` names the holder (its PATH column, the directory); "+
					"put the socket in a directory only root may read, such as /run/csi (mode 0700)", dir, socketLockWait)
			}
			return nil, fmt.Errorf("locking %q: %w", dir, err)
		}
	}
}

// lockDir takes dir's lock (how: 0 to wait for it, unix.LOCK_NB not to) and returns what
// releases it.
func lockDir(dir string, how int) (func(), error) {
	f, err := openLocked(dir, how)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil // closing the last descriptor releases the lock
}

// openLocked opens dir and takes its lock (lockDir).
func openLocked(dir string, how int) (*os.File, error) {
	f, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|how); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %q: %w", dir, err)
	}
	return f, nil
}

// openDir opens dir, to lock it, only if it is a directory: O_DIRECTORY refuses anything else
// before it is opened. A named pipe put at its name by whoever may write its parent (/tmp,
// for a socket in /tmp/csi) would otherwise hold the open for good, waiting for a writer, where
// neither a context nor a signal reaches (TestSocketDirectoryThatIsANamedPipeIsRefusedAtOnce).
func openDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		if fi, lerr := os.Lstat(dir); lerr == nil && !fi.IsDir() && fi.Mode().Type() != fs.ModeSymlink {
			return nil, fmt.Errorf("%s is %s, not a directory: another user may have put it there (whoever may write %s); remove it", dir, pathtrust.FileKind(fi.Mode()), filepath.Dir(dir))
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// socketListener removes its socket on Close, unless another process has replaced it since.
type socketListener struct {
	*net.UnixListener
	path string
	info fs.FileInfo
	once sync.Once
}

func (l *socketListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() {
		if fi, statErr := os.Lstat(l.path); statErr == nil && os.SameFile(fi, l.info) {
			_ = os.Remove(l.path)
		}
	})
	return err
}

// Serve serves the plugin on lis until ctx is done, then stops: RPCs in flight get a grace
// period to finish and are cancelled after it. It closes lis (removing a socket from Listen) and
// returns nil after a stop, or the error that ended serving early.
func (p *Plugin) Serve(ctx context.Context, lis net.Listener) error {
	srv := p.NewServer()
	errc := make(chan error, 1)
	crash.Go(func() { errc <- srv.Serve(lis) })
	p.log.Info("serving", "plugin", PluginName, "address", lis.Addr().String(), "root", p.cfg.Root,
		"node_id", p.cfg.NodeID, "attach", p.cfg.EnableAttach, "max_volumes", p.cfg.MaxVolumes)
	select {
	case err := <-errc:
		return fmt.Errorf("hostpath: serving on %s: %w", lis.Addr(), err)
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	crash.Go(func() {
		srv.GracefulStop()
		close(stopped)
	})
	timer := time.NewTimer(gracePeriod)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		srv.Stop()
		<-stopped
	}
	<-errc
	p.log.Info("stopped", "plugin", PluginName, "address", lis.Addr().String())
	return nil
}
