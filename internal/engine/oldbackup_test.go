package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// backupState copies the state database's files of h, its engine closed (a backup made with
// every volctl stopped), reopens it with cfg, and returns a restore: the engine closed, the
// WAL and shared-memory index removed and the copies put in their place, as the design
// document's backup section says.
func backupState(t *testing.T, h *harness, cfg Config) (restore func()) {
	t.Helper()
	h.e.Close()
	h.e = nil
	saved := map[string][]byte{}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(filepath.Join(h.dir, store.FileName+suffix))
		if err == nil {
			saved[suffix] = b
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	h.open(cfg)
	return func() {
		t.Helper()
		h.e.Close()
		h.e = nil
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(filepath.Join(h.dir, store.FileName+suffix)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		for suffix, b := range saved {
			if err := os.WriteFile(filepath.Join(h.dir, store.FileName+suffix), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		h.open(cfg)
	}
}

// An old backup restored: it has alloc a's claim published on a single-writer volume, which a
// released since; alloc c claimed the volume after, its target mounted, and the restored
// database has no record of it. Reconcile found a's target unmounted and restored a's claim:
// NodePublishVolume for an alloc that is gone, the volume published to two allocs beside
// c's live mount, a single-writer volume with two writers. It must not publish the volume
// again while a target of it no claim records is mounted: the claim is left for reconcile,
// the problem naming c's mount and what to do.
func TestReconcileDoesNotRestoreAClaimOfAnOldBackupBesideAMountItDoesNotKnow(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	a := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	restore := backupState(t, h, Config{Mounts: kernelMounts{}})
	h.release("v", "a")
	c := h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
	restore()
	h.mem.ResetCalls()

	rep, err := h.e.Reconcile(h.ctx)
	for _, call := range h.mem.Calls() {
		if call.RPC == csi.RPCNodePublishVolume {
			t.Fatalf("reconcile published volume v to alloc a again, beside alloc c's mount at %s it does not know: %+v (report %+v, %v)", c.TargetPath, call, rep, err)
		}
	}
	var said []string
	for _, p := range rep.Problems {
		said = append(said, p.Message)
	}
	all := strings.Join(said, "\n")
	t.Logf("reconcile beside %s: %v, problems:\n%s", c.TargetPath, err, all)
	for _, want := range []string{c.TargetPath, `alloc "a"`, "not restored"} {
		if err == nil || !strings.Contains(all, want) {
			t.Errorf("reconcile beside %s: %v, problems:\n%s\nwant one saying %q", c.TargetPath, err, all, want)
		}
	}
	if cls := h.liveClaims("v"); len(cls) != 1 || cls[0].ID != a.ID || cls[0].State != store.ClaimPublished {
		t.Fatalf("claims after reconcile: %+v; want a's held as the database has it", cls)
	}
	// Alloc a claiming again is refused alike, nothing sent.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), c.TargetPath) {
		t.Fatalf("alloc a claiming again beside %s: %v; want a conflict naming that mount", c.TargetPath, err)
	}
	for _, call := range h.mem.Calls() {
		if call.RPC == csi.RPCNodePublishVolume {
			t.Fatalf("the claim again published volume v to alloc a beside alloc c's mount: %+v", call)
		}
	}

	// Once c's mount is gone (c stopped; the plugin asked to unpublish it, as the CO that knew
	// c would), as the problem says, reconcile restores a's claim.
	pc, err := csi.New(csi.Config{NodeSocket: h.socket})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.NodeUnpublishVolume(h.ctx, csi.NodeUnpublishVolumeRequest{VolumeID: h.externalID("v"), TargetPath: c.TargetPath}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile once %s is unmounted: %v", c.TargetPath, err)
	}
	if cls := h.liveClaims("v"); len(cls) != 1 || cls[0].State != store.ClaimPublished || cls[0].Degraded || cls[0].NeedsReconcile {
		t.Fatalf("claims after reconcile: %+v; want a's published", cls)
	}
	h.release("v", "a")
}
