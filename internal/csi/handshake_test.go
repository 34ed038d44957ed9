package csi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/iostreams"
)

// rawListener serves a unix socket that is not a CSI plugin: each accepted connection is
// handed to handle, and every connection and the listener are closed when the test ends.
func rawListener(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "csih") // short: a socket path must stay under 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "fake.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		os.RemoveAll(dir)
	})
	return socket
}

// holdConn accepts and says nothing, as a stopped (SIGSTOP) or wedged plugin does.
func holdConn(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// answerConn reads the request, writes answer, and then hangs up or, with hold, keeps the
// connection open until the client closes it.
func answerConn(answer string, hold bool) func(net.Conn) {
	return func(c net.Conn) {
		buf := make([]byte, 64)
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		_, _ = c.Read(buf)
		_ = c.SetReadDeadline(time.Time{})
		_, _ = io.WriteString(c, answer)
		if hold {
			holdConn(c)
		}
		c.Close()
	}
}

const (
	http11Answer = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"
	http10Answer = "HTTP/1.0 400 Bad Request\r\n\r\n"
)

// handshakeTries is how many fresh connections a test makes to a server that hangs up: where
// the hang-up lands in gRPC's handshake (writing its preface, flushing its SETTINGS, reading the
// server's) is a race, and each place reads differently in gRPC's error.
const handshakeTries = 20

// closeConn hangs up at once.
func closeConn(c net.Conn) { c.Close() }

// rawTransportText is what gRPC's transport says about these sockets, and the generic hint
// that blamed a plugin that is not running; none of it may reach the error a person reads.
var rawTransportText = []string{"raw-read unix", "frame too large", "connection error", "server preface", "desc =",
	"connection reset", "broken pipe", "HTTP/1.1 header", "waiting for connections", "is the plugin running"}

func checkHandshakeError(t *testing.T, err error, code codes.Code, want string) {
	t.Helper()
	var e *csi.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *csi.Error", err, err)
	}
	rpc, _, _ := strings.Cut(want, ":")
	if e.RPC != rpc || e.Code != code || csi.CodeOf(err) != code {
		t.Errorf("error %v: RPC %s code %v, want %s %v", err, e.RPC, e.Code, rpc, code)
	}
	if !csi.IsRetryable(err) {
		t.Errorf("error %v: class %v, want retryable (the plugin may come back)", err, e.Class)
	}
	if err.Error() != want {
		t.Errorf("error\n got %q\nwant %q", err, want)
	}
	for _, raw := range rawTransportText {
		if strings.Contains(err.Error(), raw) {
			t.Errorf("error %q leaks gRPC transport text %q", err, raw)
		}
	}
}

