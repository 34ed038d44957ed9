package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// holdWriteLock has another process (a store handle of its own on h's state) hold the state's
// write lock until the returned func is called.
func (h *harness) holdWriteLock() (release func()) {
	h.t.Helper()
	other, err := store.Open(h.ctx, h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	locked, unlock, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- other.Update(h.ctx, func(*store.Tx) error { close(locked); <-unlock; return nil })
	}()
	<-locked
	return func() {
		close(unlock)
		if err := <-done; err != nil {
			h.t.Error(err)
		}
		other.Close()
	}
}

// A probe (`plugin status`, the agent's, the dashboard's) whose connection the plugin's worker
// accepted, while another volctl held the state's write lock: checkHealth records what it found
// only if its try-transaction gets the lock, and the refusal it took from the client
// (servers.takeElsewhere) was dropped with the reading. The same process's next operation (the
// agent's, the dashboard's: they live on) reused the stored fingerprint, still `listener`, and
// was refused as the probe was. The refusal not recorded is handed back to the client, which
// the next operation's connection records (with a write that waits) before it reads the row.
func TestProbeRefusedWhileTheStateIsLockedIsRecordedByTheNextOperation(t *testing.T) {
	t.Parallel()
	const driver = "mem.csi.volctl.test"
	plugin := startExecPlugin(t, driver)
	h, ext := execPluginHarness(t, plugin, Config{})
	plugin.handOff(false, ext)
	h.open(Config{}) // the agent's process, say: the stored fingerprint reused

	release := h.holdWriteLock()
	ctx, cancel := context.WithTimeout(h.ctx, 8*time.Second) // far under the busy timeout: status waits for nothing
	infos, err := h.e.PluginStatus(ctx, "mem")
	cancel()
	release()
	if err != nil || len(infos) != 1 {
		t.Fatalf("plugin status with the write lock held elsewhere: %+v %v", infos, err)
	}
	if infos[0].Healthy {
		t.Skip("the probe's connection was not refused (accepted by the listener?): nothing to record") // handOff stops the listener accepting: not expected
	}
	refusedTruly(t, "the probe", fmt.Errorf("%s", infos[0].LastError))
	if got := h.storedAccepts(); got != acceptsListener {
		t.Fatalf("stored accepts %q with the lock held, want %q still (the probe waits for no lock)", got, acceptsListener)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
		t.Fatalf("the same process's claim after the probe's refusal, once the lock is free: %v", err)
	}
	if got := h.storedAccepts(); got != acceptsOther {
		t.Errorf("stored accepts %q after the claim, want %q", got, acceptsOther)
	}
}

// noSocketDiagnostics has peerInodeOf fail for the test, as a kernel without CONFIG_UNIX_DIAG.
func noSocketDiagnostics(t *testing.T) {
	swapsGlobals(t, "peerInodeOf")
	was := peerInodeOf
	peerInodeOf = func(net.Conn) (uint32, error) {
		return 0, errors.New("sock_diag: no such file or directory (as without CONFIG_UNIX_DIAG)")
	}
	t.Cleanup(func() { peerInodeOf = was })
}

// A plugin behind a supervisor that holds its socket, on a kernel without unix socket
// diagnostics (or to a volctl that may not read the listener's descriptors: another user's,
// root's to a volctl that is not root): what accepted the fingerprint's connection is
// `unknown`, which was reused as a plugin that listens itself is, with no RPC, so the plugin
// restarted with other flags had the next process admit a second volume past its
// max_volumes_per_node, as before round 29. `unknown` cannot say the plugin listens itself: a
// process's first connection fingerprints it, as one accepted elsewhere.
func TestSupervisedPluginWithoutSocketDiagnostics(t *testing.T) {
	noSocketDiagnostics(t)
	claimThroughASupervisedPluginRestartedWithOtherFlags(t)
}

// acceptedElsewhere of each kind of record: `unknown` is not told apart from another process.
func TestAcceptsUnknownIsFingerprintedOnEachProcess(t *testing.T) {
	t.Parallel()
	const image = "pid 5 start 7 exe 1:2 stack 3"
	for _, tc := range []struct {
		accepts string
		want    bool
	}{{acceptsListener, false}, {acceptsOther, true}, {acceptsUnknown, true}} {
		s := store.SocketIdentity{Path: "/run/csi.sock", Inode: 1, Listener: image, Accepts: tc.accepts}
		if got := acceptedElsewhere([]store.SocketIdentity{s}); got != tc.want {
			t.Errorf("acceptedElsewhere(accepts %q) = %v, want %v", tc.accepts, got, tc.want)
		}
	}
}

