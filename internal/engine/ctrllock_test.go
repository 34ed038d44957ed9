package engine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// Plugin IDs registered on one socket are one plugin process, so one controller: the
// controller lock is the socket's, however it is spelled (another ID on the same path, the path
// not in its clean form, a symlinked directory, a bind-mounted directory). While a create through "mem" holds the controller, a create through
// any other ID on that socket waits for it and sends nothing; otherwise two commands would run
// controller RPCs on one controller at once through two IDs.
func TestControllerLockIsTheSocketsWhateverIDOrSpelling(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	dir, base := filepath.Dir(h.socket), filepath.Base(h.socket)
	link := filepath.Join(t.TempDir(), "run")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	spellings := []struct{ id, socket string }{
		{"same", h.socket},
		{"unclean", dir + "//./" + base},
		{"symlinked", filepath.Join(link, base)},
	}
	if os.Geteuid() == 0 {
		bound := t.TempDir()
		if err := syscall.Mount(dir, bound, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind-mount %s: %v", dir, err)
		}
		t.Cleanup(func() { _ = syscall.Unmount(bound, syscall.MNT_DETACH) })
		spellings = append(spellings, struct{ id, socket string }{"bindmounted", filepath.Join(bound, base)})
	} else {
		t.Log("not root: the spelling through a bind-mounted directory is not tried (a bind mount needs root)")
	}
	for _, s := range spellings {
		h.registerPlugin(s.id, s.socket)
	}

	gate, done := createHoldingTheController(h)
	for _, s := range spellings {
		ctx, cancel := endWhenWaitingForLock(h.ctx)
		sv := volume("b-" + s.id)
		sv.PluginID = s.id
		_, err := h.e.CreateVolume(ctx, sv)
		cancel()
		if n := h.faults.Calls(csi.RPCCreateVolume); n != 1 {
			t.Errorf("CreateVolume sent %d times: through plugin %q (socket %s) while a create through \"mem\" held the controller", n, s.id, s.socket)
		}
		if err == nil || !strings.Contains(err.Error(), "waiting for the lock") {
			t.Errorf("create through %q while the controller is busy: %v; want it to wait for the controller lock", s.id, err)
		}
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("create through mem: %v", err)
	}
}

// createHoldingTheController starts a create of volume "a" through "mem" and returns once its
// CreateVolume is in flight, holding the controller lock until gate is closed; done has the
// create's error.
func createHoldingTheController(h *harness) (gate chan struct{}, done chan error) {
	gate = make(chan struct{})
	h.faults.Inject(csi.RPCCreateVolume, csitest.Fault{Gate: gate, Times: 1})
	done = make(chan error, 1)
	go func() {
		_, err := h.e.CreateVolume(h.ctx, volume("a"))
		done <- err
	}()
	for h.faults.Held() == 0 {
		time.Sleep(time.Millisecond)
	}
	return gate, done
}

// harnessWithVolumeThroughMem2 is a harness with a second plugin ID, "mem2", registered on the
// plugin's socket spelled another way, and volume "v" created through it.
func harnessWithVolumeThroughMem2(t *testing.T) *harness {
	h := newHarness(t, nil)
	h.registerPlugin("mem2", filepath.Dir(h.socket)+"//"+filepath.Base(h.socket))
	sv := volume("v")
	sv.PluginID = "mem2"
	h.create(sv)
	return h
}

// The agent never stops a plugin that may hold a mount (PluginMounts). A mount made through
// another plugin ID registered on the same socket is the same process's: it counts for every ID
// on that socket, however it is spelled, or the agent would restart the process under it.
func TestPluginMountsCountEveryIDOnTheSocket(t *testing.T) {
	t.Parallel()
	h := harnessWithVolumeThroughMem2(t)
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})

	for _, id := range []string{"mem", "mem2"} {
		m, err := h.e.PluginMounts(h.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Any() {
			t.Errorf("PluginMounts(%q) = %+v with volume v staged and published through mem2 on the same socket", id, m)
		}
	}
	otherSocket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(csitest.DefaultMemConfig())))
	h.registerPlugin("other", otherSocket)
	if m, err := h.e.PluginMounts(h.ctx, "other"); err != nil || m.Any() {
		t.Errorf("PluginMounts of a plugin on another socket = %+v, %v; want none", m, err)
	}
}

// The agent counts a plugin's mounts and stops it holding the plugin's publish lock
// (HoldPluginMountsOf), so that no publish starts meanwhile. A publish through another plugin ID
// registered on the same socket reaches the same process: it waits for that lock too, rather
// than sending NodeStageVolume or NodePublishVolume to a plugin being stopped.
func TestPublishLockIsTheSocketsWhateverID(t *testing.T) {
	t.Parallel()
	h := harnessWithVolumeThroughMem2(t)

	claimWhileHoldingMounts(t, h, "mem", "v", "mem2")
}

