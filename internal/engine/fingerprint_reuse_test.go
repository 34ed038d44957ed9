package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// identityRPCs counts the fingerprint's RPCs the plugin has received.
func identityRPCs(mem *csitest.MemPlugin) int {
	n := 0
	for _, c := range mem.Calls() {
		switch c.RPC {
		case csi.RPCGetPluginInfo, csi.RPCGetPluginCapabilities, csi.RPCControllerGetCapabilities,
			csi.RPCNodeGetCapabilities, csi.RPCNodeGetInfo:
			n++
		}
	}
	return n
}

// A new process (a new Engine) connecting to a plugin whose socket is still the file the
// stored fingerprint was taken through reuses that fingerprint: no identity RPC, no commit for
// it. Once the plugin restarts (a new socket file on the same path), the next process
// fingerprints it again.
func TestNewProcessReusesFingerprintOfSamePluginInstance(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))

	h.open(Config{})
	before := identityRPCs(h.mem)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	h.open(Config{})
	h.release("db", "web-0")
	if n := identityRPCs(h.mem) - before; n != 0 {
		t.Errorf("claim and release in new processes, plugin not restarted: %d identity RPCs, want 0 (the stored fingerprint reused)", n)
	}

	h.stopServe()
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(h.mem))
	h.open(Config{})
	before = identityRPCs(h.mem)
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0"})
	if n := identityRPCs(h.mem) - before; n == 0 {
		t.Errorf("claim after the plugin restarted: no identity RPC; want it fingerprinted again")
	}
	var fp store.Fingerprint
	if err := h.e.store.View(h.ctx, func(tx *store.Tx) error {
		p, err := tx.Plugins().Get("mem")
		fp = p.Fingerprint
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(fp.Sockets) != 1 || fp.Sockets[0].Path != h.socket || fp.Sockets[0].Inode == 0 {
		t.Errorf("stored fingerprint's sockets = %+v; want the identity of %s", fp.Sockets, h.socket)
	}
}

// An impostor that comes up on a registered plugin's socket after a restart is still caught
// by a new process: its socket file is new, so the stored fingerprint is not reused, and the
// new fingerprint's driver is checked against the registered one.
func TestRestartedImpostorCaughtByNewProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("a"))
	h.create(volume("b"))
	h.open(Config{})
	h.claim(ClaimRequest{VolumeID: "a", Alloc: "web"}) // the fingerprint recorded with the socket's identity

	impostor := h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Name = "impostor.csi.example" })

	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "b", Alloc: "job"})
	const want = `now served by "impostor.csi.example", registered as "mem.csi.volctl.test"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("claim in a new process with an impostor on the socket: %v; want an error saying %s", err, want)
	}
	for _, rpc := range volumeRPCs(impostor) {
		t.Errorf("the impostor received %s", rpc)
	}
}
