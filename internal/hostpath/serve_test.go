package hostpath_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/crash"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/testproc"
)

// serveEnv makes the test binary a plugin process: TestMain serves on the socket it names, with
// the signal handling volctl's main uses, so the process tests see what a supervisor sees.
const serveEnv = "HOSTPATH_TEST_SERVE"

// panicEnv, beside serveEnv, names an RPC (its full method) whose handler panics in the
// plugin process: a test-only hook standing for a bug in a handler.
const panicEnv = "HOSTPATH_TEST_PANIC"

func TestMain(m *testing.M) {
	if spec := os.Getenv(serveEnv); spec != "" {
		os.Exit(serveForTest(spec))
	}
	testproc.Start() // the plugins and mounts of a test binary that dies go with it (internal/testproc)
	os.Exit(m.Run())
}

func serveForTest(spec string) int {
	var socket, root string
	if _, err := fmt.Sscanf(spec, "%s %s", &socket, &root); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := hostpath.Config{Root: root, NodeID: "proc"}
	if method := os.Getenv(panicEnv); method != "" {
		cfg.ServerOptions = []grpc.ServerOption{grpc.ChainUnaryInterceptor(
			func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				if info.FullMethod == method {
					panic("test hook: " + method + " panicked")
				}
				return handler(ctx, req)
			})}
	}
	p, err := hostpath.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := p.ListenAndServe(ctx, "unix://"+socket); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func probe(t *testing.T, socket string) error {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{}, grpc.WaitForReady(true))
	return err
}

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "/run/csi/hp.sock", want: "/run/csi/hp.sock"},
		{in: "unix:///run/csi/hp.sock", want: "/run/csi/hp.sock"},
		{in: "unix:/run/csi/hp.sock", want: "/run/csi/hp.sock"},
		{in: "tcp://127.0.0.1:9000", wantErr: "only unix sockets"},
		{in: "unix://", wantErr: "no socket path"},
		{in: "", wantErr: "empty"},
	}
	for _, tt := range tests {
		got, err := hostpath.ParseEndpoint(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseEndpoint(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseEndpoint(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	socket := filepath.Join(shortDir(t), "hp.sock")
	// A socket nobody listens on any more: what a killed plugin leaves behind.
	l, err := net.Listen("unix", socket)
	mustOK(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(socket); err != nil {
		t.Fatalf("setting up the stale socket: %v", err)
	}

	srv := hostpathtest.StartAt(t, hostpath.Config{Root: t.TempDir(), NodeID: "n1"}, socket)
	if err := probe(t, socket); err != nil {
		t.Fatalf("probe after replacing the stale socket: %v", err)
	}
	mustOK(t, srv.Stop())
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("socket still there after stop: %v", err)
	}
}

func TestListenRefusesLiveSocket(t *testing.T) {
	srv := hostpathtest.Start(t, hostpath.Config{})
	_, err := hostpath.Listen(srv.Socket)
	if !errors.Is(err, hostpath.ErrSocketInUse) {
		t.Fatalf("Listen on a live socket: %v, want ErrSocketInUse", err)
	}
	if !strings.Contains(err.Error(), srv.Socket) {
		t.Errorf("error %q does not name the socket", err)
	}
	// The running plugin is untouched.
	if err := probe(t, srv.Socket); err != nil {
		t.Errorf("first plugin after the refused second one: %v", err)
	}
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "hp.sock")
	mustOK(t, os.WriteFile(path, []byte("precious"), 0o600))
	_, err := hostpath.Listen(path)
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen on a regular file: %v", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "precious" {
		t.Errorf("the file was touched: %q, %v", b, err)
	}
}

// serveProcess starts the test binary as a plugin process serving on socket (serveEnv, with
// env beside it), its stderr to stderr, and returns once it answers a probe. exited gets how it
// ended; the process is killed when the test ends, and exited given back for that.
func serveProcess(t *testing.T, socket string, stderr io.Writer, env ...string) (*exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), serveEnv+"="+socket+" "+t.TempDir()), env...)
	cmd.Stderr = stderr
	mustOK(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	if err := probe(t, socket); err != nil {
		t.Fatalf("plugin process never served: %v", err)
	}
	return cmd, exited
}

