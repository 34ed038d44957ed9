package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/procfs/procfstest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store/storetest"
	"github.com/volctl/volctl/internal/testproc"
)

// The test binary doubles as the plugins the agent supervises: with pluginModeEnv set, TestMain
// serves a plugin on $CSI_ENDPOINT instead of running the tests. Re-executing the test binary is
// cheaper than building volctl, and it is a real process the agent starts, kills and adopts.
const (
	pluginModeEnv = "VOLCTL_AGENT_TEST_PLUGIN"
	pluginRootEnv = "VOLCTL_AGENT_TEST_ROOT"
	startedPidEnv = "VOLCTL_AGENT_TEST_STARTED_PID" // the pid of the process the agent started
)

// init keeps the test binary's first thread for its main goroutine when it runs as
// "first-thread-exits", which ends that thread alone.
func init() {
	if os.Getenv(pluginModeEnv) == "first-thread-exits" {
		runtime.LockOSThread()
	}
}

// startHelperTestEnv names the start helper built without -race (buildStartHelper) to the
// processes this test binary starts as agents (agent-killed-after-start, say), which use it too.
const startHelperTestEnv = "VOLCTL_AGENT_TEST_START_HELPER"

func TestMain(m *testing.M) {
	// A plugin's log is kept under 1 MiB here, checked every 100 ms, where volctl keeps it under
	// 10 MiB, checked every second: the same code, with a tenth of the bytes to write, copy and
	// compare (the chatty plugin, run as this binary, too), and a tenth of the wait.
	maxLogSize, logCheckInterval = 1<<20, 100*time.Millisecond
	if bin := os.Getenv(startHelperTestEnv); bin != "" {
		startHelperBin = bin
	}
	switch os.Getenv(pluginModeEnv) {
	case "":
		testproc.Start() // the plugins of a test binary that dies go with it (internal/testproc)
		dir, err := os.MkdirTemp("", "starthelper-")
		if err == nil {
			err = buildStartHelper(filepath.Join(dir, "starthelper"))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "the start helper without -race: %v; plugins start through this race-built test binary\n", err)
		} else {
			startHelperBin = filepath.Join(dir, "starthelper")
			os.Setenv(startHelperTestEnv, startHelperBin)
		}
		// Under -race every process sleeps 1 s before it exits (the race runtime's default
		// atexit_sleep_ms), and each test here starts plugins (this binary) that exit, or are
		// stopped and waited for: the processes this one starts inherit this, the plugins get
		// it in their exec block's env (execPlugin), and exit at once, as cmd/volctl's tests'.
		// (It does not change this process: GORACE is read at start.)
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
		rc := m.Run()
		if dir != "" {
			os.RemoveAll(dir)
		}
		os.Exit(rc)
	case "hostpath":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		os.Exit(serveHostpath(ctx))
	case "notready":
		// An in-memory plugin whose Probe answers ready=false, for ever.
		cfg := csitest.DefaultMemConfig()
		cfg.Ready = new(bool)
		os.Exit(serveMem(cfg, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(ctx, req)
		}))
	case "unhealthy":
		// Answers everything but Probe, which fails: alive, never healthy.
		faults := csitest.NewFaults()
		faults.FailAlways(csi.RPCProbe, codes.Internal)
		os.Exit(serveMem(csitest.DefaultMemConfig(), faults.Interceptor()))
	case "sickens":
		// An in-memory plugin whose Probe fails from the moment a file named sick exists under
		// its root: healthy, then unhealthy, when the test says. It mounts for real (the
		// engine insists that a published target is a mount point), its volumes' backing
		// directories under its root. Its probe's error echoes the TOKEN of its environment,
		// when it has one, as a plugin echoing a credential it was started with; and it floods
		// its output at an RPC once a file named flood appears there, and removes it.
		sick, flood := filepath.Join(os.Getenv(pluginRootEnv), "sick"), filepath.Join(os.Getenv(pluginRootEnv), "flood")
		why := "sick"
		if token := os.Getenv("TOKEN"); token != "" {
			why += ": token " + token + " refused"
		}
		cfg := csitest.DefaultMemConfig()
		cfg.MountRoot = filepath.Join(os.Getenv(pluginRootEnv), "backing")
		os.Exit(serveMem(cfg, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if _, err := os.Stat(flood); err == nil {
				// Asked to flood its output (a plugin logging a storm): 2.5 times maxLogSize,
				// then the file removed, saying it is written.
				line := strings.Repeat("x", 1023) + "\n"
				for range 5 * int(maxLogSize) / 2 / len(line) {
					os.Stdout.WriteString(line)
				}
				os.Remove(flood)
			}
			if _, err := os.Stat(sick); err == nil && strings.HasSuffix(info.FullMethod, "/"+csi.RPCProbe) {
				return nil, status.Error(codes.Internal, why)
			}
			return h(ctx, req)
		}))
	case "mounts-with-helper", "mounts-with-group-helper":
		// An in-memory plugin that mounts for real (as sickens) and first starts a helper in a
		// session of its own (in its own process group, forked without setsid as most programs
		// fork theirs, for mounts-with-group-helper), which inherits its environment (the
		// instance) and serves no socket: a FUSE daemon serving the plugin's mounts, say. The
		// helper's pid goes to child.pid under the root. The plugin crashes (exit 1) once a file
		// named crash exists under its root; its helper stays.
		root := os.Getenv(pluginRootEnv)
		if _, err := os.Stat(filepath.Join(root, "child.pid")); err != nil {
			helper := exec.Command(os.Args[0], os.Args[1:]...)
			helper.Env = append(os.Environ(), pluginModeEnv+"=nosocket")
			if os.Getenv(pluginModeEnv) == "mounts-with-helper" {
				helper.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			}
			if err := helper.Start(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			if err := os.MkdirAll(root, 0o700); err != nil {
				os.Exit(1)
			}
			if err := os.WriteFile(filepath.Join(root, "child.pid"), []byte(strconv.Itoa(helper.Process.Pid)), 0o600); err != nil {
				os.Exit(1)
			}
		}
		go func() {
			for {
				if _, err := os.Stat(filepath.Join(root, "crash")); err == nil {
					_ = os.Remove(filepath.Join(root, "crash"))
					os.Exit(1)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		cfg := csitest.DefaultMemConfig()
		cfg.MountRoot = filepath.Join(root, "backing")
		os.Exit(serveMem(cfg, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(ctx, req)
		}))
	case "renamed":
		// An in-memory plugin that answers as another driver (GetPluginInfo's name) when a file
		// named renamed exists under its root at its start: its binary replaced by another
		// driver's, found at a restart.
		cfg := csitest.DefaultMemConfig()
		if _, err := os.Stat(filepath.Join(os.Getenv(pluginRootEnv), "renamed")); err == nil {
			cfg.Name = "other.driver.test"
		}
		os.Exit(serveMem(cfg, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(ctx, req)
		}))
	case "stubborn":
		// hostpath that ignores SIGTERM: only SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM, os.Interrupt)
		os.Exit(serveHostpath(context.Background()))
	case "nostage-publish-times-out":
		// An in-memory plugin without STAGE_UNSTAGE_VOLUME whose NodePublishVolume times out:
		// the mount may be made, or be in the making, when the claim is left for reconcile.
		faults := csitest.NewFaults()
		faults.FailAlways(csi.RPCNodePublishVolume, codes.DeadlineExceeded)
		cfg := csitest.DefaultMemConfig()
		cfg.Node.StageUnstageVolume = false
		os.Exit(serveMem(cfg, faults.Interceptor()))
	case "stage-hangs":
		// An in-memory plugin whose NodeStageVolume, once called, writes stage-called under its
		// root and blocks until the call's context ends: a NodeStageVolume in flight.
		marker := filepath.Join(os.Getenv(pluginRootEnv), "stage-called")
		os.Exit(serveMem(csitest.DefaultMemConfig(), func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if strings.HasSuffix(info.FullMethod, "/"+csi.RPCNodeStageVolume) {
				if err := os.MkdirAll(filepath.Dir(marker), 0o700); err == nil {
					_ = os.WriteFile(marker, nil, 0o600)
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return h(ctx, req)
		}))
	case "agent-killed-after-start":
		// An agent on the state dir in $VOLCTL_AGENT_TEST_ROOT that kills itself with SIGKILL
		// right after it starts a plugin's process, before anything records it.
		afterStart = func() {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		os.Exit(runAgent(os.Getenv(pluginRootEnv)))
	case "agent-killed-while-daemonising":
		// An agent on the state dir in $VOLCTL_AGENT_TEST_ROOT that kills itself with SIGKILL
		// once a plugin's process has exited leaving its daemon serving the socket, before it
		// records the daemon.
		beforeFollowDaemon = func(socket string) {
			for !socketsLive([]string{socket}) {
				time.Sleep(10 * time.Millisecond)
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		os.Exit(runAgent(os.Getenv(pluginRootEnv)))
	case "plainlisten":
		// An in-memory plugin on a plain net.Listen, as many plugins listen: bind fails while
		// a socket file is in the way, even a stale one.
		os.Exit(serveTestPlugin(func(ctx context.Context, socket string) error {
			lis, err := net.Listen("unix", socket)
			if err != nil {
				return err
			}
			srv := grpc.NewServer()
			csitest.NewMemPlugin(csitest.DefaultMemConfig()).Register(srv)
			go func() { <-ctx.Done(); srv.Stop() }()
			return srv.Serve(lis)
		}))
	case "chatty":
		// hostpath that first writes 2.5 times maxLogSize to stdout: a plugin logging a flood.
		line := strings.Repeat("x", 1023) + "\n"
		for range 5 * int(maxLogSize) / 2 / len(line) {
			os.Stdout.WriteString(line)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		os.Exit(serveHostpath(ctx))
	case "forker", "forker-exits":
		// A plugin whose process forks the server (a stubborn one, in its process group) and
		// records its pid in child.pid under the root; "forker" then waits for SIGTERM and
		// exits, "forker-exits" exits once the child serves (a plugin that daemonizes).
		os.Exit(forkServer(os.Getenv(pluginModeEnv) == "forker-exits"))
	case "exits-at-once":
		// A plugin refusing its flags: it says so and exits 3 before it serves.
		fmt.Fprintln(os.Stderr, "test plugin: --root is required")
		os.Exit(3)
	case "nosocket":
		// A plugin that runs but never makes its socket.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		<-ctx.Done()
		os.Exit(0)
	case "mute":
		// A plugin that listens on its socket and accepts connections but never answers.
		os.Exit(serveTestPlugin(func(ctx context.Context, socket string) error {
			lis, err := net.Listen("unix", socket)
			if err != nil {
				return err
			}
			go func() {
				var held []net.Conn
				for {
					c, err := lis.Accept()
					if err != nil {
						return
					}
					held = append(held, c)
				}
			}()
			<-ctx.Done()
			return lis.Close()
		}))
	case "daemonizes":
		// A plugin that daemonises as a C daemon does: it forks a child that calls setsid,
		// which forks the server (hostpath) and exits; this process exits 0 once the first
		// child has exited, before the server has made its socket. The server's pid goes to
		// child.pid under the root.
		os.Exit(daemonize("daemonizes-mid", true))
	case "daemonizes-stays":
		// As daemonizes, but this process stays, until SIGTERM, once the first child has
		// exited: a launcher that lingers beside the daemon it started in a session of its own.
		if rc := daemonize("daemonizes-mid", true); rc != 0 {
			os.Exit(rc)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		<-ctx.Done()
		os.Exit(0)
	case "daemonizes-mid":
		os.Exit(daemonize("hostpath", false))
	case "daemonizes-unbound":
		// As daemonizes, but the daemon (nosocket) never makes its socket: a daemon still
		// starting when the agent looks for it.
		os.Exit(daemonize("daemonizes-unbound-mid", true))
	case "daemonizes-unbound-mid":
		os.Exit(daemonize("nosocket", false))
	case "daemonizes-helper":
		// As daemonizes, but the server the first child leaves, which does not lead its group
		// (the first child, which made the session, has exited), starts a helper in that group
		// with an environment of its own, without the plugin's instance.
		os.Exit(daemonize("daemonizes-helper-mid", true))
	case "daemonizes-helper-mid":
		os.Exit(daemonize("serves-with-helper", false))
	case "serves-with-helper":
		helper := exec.Command(os.Args[0], os.Args[1:]...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, instanceEnv+"=") && !strings.HasPrefix(kv, pluginModeEnv+"=") {
				helper.Env = append(helper.Env, kv)
			}
		}
		helper.Env = append(helper.Env, pluginModeEnv+"=nosocket")
		helper.Stdout, helper.Stderr = os.Stdout, os.Stderr
		if err := helper.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		os.Exit(serveHostpath(ctx))
	case "listens-then-daemonises":
		// A plugin that binds its socket, then daemonises: it hands the listening socket to a
		// child in a session of its own and exits 0. SO_PEERCRED on the socket names this
		// process, which called listen(), long after it exited.
		os.Exit(listenThenDaemonise("serves-inherited"))
	case "serves-then-daemonises":
		// A plugin that listens and serves hostpath itself, then daemonises when the test
		// sends it SIGUSR1 (not after a sleep): it hands the listening socket to a child in a
		// session of its own (serves-inherited), records the child's pid in child.pid under its
		// root, and exits 0, its connections closing with it. SO_PEERCRED on the socket names
		// this process, which the plugin was fingerprinted as, long after it exited.
		os.Exit(serveThenDaemonise("serves-inherited"))
	case "stubborn-hands-socket":
		// A plugin that ignores SIGTERM, binds its socket and hands it to a child in a session
		// of its own, which serves it never healthy, and stays: only SIGKILL ends it, and its
		// child, outside its process group, keeps the socket.
		signal.Ignore(syscall.SIGTERM, os.Interrupt)
		if rc := listenThenDaemonise("serves-inherited-unhealthy"); rc != 0 {
			os.Exit(rc)
		}
		select {}
	case "heavy-ignores-term":
		// A process that ignores SIGTERM, listens on $CSI_ENDPOINT and holds 256 MiB it has
		// written: SIGKILL ends it, and the kernel takes a while to tear down its memory
		// before it closes its files, the socket among them. It prints "ready" once set.
		signal.Ignore(syscall.SIGTERM, os.Interrupt)
		lis, err := net.Listen("unix", os.Getenv("CSI_ENDPOINT"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer lis.Close()
		// Mapped and populated by the kernel, outside Go's heap: 256 MiB resident all the same,
		// torn down at SIGKILL before the files close, without this race-built process
		// writing each page (and the race detector's shadow of each) first.
		ballast, err := unix.Mmap(-1, 0, 256<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer unix.Munmap(ballast)
		fmt.Println("ready")
		select {}
	case "first-thread-exits":
		// A process that listens on $CSI_ENDPOINT, prints "ready", and ends its first thread
		// alone (a C plugin whose main calls pthread_exit): /proc shows it a zombie while its
		// other threads hold the socket, and answer on it. init locked the main goroutine to
		// the first thread.
		procfstest.ServeThenEndFirstThread(os.Getenv("CSI_ENDPOINT"))
	case "serves-inherited":
		// The daemon of listens-then-daemonises: hostpath on the listening socket it inherited
		// as fd 3.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		os.Exit(serveHostpathOn(ctx, inheritedListener))
	case "serves-inherited-unhealthy":
		// As unhealthy, on the listening socket it inherited as fd 3.
		faults := csitest.NewFaults()
		faults.FailAlways(csi.RPCProbe, codes.Internal)
		os.Exit(serveMemOn(inheritedListener, csitest.DefaultMemConfig(), faults.Interceptor()))
	case "daemonizes-late":
		// As daemonizes, but the server binds its socket a second after the process the agent
		// started has exited and been reaped: well past the probe interval the agent first
		// waits for a daemon.
		if err := os.Setenv(startedPidEnv, strconv.Itoa(os.Getpid())); err != nil {
			os.Exit(1)
		}
		os.Exit(daemonize("daemonizes-late-mid", true))
	case "daemonizes-late-mid":
		os.Exit(daemonize("hostpath-late", false))
	case "hostpath-late":
		started, _ := strconv.Atoi(os.Getenv(startedPidEnv))
		for started > 0 && syscall.Kill(started, 0) == nil {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Second)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		os.Exit(serveHostpath(ctx))
	default:
		fmt.Fprintf(os.Stderr, "unknown %s\n", pluginModeEnv)
		os.Exit(2)
	}
}

// buildStartHelper builds package starthelper alone (testdata/starthelper) without -race, to
// bin: the agent starts a plugin through it (startHelperBin) in a few milliseconds of CPU where
// this race-built binary, the start helper volctl's agent is (/proc/self/exe), took about 0.18 s
// (the race runtime and every package's init), at each of the hundreds of starts here. The
// helper's code is the same package either way; volctl's own tests (cmd/volctl) start plugins
// through /proc/self/exe. After go vet, as in CI, the standard library is compiled without
// -race already: this is a link, about a second of CPU.
func buildStartHelper(bin string) error {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if out, err := exec.Command(gocmd, "build", "-o", bin, "./testdata/starthelper").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./testdata/starthelper: %v\n%s", err, out)
	}
	return nil
}

// runAgent runs an agent with testSettings on the state dir until SIGTERM.
func runAgent(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	e, err := engine.Open(ctx, engine.Config{StateDir: dir})
	if err == nil {
		var a *Agent
		if a, err = New(Config{Engine: e, Settings: testSettings}); err == nil {
			err = a.Run(ctx)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveHostpath serves the hostpath plugin on $CSI_ENDPOINT until ctx ends.
func serveHostpath(ctx context.Context) int { return serveHostpathOn(ctx, hostpath.Listen) }

// inheritedListener is the listening socket a test plugin inherited as fd 3
// (listenThenDaemonise), whatever its path.
func inheritedListener(string) (net.Listener, error) {
	return net.FileListener(os.NewFile(3, "listener"))
}

// serveHostpathOn serves the hostpath plugin on what listen makes of $CSI_ENDPOINT until ctx
// ends.
func serveHostpathOn(ctx context.Context, listen func(socket string) (net.Listener, error)) int {
	return serveTestPluginCtx(ctx, func(ctx context.Context, socket string) error {
		lis, err := listen(socket)
		if err != nil {
			return err
		}
		p, err := hostpath.New(hostpath.Config{Root: os.Getenv(pluginRootEnv), NodeID: "n1"})
		if err != nil {
			return err
		}
		return p.Serve(ctx, lis)
	})
}

// forkServer runs the test binary again as a stubborn hostpath plugin, in this process's group,
// records its pid, and waits for its socket; then it exits at once (exits) or on SIGTERM,
// leaving the child running either way.
func forkServer(exits bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	socket, err := hostpath.ParseEndpoint(os.Getenv(spec.EndpointEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), pluginModeEnv+"=stubborn")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root := os.Getenv(pluginRootEnv)
	if err := os.MkdirAll(root, 0o700); err == nil {
		err = os.WriteFile(filepath.Join(root, "child.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for !socketsLive([]string{socket}) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if !exits {
		<-ctx.Done()
	}
	return 0
}

// daemonize runs the test binary again in mode, in a session of its own when setsid, and
// waits for it to exit (the first fork of a double fork), or, as that first child, records the
// pid of the server it starts and exits at once.
func daemonize(mode string, setsid bool) int {
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), pluginModeEnv+"="+mode)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if setsid {
		if err := cmd.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	root := os.Getenv(pluginRootEnv)
	err := os.MkdirAll(root, 0o700)
	if err == nil {
		err = os.WriteFile(filepath.Join(root, "child.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// listenThenDaemonise binds the socket in $CSI_ENDPOINT, starts the test binary again in mode
// in a session of its own with the listening socket as its fd 3, records its pid in child.pid
// under the root, and returns, leaving the socket file in place.
func listenThenDaemonise(mode string) int {
	_, lf, err := listenOnEndpoint()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return startInheritor(mode, lf)
}

// listenOnEndpoint listens on $CSI_ENDPOINT's socket, left in place when the listener closes,
// and returns the listener with a descriptor of it to hand to a daemon.
func listenOnEndpoint() (*net.UnixListener, *os.File, error) {
	socket, err := hostpath.ParseEndpoint(os.Getenv(spec.EndpointEnv))
	if err != nil {
		return nil, nil, err
	}
	lis, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	lis.SetUnlinkOnClose(false)
	lf, err := lis.File()
	if err != nil {
		lis.Close()
		return nil, nil, err
	}
	return lis, lf, nil
}

// startInheritor starts the test binary again in mode, in a session of its own with lf, a
// listening socket, as its fd 3, and records its pid in child.pid under the root.
func startInheritor(mode string, lf *os.File) int {
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), pluginModeEnv+"="+mode)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{lf}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root := os.Getenv(pluginRootEnv)
	err := os.MkdirAll(root, 0o700)
	if err == nil {
		err = os.WriteFile(filepath.Join(root, "child.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveThenDaemonise listens on $CSI_ENDPOINT and serves hostpath on it until SIGUSR1, then
// hands the listening socket to the test binary started again in mode (listenThenDaemonise's
// way) and returns, leaving the socket file in place and the daemon serving it.
func serveThenDaemonise(mode string) int {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	lis, lf, err := listenOnEndpoint() // lf taken before serving: the daemon's descriptor
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_ = serveHostpathOn(ctx, func(string) (net.Listener, error) { return lis, nil })
	}()
	select {
	case <-ctx.Done():
		return 0
	case <-usr1:
	}
	return startInheritor(mode, lf)
}

// serveMem serves an in-memory plugin with cfg, behind intercept, on $CSI_ENDPOINT until
// SIGTERM.
func serveMem(cfg csitest.MemConfig, intercept grpc.UnaryServerInterceptor) int {
	return serveMemOn(hostpath.Listen, cfg, intercept)
}

// serveMemOn is serveMem on what listen makes of $CSI_ENDPOINT.
func serveMemOn(listen func(socket string) (net.Listener, error), cfg csitest.MemConfig, intercept grpc.UnaryServerInterceptor) int {
	return serveTestPlugin(func(ctx context.Context, socket string) error {
		srv := grpc.NewServer(grpc.ChainUnaryInterceptor(intercept))
		csitest.NewMemPlugin(cfg).Register(srv)
		lis, err := listen(socket)
		if err != nil {
			return err
		}
		go func() { <-ctx.Done(); srv.Stop() }()
		return srv.Serve(lis)
	})
}

func serveTestPlugin(serve func(ctx context.Context, socket string) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return serveTestPluginCtx(ctx, serve)
}

func serveTestPluginCtx(ctx context.Context, serve func(ctx context.Context, socket string) error) int {
	socket, err := hostpath.ParseEndpoint(os.Getenv(spec.EndpointEnv))
	if err == nil {
		fmt.Println("test plugin serving on", socket) // lands in the agent's plugin log
		err = serve(ctx, socket)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fixture is a state dir with an engine on it, as a volctl process would have.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	e    *engine.Engine
	logs *iostreams.SyncBuffer
	now  func() time.Time   // the agent's clock; nil is time.Now
	mem  *csitest.MemPlugin // the plugin claimOnMem serves, once it has
	obs  Observer           // what startAgent's agent reports to; nil for none
}

// fakeClock is a clock that moves only when a test advances it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), dir: hostpathtest.ShortDir(t), logs: &iostreams.SyncBuffer{}}
	storetest.Seed(t, f.dir) // the schema database, copied
	f.e = f.openEngine()
	t.Cleanup(f.killPlugins)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the agent's log:\n%s", f.logs.String())
			if evs, err := f.e.Events(f.ctx, 0, engine.EventFilter{}); err == nil {
				for i := len(evs) - 1; i >= 0; i-- {
					t.Logf("event %s %s %s: %s", evs[i].At.Format("15:04:05.000"), evs[i].Kind, evs[i].PluginID, evs[i].Message)
				}
			}
		}
	})
	return f
}

func (f *fixture) openEngine() *engine.Engine {
	f.t.Helper()
	e, err := engine.Open(f.ctx, engine.Config{StateDir: f.dir,
		Retry: engine.RetryPolicy{Attempts: 3, Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { e.Close() })
	return e
}

// testSettings keep the loops fast; nothing asserts on them as deadlines.
var testSettings = Settings{
	ProbeInterval: 50 * time.Millisecond, ProbeIntervalReady: 200 * time.Millisecond,
	HealthTimeout: 5 * time.Second, GCInterval: 100 * time.Millisecond, ReconcileInterval: 500 * time.Millisecond,
	StopTimeout: 5 * time.Second, BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
}

// execPlugin declares the test binary as a supervised plugin serving in the given mode.
func (f *fixture) execPlugin(id, mode string) spec.Plugin {
	f.t.Helper()
	self, err := os.Executable()
	if err != nil {
		f.t.Fatal(err)
	}
	return spec.Plugin{ID: id, Type: spec.PluginMonolith, Socket: filepath.Join(f.dir, "sockets", id+".sock"),
		Exec: &spec.Exec{Command: self, Args: []string{"-test.run=^$"},
			Env: spec.Secrets{pluginModeEnv: mode, pluginRootEnv: filepath.Join(f.dir, "hostpath-"+id),
				"GORACE": os.Getenv("GORACE")}}} // the agent passes none of its own (TestMain)
}

func (f *fixture) register(sp spec.Plugin) {
	f.t.Helper()
	if _, err := f.e.RegisterPlugin(f.ctx, sp); err != nil {
		f.t.Fatal(err)
	}
}

// startAgent runs an agent in the background; stop ends it like SIGTERM and returns Run's error.
func (f *fixture) startAgent(s Settings, declared ...spec.Plugin) (stop func() error) {
	f.t.Helper()
	_, stop = f.startAgentWith(func(c *Config) { c.Settings, c.Plugins, c.Observer = s, declared, f.obs })
	return stop
}

// agentClock is the clock the fixture's agents run on: f.now, a clock the test moves, or else
// one that stays where it was when the agent started. The agent measures the health timeout
// alone on it (a plugin is restarted once it has been unhealthy that long), so no plugin is
// restarted past its health timeout unless the test moves a clock there: on a loaded machine a
// test binary run as a plugin took more than testSettings' 5s to make its socket, and was
// restarted (and a daemon it had left killed with it) in tests about something else.
func (f *fixture) agentClock() func() time.Time {
	if f.now != nil {
		return f.now
	}
	return (&fakeClock{t: time.Now()}).Now
}

// plugin returns a plugin's stored state (no probe).
func (f *fixture) plugin(id string) engine.PluginInfo {
	f.t.Helper()
	ps, err := f.e.Plugins(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, p := range ps {
		if p.ID == id {
			return p
		}
	}
	f.t.Fatalf("plugin %q not registered", id)
	return engine.PluginInfo{}
}

// pid returns the pid in a plugin's pid file, 0 if there is none.
func (f *fixture) pid(id string) int {
	b, err := os.ReadFile(filepath.Join(f.dir, "run", id+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.Fields(string(b))[0])
	return pid
}

func (f *fixture) events(kind string) []string {
	f.t.Helper()
	evs, err := f.e.Events(f.ctx, 0, engine.EventFilter{Kind: kind})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Message)
	}
	slices.Reverse(out) // oldest first
	return out
}

// killPlugins kills whatever plugin processes the test left behind and unmounts what they
// mounted under the state dir.
func (f *fixture) killPlugins() {
	entries, _ := os.ReadDir(filepath.Join(f.dir, "run"))
	for _, en := range entries {
		id, ok := strings.CutSuffix(en.Name(), ".pid")
		if ok && id != "agent" {
			if pid := f.pid(id); pid > 0 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
	mounts, _ := mountinfo.GetMounts(mountinfo.PrefixFilter(f.dir))
	for i := len(mounts) - 1; i >= 0; i-- {
		_ = unix.Unmount(mounts[i].Mountpoint, unix.MNT_DETACH)
	}
}

// waitFor polls cond until it holds or a generous deadline passes: the machine is shared and
// slow at times, so the deadline only catches a feature that does not work at all.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil && !zombie(pid) }

func zombie(pid int) bool {
	_, err := procStartTick(pid)
	return err != nil
}

func TestAgentStartsAndRestartsExecPlugin(t *testing.T) {
	f := newFixture(t)
	sp := f.execPlugin("hp", "hostpath")
	f.register(sp)
	if p := f.plugin("hp"); p.Healthy || !p.Supervised {
		t.Fatalf("before the agent: %+v", p)
	}
	stop := f.startAgent(testSettings)

	waitFor(t, "the agent to start the plugin and record it healthy", func() bool { return f.plugin("hp").Healthy })
	p := f.plugin("hp")
	if p.Provider != hostpath.PluginName || !p.Ready || p.FingerprintedAt.IsZero() || p.LastError != "" {
		t.Fatalf("plugin after start: %+v", p)
	}
	first := f.pid("hp")
	if !alive(first) {
		t.Fatalf("pid file names %d, which is not running", first)
	}
	for path, mode := range map[string]os.FileMode{
		filepath.Join(f.dir, "logs"): os.ModeDir | 0o700, filepath.Join(f.dir, "logs", "hp.log"): 0o600,
		filepath.Join(f.dir, "run", "hp.pid"): 0o600,
	} {
		if st, err := os.Stat(path); err != nil || st.Mode() != mode {
			t.Errorf("%s: %v, mode %v; want %v", path, err, st.Mode(), mode)
		}
	}
	log, _ := os.ReadFile(filepath.Join(f.dir, "logs", "hp.log"))
	if !strings.Contains(string(log), "test plugin serving on "+sp.Socket) {
		t.Errorf("the plugin's output is not in its log (CSI_ENDPOINT not passed?):\n%s", log)
	}

	// The probe loop keeps recording: a later probe shows up in the store.
	probed := f.plugin("hp").ProbedAt
	waitFor(t, "another probe to be recorded", func() bool { return f.plugin("hp").ProbedAt.After(probed) })

	// Killed without warning, it is restarted, reconnected and fingerprinted again.
	fingerprinted := p.FingerprintedAt
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a new plugin process", func() bool { n := f.pid("hp"); return n != 0 && n != first && alive(n) })
	waitFor(t, "the restarted plugin to be fingerprinted again and healthy", func() bool {
		p := f.plugin("hp")
		return p.Healthy && p.FingerprintedAt.After(fingerprinted)
	})
	if exits := f.events("plugin-exit"); len(exits) != 1 || !strings.Contains(exits[0], `plugin "hp" exited (signal: killed): restarting it in`) {
		t.Errorf("plugin-exit events = %q", exits)
	}
	health := f.events("plugin-health")
	if !slices.ContainsFunc(health, func(m string) bool { return strings.HasPrefix(m, `plugin "hp" became unhealthy: `) }) ||
		health[len(health)-1] != `plugin "hp" became healthy` {
		t.Errorf("plugin-health events = %q, want it unhealthy with a reason, then healthy again", health)
	}

	// Stopped with no mounts, the agent stops the plugin last and cleans up after it.
	second := f.pid("hp")
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if alive(second) {
		t.Errorf("plugin pid %d still runs after the agent stopped with no mounts", second)
	}
	for _, gone := range []string{sp.Socket, filepath.Join(f.dir, "run", "hp.pid"), filepath.Join(f.dir, "run", "agent.pid")} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind: %v", gone, err)
		}
	}
	if stops := f.events("plugin-stop"); len(stops) != 1 {
		t.Errorf("plugin-stop events = %q", stops)
	}
}

// A plugin registered while the agent runs is picked up and started; deregistered, it is
// stopped (it has no mounts).
func TestAgentFollowsRegistrations(t *testing.T) {
	f := newFixture(t)
	stop, pid := f.agentWithLatePlugin()
	if err := f.e.DeregisterPlugin(f.ctx, "late", false); err != nil {
		t.Fatal(err)
	}
	// The agent removes the pid file once the process is gone, so wait for both.
	waitFor(t, "the deregistered plugin to be stopped and its pid file removed", func() bool {
		_, err := os.Stat(filepath.Join(f.dir, "run", "late.pid"))
		return !alive(pid) && errors.Is(err, os.ErrNotExist)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// agentWithLatePlugin starts an agent, then registers plugin "late" (an exec plugin it starts),
// and returns once it is healthy: the agent's stop and the plugin's pid.
func (f *fixture) agentWithLatePlugin() (stop func() error, pid int) {
	f.t.Helper()
	stop = f.startAgent(testSettings)
	f.register(f.execPlugin("late", "hostpath"))
	waitFor(f.t, "the plugin registered later to be started and healthy", func() bool { return f.plugin("late").Healthy })
	return stop, f.pid("late")
}

func TestSecondAgentOnStateDirRefuses(t *testing.T) {
	f := newFixture(t)
	stop := f.startAgent(testSettings)
	// The file is made, then written: wait for what it says, which the refusal quotes.
	waitFor(t, "the first agent's pid file", func() bool {
		b, err := os.ReadFile(filepath.Join(f.dir, "run", "agent.pid"))
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid())
	})

	err := f.runSecondAgent()
	want := fmt.Sprintf("another volctl agent is running on state dir %s (pid %d)", f.dir, os.Getpid())
	if !errors.Is(err, engine.ErrConflict) || err.Error() != want {
		t.Fatalf("second agent: %v, want a conflict %q", err, want)
	}
	// The refused agent must not have removed the first one's pid file.
	if _, err := os.Stat(filepath.Join(f.dir, "run", "agent.pid")); err != nil {
		t.Fatalf("first agent's pid file: %v", err)
	}

	// Once the first stops, another may start.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	again := f.startAgent(testSettings)
	if err := again(); err != nil {
		t.Fatalf("agent after the first stopped: %v", err)
	}
}

// runSecondAgent runs an agent on the fixture's state dir, on an engine of its own, as a second
// `volctl agent` would, and returns what its Run returned (within a minute).
func (f *fixture) runSecondAgent() error {
	f.t.Helper()
	second, err := New(Config{Engine: f.openEngine(), Settings: testSettings})
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	return second.Run(ctx)
}

// startWithHealthTimeoutOnAFakeClock registers sp and starts an agent whose health timeout,
// 300ms, runs on a clock the test moves.
func (f *fixture) startWithHealthTimeoutOnAFakeClock(sp spec.Plugin) (*fakeClock, func() error) {
	clock := &fakeClock{t: time.Now()}
	f.now = clock.Now
	f.register(sp)
	s := testSettings
	s.HealthTimeout = 300 * time.Millisecond
	return clock, f.startAgent(s)
}

// startSickPlugin starts an agent supervising a plugin "sick" whose probes fail, on a fake
// clock with a 300ms health timeout, and returns once the agent has probed it unhealthy: the
// clock, the agent's stop, and the plugin's pid.
func (f *fixture) startSickPlugin() (*fakeClock, func() error, int) {
	f.t.Helper()
	clock, stop := f.startWithHealthTimeoutOnAFakeClock(f.execPlugin("sick", "unhealthy"))
	waitFor(f.t, "the plugin to be started", func() bool { return alive(f.pid("sick")) })
	first := f.pid("sick")
	waitFor(f.t, "the agent to probe the plugin unhealthy", func() bool {
		return strings.Contains(f.plugin("sick").LastError, "Probe: Internal")
	})
	return clock, stop, first
}

func TestAgentRestartsPluginUnhealthyPastTimeout(t *testing.T) {
	f := newFixture(t)
	// The health timeout runs on a clock the test moves, so however slow the machine, the
	// plugin is unhealthy past it exactly when the test says, and for the reason it says: not
	// while it is still starting (a dial error), which a real 300ms could run out in.
	clock, stop, first := f.startSickPlugin()
	if n := f.pid("sick"); n != first || len(f.events("plugin-restart")) != 0 {
		t.Fatalf("the plugin was restarted (pid %d -> %d) before its health timeout passed", first, n)
	}
	clock.Advance(301 * time.Millisecond)
	waitFor(t, "the unhealthy plugin to be replaced", func() bool { n := f.pid("sick"); return n != 0 && n != first && alive(n) })
	if alive(first) {
		t.Errorf("the unhealthy plugin (pid %d) was not stopped before its replacement started", first)
	}
	restarts := f.events("plugin-restart")
	if len(restarts) != 1 || !strings.Contains(restarts[0], `plugin "sick" unhealthy for 301ms (health timeout 300ms): Probe: Internal`) {
		t.Errorf("plugin-restart events = %q", restarts)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// mountsForReal skips the test where plugins cannot mount, and unmounts whatever a plugin
// process still has mounted when the test ends (it fails half-way) before the plugin is killed
// and the dir removed.
func (f *fixture) mountsForReal() {
	f.t.Helper()
	hostpathtest.RequireMount(f.t)
	f.t.Cleanup(func() {
		if err := hostpath.UnmountAll(f.dir); err != nil {
			f.t.Errorf("cleaning up mounts: %v", err)
		}
	})
}

// startSickeningPlugin starts an agent supervising plugin "fuse", which mounts for real and
// falls sick when the test says (sicken), on a fake clock with a 300ms health timeout; once it
// is healthy, it creates volume db on it. It returns the clock and the agent's stop.
func (f *fixture) startSickeningPlugin() (*fakeClock, func() error) {
	t := f.t
	t.Helper()
	f.mountsForReal()
	clock, stop := f.startWithHealthTimeoutOnAFakeClock(f.execPlugin("fuse", "sickens"))
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("fuse").Healthy })
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "fuse", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	return clock, stop
}

// claimAsCommand claims volume db for alloc web-0 through an engine of its own, as a command
// would, and returns that engine for the test's other commands (the release): a process of its
// own, whose connection to the plugin the agent's probes do not share.
func (f *fixture) claimAsCommand() *engine.Engine {
	f.t.Helper()
	cmd := f.openEngine()
	if _, err := cmd.Claim(f.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		f.t.Fatal(err)
	}
	return cmd
}

// sicken makes plugin "fuse" fail its probes and waits for the agent to probe it unhealthy.
func (f *fixture) sicken() {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Join(f.dir, "hostpath-fuse"), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "hostpath-fuse", "sick"), nil, 0o600); err != nil {
		f.t.Fatal(err)
	}
	waitFor(f.t, "the agent to probe the plugin unhealthy", func() bool {
		return strings.Contains(f.plugin("fuse").LastError, "Probe: Internal")
	})
}

// A supervised plugin that stops answering its probes while it holds mounts is not restarted
// past the health timeout: for a plugin that serves its mounts (FUSE), stopping it takes them
// from the allocs that use them, which the rule never to stop a plugin under mounts forbids at
// shutdown and everywhere else. It is reported unhealthy, and the withheld restart is logged
// and recorded as an event naming the mounts and what the operator can do. Once it has no
// mounts, it is restarted as any unhealthy plugin is.
func TestAgentDoesNotRestartAnUnhealthyPluginUnderMounts(t *testing.T) {
	f := newFixture(t)
	clock, stop := f.startSickeningPlugin()
	cmd := f.claimAsCommand()
	pid := f.pid("fuse")
	f.sicken()
	clock.Advance(301 * time.Millisecond)
	waitFor(t, "the agent to restart the plugin or withhold the restart", func() bool {
		return len(f.events("plugin-restart")) > 0 || len(f.events("plugin-restart-withheld")) > 0
	})
	if n := f.pid("fuse"); n != pid || !alive(pid) || len(f.events("plugin-restart")) != 0 {
		t.Fatalf("the unhealthy plugin pid %d was restarted under its mounts (pid file %d, alive %v, events %q)",
			pid, n, alive(pid), f.events("plugin-restart"))
	}
	withheld := f.events("plugin-restart-withheld")
	if len(withheld) != 1 || !strings.Contains(withheld[0], `plugin "fuse" unhealthy for 301ms (health timeout 300ms): Probe: Internal`) ||
		!strings.Contains(withheld[0], "2 mounts") || !strings.Contains(withheld[0], fmt.Sprintf("pid %d", pid)) {
		t.Errorf("plugin-restart-withheld events = %q", withheld)
	}
	// Released, it has no mounts left: the next look past the health timeout restarts it.
	if _, err := cmd.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	waitFor(t, "the unhealthy plugin without mounts to be restarted", func() bool { return len(f.events("plugin-restart")) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.events("plugin-restart-withheld")); n != 1 {
		t.Errorf("%d plugin-restart-withheld events, want one for the whole time it was unhealthy under mounts", n)
	}
}

// A restart withheld under mounts is logged once for the unhealthy spell, whatever the count of
// mounts does meanwhile: the reason was compared as text, which holds the count, so a release
// under way between two probes ("2 mounts", then "1 mounts") logged and recorded it again.
func TestAgentWithholdsARestartOnceWhileItsMountsChange(t *testing.T) {
	f := newFixture(t)
	rec := &recorder{}
	f.obs = rec
	clock, stop := f.startSickeningPlugin()
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "logs", Name: "logs", PluginID: "fuse", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	cmd := f.openEngine()
	for _, c := range []engine.ClaimRequest{{VolumeID: "db", Alloc: "web-0"}, {VolumeID: "logs", Alloc: "web-1"}} {
		if _, err := cmd.Claim(f.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	f.sicken()
	clock.Advance(301 * time.Millisecond)
	waitFor(t, "the agent to withhold the restart", func() bool { return len(f.events("plugin-restart-withheld")) > 0 })
	if ev := f.events("plugin-restart-withheld"); !strings.Contains(ev[0], "it has 4 mounts and 0 in doubt") {
		t.Fatalf("plugin-restart-withheld events = %q, want the first to name 4 mounts", ev)
	}
	// One claim released, the plugin still has mounts: the runner looks again at each probe.
	if _, err := cmd.Release(f.ctx, "logs", "web-1"); err != nil {
		t.Fatal(err)
	}
	probed := len(rec.list())
	// Two probes recorded after the release: the look that followed the first saw 2 mounts.
	waitFor(t, "two more probes", func() bool {
		n := 0
		for _, e := range rec.list()[probed:] {
			if strings.HasPrefix(e, "probed fuse ") {
				n++
			}
		}
		return n >= 2
	})
	if ev := f.events("plugin-restart-withheld"); len(ev) != 1 {
		t.Errorf("%d plugin-restart-withheld events while the mounts went from 4 to 2, want one: %q", len(ev), ev)
	}
	if _, err := cmd.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unhealthy plugin without mounts to be restarted", func() bool { return len(f.events("plugin-restart")) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A plugin whose socket is live when the agent starts, with no pid file of an agent's, is not
// started again and is never stopped: the agent did not start it.
func TestAgentProbesForeignPluginWithoutTouchingIt(t *testing.T) {
	f := newFixture(t)
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, _ := csitest.Serve(t, csitest.WithServer(mem))
	f.register(spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket,
		Exec: &spec.Exec{Command: filepath.Join(f.dir, "no-such-plugin")}})
	registered := f.plugin("mem").ProbedAt
	stop := f.startAgent(testSettings)
	waitFor(t, "the agent to probe the foreign plugin healthy", func() bool {
		p := f.plugin("mem")
		return p.Healthy && p.ProbedAt.After(registered)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if starts := f.events("plugin-start"); len(starts) != 0 {
		t.Errorf("plugin-start events = %q, want none", starts)
	}
	if !socketsLive([]string{socket}) {
		t.Error("the agent stopped a plugin it did not start")
	}
	if !strings.Contains(f.logs.String(), "no volctl agent started it") {
		t.Errorf("agent log does not say it found a foreign plugin:\n%s", f.logs)
	}
}

func TestAgentRetriesPluginThatCannotStart(t *testing.T) {
	f := newFixture(t)
	f.registerBroken()
	stop := f.startAgent(testSettings)
	waitFor(t, "start attempts to be retried", func() bool { return len(f.events("plugin-start")) >= 2 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	starts := f.events("plugin-start")
	if !strings.Contains(starts[0], `plugin "broken" did not start: `) || !strings.Contains(starts[0], "no such file or directory") {
		t.Errorf("plugin-start events = %q", starts)
	}
}

// registerBroken registers plugin "broken", supervised, whose command does not exist.
func (f *fixture) registerBroken() {
	f.register(spec.Plugin{ID: "broken", Type: spec.PluginMonolith, Socket: filepath.Join(f.dir, "broken.sock"),
		Exec: &spec.Exec{Command: filepath.Join(f.dir, "no-such-plugin")}})
}

// waitNoClaims waits until the store holds no live claim.
func (f *fixture) waitNoClaims(what string) {
	f.t.Helper()
	waitFor(f.t, what, func() bool {
		cs, err := f.e.Claims(f.ctx)
		return err == nil && len(cs) == 0
	})
}

// claimOnMem serves an in-memory plugin with cfg behind a fault injector, registers it as mem,
// creates volume db on it and claims it for alloc web-0. It returns the injector.
func (f *fixture) claimOnMem(cfg csitest.MemConfig) *csitest.Faults {
	t := f.t
	t.Helper()
	faults := csitest.NewFaults()
	f.mem = csitest.NewMountingMemPlugin(t, cfg)
	socket, _ := csitest.Serve(t, csitest.WithServer(f.mem), csitest.WithFaults(faults))
	f.register(spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: socket})
	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "mem", Capabilities: caps}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"}); err != nil {
		t.Fatal(err)
	}
	return faults
}

// releasingClaim registers an in-memory plugin and leaves a claim on it whose release did not
// finish (NodeUnpublishVolume failed), for a GC or reconcile pass to release. It returns the
// plugin's fault injector, cleared.
func (f *fixture) releasingClaim() *csitest.Faults {
	t := f.t
	t.Helper()
	faults := f.claimOnMem(csitest.DefaultMemConfig())
	faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Unavailable)
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err == nil {
		t.Fatal("release succeeded despite NodeUnpublishVolume failing")
	}
	faults.Clear()
	return faults
}

// The claim GC pass releases a claim whose release did not finish, without a full reconcile.
func TestAgentClaimGC(t *testing.T) {
	f := newFixture(t)
	// A plugin that never starts holds the start-up reconcile back for the whole health
	// timeout: here an hour, so only GC can release the claim.
	f.registerBroken()
	f.releasingClaim()
	s := testSettings
	s.HealthTimeout, s.ReconcileInterval = time.Hour, time.Hour
	stop := f.startAgent(s)
	f.waitNoClaims("the past claim to be released")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A supervised plugin that cannot even start holds the start-up reconcile back for its health
// timeout only.
func TestAgentStartupReconcileWaitsOnlyHealthTimeout(t *testing.T) {
	f := newFixture(t)
	f.registerBroken()
	f.releasingClaim()
	s := testSettings
	s.HealthTimeout, s.GCInterval, s.ReconcileInterval = 200*time.Millisecond, time.Hour, time.Hour
	stop := f.startAgent(s)
	f.waitNoClaims("the start-up reconcile to release the claim")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.logs.String(), `trigger=start`) {
		t.Errorf("the claim was not released by the start-up reconcile:\n%s", f.logs)
	}
}

// A plugin with mounts is left running when the agent stops and adopted by the next one; a
// claim whose mount is gone is restored by the agent at start, whether the plugin survived
// (adopted) or not (a reboot: the agent starts it again).
func TestAgentMountsOutliveItAndAreRestoredAtStart(t *testing.T) {
	hostpathtest.RequireMount(t)
	f := newFixture(t)
	f.register(f.execPlugin("hp", "hostpath"))
	stop := f.startAgent(testSettings)
	waitFor(t, "the plugin to be healthy", func() bool { return f.plugin("hp").Healthy })

	caps := []spec.Capability{{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}}
	if _, err := f.e.CreateVolume(f.ctx, spec.Volume{ID: "db", Name: "db", PluginID: "hp", Capabilities: caps, CapacityMin: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	cl, err := f.e.Claim(f.ctx, engine.ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(f.dir, "staging", "hp", "db")
	if !hostpathtest.Mounted(t, cl.TargetPath) || !hostpathtest.Mounted(t, staging) {
		t.Fatal("the claim is not mounted")
	}
	pid := f.pid("hp")

	// 1. Stopping the agent leaves the plugin running under its two mounts.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) || f.pid("hp") != pid {
		t.Fatalf("plugin pid %d stopped (pid file %d) although it has mounts", pid, f.pid("hp"))
	}
	if !strings.Contains(f.logs.String(), "leaving plugin running") || !strings.Contains(f.logs.String(), "mounts=2") {
		t.Errorf("agent log does not say why the plugin is left running:\n%s", f.logs)
	}

	// 2. The mounts go away; the next agent adopts the running plugin and restores them.
	unmount(t, cl.TargetPath, staging)
	stop = f.startAgent(testSettings)
	waitFor(t, "the mount to be restored", func() bool { return len(f.events("restore")) == 1 })
	if !hostpathtest.Mounted(t, cl.TargetPath) || !hostpathtest.Mounted(t, staging) {
		t.Fatal("restore recorded, but the claim is not mounted")
	}
	if f.pid("hp") != pid || len(f.events("plugin-start")) != 1 {
		t.Errorf("the running plugin was not adopted: pid %d -> %d, starts %q", pid, f.pid("hp"), f.events("plugin-start"))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatal("the adopted plugin was stopped under mounts")
	}

	// 3. A reboot: the plugin and the mounts are gone. The agent starts the plugin and restores.
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the plugin to die", func() bool { return !alive(pid) })
	unmount(t, cl.TargetPath, staging)
	stop = f.startAgent(testSettings)
	waitFor(t, "the mount to be restored after the reboot", func() bool { return len(f.events("restore")) == 2 })
	if !hostpathtest.Mounted(t, cl.TargetPath) || !hostpathtest.Mounted(t, staging) {
		t.Fatal("restore recorded, but the claim is not mounted")
	}
	if n := f.pid("hp"); n == pid || !alive(n) {
		t.Errorf("plugin pid after the reboot = %d, want a new process", n)
	}
	if c, err := f.e.ClaimInfo(f.ctx, "db", "web-0"); err != nil || c.ID != cl.ID || c.State != "published" {
		t.Errorf("claim after restores = %+v, %v; want the same claim, published", c, err)
	}

	// 4. Released, the plugin has no mounts left and is stopped with the agent.
	if _, err := f.e.Release(f.ctx, "db", "web-0"); err != nil {
		t.Fatal(err)
	}
	last := f.pid("hp")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if alive(last) {
		t.Error("plugin left running without mounts")
	}
}

func unmount(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			t.Fatalf("unmount %s: %v", p, err)
		}
	}
}

// A plugin past its health timeout that cannot be stopped (a process stuck in the kernel
// survives SIGKILL) keeps its pid file, and no second plugin is started beside it on its
// socket: forgotten, the next agent would take it for a foreign plugin, and a second copy
// would fight it for the socket. The failure is logged and recorded as an event, and the stop
// is tried again at the next probe past the timeout.
func TestAgentKeepsAnUnhealthyPluginItCannotStop(t *testing.T) {
	stuck, tries := true, 0
	var mu sync.Mutex
	stopProcess = func(p *process, timeout time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		if stuck {
			tries++
			return fmt.Errorf("pid %d still runs after SIGKILL", p.pid)
		}
		return p.stop(timeout)
	}
	triedTwice := func() bool { mu.Lock(); defer mu.Unlock(); return tries > 1 }
	t.Cleanup(func() { stopProcess = (*process).stop })
	f := newFixture(t)
	clock, stop, first := f.startSickPlugin()
	clock.Advance(301 * time.Millisecond)
	waitFor(t, "the agent to try to stop the plugin, and try again", triedTwice)
	if n := len(f.events("plugin-stop-failed")); n != 1 {
		t.Errorf("%d plugin-stop-failed events, want one for the whole unhealthy spell", n)
	}
	if n := f.pid("sick"); n != first || len(f.events("plugin-restart")) != 0 || len(f.events("plugin-start")) != 1 {
		t.Fatalf("the plugin it could not stop was forgotten or doubled: pid file %d (was %d), restarts %q, starts %q",
			n, first, f.events("plugin-restart"), f.events("plugin-start"))
	}
	if ev := f.events("plugin-stop-failed")[0]; !strings.Contains(ev, "still runs after SIGKILL") || !strings.Contains(ev, "not starting another") {
		t.Errorf("plugin-stop-failed event = %q", ev)
	}
	// Once it can be stopped, it is restarted as any unhealthy plugin is.
	mu.Lock()
	stuck = false
	mu.Unlock()
	waitFor(t, "the unhealthy plugin to be replaced", func() bool { n := f.pid("sick"); return n != 0 && n != first && alive(n) })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A restart withheld for the plugin's mounts is not logged again when a look finds a release
// of them under way (its undoing of the staging and attachment holds the publish lock: the
// kind "publishing"), nor when the mounts are found again after it; a publish under way first,
// then mounts, and a count that failed, are each news.
func TestWithheldRestartIsNotLoggedAgainForAReleaseOfItsMounts(t *testing.T) {
	for _, tt := range []struct {
		logged, now holdKind
		news        bool
	}{
		{holdNone, holdMounts, true},
		{holdNone, holdPublishing, true},
		{holdMounts, holdMounts, false},
		{holdMounts, holdPublishing, false},
		{holdPublishing, holdMounts, true},
		{holdMounts, holdUncounted, true},
		{holdUncounted, holdMounts, true},
	} {
		if got := withholdNews(tt.logged, tt.now); got != tt.news {
			t.Errorf("withholdNews(logged %d, now %d) = %v, want %v", tt.logged, tt.now, got, tt.news)
		}
	}
}