// TestSocketThatAcceptsButNeverHandshakes: something accepts the connection and holds it
// without a word (a hung plugin). A long RPC (DeleteVolume) outlasts gRPC's connect timeout
// (twice the short RPC timeout), and is UNAVAILABLE past it; a short one (GetPluginInfo) runs
// into its own timeout first, DEADLINE_EXCEEDED. Both say what happened, by socket, and the
// trace (--verbose) keeps gRPC's own account.
func TestSocketThatAcceptsButNeverHandshakes(t *testing.T) {
	socket := rawListener(t, holdConn)
	t.Run("unavailable", func(t *testing.T) {
		var trace iostreams.SyncBuffer
		c := csitest.NewClient(t, csi.Config{ControllerSocket: socket, Timeouts: csi.Timeouts{Short: 500 * time.Millisecond, Long: 20 * time.Second},
			Logger: slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		start := time.Now()
		err := c.DeleteVolume(context.Background(), csi.DeleteVolumeRequest{VolumeID: "v"})
		checkHandshakeError(t, err, codes.Unavailable, "DeleteVolume: Unavailable: something accepted the connection on "+socket+
			" but did not complete the gRPC handshake (a hung plugin, or not a CSI plugin)")
		if took := time.Since(start); took < time.Second {
			t.Errorf("gRPC gave up on the connection after %s; want twice the short timeout, 1s", took)
		}
		if !strings.Contains(trace.String(), "error reading server preface") {
			t.Errorf("the RPC trace lost gRPC's own detail:\n%s", trace.String())
		}
	})
	t.Run("deadline", func(t *testing.T) {
		c := csitest.NewClient(t, csi.Config{ControllerSocket: socket, Timeouts: csi.Timeouts{Short: 100 * time.Millisecond}})
		_, err := c.GetPluginInfo(context.Background())
		checkHandshakeError(t, err, codes.DeadlineExceeded, "GetPluginInfo: DeadlineExceeded: something accepted the connection on "+socket+
			" but did not complete the gRPC handshake within 100ms (a hung plugin, or not a CSI plugin)")
	})
}

// TestSocketThatSpeaksHTTP1: an HTTP/1.x server on the socket answers, but not with gRPC,
// whether it keeps the connection (gRPC reads the answer) or hangs up after answering (gRPC may
// only see the hang-up), and whatever HTTP/1 version it speaks. A server that answers with
// something else is not taken for HTTP.
func TestSocketThatSpeaksHTTP1(t *testing.T) {
	const notHTTP2 = "it does not speak gRPC's HTTP/2, so it is not a CSI plugin; check the plugin's socket path"
	tests := []struct {
		name   string
		handle func(net.Conn)
		hint   string
	}{
		{"HTTP/1.1 keeps the connection", answerConn(http11Answer, true), "it looks like an HTTP/1.x server, not a CSI plugin"},
		{"HTTP/1.1 hangs up", answerConn(http11Answer, false), "it looks like an HTTP/1.x server, not a CSI plugin"},
		{"HTTP/1.0 keeps the connection", answerConn(http10Answer, true), "it looks like an HTTP/1.x server, not a CSI plugin"},
		{"HTTP/1.0 hangs up", answerConn(http10Answer, false), "it looks like an HTTP/1.x server, not a CSI plugin"},
		{"a line of text", answerConn("hello, this is not a CSI plugin\n", true), notHTTP2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			socket := rawListener(t, tt.handle)
			for range handshakeTries {
				var trace iostreams.SyncBuffer
				c, err := csi.New(csi.Config{ControllerSocket: socket, Timeouts: csi.Timeouts{Short: 2 * time.Second},
					Logger: slog.New(slog.NewTextHandler(&trace, &slog.HandlerOptions{Level: slog.LevelDebug}))})
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.GetPluginInfo(context.Background())
				c.Close()
				checkHandshakeError(t, err, codes.Unavailable, "GetPluginInfo: Unavailable: something accepted the connection on "+socket+
					" and answered, but not with gRPC ("+tt.hint+")")
				if out := trace.String(); !strings.Contains(out, "frame too large") && !strings.Contains(out, "broken pipe") &&
					!strings.Contains(out, "connection reset") {
					t.Errorf("the RPC trace lost gRPC's own detail:\n%s", out)
				}
				if t.Failed() {
					return
				}
			}
		})
	}
}

// TestSocketThatHangsUpAtOnce: something accepts the connection and closes it straight away.
func TestSocketThatHangsUpAtOnce(t *testing.T) {
	socket := rawListener(t, closeConn)
	want := "GetPluginInfo: Unavailable: something accepted the connection on " + socket +
		" but closed it before completing the gRPC handshake (a plugin failing as it starts, or not a CSI plugin; check its logs)"
	for range handshakeTries {
		c, err := csi.New(csi.Config{ControllerSocket: socket, Timeouts: csi.Timeouts{Short: 2 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the first dial, then the channel's remembered failure
			_, err = c.GetPluginInfo(context.Background())
			checkHandshakeError(t, err, codes.Unavailable, want)
		}
		c.Close()
		if t.Failed() {
			return
		}
	}
}

// TestPluginErrorsWordedAsGRPCsAreThePlugins: a plugin answers in gRPC's own words for a
// transport failure — DEADLINE_EXCEEDED "... while waiting for connections to become ready"
// (a channel that never connected), UNAVAILABLE "... error reading server preface" (a failed
// handshake); a plugin proxying another service may pass them on. The call did reach a plugin,
// which answered: the error is the plugin's, its message kept, not a handshake that never
// happened on a socket that works.
func TestPluginErrorsWordedAsGRPCsAreThePlugins(t *testing.T) {
	for code, msg := range map[codes.Code]string{
		codes.DeadlineExceeded: "context deadline exceeded while waiting for connections to become ready",
		codes.Unavailable:      "connection error: desc = \"error reading server preface: EOF\"",
	} {
		h := newHarness(t, csitest.DefaultMemConfig())
		h.faults.Inject(csi.RPCNodeGetInfo, csitest.Fault{Code: code, Message: msg})
		_, err := h.client.NodeGetInfo(context.Background())
		if csi.CodeOf(err) != code {
			t.Fatalf("NodeGetInfo = %v, want the plugin's %v", err, code)
		}
		if strings.Contains(err.Error(), "handshake") || !strings.Contains(err.Error(), msg) {
			t.Errorf("NodeGetInfo error %q: want the plugin's message, not a handshake that never failed", err)
		}
	}
}

// slowAcceptor forwards each connection to the plugin at socket after delay, as a plugin that
// is slow to answer its first connection does: one systemd starts on that connection (socket
// activation), one that exec()s its driver, or one on a loaded machine.
func slowAcceptor(socket string, delay time.Duration) func(net.Conn) {
	return func(c net.Conn) {
		time.Sleep(delay)
		p, err := net.Dial("unix", socket)
		if err != nil {
			c.Close()
			return
		}
		go func() { _, _ = io.Copy(p, c); p.Close() }()
		_, _ = io.Copy(c, p)
		c.Close()
	}
}

// TestSlowHandshakeWithinTheTimeoutIsWaitedFor: a plugin that completes gRPC's handshake only
// after a second and a half answers within the RPC's timeout (5 s), and is answered as any
// other. gRPC gave a connection one second (MinConnectTimeout) before: the first RPC to a
// plugin that socket activation starts, or that a loaded machine runs slowly, failed
// UNAVAILABLE "did not complete the gRPC handshake" with most of its timeout left.
func TestSlowHandshakeWithinTheTimeoutIsWaitedFor(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig())
	socket := rawListener(t, slowAcceptor(h.socket, 1500*time.Millisecond))
	for _, rpc := range []string{csi.RPCGetPluginInfo, csi.RPCDeleteVolume} {
		t.Run(rpc, func(t *testing.T) {
			c := csitest.NewClient(t, csi.Config{ControllerSocket: socket, NodeSocket: socket})
			var err error
			if rpc == csi.RPCGetPluginInfo {
				_, err = c.GetPluginInfo(context.Background())
			} else {
				err = c.DeleteVolume(context.Background(), csi.DeleteVolumeRequest{VolumeID: "nope"})
			}
			if err != nil {
				t.Fatalf("%s through a plugin that handshakes after 1.5 s: %v; want it answered", rpc, err)
			}
		})
	}
}
