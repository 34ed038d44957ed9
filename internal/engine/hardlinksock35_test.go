package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// anotherPluginsRenamedSocket is anotherPluginsSocket with plugin "other"'s listener bound
// under a name its socket no longer has: it bound bound.sock, and its file was renamed to
// other.sock, where it is registered (a plugin started on a temporary name, or a listener in a
// container, whose bound name is none of the host's paths). getpeername then names neither
// plugin's path: the listener's bound name tells nothing.
func (h *harness) anotherPluginsRenamedSocket() (*csitest.MemPlugin, string) {
	h.t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	other := csitest.NewMemPlugin(cfg)
	dir := h.t.TempDir()
	bound, socket := filepath.Join(dir, "bound.sock"), filepath.Join(dir, "other.sock")
	csitest.ServeAt(h.t, bound, csitest.WithServer(other))
	if err := os.Rename(bound, socket); err != nil {
		h.t.Fatal(err)
	}
	h.registerPlugin("other", socket)
	v := volume("db2")
	v.PluginID = "other"
	h.create(v)
	return other, socket
}

// TestHardLinkOfAnotherPluginsSocketWhoseBoundNameTellsNothing: plugin mem's socket path made a
// hard link of plugin other's socket file (or a bind mount of it), other's listener bound under
// a name that is neither path. Both are the same driver, so the fingerprint a new file gets
// passed, and with nothing in the name to tell whose file it is, mem's claim of db went to
// other's process (ControllerPublishVolume, NodeStageVolume, NodePublishVolume of other's
// storage of the same external ID, with db's secrets). Whose it is is told by the record: other
// was fingerprinted through this very file (device and inode, this boot) at its own path, mem
// through another file at mem's. Refused before any RPC, naming plugin other. The honest
// case: other, whose bound name tells nothing either, goes on on its own socket, which its own
// record names.
func TestHardLinkOfAnotherPluginsSocketWhoseBoundNameTellsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, socket := h.anotherPluginsRenamedSocket()
	h.create(volume("db"))
	aliasSocket(t, "hard link", h.socket, socket)
	sent := len(other.Calls())
	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "other"`) || !strings.Contains(err.Error(), h.socket) {
		t.Errorf("claim of mem's db through a hard link of plugin other's socket: %v; want a conflict naming plugin \"other\" and %s", err, h.socket)
	}
	if calls := other.Calls()[sent:]; len(calls) > 0 {
		t.Errorf("plugin other was sent %d RPCs for plugin mem, the first %s; want none", len(calls), calls[0].RPC)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db2", Alloc: "b"}); err != nil {
		t.Errorf("claim of other's db2 on its own socket: %v", err)
	}
}
