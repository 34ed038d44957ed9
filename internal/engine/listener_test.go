package engine

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// execPluginHarness is a harness whose plugin "mem" is the exec plugin p, registered, with a
// volume "db" created on it; and the volume's ID in the driver.
func execPluginHarness(t *testing.T, p *execPlugin, cfg Config) (*harness, string) {
	t.Helper()
	h := &harness{t: t, ctx: t.Context(), mem: csitest.NewMemPlugin(csitest.DefaultMemConfig()), faults: csitest.NewFaults(), dir: t.TempDir()}
	storetest.Seed(t, h.dir)
	h.socket, h.mounts = p.socket, newFakeMounts(h.mem)
	h.open(cfg)
	h.registerPlugin("mem", h.socket)
	return h, h.create(volume("db")).ExternalID
}

// command sends the exec plugin a line and waits for its answer.
func (p *execPlugin) command(line, answer string) {
	p.t.Helper()
	if _, err := p.stdin.Write([]byte(line + "\n")); err != nil {
		p.t.Fatal(err)
	}
	if got, err := p.stdout.ReadString('\n'); got != answer+"\n" {
		p.t.Fatalf("the exec plugin answered %q to %q (%v), want %q", got, line, err, answer)
	}
}

// A plugin killed mid-claim and started again by its supervisor on the same path (a new
// socket file, the same driver holding the same volumes) between two RPCs: checkSockets
// fingerprinted it again over the connection whose every dial (servers.checkPeer) compared
// the new process with the dead one's image, and refused it, failing the claim and its
// rollback's RPCs alike ("served by pid N, another process than the one that listened there").
// The new socket files' listeners are checked and recorded first (checkServers, the uid rule
// kept), as a fresh connection does; the same driver with the same capabilities goes on.
func TestClaimThroughAPluginRestartedMidClaimBySupervisor(t *testing.T) {
	t.Parallel()
	first := startExecPlugin(t, "mem.csi.volctl.test")
	var once sync.Once
	var ext string
	var second *execPlugin
	armed := false
	h, ext := execPluginHarness(t, first, Config{ObserveRPC: func(plugin, rpc, code string, d time.Duration) {
		if rpc != "ListVolumes" || !armed {
			return
		}
		once.Do(func() { // the claim has looked for the volume; it publishes next
			_ = syscall.Kill(first.pid, syscall.SIGKILL)
			for i := 0; i < 500; i++ { // dead (a zombie until the test's cleanup reaps it), its socket closed
				if b, err := os.ReadFile("/proc/" + strconv.Itoa(first.pid) + "/stat"); err != nil || strings.Contains(string(b), ") Z ") {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			_ = os.Remove(first.socket)
			second = startExecPluginWith(t, "mem.csi.volctl.test", execPluginOptions{socket: first.socket, volumes: ext})
		})
	}})
	armed = true
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	if second == nil {
		t.Fatal("the plugin was not restarted mid-claim: the claim sent no ListVolumes")
	}
	if err != nil {
		t.Errorf("claim through the plugin its supervisor restarted mid-claim (the same driver): %v", err)
	}
	if got := volumeRPCsOf(second.rpcs("mem.csi.volctl.test")); len(got) == 0 {
		t.Errorf("the restarted plugin got no volume RPC: %v", second.rpcs("mem.csi.volctl.test"))
	}
}

// The exec race: connect(2) on a unix socket succeeds once the connection is queued in the
// listening socket's backlog, before anyone accept()s it. A connection checked then
// (servers.checkPeer: the listener runs the image the plugin was fingerprinted with) and
// accepted after the listener exec()ed another driver was served by that driver: the claim's
// ControllerPublishVolume, NodeStageVolume and NodePublishVolume went to it. The check is made
// again once the server's first bytes arrive (its HTTP/2 settings, which gRPC awaits before
// any RPC): by then whoever accepted the connection has written to it. The plugin execs once
// the claim's first connection has had gRPC's first bytes (written after the check at the dial),
// and what answers it is a process of the exec'd driver already running (startRacer), which
// answers only after the exec: the exec'd image itself starts too slowly under load to answer
// within gRPC's connect timeout (1 s then), and the race was then not run.
func TestExecWhileAConnectionWaitsInTheBacklogIsRefused(t *testing.T) {
	t.Parallel()
	plugin := startExecPlugin(t, "mem.csi.volctl.test")
	h, ext := execPluginHarness(t, plugin, Config{})
	plugin.command("race "+copyOfTestBinary(t)+" other.csi.example "+ext, "paused")
	h.open(Config{}) // the next process: it reuses the stored fingerprint, the listener unchanged yet
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	plugin.ready() // the exec'd image
	for _, rpc := range volumeRPCsOf(plugin.rpcs("other.csi.example")) {
		t.Errorf("%s sent to driver other.csi.example (RPCs it got: %v; the claim: %v)", rpc, plugin.rpcs("other.csi.example"), err)
	}
	if err == nil || !strings.Contains(err.Error(), "exec()ed since") || !strings.Contains(err.Error(), plugin.socket) {
		t.Errorf("the claim through the listener that exec'd another driver: %v, want it refused naming the socket and the exec", err)
	}
}

// setLongProcessTitle sets the process title to one longer than its arguments, the way
// prctl(PR_SET_MM, PR_SET_MM_MAP) lets any process (no capability needed; setproctitle
// libraries do it): the arguments' place (stat field 48, arg_start) moves, without an exec.
func setLongProcessTitle() {
	stat := func(n int) uint64 {
		f, _ := os.ReadFile("/proc/self/stat")
		s := string(f)
		v, _ := strconv.ParseUint(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[n-3], 10, 64)
		return v
	}
	type prctlMMMap struct { // struct prctl_mm_map
		StartCode, EndCode, StartData, EndData, StartBrk, Brk, StartStack, ArgStart, ArgEnd, EnvStart, EnvEnd uint64
		Auxv                                                                                                  uint64
		AuxvSize, ExeFd                                                                                       uint32
	}
	title := []byte("csi-driver: serving, a title longer than the original arguments\x00")
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err)
	}
	copy(mem, title)
	addr := uint64(uintptr(unsafe.Pointer(&mem[0])))
	brk, _, _ := unix.Syscall(unix.SYS_BRK, 0, 0, 0)
	m := prctlMMMap{StartCode: stat(26), EndCode: stat(27), StartData: stat(45), EndData: stat(46), StartBrk: stat(47), Brk: uint64(brk),
		StartStack: stat(28), ArgStart: addr, ArgEnd: addr + uint64(len(title)), EnvStart: stat(50), EnvEnd: stat(51), ExeFd: ^uint32(0)}
	if _, _, e := unix.Syscall6(unix.SYS_PRCTL, unix.PR_SET_MM, unix.PR_SET_MM_MAP, uintptr(unsafe.Pointer(&m)), unsafe.Sizeof(m), 0, 0); e != 0 {
		panic(e)
	}
}

