package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// The test binary as a plugin process that exec()s another program keeping its listening
// socket (a wrapper that execs the driver, a plugin that re-execs itself with other flags):
// the socket file stays the same file, and the process that listens keeps its pid.
const (
	execPluginEnv     = "VOLCTL_TEST_EXEC_PLUGIN"      // the socket to listen on (first image)
	execPluginFDEnv   = "VOLCTL_TEST_EXEC_PLUGIN_FD"   // the listening descriptor inherited (after exec)
	execPluginNameEnv = "VOLCTL_TEST_EXEC_PLUGIN_NAME" // the driver's name
	execPluginVolsEnv = "VOLCTL_TEST_EXEC_PLUGIN_VOLS" // volume IDs the driver holds when it starts, comma-separated
	execPluginLogEnv  = "VOLCTL_TEST_EXEC_PLUGIN_LOG"  // each RPC received is appended there: "<driver> <rpc>"
	// its flags, comma-separated: "max-volumes=N" (NodeGetInfo's max_volumes_per_node),
	// "version=V" (GetPluginInfo's vendor_version); "-" or "" for none
	execPluginFlagsEnv = "VOLCTL_TEST_EXEC_PLUGIN_FLAGS"
	// a launcher: listens, starts the plugin handing it the listening socket, and exits
	execPluginLaunchEnv = "VOLCTL_TEST_EXEC_PLUGIN_LAUNCH"
)

