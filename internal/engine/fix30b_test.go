package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
)

// The tests of review30b's findings in anotherPluginsSocket (socketalias.go): a plugin's socket
// directory made another plugin's since it was fingerprinted, a listener's bound name that is
// neither path, and a link made before the plugin it points at was registered.

// nodeOnePlugin is a mem plugin on mem's node, another process than the harness's.
func nodeOnePlugin() *csitest.MemPlugin {
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	return csitest.NewMemPlugin(cfg)
}

// noCallsSince fails for every RPC plugin other was sent since it had sent calls.
func noCallsSince(t *testing.T, other *csitest.MemPlugin, sent int) {
	t.Helper()
	for _, c := range other.Calls()[sent:] {
		t.Errorf("plugin other was sent %s for plugin mem", c.RPC)
	}
}

// mem's socket directory replaced by a symlink to other's socket directory, both sockets named
// csi.sock (as CSI plugins' are): one entry to sameEntry, so mem's claim went to other's process
// with mem's volume's secrets. It was not one entry when mem was fingerprinted: refused.
func TestSocketDirSymlinkedToAnotherPluginsDirIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, socket, ext2 := h.anotherPluginsSocket()
	if ext := h.create(volume("db")).ExternalID; ext != ext2 || filepath.Base(socket) != filepath.Base(h.socket) {
		t.Fatalf("premise: external IDs %q %q, sockets %s %s", ext, ext2, socket, h.socket)
	}
	dir := filepath.Dir(h.socket)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir); os.RemoveAll(dir + ".old") })
	if err := os.Symlink(filepath.Dir(socket), dir); err != nil {
		t.Fatal(err)
	}
	sent := len(other.Calls())
	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "other"`) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("claim of mem's db through a symlinked dir to other's socket dir: %v, want a conflict naming plugin other and the directory", err)
	}
	noCallsSince(t, other, sent)

	// Registering mem again on its path says the two are one process on purpose.
	h.registerPlugin("mem", h.socket)
	if infos, err := h.e.PluginStatus(h.ctx, "mem"); err != nil || !infos[0].Healthy {
		t.Errorf("mem registered again on its path, one process with other on purpose: %+v %v", infos, err)
	}
}

// The same with other's socket directory bind-mounted on mem's.
func TestSocketDirBindMountedFromAnotherPluginsIsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("a bind mount of a directory needs root")
	}
	h := newHarness(t, nil)
	other, socket, _ := h.anotherPluginsSocket()
	h.create(volume("db"))
	dir := filepath.Dir(h.socket)
	if err := syscall.Mount(filepath.Dir(socket), dir, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	sent := len(other.Calls())
	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "other"`) {
		t.Errorf("claim of mem's db with other's socket dir bind-mounted on mem's: %v, want a conflict naming plugin other", err)
	}
	noCallsSince(t, other, sent)
}