// A plugin that sets its process title longer than its arguments (no exec, the same image)
// moved stat field 48, which listenerImage recorded: the agent's held connection, once the
// plugin closed its idle connections, was refused ("runs another program image ... it
// exec()ed since"), and every later process fingerprinted it again. Field 48 is not read.
func TestProcessTitleChangeIsNoExec(t *testing.T) {
	t.Parallel()
	plugin := startExecPlugin(t, "mem.csi.volctl.test")
	h, _ := execPluginHarness(t, plugin, Config{})
	plugin.command("title", "titled")
	plugin.command("drop", "dropped")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
		t.Errorf("claim through the unchanged plugin that set its title: %v", err)
	}
}

// A plugin started by a launcher that listened, handed it the socket and exited: SO_PEERCRED
// names the launcher's pid, gone, and its image was recorded as "pid L start ? ...". Once
// another process got pid L, the unchanged plugin's next connection (the agent's held one,
// after the plugin closed its idle connections) was refused, the plugin blamed ("another
// process than the one that listened there"). A listener gone when the plugin is
// fingerprinted is recorded as such, and never compared.
func TestLauncherPidTakenByAnotherProcessRefusesNothing(t *testing.T) {
	plugin := startExecPluginWith(t, "mem.csi.volctl.test", execPluginOptions{launcher: true})
	h, _ := execPluginHarness(t, plugin, Config{})
	launcher := plugin.pid
	var taker *exec.Cmd
	// Another package's tests fork beside this one (go test runs two at once): one may take
	// the pid between the write and the fork, and hold it a while. Then wait for it to go
	// rather than fork again into a pid that is taken, within a bound of time, not of tries.
	tries, deadline := 0, time.Now().Add(30*time.Second)
	for taker == nil && time.Now().Before(deadline) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(launcher)); err == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		tries++
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(launcher-1)), 0); err != nil {
			t.Skipf("giving a process the launcher's pid needs /proc/sys/kernel/ns_last_pid written (root): %v", err)
		}
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if c.Process.Pid == launcher {
			taker = c
			break
		}
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	if taker == nil {
		t.Fatalf("no process got the launcher's pid %d in %d tries within 30s", launcher, tries)
	}
	t.Cleanup(func() { _ = taker.Process.Kill(); _ = taker.Wait() })
	plugin.command("drop", "dropped")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
		t.Errorf("claim through the unchanged plugin: %v (a conflict: %v)", err, errors.Is(err, ErrConflict))
	}
}

