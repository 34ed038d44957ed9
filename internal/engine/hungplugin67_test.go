package engine

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// servedOtherPlugin serves a second in-memory plugin ("other") on its own socket, known to
// the harness's fake mount table, and registers it.
func (h *harness) servedOtherPlugin() {
	h.t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	mem2 := csitest.NewMemPlugin(cfg)
	sock2, _ := csitest.Serve(h.t, csitest.WithServer(mem2))
	h.mounts.mu.Lock()
	h.mounts.plugins = append(h.mounts.plugins, mem2)
	h.mounts.mu.Unlock()
	h.registerPlugin("other", sock2)
}

// While one command waits on an RPC the plugin "mem" holds (a hung plugin), a second process
// works on another plugin's volume: create, claim, release, delete, a probe of every plugin
// (but the hung one's RPCs are not asked: its Probe answers). No lock of the state dir, the
// store or the directories is held across an RPC, so each of these ends within seconds.
// Tried by helper review67, and held: kept so that it goes on holding.
func TestHungRPCHoldsNoOtherPluginsWork(t *testing.T) {
	for _, tc := range append([]rpcCase{
		{csi.RPCCreateVolume, func(h *harness) {}, func(h *harness) error { _, err := h.e.CreateVolume(h.ctx, volume("v")); return err }},
		{csi.RPCControllerPublishVolume, func(h *harness) { h.create(volume("v")) },
			func(h *harness) error {
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				return err
			}},
		{csi.RPCNodeStageVolume, func(h *harness) { h.create(volume("v")) },
			func(h *harness) error {
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				return err
			}},
		{csi.RPCNodePublishVolume, func(h *harness) { h.create(volume("v")) },
			func(h *harness) error {
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				return err
			}},
		{csi.RPCNodeUnpublishVolume, func(h *harness) { h.create(volume("v")); h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}) },
			func(h *harness) error { _, err := h.e.Release(h.ctx, "v", "a"); return err }},
		{csi.RPCNodeUnstageVolume, func(h *harness) { h.create(volume("v")); h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}) },
			func(h *harness) error { _, err := h.e.Release(h.ctx, "v", "a"); return err }},
		{csi.RPCControllerUnpublishVolume, func(h *harness) { h.create(volume("v")); h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}) },
			func(h *harness) error { _, err := h.e.Release(h.ctx, "v", "a"); return err }},
		{"Reconcile/" + csi.RPCNodePublishVolume, func(h *harness) {
			h.create(volume("v"))
			h.faults.FailAlways(csi.RPCNodePublishVolume, codes.Unavailable)
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
				h.t.Fatal("claim succeeded")
			}
			h.faults.Clear()
		}, func(h *harness) error { _, err := h.e.Reconcile(h.ctx); return err }},
		{"RunGroup/" + csi.RPCNodePublishVolume, func(h *harness) { h.createDBVolumes(1) },
			func(h *harness) error { _, err := h.e.RunGroup(h.ctx, dbGroup(1)); return err }},
		{"StopGroup/" + csi.RPCNodeUnpublishVolume, func(h *harness) {
			h.createDBVolumes(1)
			if _, err := h.e.RunGroup(h.ctx, dbGroup(1)); err != nil {
				h.t.Fatal(err)
			}
		}, func(h *harness) error { _, err := h.e.StopGroup(h.ctx, "db"); return err }},
		{"Detach/" + csi.RPCControllerUnpublishVolume, func(h *harness) {
			h.create(volume("v"))
			h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Internal)
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			_, _ = h.e.Release(h.ctx, "v", "a")
			h.faults.Clear()
		}, func(h *harness) error { _, err := h.e.Detach(h.ctx, "v", false); return err }},
	}, pathRPCCases()...) {
		t.Run(tc.rpc, func(t *testing.T) {
			h := newHarness(t, nil)
			h.servedOtherPlugin()
			tc.setup(h)
			gate := make(chan struct{})
			rpc := tc.rpc
			if i := strings.LastIndex(rpc, "/"); i >= 0 {
				rpc = rpc[i+1:]
			}
			h.faults.Inject(rpc, csitest.Fault{Gate: gate, Times: 1})
			done := make(chan error, 1)
			go func() { done <- tc.act(h) }()
			h.waitInFlight(gate, done)
			defer func() { close(gate); <-done }()

			o := h.otherProcess()
			ctx, cancel := context.WithTimeout(h.ctx, 15*time.Second)
			defer cancel()
			step := func(what string, fn func() error) {
				t.Helper()
				start := time.Now()
				err := fn()
				if took := time.Since(start); err != nil || took > 5*time.Second {
					t.Fatalf("while %s hangs, another process's %s on plugin \"other\" took %s: %v", tc.rpc, what, took, err)
				}
			}
			ov := volume("o")
			ov.PluginID = "other"
			step("volume create", func() error { _, err := o.CreateVolume(ctx, ov); return err })
			step("claim", func() error { _, err := o.Claim(ctx, ClaimRequest{VolumeID: "o", Alloc: "b"}); return err })
			step("release", func() error { _, err := o.Release(ctx, "o", "b"); return err })
			step("volume delete", func() error { return o.DeleteVolume(ctx, "o") })
			step("plugin status", func() error { _, err := o.PluginStatus(ctx, "other"); return err })
			step("dashboard", func() error { _, err := o.Dashboard(ctx, 10); return err })
			if strings.HasPrefix(rpc, "Node") {
				// The same plugin's other volume: no controller RPC of it is held.
				sv := volume("same")
				step("volume create on mem", func() error { _, err := o.CreateVolume(ctx, sv); return err })
				step("claim on mem", func() error { _, err := o.Claim(ctx, ClaimRequest{VolumeID: "same", Alloc: "b"}); return err })
				step("release on mem", func() error { _, err := o.Release(ctx, "same", "b"); return err })
				step("plugin status of mem", func() error { _, err := o.PluginStatus(ctx, "mem"); return err })
			}
			_ = fmt.Sprint()
		})
	}
}