// execPluginChild serves, when the test binary was started as an exec plugin, an in-memory
// plugin as the environment says, until its stdin ends. Lines on stdin:
//   - "exec <program> <driver> <volumes> [flags]" has it exec() program as that driver holding
//     those volumes, with those flags (execPluginFlagsEnv), keeping the listening socket;
//   - "race <program> <driver> <volumes>" does the same once a connection made meanwhile has
//     had the client's first bytes, and nobody's answer ("paused" once it stopped accepting
//     and its racer waits for that connection: startRacer);
//   - "title" sets a process title longer than its arguments, as any process may
//     (setLongProcessTitle; "titled");
//   - "drop" closes the connections it accepted, as a plugin closing idle ones does ("dropped");
//   - "handoff <volumes>" starts a worker (startWorker) holding those volumes that accepts on
//     the listening socket, and stops accepting and closes its connections, as a graceful
//     in-place upgrade does; "share <volumes>" starts one and goes on accepting too (pre-forked
//     workers): the worker says "ready";
//   - "pause" stops it accepting ("paused"), "resume" starts it again ("resumed").
//
// It says "ready" on stdout once it listens, in each image. Otherwise it returns at once.
func execPluginChild() {
	socket, fd := os.Getenv(execPluginEnv), os.Getenv(execPluginFDEnv)
	if socket == "" && fd == "" {
		return
	}
	var l net.Listener
	var err error
	if fd != "" {
		n, _ := strconv.Atoi(fd)
		l, err = net.FileListener(os.NewFile(uintptr(n), "listener"))
	} else {
		l, err = net.Listen("unix", socket)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "exec plugin:", err)
		os.Exit(2)
	}
	if os.Getenv(execPluginLaunchEnv) != "" && fd == "" {
		lf, err := l.(*net.UnixListener).File()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.ExtraFiles = []*os.File{lf} // descriptor 3 in the plugin
		var env []string
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != execPluginEnv && k != execPluginLaunchEnv {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, execPluginFDEnv+"=3")
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "exec plugin launcher:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	gl := &gateListener{UnixListener: l.(*net.UnixListener)}
	l = gl
	if fds := os.Getenv(execPluginRaceEnv); fds != "" {
		l = racerListener(gl, fds)
	}
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID, cfg.Name = "node-1", os.Getenv(execPluginNameEnv)
	for _, flag := range strings.Split(os.Getenv(execPluginFlagsEnv), ",") {
		switch k, v, _ := strings.Cut(flag, "="); k {
		case "max-volumes":
			cfg.MaxVolumes, _ = strconv.ParseInt(v, 10, 64)
		case "version":
			cfg.Version = v
		}
	}
	mem := csitest.NewMemPlugin(cfg)
	for _, id := range strings.Split(os.Getenv(execPluginVolsEnv), ",") {
		if id != "" {
			mem.AddVolume(csi.Volume{ID: id, CapacityBytes: 1 << 20})
		}
	}
	logf := os.Getenv(execPluginLogEnv)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if f, err := os.OpenFile(logf, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(f, cfg.Name, filepath.Base(info.FullMethod))
			f.Close()
		}
		return h(ctx, req)
	}))
	mem.Register(srv)
	go func() { _ = srv.Serve(l) }()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 1 && f[0] == "title" {
			setLongProcessTitle()
			fmt.Println("titled")
			continue
		}
		if len(f) == 1 && f[0] == "drop" {
			gl.drop()
			fmt.Println("dropped")
			continue
		}
		if len(f) == 1 && (f[0] == "pause" || f[0] == "resume") {
			if f[0] == "pause" {
				gl.mu.Lock()
			} else {
				gl.mu.Unlock()
			}
			fmt.Println(f[0] + "d")
			continue
		}
		if len(f) == 2 && (f[0] == "handoff" || f[0] == "share") {
			if f[0] == "handoff" {
				// No more accepts here, before the worker starts and says it is ready: a
				// connection made once it is ready is the worker's, never this listener's.
				gl.mu.Lock()
				gl.drop()
			}
			worker := startWorker(gl.UnixListener, f[1])
			execWorkers = append(execWorkers, worker) // kept from the finalizer: the worker ends with this process
			continue
		}
		if len(f) < 3 || (f[0] != "exec" && f[0] != "race") {
			continue
		}
		lf, err := gl.UnixListener.File() // a duplicate, made to outlive the exec
		vols, flags := "", ""
		if len(f) > 3 {
			vols = f[3]
		}
		if f[0] == "race" {
			// Stop accepting, the racer ready to take the next connection; exec once that
			// connection has had the client's first bytes (its dial, and the check made there,
			// are done), before anything answers it.
			gl.mu.Lock()
			bytesIn := startRacer(gl.UnixListener, f[2], vols)
			fmt.Println("paused")
			if _, rerr := bytesIn.Read(make([]byte, 1)); rerr != nil {
				fmt.Fprintln(os.Stderr, "exec plugin: racer:", rerr)
				os.Exit(2)
			}
		}
		if err == nil {
			_, err = unix.FcntlInt(lf.Fd(), unix.F_SETFD, 0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "exec plugin:", err)
			os.Exit(2)
		}
		if len(f) > 4 {
			flags = f[4]
		}
		var env []string
		for _, kv := range os.Environ() { // Go takes a variable's first value: the new ones replace the old
			if k, _, _ := strings.Cut(kv, "="); k != execPluginEnv && k != execPluginNameEnv && k != execPluginVolsEnv && k != execPluginFlagsEnv {
				env = append(env, kv)
			}
		}
		env = append(env, execPluginFDEnv+"="+strconv.Itoa(int(lf.Fd())), execPluginNameEnv+"="+f[2], execPluginVolsEnv+"="+vols, execPluginFlagsEnv+"="+flags)
		err = syscall.Exec(f[1], []string{f[1], "-test.run=^$"}, env)
		// The program is a copy of the test binary the test has just written (copyOfTestBinary):
		// a process another parallel test forked while the copy's descriptor was open for
		// writing holds it until its own exec, and the kernel refuses to run a file open for
		// writing (ETXTBSY). That window closes at that exec: try again (a CI flake).
		for try := 0; errors.Is(err, syscall.ETXTBSY) && try < 200; try++ {
			time.Sleep(10 * time.Millisecond)
			err = syscall.Exec(f[1], []string{f[1], "-test.run=^$"}, env)
		}
		// lf unreachable once its number is in env, its finalizer closed the descriptor now and
		// then before the exec (a GC meanwhile): the new image read another file, or none, at
		// that number ("file+net listener: getsockopt: socket operation on non-socket").
		runtime.KeepAlive(lf)
		fmt.Fprintln(os.Stderr, "exec plugin: exec:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// execWorkers are the stdins of the workers an exec plugin started (startWorker).
var execWorkers []*os.File

// execPluginRaceEnv makes an exec plugin a racer (startRacer): "<bytes-in fd>,<exec'd fd>".
const execPluginRaceEnv = "VOLCTL_TEST_EXEC_PLUGIN_RACE"

// racerKeep holds an exec plugin's ends of its racer's pipes (startRacer): an *os.File
// dropped would be closed by its finalizer.
var racerKeep []*os.File

// startRacer starts the test binary as an exec plugin of driver holding volumes, accepting on
// l's descriptor, that answers for the image this process is about to exec: racerListener. The
// exec'd image cannot answer in time itself: a race-built test binary takes 1 to 2.5 s to
// accept at a load of 20 on two cores, past the 1 s gRPC then gave a connection to complete its
// handshake, so the client gave up on the connection before the new image answered, and the
// race was not run (the claim's Probe "did not complete the gRPC handshake", the claim refused
// by whichever check its next connection met). The racer runs already, and answers only once
// this process has exec()ed, which the pipe whose write end closes at the exec tells it. It
// returns the pipe on which the racer writes a byte once the connection it took has had the
// client's first bytes. The racer ends with the exec'd image (its stdin's write end).
func startRacer(l *net.UnixListener, driver, volumes string) *os.File {
	lf, err := l.File()
	var bytesInR, bytesInW, execR, execW, lifeR, lifeW, readyR, readyW *os.File
	for _, p := range []struct{ r, w **os.File }{{&bytesInR, &bytesInW}, {&execR, &execW}, {&lifeR, &lifeW}, {&readyR, &readyW}} {
		if err == nil {
			*p.r, *p.w, err = os.Pipe()
		}
	}
	if err == nil {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		var env []string
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != execPluginEnv && k != execPluginNameEnv && k != execPluginVolsEnv && k != execPluginFlagsEnv {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, execPluginFDEnv+"=3", execPluginRaceEnv+"=4,5", execPluginNameEnv+"="+driver, execPluginVolsEnv+"="+volumes)
		cmd.ExtraFiles = []*os.File{lf, bytesInW, execR}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = lifeR, readyW, os.Stderr
		err = cmd.Start()
		for _, f := range []*os.File{lf, bytesInW, execR, lifeR, readyW} {
			f.Close()
		}
	}
	if err == nil { // kept open across the exec (once the racer started: not in it), so the racer ends with the exec'd image
		_, err = unix.FcntlInt(lifeW.Fd(), unix.F_SETFD, 0)
	}
	if err == nil {
		var line string
		if line, err = bufio.NewReader(readyR).ReadString('\n'); err == nil && line != "ready\n" {
			err = fmt.Errorf("the racer said %q, want ready", line)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "exec plugin: racer:", err)
		os.Exit(2)
	}
	racerKeep = append(racerKeep, execW, lifeW, readyR)
	return bytesInR
}

// racerListener is a racer's listener (startRacer): its first Accept that takes a connection
// with bytes in it (the client's first: connections closed without a byte, volctl's reads of
// who listens (socketCred), are closed and passed over) says so on the bytes-in pipe, waits for
// the exec (EOF on the other pipe), and only then hands the connection to the server, whose
// answer is the first the client reads. The bytes are peeked, left for the server to read. fds
// is execPluginRaceEnv's value.
func racerListener(l net.Listener, fds string) net.Listener {
	in, ex, _ := strings.Cut(fds, ",")
	nIn, _ := strconv.Atoi(in)
	nEx, _ := strconv.Atoi(ex)
	return &racer{Listener: l, bytesIn: os.NewFile(uintptr(nIn), "bytes-in"), execd: os.NewFile(uintptr(nEx), "execd")}
}

type racer struct {
	net.Listener
	raced          bool // by Accept's goroutine alone: the server's
	bytesIn, execd *os.File
}

func (r *racer) Accept() (net.Conn, error) {
	for {
		c, err := r.Listener.Accept()
		if err != nil || r.raced {
			return c, err
		}
		n, err := peekOne(c)
		if err == nil && n == 0 {
			c.Close() // closed without a byte: not the client's connection
			continue
		}
		r.raced = true
		if err == nil {
			_, err = r.bytesIn.Write([]byte{1})
		}
		if err == nil {
			_, err = io.ReadAll(r.execd) // EOF: the listener exec()ed
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "exec plugin: racer:", err)
			os.Exit(2)
		}
		return c, nil
	}
}