// A plugin started by a launcher that handed it the socket and exited, which then exec()s
// another driver keeping the socket: the listener SO_PEERCRED names is the gone launcher,
// recorded as such, so nothing of the exec shows, and the next process reused the stored
// fingerprint and sent the other driver the claim's RPCs. Such a plugin's connections are
// accepted by another process than the gone launcher, so a process's first connection
// fingerprints it, and another driver is refused. (A held connection, the agent's, is not
// fingerprinted again mid-operation: docs/architecture.md.)
func TestClaimThroughALaunchedPluginThatExecdAnotherDriver(t *testing.T) {
	t.Parallel()
	plugin := startExecPluginWith(t, "mem.csi.volctl.test", execPluginOptions{launcher: true})
	h, ext := execPluginHarness(t, plugin, Config{})
	plugin.exec(copyOfTestBinary(t), "other.csi.example", ext)
	h.open(Config{}) // the next process
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	for _, rpc := range volumeRPCsOf(plugin.rpcs("other.csi.example")) {
		t.Errorf("%s sent to driver other.csi.example (RPCs it got: %v; the claim: %v)", rpc, plugin.rpcs("other.csi.example"), err)
	}
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "other.csi.example") {
		t.Errorf("the claim: %v, want a conflict naming the driver other.csi.example", err)
	}
}

// The same launched plugin unchanged: the launcher that listened is gone, so another process
// accepts the connections, and the next process fingerprints the plugin on its first connection
// (the five identity RPCs: the same driver started again with other flags answers its name as
// before) and, reading the same, reuses the stored fingerprint: nothing recorded.
func TestLaunchedPluginUnchangedIsFingerprintedNotRecorded(t *testing.T) {
	t.Parallel()
	plugin := startExecPluginWith(t, "mem.csi.volctl.test", execPluginOptions{launcher: true})
	h, _ := execPluginHarness(t, plugin, Config{})
	fingerprintAt := func() time.Time {
		var p store.Plugin
		h.update(func(tx *store.Tx) error { var err error; p, err = tx.Plugins().Get("mem"); return err })
		if len(p.Fingerprint.Sockets) != 1 || p.Fingerprint.Sockets[0].Accepts != acceptsOther {
			t.Errorf("stored socket identity %+v, want it accepted by another process than the gone launcher", p.Fingerprint.Sockets)
		}
		return p.Fingerprint.At
	}
	before, at := len(plugin.rpcs("mem.csi.volctl.test")), fingerprintAt()
	h.open(Config{}) // the next process
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
		t.Fatalf("claim through the unchanged launched plugin: %v", err)
	}
	identity := identityRPCsIn(plugin.rpcs("mem.csi.volctl.test")[before:])
	if want := []string{"GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities", "NodeGetCapabilities", "NodeGetInfo"}; !slices.Equal(identity, want) {
		t.Errorf("identity RPCs of the next process: %v, want %v", identity, want)
	}
	if now := fingerprintAt(); !now.Equal(at) {
		t.Errorf("the unchanged plugin's fingerprint was recorded again (at %v, was %v)", now, at)
	}
}
