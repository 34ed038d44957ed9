// Package hostpathtest runs volctl's hostpath plugin for tests: in-process on a temp unix socket,
// with real or fake mounts, and with every mount a test made undone at cleanup, even on failure.
package hostpathtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/volctl/volctl/internal/hostpath"
)

// Server is a hostpath plugin serving on a temp socket for the life of a test.
type Server struct {
	// Plugin is the running plugin, for VolumePath and the like.
	Plugin *hostpath.Plugin
	// Config is the configuration it was started with, defaults filled in.
	Config hostpath.Config
	// Socket is the socket's path; Endpoint is the same as unix://PATH.
	Socket   string
	Endpoint string

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Start runs a plugin until the test ends. An empty cfg.Root becomes a fresh temp dir (whose
// mounts are cleaned up), an empty cfg.NodeID becomes "node-1". The socket lives in a short temp
// dir of its own: unix socket paths are limited to 108 bytes and test names are long.
func Start(t testing.TB, cfg hostpath.Config) *Server {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = filepath.Join(MountDir(t), "root")
	}
	if cfg.NodeID == "" {
		cfg.NodeID = "node-1"
	}
	sockDir, err := os.MkdirTemp("", "hp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	return StartAt(t, cfg, filepath.Join(sockDir, "csi.sock"))
}

// StartAt is Start on a given socket path, e.g. to restart a plugin where it was.
func StartAt(t testing.TB, cfg hostpath.Config, socket string) *Server {
	t.Helper()
	p, err := hostpath.New(cfg)
	if err != nil {
		t.Fatalf("hostpath.New: %v", err)
	}
	lis, err := hostpath.Listen(socket)
	if err != nil {
		t.Fatalf("hostpath.Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{Plugin: p, Config: cfg, Socket: socket, Endpoint: "unix://" + socket, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- p.Serve(ctx, lis) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("hostpath plugin: %v", err)
		}
	})
	return s
}

// Stop stops serving and waits until the socket is gone. Calling it again does nothing.
func (s *Server) Stop() error {
	var err error
	s.once.Do(func() {
		s.cancel()
		err = <-s.done
	})
	return err
}

// Dial connects to the plugin; the connection is closed when the test ends.
func (s *Server) Dial(t testing.TB) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(s.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dialing %s: %v", s.Endpoint, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// CanMount reports why this process cannot bind-mount (not root, no CAP_SYS_ADMIN, a restricted
// container), or nil when it can, by trying once.
func CanMount() error {
	dir, err := os.MkdirTemp("", "hp-mountcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := os.Mkdir(src, 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount: %w", err)
	}
	return unix.Unmount(dst, unix.MNT_DETACH)
}

// RequireMount skips the test, saying why, where bind mounts are not allowed.
func RequireMount(t testing.TB) {
	t.Helper()
	if err := CanMount(); err != nil {
		t.Skipf("needs root with CAP_SYS_ADMIN to bind-mount: %v", err)
	}
}

// Tmpfs mounts a tmpfs with opts ("size=64k", ...) on a fresh temp dir for the test and returns
// it, unmounted at the end; the test is skipped, saying why, where it cannot be mounted (not
// root). Tests of a full file system make ENOSPC real on it (Fill).
func Tmpfs(t testing.TB, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes the file path until its file system is full, failing the test unless the write
// that stops it fails with ENOSPC.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("filling %s: %v, want ENOSPC", path, err)
			}
			return
		}
	}
}

// ShortDir returns a fresh temp dir, removed at the end of the test, whose path leaves room for
// unix socket paths below it (107 bytes at most on Linux). t.TempDir() carries the test's name
// under $TMPDIR, which together can leave too little; a long $TMPDIR is passed over for /tmp.
func ShortDir(t testing.TB) string {
	t.Helper()
	base := os.TempDir()
	if len(base) > 32 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "volctl-test-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the temp dir: %v", err)
		}
	})
	return dir
}

// MountDir returns a fresh temp dir for staging and target paths (or a plugin root) and makes
// sure that whatever is mounted under it at the end of the test is unmounted before the dir is
// removed, so a failed test neither leaks mounts nor deletes data through them.
func MountDir(t testing.TB) string {
	t.Helper()
	dir := ShortDir(t)
	// Registered after ShortDir's own cleanup, so it runs before it.
	t.Cleanup(func() {
		if err := hostpath.UnmountAll(dir); err != nil {
			t.Errorf("cleaning up mounts: %v", err)
		}
	})
	return dir
}