// A panic in an RPC handler, which runs on one of gRPC's goroutines, ends the plugin as a
// volctl crash: exit status crash.ExitCode, not Go's 2 (a usage error in volctl's table), with
// the panic and what it means on stderr. The caller's RPC fails UNAVAILABLE, which it retries
// once the plugin is started again.
func TestPanicInAHandlerExitsWithTheCrashCode(t *testing.T) {
	socket := filepath.Join(shortDir(t), "hp.sock")
	var stderr strings.Builder
	cmd, exited := serveProcess(t, socket, &stderr, panicEnv+"=/csi.v1.Identity/GetPluginInfo")
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	mustOK(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("GetPluginInfo of a plugin that panicked: %v, want UNAVAILABLE (retryable)", err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if cmd.ProcessState.ExitCode() != crash.ExitCode {
			t.Errorf("plugin that panicked in a handler: %v, want exit status %d\n%s", err, crash.ExitCode, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("plugin still running 60s after its handler panicked")
	}
	for _, want := range []string{"panic: test hook: /csi.v1.Identity/GetPluginInfo panicked", "volctl crashed"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr says no %q:\n%s", want, stderr.String())
		}
	}
}

// A path too long for sun_path is refused by name and length, not with bind's "invalid
// argument", and nothing is created for it.
func TestListenRefusesPathTooLong(t *testing.T) {
	dir := filepath.Join(shortDir(t), strings.Repeat("d", 100))
	path := filepath.Join(dir, "hp.sock")
	_, err := hostpath.Listen(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "at most 107 bytes") ||
		strings.Contains(err.Error(), "invalid argument") {
		t.Fatalf("Listen on a %d-byte path: %v, want it named and its length explained", len(path), err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Listen created the directory of a socket it refused: %v", err)
	}
}

// TestSignalStopsAndRemovesSocket runs the plugin as a process and stops it the way a
// supervisor does.
func TestSignalStopsAndRemovesSocket(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			socket := filepath.Join(shortDir(t), "hp.sock")
			cmd, exited := serveProcess(t, socket, os.Stderr)
			mustOK(t, cmd.Process.Signal(sig))
			select {
			case err := <-exited:
				exited <- err // for the cleanup
				if err != nil {
					t.Fatalf("plugin exited with %v after %v, want a clean exit", err, sig)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("plugin still running 60s after %v", sig)
			}
			if _, err := os.Stat(socket); !os.IsNotExist(err) {
				t.Errorf("socket left behind after %v: %v", sig, err)
			}
		})
	}
}

// A plugin alive but too busy to accept (its listen backlog full) makes a connect fail with
// EAGAIN, not ECONNREFUSED: RemoveStaleSocket must not take that socket for a stale one and
// remove it from under the plugin.
func TestRemoveStaleSocketLeavesABusyPluginsSocket(t *testing.T) {
	socket := filepath.Join(shortDir(t), "busy.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	mustOK(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	mustOK(t, syscall.Bind(fd, &syscall.SockaddrUnix{Name: socket}))
	mustOK(t, syscall.Listen(fd, 0)) // never accepts: the backlog fills at once
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for {
		c, err := net.DialTimeout("unix", socket, 100*time.Millisecond)
		if err != nil {
			break // the backlog is full
		}
		if held = append(held, c); len(held) > 64 {
			t.Fatal("the listen backlog never filled")
		}
	}
	err = hostpath.RemoveStaleSocket(socket)
	if err == nil || !strings.Contains(err.Error(), "checking for a live plugin") {
		t.Fatalf("RemoveStaleSocket on a busy plugin's socket: %v, want it to say it could not tell", err)
	}
	if _, serr := os.Lstat(socket); serr != nil {
		t.Fatalf("the busy plugin's socket was removed (RemoveStaleSocket: %v): %v", err, serr)
	}
}

// The lock Listen and RemoveStaleSocket take on the socket's directory, to check, remove and
// listen as one step, is one any user who may read the directory may take too (a flock on a
// directory opened for reading): held by another user's process, it makes a start fail after
// a bound, naming the directory and what to do, never wait for good (the agent's start of the
// plugin blocked in flock(2), where neither its context nor a signal reaches it).
func TestSocketDirectoryLockHeldByAnotherUserIsBounded(t *testing.T) {
	t.Parallel()
	// In the run directory (0755), not t.TempDir's private one: the other user must reach it.
	dir, err := os.MkdirTemp("", "socketdir-")
	mustOK(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	mustOK(t, os.Chmod(dir, 0o755)) // as /run/csi or /tmp: every user may read it
	holder := exec.Command("flock", "--exclusive", dir, "sh", "-c", "echo locked; exec sleep 120")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // flock(1) and its sleep, killed together
	if os.Geteuid() == 0 {
		holder.SysProcAttr.Credential = &syscall.Credential{Uid: 4242, Gid: 4242}
	}
	var said strings.Builder
	out, err := holder.StdoutPipe()
	mustOK(t, err)
	holder.Stderr = &said
	if err := holder.Start(); err != nil {
		t.Skipf("no flock(1) to hold the directory's lock as another process: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); _ = holder.Wait() })
	// flock(1) runs the command once it holds the lock.
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("flock(1) did not take the lock on %s: %q %s", dir, line, said.String())
	}
	socket := filepath.Join(dir, "p.sock")
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"Listen", func() error {
			l, err := hostpath.Listen(socket)
			if err == nil {
				l.Close()
			}
			return err
		}},
		{"RemoveStaleSocket", func() error { return hostpath.RemoveStaleSocket(socket) }},
	} {
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- tt.call() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "lslocks") {
				t.Errorf("%s while another process holds the lock on %s: %v, want an error naming the directory and how to find the holder", tt.name, dir, err)
			}
			t.Logf("%s after %v: %v", tt.name, time.Since(start).Round(time.Millisecond), err)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still waiting after 30s for the lock on %s, which another user's process holds", tt.name, dir)
		}
	}
}