// stoppableProxy listens on a new socket and forwards each connection it accepts to
// backend, until stop: then it accepts nothing more, as a plugin stopped with SIGSTOP, and the
// connections made to it since fill its accept queue.
func stoppableProxy(t *testing.T, backend string) (socket string, stop func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "h67")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket = filepath.Join(dir, "csi.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: socket}); err != nil {
		t.Fatal(err)
	}
	// A backlog of a few: with 1, two connections the engine made at once before stop (a
	// registration's fingerprint) found it full whenever the accept loop was slow to run on a
	// loaded machine (a CI run); stop fills whatever it is.
	if err := syscall.Listen(fd, 8); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), socket)
	lis, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	stopped := false
	var conns []net.Conn
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if stopped {
				mu.Unlock()
				c.Close()
				return
			}
			b, err := net.Dial("unix", backend)
			if err != nil {
				mu.Unlock()
				c.Close()
				continue
			}
			conns = append(conns, c, b)
			mu.Unlock()
			go func() { _, _ = io.Copy(b, c); b.Close() }()
			go func() { _, _ = io.Copy(c, b); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return socket, func() {
		mu.Lock()
		stopped = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		// The accept loop takes one more connection and ends; then the queue fills.
		for i := 0; i < 100; i++ {
			c, err := net.Dial("unix", socket)
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
		t.Fatal("the stopped listener's accept queue never filled")
	}
}

// docs/architecture.md: a Probe a plugin holds past the short timeout (a hung or SIGSTOPped
// process) is an unhealthy plugin, and the claim is refused, a conflict naming the plugin and
// `volctl plugin status`, with nothing written but the health. A plugin stopped long enough for
// the connections made to it to fill its accept queue was taken for one the probe "cannot
// reach" (no socket, nothing listening): the claim was admitted, recorded and left for
// reconcile, its error advising to check the socket's permissions. It is refused now
// (csi.Error.NotAccepting). Found by helper review67.
func TestClaimOnAStoppedPluginWithAFullAcceptQueueIsRefused(t *testing.T) {
	h := volumeOfAStoppedPlugin(t)
	if err := claimRefusedThroughStopped(t, h); strings.Contains(err.Error(), "permission") {
		t.Errorf("the claim's error advises checking permissions for a plugin that accepts nothing: %v", err)
	}
}

// volumeOfAStoppedPlugin is a harness with volume v of plugin "stopped", served through a
// proxy that then stops accepting, as a plugin stopped with SIGSTOP (stoppableProxy).
func volumeOfAStoppedPlugin(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	sock, stop := stoppableProxy(t, h.socket)
	h.registerPlugin("stopped", sock)
	v := volume("v")
	v.PluginID = "stopped"
	h.create(v)
	stop()
	return h
}

// claimRefusedThroughStopped claims v of h (volumeOfAStoppedPlugin) with the short timeouts
// of hungConfig, fails the test unless the claim fails with nothing recorded, and returns its
// error.
func claimRefusedThroughStopped(t *testing.T, h *harness) error {
	t.Helper()
	h.open(hungConfig())
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		t.Fatal("a claim through a stopped plugin succeeded")
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Errorf("a claim through a stopped plugin (it accepts no connection) was admitted and recorded: %+v", live)
	}
	return err
}