// peekOne waits for a byte on c, or its end (n 0), and leaves it there to be read.
func peekOne(c net.Conn) (n int, err error) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, err
	}
	if cerr := rc.Read(func(fd uintptr) bool {
		n, _, err = unix.Recvfrom(int(fd), make([]byte, 1), unix.MSG_PEEK)
		return !errors.Is(err, unix.EAGAIN)
	}); cerr != nil {
		return 0, cerr
	}
	return n, err
}

// startWorker starts the test binary as an exec plugin of the same driver holding volumes
// (comma-separated) that accepts on l's descriptor, as a plugin's in-place upgrade or a
// pre-forked worker does: the process that listened stays the listener (SO_PEERCRED's). The
// worker says "ready" on this process's stdout, and ends when the returned writer, its stdin,
// is closed (this process exits).
func startWorker(l *net.UnixListener, volumes string) *os.File {
	// A dup of the descriptor, not l.File(), which leaves l's own in blocking mode: its Accept
	// would block in accept(2), its deadline (gateListener's) no longer heeded.
	var lf *os.File
	rc, err := l.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			nfd, derr := unix.Dup(int(fd))
			if derr != nil {
				err = derr
				return
			}
			lf = os.NewFile(uintptr(nfd), "listener")
		})
	}
	var r, w *os.File
	if err == nil {
		r, w, err = os.Pipe()
	}
	if err == nil {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		var env []string
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != execPluginEnv && k != execPluginVolsEnv {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, execPluginFDEnv+"=3", execPluginVolsEnv+"="+volumes)
		cmd.ExtraFiles = []*os.File{lf}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = r, os.Stdout, os.Stderr
		err = cmd.Start()
		r.Close()
		lf.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "exec plugin: worker:", err)
		os.Exit(2)
	}
	return w
}

