package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
)

// TestDegradedRestoreDoesNotTakeAMountMadeAtItsTargetSinceForTheVolume: after a reboot a
// claim's restore failed (NodeStageVolume refused once), leaving it held, degraded, its target an
// empty directory; before the next pass a tmpfs was mounted at that target (by hand, or by a
// program) and written into. The plugin is the common kind whose NodePublishVolume answers OK
// without mounting when the target is a mount point already (idempotence by "is it a mount
// point?"). Before, the next reconcile sent NodePublishVolume at that target, took the plugin's
// OK (checkTarget asks only that the target be a mount point) and recorded the tmpfs as what the
// target shows: the claim reported restored, exit 0, its alloc writing into the tmpfs, and no
// view ever calling the target covered. The claim records no NodePublishVolume sent since its
// publish was accepted, so the mount is not the plugin's: the restore refuses, as a conflict
// naming the umount, the claim held degraded with the tmpfs left as it is; once it is unmounted,
// reconcile restores the volume there. Real mounts, as root.
// Found by helper review76 (restore).
func TestDegradedRestoreDoesNotTakeAMountMadeAtItsTargetSinceForTheVolume(t *testing.T) {
	t.Parallel()
	h, cl, st := rebootedClaim(t, bindsTheStagingUnlessMounted)

	h.faults.FailOnce(csi.RPCNodeStageVolume, codes.Internal)
	if _, err := h.e.Reconcile(h.ctx); err == nil {
		t.Fatal("premise: reconcile with NodeStageVolume failing restored the claim")
	}
	if now := h.liveClaims("v")[0]; !now.Degraded || now.State == store.ClaimPublished {
		t.Fatalf("premise: after the failed restore the claim is %s, degraded %v; want it held degraded", now.State, now.Degraded)
	}
	// Mounted at the target since, and written into.
	tmpfsFile := tmpfsWrittenAt(t, cl.TargetPath)
	publishes := h.faults.Calls(csi.RPCNodePublishVolume)

	rep, err := h.e.Reconcile(h.ctx)
	if err == nil || len(rep.Problems) != 1 {
		t.Fatalf("reconcile with a tmpfs mounted at the degraded claim's target since: %v, problems %+v, actions %+v; want the restore refused", err, rep.Problems, rep.Actions)
	}
	umount := "`umount " + cl.TargetPath + "`"
	for _, want := range []string{"mounted since", umount, "`volctl reconcile`"} {
		if !strings.Contains(rep.Problems[0].Message, want) {
			t.Errorf("reconcile's refusal does not say %q: %s", want, rep.Problems[0].Message)
		}
	}
	if n := h.faults.Calls(csi.RPCNodePublishVolume); n != publishes {
		t.Errorf("NodePublishVolume sent %d time(s) at a target something else is mounted at; want none", n-publishes)
	}
	if _, err := os.Stat(tmpfsFile); err != nil {
		t.Errorf("the tmpfs at the target is no longer there after the refusal: %v", err)
	}
	if now := h.liveClaims("v")[0]; !now.Degraded || now.State == store.ClaimPublished || now.Target != store.TargetAccepted {
		t.Errorf("after the refusal the claim is %s, degraded %v, target %v; want it held degraded, recording no publish sent", now.State, now.Degraded, now.Target)
	}

	// The advice followed: the tmpfs unmounted, reconcile restores the volume there.
	if err := unix.Unmount(cl.TargetPath, 0); err != nil {
		t.Fatalf("unmount the tmpfs as advised: %v", err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once the tmpfs is unmounted: %v %+v", err, rep.Problems)
	}
	if now := h.liveClaims("v")[0]; now.Degraded || now.State != store.ClaimPublished {
		t.Errorf("after the advice was followed the claim is %s, degraded %v; want it restored", now.State, now.Degraded)
	}
	if err := os.WriteFile(filepath.Join(cl.TargetPath, "after-the-restore"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(st.StagingPath, "after-the-restore")); err != nil {
		t.Errorf("what is written at the restored target is not on the volume's staging: %v", err)
	}
}

// rebootedClaim claims volume v for alloc a on a kernel harness (real mounts, as root), then
// stands for a reboot: every mount gone, the plugin started again, its NodePublishVolume doing
// at a target what makeTarget (when given) makes of the staging's record: the target's maker
// (csitest.MemConfig.MakeTarget).
func rebootedClaim(t *testing.T, makeTarget func(st store.Staging) func(string) error) (*harness, ClaimInfo, store.Staging) {
	t.Helper()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	st, _ := h.staging("v")
	ext := h.externalID("v")
	for _, p := range []string{cl.TargetPath, st.StagingPath} {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
			t.Fatalf("unmount %s: %v", p, err)
		}
	}
	h.stopServe()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID, cfg.MountRoot = "node-1", t.TempDir()
	if makeTarget != nil {
		cfg.MakeTarget = makeTarget(st)
	}
	p := csitest.NewMemPlugin(cfg)
	p.AddVolume(csi.Volume{ID: ext})
	t.Cleanup(func() { _ = p.UnmountAll() })
	h.stopServe = csitest.ServeAt(t, h.socket, csitest.WithServer(p), csitest.WithFaults(h.faults))
	return h, cl, st
}

// bindsTheStagingUnlessMounted is the target maker of the common plugin idempotent by "is it a
// mount point?": NodePublishVolume answers OK, mounting nothing, at a target that is a mount
// point already; at one that is not, it binds the volume's staging st there.
func bindsTheStagingUnlessMounted(st store.Staging) func(string) error {
	return func(target string) error {
		mounted, err := mountinfo.Mounted(target)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("this test's plugin: %s: %v", target, err)
		}
		if mounted {
			return nil
		}
		if err := os.MkdirAll(target, 0o750); err != nil {
			return err
		}
		return unix.Mount(st.StagingPath, target, "", unix.MS_BIND, "")
	}
}

// tmpfsWrittenAt mounts a tmpfs at target since (made where it is missing), unmounted when the
// test ends, and writes a file into it, whose path it returns.
func tmpfsWrittenAt(t *testing.T, target string) string {
	t.Helper()
	if err := os.MkdirAll(target, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", target, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a tmpfs at the target %s: %v", target, err)
	}
	t.Cleanup(func() {
		for unix.Unmount(target, unix.MNT_DETACH) == nil {
		}
	})
	written := filepath.Join(target, "in-the-tmpfs")
	if err := os.WriteFile(written, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return written
}
