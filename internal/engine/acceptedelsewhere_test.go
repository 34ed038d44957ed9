package engine

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/store"
)

// handOff has the exec plugin start a worker holding volumes that accepts on its listening
// socket: alone (share false: the listener stops accepting, a graceful in-place upgrade) or
// beside it (pre-forked workers).
func (p *execPlugin) handOff(share bool, volumes ...string) {
	p.t.Helper()
	cmd := "handoff"
	if share {
		cmd = "share"
	}
	if _, err := fmt.Fprintf(p.stdin, "%s %s\n", cmd, strings.Join(volumes, ",")); err != nil {
		p.t.Fatal(err)
	}
	p.ready() // the worker's
}

// storedAccepts is what the plugin "mem"'s row records accepted its socket's connection.
func (h *harness) storedAccepts() string {
	h.t.Helper()
	var p store.Plugin
	h.update(func(tx *store.Tx) error { var err error; p, err = tx.Plugins().Get("mem"); return err })
	if len(p.Fingerprint.Sockets) != 1 {
		h.t.Fatalf("stored socket identity %+v, want one socket", p.Fingerprint.Sockets)
	}
	return p.Fingerprint.Sockets[0].Accepts
}

// identityRPCsIn are the identity RPCs among rpcs (the fingerprint's), Probe aside.
func identityRPCsIn(rpcs []string) []string {
	var out []string
	for _, rpc := range rpcs {
		if !slices.Contains(volumeRPCsOf([]string{rpc}), rpc) && rpc != "Probe" {
			out = append(out, rpc)
		}
	}
	return out
}

// refusedTruly checks err, the first operation's through a plugin fingerprinted while its
// listener accepted, now accepted by another process: nil, or the refusal saying the next
// operation fingerprints the plugin again (which the caller checks).
func refusedTruly(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !strings.Contains(err.Error(), "accepted by another process") {
		t.Errorf("%s: %v, want it through or refused for the connection accepted by another process", what, err)
	}
}

// A plugin that listens itself, fingerprinted so (accepts: listener), that hands its listening
// socket to a worker it starts (a graceful in-place upgrade: the listener stays, the worker
// accepts): servers.checkAccepted refused the worker's connection, saying the next operation
// fingerprints the plugin again, but nothing had it do so: the row still said `listener`, so
// every operation after it reused the stored fingerprint and was refused the same way, in the
// same process, in every new one, and `plugin status` showed the plugin unhealthy for good. A
// refusal records the socket as accepted by another process, so the next operation fingerprints
// the plugin (the five identity RPCs) and goes on with the same driver.
func TestPluginThatHandsItsSocketToAWorkerIsFingerprintedAgain(t *testing.T) {
	t.Parallel()
	const driver = "mem.csi.volctl.test"
	for _, first := range []string{"claim", "plugin status"} {
		t.Run(first, func(t *testing.T) {
			plugin := startExecPlugin(t, driver)
			h, ext := execPluginHarness(t, plugin, Config{})
			if got := h.storedAccepts(); got != acceptsListener {
				t.Fatalf("stored accepts %q at registration, want %q", got, acceptsListener)
			}
			plugin.handOff(false, ext)
			h.open(Config{}) // the next process: the stored fingerprint reused

			switch first {
			case "claim":
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
				refusedTruly(t, "the first claim", err)
			case "plugin status":
				infos, err := h.e.PluginStatus(h.ctx, "mem")
				if err != nil || len(infos) != 1 {
					t.Fatalf("plugin status: %v %v", infos, err)
				}
				if !infos[0].Healthy {
					refusedTruly(t, "the first plugin status", fmt.Errorf("%s", infos[0].LastError))
				}
			}
			if got := h.storedAccepts(); got != acceptsOther {
				t.Errorf("stored accepts %q after the worker accepted, want %q", got, acceptsOther)
			}
			before := len(plugin.rpcs(driver))
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
				t.Fatalf("the same process's next claim through the plugin its worker serves: %v", err)
			}
			if got, want := identityRPCsIn(plugin.rpcs(driver)[before:]), []string{"GetPluginInfo", "GetPluginCapabilities", "ControllerGetCapabilities", "NodeGetCapabilities", "NodeGetInfo"}; !slices.Equal(got, want) {
				t.Errorf("identity RPCs of the next operation: %v, want %v (the plugin fingerprinted again)", got, want)
			}

			h.open(Config{}) // a process after
			if _, err := h.e.Release(h.ctx, "db", "a"); err != nil {
				t.Errorf("release in the next process: %v", err)
			}
			h.open(Config{})
			infos, err := h.e.PluginStatus(h.ctx, "mem")
			if err != nil || len(infos) != 1 || !infos[0].Healthy {
				t.Errorf("plugin status in a process after: %+v %v, want it healthy", infos, err)
			}
		})
	}
}