// gateListener is an exec plugin's listener: holding mu stops it accepting, and drop closes
// the connections it accepted.
type gateListener struct {
	*net.UnixListener
	mu    sync.Mutex
	cmu   sync.Mutex
	conns []net.Conn
}

// Accept polls (a short deadline) so that a holder of mu stops it within 20 ms.
func (g *gateListener) Accept() (net.Conn, error) {
	for {
		g.mu.Lock()
		_ = g.UnixListener.SetDeadline(time.Now().Add(20 * time.Millisecond))
		c, err := g.UnixListener.Accept()
		g.mu.Unlock()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			time.Sleep(time.Millisecond)
			continue
		}
		if err == nil {
			g.cmu.Lock()
			g.conns = append(g.conns, c)
			g.cmu.Unlock()
		}
		return c, err
	}
}

func (g *gateListener) drop() {
	g.cmu.Lock()
	defer g.cmu.Unlock()
	for _, c := range g.conns {
		_ = c.Close()
	}
	g.conns = nil
}

// execPlugin is a plugin process started by a test (execPluginChild).
type execPlugin struct {
	t      *testing.T
	socket string
	log    string
	stdin  io.WriteCloser
	stdout *bufio.Reader
	pid    int
}

// startExecPlugin starts the test binary as plugin driver on a socket of its own.
func startExecPlugin(t *testing.T, driver string) *execPlugin {
	t.Helper()
	return startExecPluginWith(t, driver, execPluginOptions{})
}

