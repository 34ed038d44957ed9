package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

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
	TestClaimThroughASupervisedPluginRestartedWithOtherFlags(t)
}

// acceptedElsewhere of each kind of record: `unknown` is not told apart from another process.
func TestAcceptsUnknownIsFingerprintedOnEachProcess(t *testing.T) {
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