// other's listener bound another name than other's path (a plugin in a container binding
// /csi/csi.sock, or one that binds a temporary name and renames it into place): that name,
// neither path, turned the check off, and a plain symlink at mem's path to other's socket passed.
func TestSymlinkToAPluginWhoseListenerBoundAnotherNameIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other := nodeOnePlugin()
	dir := t.TempDir()
	bound := filepath.Join(dir, "csi.sock.tmp")
	csitest.ServeAt(t, bound, csitest.WithServer(other))
	socket := filepath.Join(dir, "csi.sock")
	if err := os.Rename(bound, socket); err != nil {
		t.Fatal(err)
	}
	h.registerPlugin("other", socket)
	v := volume("db2")
	v.PluginID = "other"
	ext2 := h.create(v).ExternalID
	if ext := h.create(volume("db")).ExternalID; ext != ext2 {
		t.Fatalf("premise: %q %q", ext, ext2)
	}
	aliasSocket(t, "symlink", h.socket, socket)
	sent := len(other.Calls())
	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "other"`) {
		t.Errorf("claim of mem's db through a symlink to other's socket (bound as %s): %v, want a conflict naming plugin other", bound, err)
	}
	noCallsSince(t, other, sent)
}

// The link made before the plugin it points at is registered: mem fingerprinted through it
// while no registered plugin is on the target, then other registered on its own path. Its
// stored file identity was reused: nothing was checked until the plugin restarted.
func TestLinkMadeBeforeItsTargetWasRegisteredIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db"))
	other, _, _ := linkThenRegisterOther(t, h)
	sent := len(other.Calls())
	h.open(Config{})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "a"})
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `plugin "other"`) {
		t.Errorf("claim of mem's db through a symlink to other's socket, other registered after the link: %v, want a conflict naming plugin other", err)
	}
	noCallsSince(t, other, sent)
}

// The same in one process, whose connection to mem is cached: refused as soon as other is
// registered, and after other's process restarts alike (not only then).
func TestLinkMadeBeforeItsTargetWasRegisteredIsRefusedInTheSameProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other, socket, stop := linkThenRegisterOther(t, h)
	for _, when := range []string{"after other registered", "after other's process restarted"} {
		infos, err := h.e.PluginStatus(h.ctx, "mem")
		if err != nil || infos[0].Healthy || !strings.Contains(infos[0].LastError, `is plugin "other"'s socket`) {
			t.Errorf("mem %s: %+v %v, want unhealthy, naming plugin other", when, infos, err)
		}
		if infos, err := h.e.PluginStatus(h.ctx, "other"); err != nil || !infos[0].Healthy {
			t.Errorf("other %s: %+v %v", when, infos, err)
		}
		stop()
		stop = csitest.ServeAt(t, socket, csitest.WithServer(other)) // a new socket file
	}
}

// Not refused: one plugin registered through a symlink to where its listener binds (systemd's
// ListenStream), restarted; two IDs on one socket whose listener bound another name (a
// container's /csi/csi.sock), and a third through a symlinked directory; and all three after
// their directory is made again at its path (a service manager's runtime directory).
func TestOneSocketUnderOneEntryIsNotRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	x := nodeOnePlugin()
	real, stop := csitest.Serve(t, csitest.WithServer(x))
	link := filepath.Join(t.TempDir(), "x.sock")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	h.registerPlugin("x", link)
	stop()
	csitest.ServeAt(t, real, csitest.WithServer(x))
	h.open(Config{})
	if infos, err := h.e.PluginStatus(h.ctx, "x"); err != nil || !infos[0].Healthy {
		t.Errorf("x through a symlink after a restart: %+v %v", infos, err)
	}

	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	serve := func() func() {
		bound := filepath.Join(dir, "bound.sock")
		stop := csitest.ServeAt(t, bound, csitest.WithServer(nodeOnePlugin()))
		if err := os.Rename(bound, filepath.Join(dir, "csi.sock")); err != nil {
			t.Fatal(err)
		}
		return stop
	}
	stop = serve()
	h.registerPlugin("c1", filepath.Join(dir, "csi.sock"))
	h.registerPlugin("c2", filepath.Join(dir, "csi.sock"))
	dl := filepath.Join(t.TempDir(), "d")
	if err := os.Symlink(dir, dl); err != nil {
		t.Fatal(err)
	}
	h.registerPlugin("c3", filepath.Join(dl, "csi.sock"))
	for _, when := range []string{"registered", "their directory made again"} {
		h.open(Config{})
		for _, id := range []string{"c1", "c2", "c3"} {
			if infos, err := h.e.PluginStatus(h.ctx, id); err != nil || !infos[0].Healthy {
				t.Errorf("%s, %s: %+v %v", id, when, infos, err)
			}
		}
		stop()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stop = serve()
	}
}

// linkThenRegisterOther makes mem's socket path a symlink to the socket of a plugin served
// beside it, has mem fingerprinted through the link (healthy: no registered plugin is there
// yet), then registers that plugin as "other": the link made before its target was registered.
func linkThenRegisterOther(t *testing.T, h *harness) (other *csitest.MemPlugin, socket string, stop func()) {
	t.Helper()
	other = nodeOnePlugin()
	socket, stop = csitest.Serve(t, csitest.WithServer(other))
	aliasSocket(t, "symlink", h.socket, socket)
	h.open(Config{})
	if infos, err := h.e.PluginStatus(h.ctx, "mem"); err != nil || !infos[0].Healthy {
		t.Fatalf("premise: mem through the link before other is registered: %+v %v", infos, err)
	}
	h.registerPlugin("other", socket)
	return other, socket, stop
}