// The same with a worker accepting beside the listener (pre-forked workers): which process
// accepts a connection is the kernel's choice, and every process whose first connection the
// worker accepted was refused (2 to 6 of 10). Once a refusal saw the worker accept, the socket
// is never recorded as the listener's again (until its file changes): the listener accepting a
// later fingerprint's connection does not undo it.
func TestPluginWithAWorkerAcceptingBesideItsListener(t *testing.T) {
	t.Parallel()
	const driver = "mem.csi.volctl.test"
	plugin := startExecPlugin(t, driver)
	h, ext := execPluginHarness(t, plugin, Config{})
	plugin.handOff(true, ext)
	plugin.command("pause", "paused") // the worker accepts the next process's connection
	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	refusedTruly(t, "the claim whose connection the worker accepted", err)
	if err == nil {
		if _, err := h.e.Release(h.ctx, "db", "a"); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	plugin.command("resume", "resumed")
	for i := range 10 {
		h.open(Config{}) // a process of its own: either may accept its connection
		if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
			t.Errorf("process %d's claim: %v", i, err)
			continue
		}
		if _, err := h.e.Release(h.ctx, "db", "a"); err != nil {
			t.Errorf("process %d's release: %v", i, err)
		}
	}
	if got := h.storedAccepts(); got != acceptsOther {
		t.Errorf("stored accepts %q, want %q", got, acceptsOther)
	}
}

// A socket recorded as accepted by another process stays so through a fingerprint taken
// afresh on the same file (checkServers: the listener of pre-forked workers may accept that
// fingerprint's connection, and recording `listener` had the next worker's refused again), or
// on a file whose identity was forgotten (a stale fingerprint); a new socket file is told
// anew by the connection that fingerprints it.
func TestSocketSeenAcceptedElsewhereStaysSoUntilItsFileChanges(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "csi.sock")
	listen := func() socketID {
		t.Helper()
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return identify(sock)[0]
	}
	was := listen()
	recorded := store.SocketIdentity{Path: sock, Dev: was.dev, Inode: was.inode, CtimeNs: was.ctime, Accepts: acceptsOther}
	forgotten := store.SocketIdentity{Path: sock, Accepts: acceptsOther}
	for _, tc := range []struct {
		name   string
		stored store.SocketIdentity
		file   func() socketID
		want   string
	}{
		{"the same file", recorded, func() socketID { return was }, acceptsOther},
		{"its identity forgotten", forgotten, func() socketID { return was }, acceptsOther},
		{"a new file", recorded, func() socketID {
			if err := os.Remove(sock); err != nil {
				t.Fatal(err)
			}
			return listen()
		}, ""},
	} {
		srv := serversOf(store.Plugin{ID: "mem", Fingerprint: store.Fingerprint{Sockets: []store.SocketIdentity{tc.stored}}})
		if err := checkServers([]socketID{tc.file()}, srv); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := srv.acceptsOf(sock); got != tc.want {
			t.Errorf("%s: accepts %q once checked afresh, want %q", tc.name, got, tc.want)
		}
	}
}

// Without the kernel's unix socket diagnostics (CONFIG_UNIX_DIAG off), acceptedBy asked them
// first and said `unknown` even of a listener gone, which needs none; `unknown` was reused with
// no RPC, so a plugin whose launcher handed it the socket and exited, exec'ing another driver
// since, was sent the next process's claim RPCs: round 28's protection gone. The launched
// plugin's tests run with the diagnostics failing.
func TestLaunchedPluginWithoutSocketDiagnostics(t *testing.T) {
	noSocketDiagnostics(t)
	t.Run("exec'd another driver", TestClaimThroughALaunchedPluginThatExecdAnotherDriver)
	t.Run("unchanged", TestLaunchedPluginUnchangedIsFingerprintedNotRecorded)
}

// A row recorded with `unknown` of a listener gone (by round 29's acceptedBy, without socket
// diagnostics) has the plugin fingerprinted on a process's first connection all the same.
func TestListenerGoneIsAcceptedElsewhereWhateverAcceptsSays(t *testing.T) {
	t.Parallel()
	gone := store.SocketIdentity{Path: "/run/csi.sock", Inode: 1, Listener: "pid 5 " + listenerGone, Accepts: acceptsUnknown}
	if !acceptedElsewhere([]store.SocketIdentity{gone}) {
		t.Errorf("acceptedElsewhere(%+v) = false, want true: the listener was gone", gone)
	}
}

// BenchmarkAcceptedByManyDescriptors is BenchmarkAcceptedBy with the listener (this process)
// holding 10,000 descriptors more, opened before the connection was accepted (its descriptor
// late in /proc/<pid>/fd) or after (early): a plugin, or pid 1 under socket activation, with
// many open files.
func BenchmarkAcceptedByManyDescriptors(b *testing.B) {
	open := func(b *testing.B) {
		for range 10000 {
			f, err := os.Open(os.DevNull)
			if err != nil {
				b.Skipf("10,000 descriptors more: %v (raise the open files limit)", err)
			}
			b.Cleanup(func() { f.Close() })
		}
	}
	for _, tc := range []struct {
		name   string
		before bool
	}{{"accepted-late", true}, {"accepted-early", false}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.before {
				open(b)
			}
			nc := acceptedMemConn(b)
			if !tc.before {
				open(b)
			}
			benchAcceptedBy(b, nc)
		})
	}
}