// Mounted reports whether path is a mount point (a missing path is not one), failing the test
// when the mount table cannot be read.
func Mounted(t testing.TB, path string) bool {
	t.Helper()
	ok, err := hostpath.SystemMounter{}.IsMountPoint(path)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// FakeMounter is a hostpath.Mounter that only remembers what it mounted, so the node RPCs'
// bookkeeping can be exercised without root. Mounts stack as the kernel's do: a bind on a
// mount point goes over what is there, and an unmount takes the topmost away. Fail, when set,
// is returned by every BindMount and Unmount, e.g. unix.EPERM to play a host without mount
// privileges.
type FakeMounter struct {
	mu     sync.Mutex
	stacks map[string][]fakeMount // each mount point's mounts, lowest first
	Fail   error
}

// fakeMount is one mount: its flags and the directory it shows, a bind's source followed
// through the mounts it was made from (what the kernel's table has as device and root).
type fakeMount struct {
	flags  uintptr
	origin string
	shown  os.FileInfo // origin's identity when the bind was made, as a bind keeps its inode
}

// BindMount implements hostpath.Mounter.
func (m *FakeMounter) BindMount(source, target, carry string, flags uintptr) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return &os.PathError{Op: "bind-mount " + source + " on", Path: target, Err: m.Fail}
	}
	if _, err := os.Stat(target); err != nil {
		return err
	}
	if m.stacks == nil {
		m.stacks = map[string][]fakeMount{}
	}
	origin := source
	if s := m.stacks[source]; len(s) > 0 {
		origin = s[len(s)-1].origin
	}
	shown, _ := os.Stat(origin)
	m.stacks[target] = append(m.stacks[target], fakeMount{flags: flags, origin: origin, shown: shown})
	return nil
}

// Holds implements hostpath.Mounter as the system's does, by the stack at path: its lowest
// mount shows the volume's directory dir (a source named volumes/<id>), and its topmost what its
// lowest does. The volume's directory itself is not looked at: it may be there again as
// another directory, which the mounts do not show.
func (m *FakeMounter) Holds(path, dir string) (bool, error) {
	id := filepath.Base(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stacks[path]
	if len(s) == 0 {
		return true, nil
	}
	lowest := s[0].origin
	if filepath.Base(lowest) != id || filepath.Base(filepath.Dir(lowest)) != "volumes" {
		return false, nil
	}
	return s[len(s)-1].origin == lowest, nil
}

// Shows implements hostpath.Mounter as the system's does: the directory the topmost mount at
// path was made of, as it was then (its identity kept at the bind), is dir as it is now.
// Compared by name, a directory renamed aside and made again at its name passed, which the
// system's refuses (TestFakeMounterShowsJudgesADirectoryMadeAgainAsTheSystemDoes).
func (m *FakeMounter) Shows(path, dir string) (bool, error) {
	m.mu.Lock()
	s := m.stacks[path]
	m.mu.Unlock()
	var shown os.FileInfo
	if len(s) > 0 && s[len(s)-1].shown != nil {
		shown = s[len(s)-1].shown
	} else {
		fi, err := os.Stat(path)
		if err != nil {
			return false, err
		}
		shown = fi
	}
	now, err := os.Stat(dir)
	if err != nil {
		return false, err
	}
	return os.SameFile(shown, now), nil
}

// Unmount implements hostpath.Mounter: the topmost mount at target goes.
func (m *FakeMounter) Unmount(target string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return &os.PathError{Op: "unmount", Path: target, Err: m.Fail}
	}
	if s := m.stacks[target]; len(s) > 1 {
		m.stacks[target] = s[:len(s)-1]
	} else {
		delete(m.stacks, target)
	}
	return nil
}

// IsMountPoint implements hostpath.Mounter.
func (m *FakeMounter) IsMountPoint(path string) (bool, error) {
	_, ok := m.Flags(path)
	return ok, nil
}

// Mounts lists the current mount points, sorted.
func (m *FakeMounter) Mounts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.stacks))
	for p := range m.stacks {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Flags returns the mount flags target's topmost mount was made with, and whether it is
// mounted.
func (m *FakeMounter) Flags(target string) (uintptr, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.stacks[target]
	if !ok {
		return 0, false
	}
	return s[len(s)-1].flags, true
}

// Forget drops a mount point's mounts as if they vanished behind the plugin's back (a
// reboot, a manual umount).
func (m *FakeMounter) Forget(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.stacks, strings.TrimSuffix(target, "/"))
}

// GrantWrite gives uid rwx on path through a POSIX access ACL, as setfacl -m u:UID:rwx does
// (acl(5): version 2, then tag, permissions, id; the mask rwx). It skips the test on a file
// system without ACLs.
func GrantWrite(t testing.TB, path string, uid uint32) {
	t.Helper()
	acl := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, 7, ^uint32(0)}, {0x02, 7, uid}, {0x04, 5, ^uint32(0)}, {0x10, 7, ^uint32(0)}, {0x20, 5, ^uint32(0)}} {
		acl = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(acl, e.tag), e.perm), e.id)
	}
	if err := unix.Setxattr(path, "system.posix_acl_access", acl, 0); errors.Is(err, unix.EOPNOTSUPP) {
		t.Skipf("the file system of %s has no POSIX ACLs", path)
	} else if err != nil {
		t.Fatal(err)
	}
}