// claimWhileHoldingMounts holds the plugin's mounts as the agent does (HoldPluginMountsOf of
// held), claims volume meanwhile, and fails the test if NodeStageVolume or NodePublishVolume
// was sent through the plugin ID through, as it would be to a plugin being stopped.
func claimWhileHoldingMounts(t *testing.T, h *harness, held, volume, through string) {
	t.Helper()
	m, release, err := h.e.HoldPluginMountsOf(h.ctx, held, nil)
	if err != nil || m.Any() {
		t.Fatalf("HoldPluginMountsOf(%+q) = %+v, %v; want no mounts", held, m, err)
	}
	ctx, cancel := endWhenWaitingForLock(h.ctx)
	_, err = h.e.Claim(ctx, ClaimRequest{VolumeID: volume, Alloc: "a"})
	cancel()
	release()
	for _, rpc := range []string{csi.RPCNodeStageVolume, csi.RPCNodePublishVolume} {
		if n := h.faults.Calls(rpc); n != 0 {
			t.Errorf("%s sent %d times through %+q while the agent held %+q's publish lock (same socket): %v", rpc, n, through, held, err)
		}
	}
}

// A socket's directory removed and made again while a command holds the controller lock (a
// service manager's runtime directory is removed when the plugin stops and made again when it
// starts: a new inode, the same path): a command started afterwards names the same socket, so it
// must wait for the lock the first one holds, not take a lock of its own and run controller RPCs
// beside it on the one controller.
func TestControllerLockHoldsAcrossTheSocketDirRecreated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	gate, done := createHoldingTheController(h)
	remakeSocketDir(h)
	other := otherProcess(h)
	ctx, cancel := endWhenWaitingForLock(h.ctx)
	_, err := other.CreateVolume(ctx, volume("b"))
	cancel()
	if n := h.faults.Calls(csi.RPCCreateVolume); n != 1 {
		t.Errorf("CreateVolume sent %d times: a create started after the socket's directory was made again did not wait for the controller lock another process's create held (%v)", n, err)
	}
	if err == nil || !strings.Contains(err.Error(), "waiting for the lock") {
		t.Errorf("create while the controller is busy: %v; want it to wait for the controller lock", err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("first create: %v", err)
	}
}

// The directory made again, as above, and the socket spelled otherwise by the later command's
// plugin ID (not in its clean form, through a symlinked directory): the directory's inode no
// longer ties the two together, so only the lock of the socket's resolved path does, and it
// must be the same whatever the spelling: a lock on the path as registered (socketName not
// applied) would let a create through another spelling run beside the one holding the
// controller, and no other test sees it, the inode's lock covering the spellings meanwhile.
func TestControllerLockHoldsAcrossTheSocketDirRecreatedWhateverSpelling(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	dir, base := filepath.Dir(h.socket), filepath.Base(h.socket)
	link := filepath.Join(t.TempDir(), "run")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	spellings := []struct{ id, socket string }{
		{"unclean", dir + "//./" + base},
		{"symlinked", filepath.Join(link, base)},
	}
	for _, s := range spellings {
		h.registerPlugin(s.id, s.socket)
	}

	gate, done := createHoldingTheController(h)
	remakeSocketDir(h)
	other := otherProcess(h)
	for _, s := range spellings {
		ctx, cancel := endWhenWaitingForLock(h.ctx)
		sv := volume("b-" + s.id)
		sv.PluginID = s.id
		_, err := other.CreateVolume(ctx, sv)
		cancel()
		if n := h.faults.Calls(csi.RPCCreateVolume); n != 1 {
			t.Errorf("CreateVolume sent %d times: through plugin %q (socket %s), its directory made again, while a create through \"mem\" held the controller", n, s.id, s.socket)
		}
		if err == nil || !strings.Contains(err.Error(), "waiting for the lock") {
			t.Errorf("create through %q while the controller is busy: %v; want it to wait for the controller lock", s.id, err)
		}
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatalf("create through mem: %v", err)
	}
}

// remakeSocketDir makes the harness's socket directory again: a new inode at the same path, the
// listening socket moved into it (a bound socket keeps serving when renamed).
func remakeSocketDir(h *harness) {
	h.t.Helper()
	dir, base := filepath.Dir(h.socket), filepath.Base(h.socket)
	old := dir + ".old"
	if err := os.Rename(dir, old); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(old, base), h.socket); err != nil {
		h.t.Fatal(err)
	}
}

// otherProcess is another volctl process on the harness's state dir: its own connections,
// closed when the test ends.
func otherProcess(h *harness) *Engine {
	h.t.Helper()
	other, err := Open(h.ctx, Config{StateDir: h.dir, Retry: fastRetry, Mounts: h.mounts,
		Timeouts: csi.Timeouts{Short: 2 * time.Second, Long: 5 * time.Second}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { other.Close() })
	return other
}
