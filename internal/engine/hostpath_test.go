package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store/storetest"
)

// hostpathEngine is an engine with real mounts against volctl's own plugin (with attach, so
// the controller path and publish contexts are exercised), with a fault counter in front.
type hostpathEngine struct {
	ctx    context.Context
	e      *Engine
	plugin *hostpath.Plugin
	faults *csitest.Faults
	state  string
	root   string // the plugin's --root
}

// claimNew creates a 1 MiB volume id on the plugin "hp" with one access mode and claims it for
// alloc.
func (h *hostpathEngine) claimNew(t *testing.T, id, alloc string, mode spec.AccessMode) ClaimInfo {
	t.Helper()
	sv := spec.Volume{ID: id, Name: id, Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(mode)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: id, Alloc: alloc})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// writeThenReboot writes "kept" to keep.txt through a claim's target on volume vol, then
// unmounts the target and the volume's staging, as a reboot leaves them. It returns the
// staging path.
func (h *hostpathEngine) writeThenReboot(t *testing.T, cl ClaimInfo, vol string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "keep.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	staging := stagingPath(h.e.StateDir(), "hp", vol)
	for _, p := range []string{cl.TargetPath, staging} { // a reboot
		if err := unix.Unmount(p, 0); err != nil {
			t.Fatal(err)
		}
	}
	return staging
}

// requireKept fails unless keep.txt, as writeThenReboot wrote it, reads "kept" through target.
func requireKept(t *testing.T, target, what string) {
	t.Helper()
	if got, err := os.ReadFile(filepath.Join(target, "keep.txt")); err != nil || string(got) != "kept" {
		t.Fatalf("data through %s: %q, %v", what, got, err)
	}
}

func newHostpathEngine(t *testing.T) *hostpathEngine {
	t.Helper()
	hostpathtest.RequireMount(t)
	return newHostpathEngineWith(t, hostpath.Config{Root: hostpathtest.MountDir(t), NodeID: "n1", EnableAttach: true})
}

// newHostpathEngineWith is newHostpathEngine with the plugin's config cfg (its Root the
// plugin's --root).
func newHostpathEngineWith(t *testing.T, cfg hostpath.Config) *hostpathEngine {
	t.Helper()
	return newHostpathEngineAt(t, hostpathtest.MountDir(t), cfg)
}

