package csitest

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// HeldSocket is a plugin socket that something other than the plugin holds, as systemd's
// socket activation or a supervisor passing the listening descriptor on does: the socket file
// stays the same file (device, inode, change time) while the plugin behind it is replaced.
// Each connection made to it is forwarded to the plugin serving the backend socket at the
// time; Switch replaces that plugin, dropping the connections to the old one as its exit
// would, so a client reconnects, on the same socket file, to the new one.
type HeldSocket struct {
	path string
	lis  net.Listener

	mu      sync.Mutex
	backend string
	conns   map[net.Conn]bool // both ends of every forwarded connection
	closed  bool
}

// HoldSocket listens on a new socket in a short temporary directory, forwarding to the plugin
// on backend, until the test ends.
func HoldSocket(t testing.TB, backend string) *HeldSocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "held")
	if err != nil {
		t.Fatalf("csitest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "csi.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("csitest: listen on %s: %v", path, err)
	}
	h := &HeldSocket{path: path, lis: lis, backend: backend, conns: map[net.Conn]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.accept()
	}()
	t.Cleanup(func() {
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		lis.Close()
		<-done
		h.drop()
	})
	return h
}

// Path is the held socket's path: the one to register the plugin on.
func (h *HeldSocket) Path() string { return h.path }

// Switch makes the plugin on backend the one behind the socket: the connections to the one
// before are closed, and new ones go to backend.
func (h *HeldSocket) Switch(backend string) {
	h.mu.Lock()
	h.backend = backend
	h.mu.Unlock()
	h.drop()
}

// drop closes every forwarded connection.
func (h *HeldSocket) drop() {
	h.mu.Lock()
	conns := h.conns
	h.conns = map[net.Conn]bool{}
	h.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

func (h *HeldSocket) accept() {
	for {
		in, err := h.lis.Accept()
		if err != nil {
			return
		}
		h.mu.Lock()
		backend, closed := h.backend, h.closed
		h.mu.Unlock()
		if closed {
			in.Close()
			return
		}
		out, err := net.Dial("unix", backend)
		if err != nil {
			in.Close() // nothing behind the socket: the client sees the connection reset
			continue
		}
		h.mu.Lock()
		h.conns[in], h.conns[out] = true, true
		h.mu.Unlock()
		go pipe(in, out)
		go pipe(out, in)
	}
}

// pipe copies from src to dst until either ends, then closes both.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}
