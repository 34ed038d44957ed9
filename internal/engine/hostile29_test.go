package engine

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// supervisorEnv starts the test binary as a supervisor that holds a plugin's listening socket
// (supervisorChild): the socket to listen on.
const supervisorEnv = "VOLCTL_TEST_SUPERVISOR"

// supervisorChild, when the test binary was started as a supervisor, listens on the socket the
// environment names and starts the test binary as an exec plugin (execPluginChild) that inherits
// the listening descriptor and accepts on it, as systemd's socket activation or a supervisor that
// listens and starts the plugin does: the process that listens (SO_PEERCRED's) stays while the
// plugin behind it is started anew. A line "restart <flags> <volumes>" on stdin stops the plugin
// and starts another with those flags (execPluginFlagsEnv; "-" for none) holding those volumes
// (comma-separated), which says "ready" on stdout. It ends with its stdin, the plugin with it.
// Otherwise it returns at once.
func supervisorChild() {
	socket := os.Getenv(supervisorEnv)
	if socket == "" {
		return
	}
	l, err := net.Listen("unix", socket)
	var lf *os.File
	if err == nil {
		lf, err = l.(*net.UnixListener).File()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(2)
	}
	var plugin *exec.Cmd
	var pluginIn *os.File
	start := func(flags, volumes string) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		var env []string
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != supervisorEnv && k != execPluginFlagsEnv && k != execPluginVolsEnv {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, execPluginFDEnv+"=3", execPluginFlagsEnv+"="+flags, execPluginVolsEnv+"="+volumes)
		cmd.ExtraFiles = []*os.File{lf}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		r, w, err := os.Pipe()
		if err == nil {
			cmd.Stdin = r
			err = cmd.Start()
			r.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "supervisor:", err)
			os.Exit(2)
		}
		plugin, pluginIn = cmd, w
	}
	stop := func() {
		pluginIn.Close() // the plugin ends with its stdin
		_ = plugin.Wait()
	}
	start("", "")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if f := strings.Fields(in.Text()); len(f) == 3 && f[0] == "restart" {
			stop()
			start(f[1], f[2])
		}
	}
	stop()
	os.Exit(0)
}

// startSupervisedPlugin starts the test binary as a supervisor holding the socket of plugin
// driver (supervisorChild); pid is the supervisor's.
func startSupervisedPlugin(t *testing.T, driver string) *execPlugin {
	t.Helper()
	return startExecPluginWith(t, driver, execPluginOptions{supervised: true})
}

// restart has the supervisor start its plugin anew, with flags, holding volumes.
func (p *execPlugin) restart(flags string, volumes ...string) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.stdin, "restart %s %s\n", flags, strings.Join(volumes, ",")); err != nil {
		p.t.Fatal(err)
	}
	p.ready()
}

// A plugin behind a supervisor that holds its listening socket (systemd's socket activation, a
// supervisor that listens and starts the plugin on the descriptor), started again with other
// flags: the same driver, a vendor_version of its own, and a max_volumes_per_node. The socket
// file is the one the stored fingerprint was taken through, and the process that listens
// (SO_PEERCRED's) is the supervisor, which runs what it ran: round 28's listener check sees
// nothing change, so the next process reused the stored fingerprint, no limit in it, and its
// admission let a second volume onto the node past the plugin's limit, sending
// ControllerPublishVolume, with no plugin-capabilities event and the stored fingerprint stale.
// So did a plugin whose launcher listened and exited, re-exec'ing itself with other flags (its
// driver's name, which round 28 asked, the same). The connection's other end is held by another
// process than the listener, so a process's first connection fingerprints the plugin afresh,
// and records what changed with its event.
func TestClaimThroughASupervisedPluginRestartedWithOtherFlags(t *testing.T) {
	t.Parallel()
	claimThroughASupervisedPluginRestartedWithOtherFlags(t)
}

// claimThroughASupervisedPluginRestartedWithOtherFlags is the test of that name, which
// TestSupervisedPluginWithoutSocketDiagnostics runs too: that one swaps peerInodeOf, so it
// stays serial, and must not be made parallel by calling the parallel test itself.
func claimThroughASupervisedPluginRestartedWithOtherFlags(t *testing.T) {
	const driver, flags = "mem.csi.volctl.test", "max-volumes=1,version=2.0.0"
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) *execPlugin
		again func(p *execPlugin, volumes ...string)
	}{
		{"supervisor restarts it", func(t *testing.T) *execPlugin { return startSupervisedPlugin(t, driver) },
			func(p *execPlugin, volumes ...string) { p.restart(flags, volumes...) }},
		{"launched, re-execs itself", func(t *testing.T) *execPlugin {
			return startExecPluginWith(t, driver, execPluginOptions{launcher: true})
		}, func(p *execPlugin, volumes ...string) {
			p.t.Helper()
			if _, err := fmt.Fprintf(p.stdin, "exec %s %s %s %s\n", os.Args[0], driver, strings.Join(volumes, ","), flags); err != nil {
				p.t.Fatal(err)
			}
			p.ready()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.start(t)
			h, db := execPluginHarness(t, p, Config{})
			db2 := h.create(volume("db2")).ExternalID
			tc.again(p, db, db2)

			h.open(Config{}) // the next process
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"}); err != nil {
				t.Fatalf("claim of db through the restarted plugin: %v", err)
			}
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db2", Alloc: "b"})
			if n := countOf(p.rpcs(driver), csi.RPCControllerPublishVolume); n != 1 {
				t.Errorf("ControllerPublishVolume sent %d times, want once (db's): db2's claim went past the max_volumes_per_node 1 the restarted plugin states (the claim: %v)", n, err)
			}
			if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "max_volumes_per_node") {
				t.Errorf("claim of db2 past the restarted plugin's limit: %v, want it refused by volctl naming max_volumes_per_node", err)
			}
			var pl store.Plugin
			h.update(func(tx *store.Tx) error { var err error; pl, err = tx.Plugins().Get("mem"); return err })
			if fp := pl.Fingerprint; fp.MaxVolumes != 1 || fp.Version != "2.0.0" {
				t.Errorf("stored fingerprint after the restart: max volumes %d, version %q; want 1, 2.0.0", fp.MaxVolumes, fp.Version)
			}
			if len(h.eventsSaying("plugin-capabilities", `vendor_version is now "2.0.0"`)) == 0 {
				t.Errorf("no plugin-capabilities event naming the new vendor_version")
			}
		})
	}
}