// anotherPluginsSocket serves plugin "other", the same driver as "mem" on a socket of its own
// (another process, another storage), with a volume db2 on it whose storage has the external
// ID of mem's db (the sequential IDs many drivers give): the plugin and db2's external ID.
func (h *harness) anotherPluginsSocket() (*csitest.MemPlugin, string, string) {
	h.t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	other := csitest.NewMemPlugin(cfg)
	socket, _ := csitest.Serve(h.t, csitest.WithServer(other))
	h.registerPlugin("other", socket)
	v := volume("db2")
	v.PluginID = "other"
	return other, socket, h.create(v).ExternalID
}

// aliasSocket replaces the socket file at path by another name of the socket file at target,
// as how says: a symlink, a hard link, or a bind mount of the file.
func aliasSocket(t *testing.T, how, path, target string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var err error
	switch how {
	case "symlink":
		err = os.Symlink(target, path)
	case "hard link":
		err = os.Link(target, path)
	case "bind mount":
		if os.Geteuid() != 0 {
			t.Skip("a bind mount of the socket file needs root")
		}
		if err = os.WriteFile(path, nil, 0o600); err == nil {
			if err = syscall.Mount(target, path, "", syscall.MS_BIND, ""); err == nil {
				t.Cleanup(func() { _ = syscall.Unmount(path, syscall.MNT_DETACH) })
			}
		}
	}
	if err != nil {
		t.Fatalf("%s %s to %s: %v", how, path, target, err)
	}
}