// The socket's directory is another user's, or one every user may write that is not sticky:
// between the plugin's bind and its chmod of the socket by name, that user swaps the socket
// file for a symlink to a file of root's. The plugin, as root, must not change that file's
// mode (0600: /etc/passwd so made unreadable locks every user out).
func TestListenDoesNotChmodThroughASymlinkSwappedIn(t *testing.T) {
	dir := shortDir(t)
	socket := filepath.Join(dir, "csi.sock")
	victim := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(victim, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	swapped := make(chan int, 1)
	go func() { // the directory's other user: a socket appears, a symlink takes its place
		n := 0
		defer func() { swapped <- n }()
		link := socket + ".l"
		for {
			select {
			case <-stop:
				return
			default:
			}
			if fi, err := os.Lstat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
				_ = os.Symlink(victim, link)
				if os.Rename(link, socket) == nil {
					n++
				}
			}
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	listened := 0
	for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
		l, err := hostpath.Listen(socket)
		if err == nil {
			listened++
			l.Close()
		} else if strings.Contains(err.Error(), "replaced as soon as it was bound") && (!strings.Contains(err.Error(), "directory "+dir) || !strings.Contains(err.Error(), "/run/csi")) {
			t.Errorf("listen %d: the refusal does not name the directory another user may write, nor where to serve instead: %v", i, err)
		}
		_ = os.Remove(socket)
		fi, err := os.Stat(victim)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			close(stop)
			t.Fatalf("listen %d: %s, which the socket's name was swapped for a symlink to, is now mode %#o (was 0644): the plugin changed its mode through the symlink", i, victim, fi.Mode().Perm())
		}
	}
	close(stop)
	t.Logf("%d listens, %d swaps", listened, <-swapped)
}

// Whoever may write the socket directory's parent (/tmp, for a socket in /tmp/csi) may put a
// named pipe at the directory's name, before the agent starts or between its MkdirAll and the
// lock: opening a named pipe for reading waits for a writer, and the plugin's start (the agent
// clearing a stale socket, or Listen) would wait in open(2) for good, where neither a context
// nor a signal reaches it. The lock's open must refuse what is not a directory at once, naming it.
func TestSocketDirectoryThatIsANamedPipeIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(shortDir(t), "csi")
	mustOK(t, syscall.Mkfifo(dir, 0o666))
	socket := filepath.Join(dir, "p.sock")
	done := make(chan error, 1)
	go func() { done <- hostpath.RemoveStaleSocket(socket) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), "remove it") {
			t.Fatalf("RemoveStaleSocket(%s) with a named pipe for its directory: %v, want an error naming the directory, what it is and what to do", socket, err)
		}
		t.Logf("RemoveStaleSocket: %v", err)
	case <-time.After(10 * time.Second):
		// Unblock the open, so the goroutine ends with the test.
		if w, err := os.OpenFile(dir, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("RemoveStaleSocket(%s) still blocked after 10s opening %s, a named pipe put where its directory was", socket, dir)
	}
}

