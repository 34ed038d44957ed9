package engine

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo: a read_only volume_mount
// remounted writable by hand (mount -o remount,bind,rw DEST) is made read-only again by a
// reconcile pass, which says so (an action and a "restore" event, settleLocked) when the
// claim's target is still mounted. When the target was lost too (unmounted by hand, the bind
// at DEST left), the pass restores the claim, and the restore's bind (drive, ClaimPublished:
// `_, err := e.bind(ctx, cl)`) makes the volume_mount read-only again and throws away what it
// did: the report says only "restored claim ... at TARGET" and the event log nothing of a
// mount changed under a running alloc. Correct: the restore reports and records the
// volume_mount made read-only again, as settleLocked does.
// Found by helper review77 (crash).
func TestRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo(t *testing.T) {
	h, _, dest := boundByOwnGroup(t, true)
	cls, err := viewOne(h.ctx, h.e.store, func(tx *store.Tx) ([]store.Claim, error) { return tx.Claims().ByVolume("data") })
	if err != nil || len(cls) != 1 {
		t.Fatalf("claims on data: %+v, %v", cls, err)
	}
	target := cls[0].TargetPath
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID, ""); err != nil { // by hand: writable
		t.Fatal(err)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY != 0 {
		t.Fatalf("the remount left %s read-only (flags %#x): the test tests nothing", dest, f)
	}
	if err := unix.Unmount(target, 0); err != nil { // the target lost, the bind left
		t.Fatalf("unmount the claim's target %s: %v", target, err)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("reconcile: %v (%+v)", err, rep)
	}
	restored := false
	said := false
	for _, a := range rep.Actions {
		restored = restored || strings.Contains(a.Message, "restored claim")
		said = said || strings.Contains(a.Message, dest)
	}
	if !restored {
		t.Fatalf("reconcile did not restore the claim whose target %s was unmounted (actions %+v, problems %+v): not the case this tests", target, rep.Actions, rep.Problems)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY == 0 {
		t.Fatalf("reconcile left the read_only volume_mount %s writable (flags %#x): not the defect this test is about", dest, f)
	}
	if !said {
		t.Errorf("reconcile's restore made the read_only volume_mount %s read-only again but its report says nothing of it (actions %+v)", dest, rep.Actions)
	}
	if evs := readOnlyAgainLogged(t, h.ctx, h.e, dest); evs != nil {
		t.Errorf("the event log says nothing of volume_mount %s made read-only again by the restore: %+v", dest, evs)
	}
}

// TestRedrivenRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo: as
// TestRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo, but the restore's first
// NodePublishVolume fails, the claim held degraded, and the next pass re-drives it
// (reconcileClaim): its bind made the volume_mount read-only again, and the report said only
// "restored degraded claim". Found by helper review77 (own5), by hand.
func TestRedrivenRestoreThatMakesAReadOnlyVolumeMountReadOnlyAgainSaysSo(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("data", capab(spec.MultiNodeMultiWriter)))
	dest := filepath.Join(hostpathtest.MountDir(t), "0")
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{{Name: "d", Type: "csi", Source: "data", AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: filepath.Dir(dest) + "/{index}", ReadOnly: true}}}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	target := h.liveClaims("data")[0].TargetPath
	if err := unix.Mount("", dest, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_NOSUID, ""); err != nil { // by hand: writable
		t.Fatal(err)
	}
	// A reboot that left the bind (a mount namespace of its own, say): the target and staging
	// gone, the plugin started again on the same storage.
	st, _ := h.staging("data")
	for _, m := range []string{target, st.StagingPath} {
		if err := unix.Unmount(m, 0); err != nil {
			t.Fatalf("unmount %s: %v", m, err)
		}
	}
	var cfg csitest.MemConfig
	h.mem.Reconfigure(func(c *csitest.MemConfig) { cfg = *c })
	h.stopServe()
	p := csitest.NewMemPlugin(cfg)
	p.AddVolume(csi.Volume{ID: h.externalID("data")})
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(p), csitest.WithFaults(h.faults))
	h.faults.FailOnce(csi.RPCNodePublishVolume, codes.Internal)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("premise: the restore whose NodePublishVolume failed succeeded")
	}
	if now := h.liveClaims("data")[0]; !now.Degraded {
		t.Fatalf("premise: the claim is not held degraded after its restore failed: %+v", now)
	}
	rep, err := h.e.Reconcile(h.ctx)
	if err != nil {
		t.Fatalf("the re-driven restore: %v %+v", err, rep.Problems)
	}
	if f := statfsFlags(t, dest); f&unix.ST_RDONLY == 0 {
		t.Fatalf("the re-driven restore left the read_only volume_mount %s writable: not the case this tests", dest)
	}
	said := false
	for _, a := range rep.Actions {
		said = said || strings.Contains(a.Message, dest) && strings.Contains(a.Message, "read-only again")
	}
	if !said {
		t.Errorf("the re-driven restore made the read_only volume_mount %s read-only again, and its report says nothing of it: %+v", dest, rep.Actions)
	}
}