// newHostpathEngineAt is newHostpathEngineWith with the engine's state dir state; opts are
// added to the plugin's server (an interceptor recording what it was asked).
func newHostpathEngineAt(t *testing.T, state string, cfg hostpath.Config, opts ...csitest.ServeOption) *hostpathEngine {
	t.Helper()
	h := &hostpathEngine{ctx: context.Background(), faults: csitest.NewFaults(), state: state, root: cfg.Root}
	p, err := hostpath.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.plugin = p
	socket, _ := csitest.Serve(t, append([]csitest.ServeOption{csitest.WithServer(p), csitest.WithFaults(h.faults)}, opts...)...)
	storetest.Seed(t, h.state) // the schema database, copied, as newHarness's
	e, err := Open(h.ctx, Config{StateDir: h.state, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h.e = e
	if _, err := e.RegisterPlugin(h.ctx, spec.Plugin{ID: "hp", Type: spec.PluginMonolith, Socket: socket}); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHostpathDataFlowsBetweenClaims: data written through one claim's target is read through
// another reader's target, the reader cannot write, and the data lands in the volume's
// directory. Real bind mounts, as root.
func TestHostpathDataFlowsBetweenClaims(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	sv := spec.Volume{ID: "data", Name: "data", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeSingleWriter)}}
	v, err := h.e.CreateVolume(h.ctx, sv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "data", Alloc: "reader", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.TargetPath, "hello.txt"), []byte("through the writer"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(r.TargetPath, "hello.txt"))
	if err != nil || string(got) != "through the writer" {
		t.Fatalf("read through the reader's target: %q, %v", got, err)
	}
	err = os.WriteFile(filepath.Join(r.TargetPath, "nope.txt"), []byte("x"), 0o644)
	if !errors.Is(err, unix.EROFS) {
		t.Fatalf("write through a read-only claim: %v, want EROFS", err)
	}
	dir, ok := h.plugin.VolumePath(v.ExternalID)
	if !ok {
		t.Fatal("volume path unknown to the plugin")
	}
	if got, err := os.ReadFile(filepath.Join(dir, "hello.txt")); err != nil || string(got) != "through the writer" {
		t.Fatalf("the volume's directory has %q, %v", got, err)
	}

	for _, c := range []ClaimInfo{w, r} {
		if _, err := h.e.Release(h.ctx, "data", c.Alloc); err != nil {
			t.Fatal(err)
		}
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(h.state))
	if err != nil || len(mounts) != 0 {
		t.Fatalf("mounts left under the state dir after release: %d (%v)", len(mounts), err)
	}
	// The staging directory is kept, empty and unmounted, while the volume is registered; it
	// goes with the volume.
	staging := stagingPath(h.state, "hp", "data")
	if entries, err := os.ReadDir(staging); err != nil || len(entries) != 0 {
		t.Errorf("staging dir after the releases: %v, %v; want it kept, empty", entries, err)
	}
	if err := h.e.DeleteVolume(h.ctx, "data"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(staging); !os.IsNotExist(err) {
		t.Errorf("staging dir left behind after the volume's delete: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(staging)); !os.IsNotExist(err) {
		t.Errorf("the plugin's staging dir left behind after its only volume's delete: %v", err)
	}
}

// TestHostpathRestore: a published claim whose mount was removed behind volctl's back is
// re-published by reconcile without a new claim and without ControllerPublishVolume; after a
// simulated reboot (every mount gone) the staging is restored too.
func TestHostpathRestore(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	cl := h.claimNew(t, "data", "a", spec.SingleNodeWriter)
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "keep.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	staging := stagingPath(h.state, "hp", "data")
	publishes := h.faults.Calls(csi.RPCControllerPublishVolume)

	// 1. The target's mount disappears (someone unmounted it).
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatal(err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].Kind != "restored" {
		t.Fatalf("reconcile = %+v, %v", rep, err)
	}
	if !hostpathtest.Mounted(t, cl.TargetPath) {
		t.Fatal("target not mounted again")
	}
	if b, err := os.ReadFile(filepath.Join(cl.TargetPath, "keep.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("data after restore: %q %v", b, err)
	}
	if n := h.faults.Calls(csi.RPCControllerPublishVolume); n != publishes {
		t.Fatalf("ControllerPublishVolume sent again by restore (%d -> %d)", publishes, n)
	}
	after, _ := h.e.ClaimInfo(h.ctx, "data", "a")
	if after.ID != cl.ID || after.State != "published" {
		t.Fatalf("restore made a new claim or changed it: %+v", after)
	}

	// 2. A reboot: every mount is gone, the staging too.
	stages := h.faults.Calls(csi.RPCNodeStageVolume)
	for _, p := range []string{cl.TargetPath, staging} {
		if err := unix.Unmount(p, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if !hostpathtest.Mounted(t, cl.TargetPath) || !hostpathtest.Mounted(t, staging) {
		t.Fatal("target or staging not restored after the reboot")
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != stages+1 {
		t.Fatalf("NodeStageVolume calls %d -> %d, want one more", stages, n)
	}
	// 3. Nothing to do when everything is in place; the mount table is read once per pass.
	rep, err = h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 0 {
		t.Fatalf("idle reconcile = %+v, %v", rep, err)
	}
	if _, err := h.e.Release(h.ctx, "data", "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	if err := h.faults.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreReadsTheMountTableOnce: restoring many claims costs one read of the table.
func TestRestoreReadsTheMountTableOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
	var targets []string
	for _, a := range []string{"a", "b", "c", "d"} {
		targets = append(targets, h.claim(ClaimRequest{VolumeID: "v", Alloc: a}).TargetPath)
	}
	h.mounts.reset()
	h.mounts.markGone(targets[1])
	h.mounts.markGone(targets[3])
	h.mem.ResetCalls()
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil || len(rep.Actions) != 2 {
		t.Fatalf("reconcile = %+v, %v", rep, err)
	}
	if h.mounts.reads != 1 {
		t.Fatalf("mount table read %d times for one pass", h.mounts.reads)
	}
	if got := h.rpcs(); len(got) != 2 || got[0] != csi.RPCNodePublishVolume || got[1] != csi.RPCNodePublishVolume {
		t.Fatalf("restore RPCs = %v, want two NodePublishVolume and nothing else", got)
	}
}