// The plugin serves as root, and whoever controls the socket's directory (owns it, may write
// it, or may replace it: a directory on the way that they own or may write) may take the
// socket's name from it while it serves: a client other than volctl (Nomad, a CSI sidecar) then
// sends them the requests for the plugin's volumes, secrets included. volctl checks who listens
// (engine.serverRefused); the plugin must refuse such a directory itself, naming it, as it
// refuses such a --root, and leave no socket there. A sticky directory every user may write
// (/tmp itself) is as the state dir's rule has it: its entries are their owners' alone.
func TestListenRefusesASocketDirectoryAnotherUserControls(t *testing.T) {
	t.Parallel()
	base := shortDir(t)
	mk := func(name string, mode os.FileMode, uid int) string {
		d := filepath.Join(base, name)
		mustOK(t, os.MkdirAll(d, 0o700))
		mustOK(t, os.Chmod(d, mode))
		if uid >= 0 {
			mustOK(t, os.Chown(d, uid, uid))
		}
		return d
	}
	asRoot := os.Geteuid() == 0
	for _, tt := range []struct {
		name, dir string
		want      string // in the refusal; "" to listen
		skip      bool
	}{
		{name: "another user's directory", dir: map[bool]string{true: mk("theirs", 0o755, 4242)}[asRoot], want: "uid 4242", skip: !asRoot},
		{name: "a directory every user may write", dir: mk("open", 0o777, -1), want: "writable by other users"},
		{name: "below a directory every user may write", dir: filepath.Join(mk("openparent", 0o777, -1), "csi"), want: filepath.Join(base, "openparent")},
		{name: "a sticky directory every user may write", dir: mk("sticky", os.ModeSticky|0o777, -1)},
		{name: "a private directory", dir: mk("private", 0o700, -1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip {
				t.Skip("needs root to give a directory to another user")
			}
			socket := filepath.Join(tt.dir, "p.sock")
			l, err := hostpath.Listen(socket)
			if err == nil {
				l.Close()
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Listen(%s): %v", socket, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Listen(%s), in %s: listened, want a refusal naming the directory", socket, tt.name)
			}
			for _, w := range []string{socket, tt.want, "/run/csi"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Listen(%s): %v, want it to say %q", socket, err, w)
				}
			}
			if _, serr := os.Lstat(socket); serr == nil {
				t.Errorf("Listen(%s) refused (%v) but left a socket there", socket, err)
			}
		})
	}
}

// A symlink planted in a directory every user may write leads elsewhere: Listen refuses it,
// and makes nothing through it first (its MkdirAll would follow the link and make the missing
// directories at the planted target, as root, before the check said no).
func TestListenMakesNothingThroughAPlantedSymlink(t *testing.T) {
	t.Parallel()
	base := shortDir(t)
	open, elsewhere := filepath.Join(base, "open"), filepath.Join(base, "elsewhere")
	mustOK(t, os.Mkdir(open, 0o700))
	mustOK(t, os.Chmod(open, 0o777))
	mustOK(t, os.Mkdir(elsewhere, 0o700))
	mustOK(t, os.Symlink(elsewhere, filepath.Join(open, "csi")))
	socket := filepath.Join(open, "csi", "sub", "p.sock")
	l, err := hostpath.Listen(socket)
	if err == nil {
		l.Close()
		t.Fatalf("Listen(%s) through a symlink in a directory every user may write: listened, want a refusal", socket)
	}
	if !strings.Contains(err.Error(), open) {
		t.Errorf("Listen(%s): %v, want it to name %s", socket, err, open)
	}
	if _, serr := os.Lstat(filepath.Join(elsewhere, "sub")); serr == nil {
		t.Errorf("Listen(%s) refused (%v) but first made %s through the planted symlink", socket, err, filepath.Join(elsewhere, "sub"))
	}
}