// execPluginOptions are how startExecPluginWith starts an exec plugin.
type execPluginOptions struct {
	socket   string // where it listens; "" for a socket of its own
	volumes  string // volume IDs the driver holds when it starts, comma-separated
	launcher bool   // started by a launcher that hands it the socket and exits (reaped: pid is the launcher's)
	// started by a supervisor that listens and stays (supervisorChild, hostile29_test.go: pid is
	// the supervisor's, restart starts the plugin anew)
	supervised bool
}

// startExecPluginWith starts the test binary as plugin driver as o says.
func startExecPluginWith(t *testing.T, driver string, o execPluginOptions) *execPlugin {
	t.Helper()
	dir := t.TempDir()
	p := &execPlugin{t: t, socket: o.socket, log: filepath.Join(dir, "rpcs")}
	if p.socket == "" {
		p.socket = filepath.Join(dir, "csi.sock")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	listen := execPluginEnv
	if o.supervised {
		listen = supervisorEnv
	}
	cmd.Env = append(os.Environ(), listen+"="+p.socket, execPluginNameEnv+"="+driver, execPluginLogEnv+"="+p.log, execPluginVolsEnv+"="+o.volumes)
	if o.launcher {
		cmd.Env = append(cmd.Env, execPluginLaunchEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	// Pipes of its own, not cmd's: a launcher's plugin inherits them, and cmd.Wait is not
	// called on a launcher reaped here.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin, p.stdout, p.pid = inW, bufio.NewReader(outR), cmd.Process.Pid
	t.Cleanup(func() {
		_ = inW.Close() // the plugin (a launcher's too) ends with its stdin
		if !o.launcher {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = outR.Close()
	})
	if o.launcher {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(cmd.Process.Pid, &ws, 0, nil) // the launcher is gone, reaped as init would
	}
	p.ready()
	return p
}

func (p *execPlugin) ready() {
	p.t.Helper()
	if line, err := p.stdout.ReadString('\n'); err != nil || line != "ready\n" {
		p.t.Fatalf("the exec plugin said %q (%v), want ready", line, err)
	}
}

// exec has the plugin process exec() program as driver holding volumes, keeping its socket.
func (p *execPlugin) exec(program, driver string, volumes ...string) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.stdin, "exec %s %s %s\n", program, driver, strings.Join(volumes, ",")); err != nil {
		p.t.Fatal(err)
	}
	p.ready()
}

// rpcs are the RPCs driver received, in order.
func (p *execPlugin) rpcs(driver string) []string {
	b, _ := os.ReadFile(p.log)
	var out []string
	for l := range strings.Lines(string(b)) {
		if d, rpc, ok := strings.Cut(strings.TrimSpace(l), " "); ok && d == driver {
			out = append(out, rpc)
		}
	}
	return out
}

// copyOfTestBinary is another program file with the test binary's content. It is copied by
// the kernel (io.Copy between files is copy_file_range): read into this race-built process and
// written out again, the binary's 47 MB cost about half a second of CPU at each copy, every
// byte of the buffer checked by the race detector on its way in and out.
func copyOfTestBinary(t *testing.T) string {
	t.Helper()
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), "other-driver")
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A plugin process that exec()s another driver keeping its listening socket (a wrapper
// exec'ing the driver it is configured with, a plugin re-exec'ing itself): the socket file is
// the one the stored fingerprint was taken through, so the next process reused that
// fingerprint without an RPC, and a claim sent the other driver ControllerPublishVolume,
// NodeStageVolume and NodePublishVolume, the volume's secrets and context with them, for a
// volume of the same ID it holds (the sequential IDs many drivers give): its data handed to
// the alloc. The process that listens is asked what it runs (SO_PEERCRED's pid, its program
// and its image): another program, or the same one exec'd again, is fingerprinted afresh,
// and another driver refused before any volume RPC.
func TestClaimThroughAPluginThatExecdAnotherDriverBehindItsSocket(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, program string
		held          bool // the engine that registered the plugin claims: its connection was made before the exec (the agent's)
	}{
		{"another program", "", false},
		{"the same program exec'd again", os.Args[0], false},
		{"another program, a connection made before", "", true},
		{"the same program exec'd again, a connection made before", os.Args[0], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.program != "" && aslrOff() {
				t.Skip("address space randomisation is off (/proc/sys/kernel/randomize_va_space 0): an exec of the same program with arguments of the same length leaves nothing /proc shows changed, which is what this case tests")
			}
			program := tc.program
			if program == "" {
				program = copyOfTestBinary(t)
			}
			plugin := startExecPlugin(t, "mem.csi.volctl.test")
			h := &harness{t: t, ctx: t.Context(), mem: csitest.NewMemPlugin(csitest.DefaultMemConfig()), faults: csitest.NewFaults(), dir: t.TempDir()}
			storetest.Seed(t, h.dir)
			h.socket, h.mounts = plugin.socket, newFakeMounts(h.mem)
			h.open(Config{})
			h.registerPlugin("mem", h.socket)
			ext := h.create(volume("db")).ExternalID

			plugin.exec(program, "other.csi.example", ext)
			if !tc.held {
				h.open(Config{}) // the next process
			}
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
			if tc.held {
				// Its connection's first RPC found the listener exec'd, and sent nothing; the
				// next operation fingerprints the plugin again.
				want := fmt.Sprintf("is served by pid %d, which runs another program image than when the plugin was fingerprinted", plugin.pid)
				if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `plugin "mem"`) {
					t.Errorf("claim over a connection made before the exec: %v; want a conflict naming the plugin and saying %q", err, want)
				}
				_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
			}
			for _, rpc := range volumeRPCsOf(plugin.rpcs("other.csi.example")) {
				t.Errorf("%s sent to driver other.csi.example, which pid %d exec'd behind the socket (RPCs it got: %v)", rpc, plugin.pid, plugin.rpcs("other.csi.example"))
			}
			if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `"other.csi.example"`) || !strings.Contains(err.Error(), `"mem.csi.volctl.test"`) {
				t.Errorf("claim through the other driver: %v; want a conflict naming both drivers", err)
			}
			for _, cl := range h.liveClaims("db") {
				if cl.State != store.ClaimTaken {
					t.Errorf("claim on db moved to %s through the other driver", cl.State)
				}
			}
		})
	}
}

// aslrOff says whether the kernel places a program's stack and heap at the same addresses in
// every exec.
func aslrOff() bool {
	b, err := os.ReadFile("/proc/sys/kernel/randomize_va_space")
	return err == nil && strings.TrimSpace(string(b)) == "0"
}

// BenchmarkSameListeners measures what reusing a stored fingerprint now costs a process beyond
// the stat of the socket file: one connection to the socket, SO_PEERCRED and two /proc reads
// and a stat of the listener (sameListeners), for a monolith's one socket. BENCHMARKS.md
// quotes it beside the claim it is part of:
//
//	go test ./internal/engine -run '^$' -bench SameListeners -count 3
func BenchmarkSameListeners(b *testing.B) {
	socket, _ := csitest.Serve(b, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	ids := identify(socket)
	stored := []store.SocketIdentity{{Path: socket, Listener: socketListener(socket)}}
	if stored[0].Listener == "" {
		b.Fatalf("nothing answers on %s", socket)
	}
	for b.Loop() {
		if !sameListeners(stored, ids) {
			b.Fatal("the listener changed")
		}
	}
}