// Plugin mem's socket path made another name of plugin other's socket (a symlink to it, a hard
// link of it, a bind mount of the file), both the same driver, on sockets of their own when
// registered: the socket file is new, so the next connection fingerprinted it, GetPluginInfo
// named the registered driver, and mem's claim of db was sent to other's process: its
// ControllerPublishVolume, NodeStageVolume and NodePublishVolume of vol-1, other's db2's storage,
// with db's secrets, published to db's alloc. Another plugin's socket (its listener bound it at
// that plugin's path) is refused before any RPC, naming both plugins and the path; other, whose
// socket it is, goes on.
func TestPluginSocketThatIsAnotherPluginsSocketIsRefused(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"symlink", "hard link", "bind mount"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, nil)
			other, socket, ext2 := h.anotherPluginsSocket()
			if ext := h.create(volume("db")).ExternalID; ext != ext2 {
				t.Fatalf("db's external ID %q, db2's %q: want one (the test's premise)", ext, ext2)
			}
			aliasSocket(t, how, h.socket, socket)
			sent := len(other.Calls())

			for _, next := range []string{"the same process", "the next process"} {
				if next == "the next process" {
					h.open(Config{})
				}
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
				if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "other"`) || !strings.Contains(err.Error(), h.socket) {
					t.Errorf("%s: claim of mem's db through plugin other's socket: %v, want a conflict naming plugin \"other\" and %s", next, err, h.socket)
				}
				if calls := other.Calls()[sent:]; len(calls) > 0 {
					t.Errorf("%s: plugin other was sent %d RPCs for plugin mem, the first %s, want none", next, len(calls), calls[0].RPC)
				}
			}
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db2", Alloc: "b"}); err != nil {
				t.Errorf("claim of other's db2 on its own socket: %v", err)
			}
			infos, err := h.e.PluginStatus(h.ctx, "mem")
			if err != nil || len(infos) != 1 || infos[0].Healthy || !strings.Contains(infos[0].LastError, `plugin "other"`) {
				t.Errorf("plugin status of mem: %+v %v, want it unhealthy naming plugin \"other\"", infos, err)
			}
		})
	}
}

// Registering a plugin on another name of a registered plugin's socket is refused the same way,
// naming the plugin whose socket it is and the path to register on instead.
func TestRegisteringOnAnotherPluginsSocketUnderAnotherNameIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	link := filepath.Join(t.TempDir(), "mem2.sock")
	if err := os.Symlink(h.socket, link); err != nil {
		t.Fatal(err)
	}
	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem2", Type: spec.PluginMonolith, Socket: link})
	if err == nil || !strings.Contains(err.Error(), `plugin "mem"`) || !strings.Contains(err.Error(), h.socket) {
		t.Errorf("register mem2 through a symlink to mem's socket: %v, want it refused naming plugin \"mem\" and its socket %s", err, h.socket)
	}
	// Its own path however spelled (a symlinked directory) is one socket: IDs on it are one process.
	dirLink := filepath.Join(t.TempDir(), "dir")
	if err := os.Symlink(filepath.Dir(h.socket), dirLink); err != nil {
		t.Fatal(err)
	}
	h.registerPlugin("mem3", filepath.Join(dirLink, filepath.Base(h.socket)))
}

// A plugin whose socket path another plugin's was made a link to is not refused: its own
// listener bound its path (the socket is its own); the other plugin is refused.
func TestPluginWhoseSocketAnotherPluginsPathLinksToGoesOn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, socket, _ := h.anotherPluginsSocket()
	h.create(volume("db"))
	aliasSocket(t, "symlink", socket, h.socket)
	h.open(Config{})
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
		t.Errorf("claim of mem's db on its own socket, other's path linked to it: %v", err)
	}
	sent := len(other.Calls())
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db2", Alloc: "b"}); err == nil || !strings.Contains(err.Error(), `plugin "mem"`) {
		t.Errorf("claim of other's db2 through the link to mem's socket: %v, want it refused naming plugin \"mem\"", err)
	}
	if n := len(other.Calls()); n != sent {
		t.Errorf("plugin other was sent %d RPCs, want none (nothing listens behind its path but mem)", n-sent)
	}
}

// The same mid-claim: mem's process gone and its socket path made a symlink to other's socket
// once the claim has looked for the volume (its ListVolumes), before ControllerPublishVolume.
// checkSockets found a new socket file and fingerprinted it again through gRPC's reconnect,
// which reached other: the same driver, capabilities and node ID, so the claim's publish RPCs
// went on to plugin other's process.
func TestPluginSocketMadeAnotherPluginsMidClaimIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, socket, _ := h.anotherPluginsSocket()
	h.create(volume("db"))
	var once sync.Once
	var sent int
	h.open(Config{ObserveRPC: func(plugin, rpc, code string, d time.Duration) {
		if plugin == "mem" && rpc == csi.RPCListVolumes {
			once.Do(func() {
				h.stopServe()
				aliasSocket(t, "symlink", h.socket, socket)
				sent = len(other.Calls())
			})
		}
	}})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	if sent == 0 {
		t.Fatal("the socket was not replaced mid-claim: the claim sent no ListVolumes")
	}
	if err == nil || !strings.Contains(err.Error(), `plugin "other"`) {
		t.Errorf("claim through mem's socket made other's mid-claim: %v, want it refused naming plugin \"other\"", err)
	}
	for _, c := range other.Calls()[sent:] {
		t.Errorf("plugin other was sent %s for plugin mem", c.RPC)
	}
}

// forwardingProxy listens on a socket of its own and forwards each connection it accepts to the
// socket *backend names then, as a proxy in front of a plugin does: the socket.
func forwardingProxy(t *testing.T, backend *atomic.Pointer[string]) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("unix", *backend.Load())
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
	return socket
}

// What volctl tells of a forwarding proxy on a plugin's socket: it accepts its connections
// itself, so it reads as a plugin that listens itself (accepts: listener), and its fingerprint
// is its backend's. A backend changed behind it to another driver (the socket file, its
// listener and who accepts all unchanged) is not fingerprinted again on connecting, but is
// asked its driver's name before a create (bindsStorage) and by a probe, and refused there,
// nothing sent (docs/architecture.md, Plugins behind a held socket: what is not told).
func TestForwardingProxyToAnotherDriverIsToldByTheDriversName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	d := h.anotherDriver(false)
	var backend atomic.Pointer[string]
	backend.Store(&h.socket)
	h.registerPlugin("px", forwardingProxy(t, &backend))
	var p store.Plugin
	h.update(func(tx *store.Tx) error { var err error; p, err = tx.Plugins().Get("px"); return err })
	if got := p.Fingerprint.Sockets[0].Accepts; got != acceptsListener || p.Fingerprint.Provider != "mem.csi.volctl.test" {
		t.Fatalf("a forwarding proxy's fingerprint: accepts %q, driver %q; want %q, the backend's driver", got, p.Fingerprint.Provider, acceptsListener)
	}
	backend.Store(&d.socket)
	h.open(Config{})
	v := volume("v")
	v.PluginID = "px"
	_, err := h.e.CreateVolume(h.ctx, v)
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), d.name) {
		t.Errorf("create through the proxy now forwarding to driver %s: %v, want a conflict naming it", d.name, err)
	}
	if n := d.faults.Calls(csi.RPCCreateVolume); n != 0 {
		t.Errorf("CreateVolume sent %d times to driver %s behind the proxy, want none", n, d.name)
	}
	infos, err := h.e.PluginStatus(h.ctx, "px")
	if err != nil || len(infos) != 1 || infos[0].Healthy || !strings.Contains(infos[0].LastError, d.name) {
		t.Errorf("plugin status of px: %+v %v, want it unhealthy naming driver %s", infos, err, d.name)
	}
}
