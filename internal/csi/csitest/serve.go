package csitest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
)

// ServeOption configures Serve.
type ServeOption func(*serveConfig)

type serveConfig struct {
	register     []func(*grpc.Server)
	interceptors []grpc.UnaryServerInterceptor
	faults       *Faults
	errs         []string
	// uid is the user the socket listens as (AsUser); nil: this process's.
	uid *uint32
	// replace: listen on a new file beside the socket path and rename it over the path
	// (ReplacingSocket).
	replace bool
}

// Registrar is a server that registers its CSI services itself, as MemPlugin does.
type Registrar interface {
	Register(s *grpc.Server)
}

// WithServer serves srv: through its Register method if it has one, else for each of the
// CSI Identity, Controller and Node services it implements (any CSI server, e.g. the hostpath
// plugin's).
func WithServer(srv any) ServeOption {
	return func(c *serveConfig) {
		if r, ok := srv.(Registrar); ok {
			c.register = append(c.register, r.Register)
			return
		}
		found := false
		if s, ok := srv.(csipb.IdentityServer); ok {
			c.register = append(c.register, func(g *grpc.Server) { csipb.RegisterIdentityServer(g, s) })
			found = true
		}
		if s, ok := srv.(csipb.ControllerServer); ok {
			c.register = append(c.register, func(g *grpc.Server) { csipb.RegisterControllerServer(g, s) })
			found = true
		}
		if s, ok := srv.(csipb.NodeServer); ok {
			c.register = append(c.register, func(g *grpc.Server) { csipb.RegisterNodeServer(g, s) })
			found = true
		}
		if !found {
			c.errs = append(c.errs, "WithServer: the value implements no CSI service")
		}
	}
}

// WithRegister registers services with a function, e.g. to serve only some of a plugin's
// services on a socket: WithRegister(func(s *grpc.Server) { mem.Register(s, csitest.Node) }).
func WithRegister(fn func(*grpc.Server)) ServeOption {
	return func(c *serveConfig) { c.register = append(c.register, fn) }
}

// WithFaults injects f's faults into every call and counts them.
func WithFaults(f *Faults) ServeOption {
	return func(c *serveConfig) { c.faults = f }
}

// WithInterceptor adds a server interceptor outside the faults, so it sees every call,
// faulted or not (tests use it to record raw requests).
func WithInterceptor(i grpc.UnaryServerInterceptor) ServeOption {
	return func(c *serveConfig) { c.interceptors = append(c.interceptors, i) }
}

// Serve serves CSI services on a new unix socket in a short temporary directory (a socket
// path must stay under 108 bytes, which t.TempDir() paths can exceed) and returns its path and
// a function that stops the server, dropping in-flight calls as a killed plugin would. The
// server is stopped and the directory removed when the test ends.
func Serve(t testing.TB, opts ...ServeOption) (socket string, stop func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatalf("csitest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket = filepath.Join(dir, "csi.sock")
	return socket, ServeAt(t, socket, opts...)
}

// AsUser makes the server listen as user uid, and group uid (a user's own group), as a plugin
// another user started would: SO_PEERCRED tells whoever connects that uid listens there. The socket file is made as this process's user
// (root), only the listen(2) is the other user's. It needs root.
func AsUser(uid uint32) ServeOption {
	return func(c *serveConfig) { c.uid = &uid }
}

// ReplacingSocket makes ServeAt listen on a new socket file beside the path and rename it over
// the path, whatever is there (a live socket included): a plugin restarted with its new instance
// listening before the old one is gone, so a client that reconnects finds the new one at once,
// never an empty path. The old instance's stop leaves the new file alone (it removes only the
// socket file it made).
func ReplacingSocket() ServeOption {
	return func(c *serveConfig) { c.replace = true }
}

// listenAs listens on socket with uid as the effective user and group of the listen(2), which is what the
// kernel records as the listener's credentials. Only the thread that listens takes those ids (the
// raw system call: Go's Setresuid changes every thread of the process), and that thread ends with
// its goroutine, never unlocked: no other goroutine ever runs as uid.
func listenAs(socket string, uid uint32) (net.Listener, error) {
	type result struct {
		lis net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			done <- result{err: err}
			return
		}
		f := os.NewFile(uintptr(fd), socket)
		defer f.Close()
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: socket}); err != nil {
			done <- result{err: fmt.Errorf("bind %s: %w", socket, err)}
			return
		}
		const keep = ^uintptr(0) // -1: leave the real and saved ids as they are
		for _, set := range []struct {
			call uintptr
			name string
		}{{unix.SYS_SETRESGID, "setresgid"}, {unix.SYS_SETRESUID, "setresuid"}} { // the group while still root
			if _, _, errno := unix.RawSyscall(set.call, keep, uintptr(uid), keep); errno != 0 {
				done <- result{err: fmt.Errorf("%s(-1, %d, -1): %w", set.name, uid, errno)}
				return
			}
		}
		if err := unix.Listen(fd, 128); err != nil {
			done <- result{err: fmt.Errorf("listen on %s as uid %d: %w", socket, uid, err)}
			return
		}
		lis, err := net.FileListener(f)
		done <- result{lis, err}
	}()
	r := <-done
	return r.lis, r.err
}

// replaceSeq names the files ReplacingSocket listens on before renaming them.
var replaceSeq atomic.Uint64

// ServeAt serves on the given socket path, so a test can restart a plugin where it was.
// It returns the stop function, which removes the socket file only if it is still the one this
// server made; the server is also stopped when the test ends.
func ServeAt(t testing.TB, socket string, opts ...ServeOption) (stop func()) {
	t.Helper()
	var cfg serveConfig
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.errs) > 0 {
		t.Fatalf("csitest: %s", cfg.errs[0])
	}
	if len(cfg.register) == 0 {
		t.Fatalf("csitest: Serve needs at least one server (WithServer or WithRegister)")
	}
	chain := append([]grpc.UnaryServerInterceptor(nil), cfg.interceptors...)
	if cfg.faults != nil {
		chain = append(chain, cfg.faults.Interceptor())
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(chain...))
	for _, r := range cfg.register {
		r(srv)
	}
	at := socket
	if cfg.replace {
		// A short name beside the path: a socket path must stay under 108 bytes.
		at = filepath.Join(filepath.Dir(socket), fmt.Sprintf(".r%d", replaceSeq.Add(1)))
	}
	var lis net.Listener
	var err error
	if cfg.uid != nil {
		lis, err = listenAs(at, *cfg.uid)
	} else {
		lis, err = net.Listen("unix", at)
	}
	if err != nil {
		t.Fatalf("csitest: listen on %s: %v", at, err)
	}
	if ul, ok := lis.(*net.UnixListener); ok {
		// Closing the listener must not unlink the path, which may name another instance's
		// socket by then (ReplacingSocket): stop removes the file only if it is this one.
		ul.SetUnlinkOnClose(false)
	}
	if cfg.replace {
		if err := os.Rename(at, socket); err != nil {
			lis.Close()
			os.Remove(at)
			t.Fatalf("csitest: replace %s: %v", socket, err)
		}
	}
	made, err := os.Lstat(socket)
	if err != nil {
		lis.Close()
		t.Fatalf("csitest: the socket just made: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Stop()
			<-done
			// Only the socket file this server made: a new instance may have replaced it
			// (ReplacingSocket), or a test put another file there.
			if now, err := os.Lstat(socket); err == nil && os.SameFile(made, now) {
				os.Remove(socket)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// NewClient is a csi client on cfg's sockets, closed when the test ends.
func NewClient(t testing.TB, cfg csi.Config) *csi.Client {
	t.Helper()
	c, err := csi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