// countOf is how many of rpcs are rpc.
func countOf(rpcs []string, rpc string) int {
	n := 0
	for _, r := range rpcs {
		if r == rpc {
			n++
		}
	}
	return n
}

// BenchmarkAcceptedBy measures what every plugin connection now pays once its first data is in
// (servers.checkAccepted): one sock_diag request for the other end, and a read of the
// listener's descriptors. The server is in the same process, so the descriptors read are the
// test binary's, more than a plugin's.
func BenchmarkAcceptedBy(b *testing.B) {
	benchAcceptedBy(b, acceptedMemConn(b))
}

// benchAcceptedBy times acceptedBy on nc, whose listener (this process) accepted it.
func benchAcceptedBy(b *testing.B, nc net.Conn) {
	b.Helper()
	cred, err := csi.PeerCred(nc)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if got := acceptedBy(nc, cred.Pid); got != acceptsListener {
			b.Fatalf("acceptedBy = %q, want %q", got, acceptsListener)
		}
	}
}

// acceptedMemConn is a connection to a MemPlugin served in this process, read up to the
// server's first bytes (its settings): accepted, as servers.checkAccepted sees it.
func acceptedMemConn(b *testing.B) net.Conn {
	b.Helper()
	socket, _ := csitest.Serve(b, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	nc, err := net.Dial("unix", socket)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	if _, err := nc.Read(make([]byte, 1)); err != nil {
		b.Fatal(err)
	}
	return nc
}

// servers.checkAccepted on connections a supervised plugin accepts (another process than the
// supervisor that listens): recorded as the listener's when the plugin was fingerprinted (the
// listener handed its socket on since, without an exec), the connection is refused and the
// fingerprint stale; recorded as another process's, the first connection goes, and a second
// (gRPC's reconnect) goes too but has the next operation fingerprint the plugin again.
func TestConnectionAcceptedOtherwiseThanAtTheFingerprint(t *testing.T) {
	t.Parallel()
	p := startSupervisedPlugin(t, "mem.csi.volctl.test")
	accepted := func() (net.Conn, *unix.Ucred) {
		t.Helper()
		nc, err := net.Dial("unix", p.socket)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		if _, err := nc.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		cred, err := csi.PeerCred(nc)
		if err != nil {
			t.Fatal(err)
		}
		if int(cred.Pid) != p.pid {
			t.Fatalf("SO_PEERCRED names pid %d, want the supervisor's %d", cred.Pid, p.pid)
		}
		return nc, cred
	}
	nc, cred := accepted()
	if got := acceptedBy(nc, cred.Pid); got != acceptsOther {
		t.Fatalf("acceptedBy of a connection the supervised plugin accepted = %q, want %q", got, acceptsOther)
	}

	srv := serversOf(store.Plugin{ID: "mem", Fingerprint: store.Fingerprint{Sockets: []store.SocketIdentity{{Path: p.socket, Accepts: acceptsListener}}}})
	err := srv.checkAccepted(p.socket, cred, nc)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "accepted by another process") || !srv.execdSince() {
		t.Errorf("connection accepted by another process than the listener that accepted at the fingerprint: %v (stale %v), want it refused and the fingerprint stale", err, srv.execdSince())
	}

	srv = serversOf(store.Plugin{ID: "mem", Fingerprint: store.Fingerprint{Sockets: []store.SocketIdentity{{Path: p.socket, Accepts: acceptsOther}}}})
	if err := srv.checkAccepted(p.socket, cred, nc); err != nil || srv.execdSince() {
		t.Errorf("first connection to a plugin another process accepts for: %v (stale %v), want it through", err, srv.execdSince())
	}
	nc2, cred2 := accepted()
	if err := srv.checkAccepted(p.socket, cred2, nc2); err != nil || !srv.execdSince() {
		t.Errorf("second connection to a plugin another process accepts for: %v (stale %v), want it through, the connection not kept", err, srv.execdSince())
	}
}
