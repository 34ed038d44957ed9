package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin whose NodeStageVolume or NodePublishVolume, once it answered OK, also mounts over one
// of the state dir's top levels (the state dir's staging or publish directory, or the state dir
// itself) and makes the path it was given inside, mounted: mountedOver looks at the plugin's
// staging directory and the claim's and alloc's publish directories only, as an honest state
// dir may be a mount point, and its staging and publish directories too. Before, a mount over
// publish/ was published, hiding every alloc's targets (alloc a's target of w led into the
// plugin's tmpfs: what a writes to w from then on is lost with it), and one over staging/ too,
// hiding every volume's staging; one over the state dir stopped on a lock file "removed by
// something else", naming no plugin. Now each is refused naming the plugin and the level, told
// from a mount there before by its coming while the plugin handled the RPC (mountedOverTop);
// once the mount is undone by hand, reconcile finishes the rollback, w's claim and data
// untouched, and the plugin well again publishes the claim. Real mounts, as root.
func TestPluginMountingOverTheStateDirsTopLevelsIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, rpc string
		up        int // the level mounted over, counted up from the RPC's path
		what      string
	}{
		{"staging", csi.RPCNodeStageVolume, 2, "the state dir's staging directory"},
		{"state dir at stage", csi.RPCNodeStageVolume, 3, "the state dir"},
		{"publish", csi.RPCNodePublishVolume, 3, "the state dir's publish directory"},
		{"state dir at publish", csi.RPCNodePublishVolume, 4, "the state dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := kernelHarness(t, nil)
			h.create(volume("v"))
			h.create(volume("w"))
			wTarget := h.claim(ClaimRequest{VolumeID: "w", Alloc: "a"}).TargetPath
			data := filepath.Join(wTarget, "w-data")
			if err := os.WriteFile(data, []byte("w"), 0o600); err != nil {
				t.Fatal(err)
			}
			over, unmountByHand := h.serveMountingOver(tc.rpc, tc.up)
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			dir := h.dir
			if tc.up < 4 && tc.rpc == csi.RPCNodePublishVolume || tc.up < 3 {
				dir = filepath.Join(h.dir, map[string]string{csi.RPCNodeStageVolume: stagingDir, csi.RPCNodePublishVolume: publishDir}[tc.rpc])
			}
			if over() != dir {
				t.Fatalf("the plugin mounted over %q, want %s", over(), dir)
			}
			if err == nil || !strings.Contains(err.Error(), tc.what+" "+dir+" leads to another mount") || !strings.Contains(err.Error(), `plugin "mem"`) {
				t.Fatalf("claim through a plugin that mounted over %s = %v\nwant it refused naming the plugin and %s", dir, err, tc.what)
			}
			if !strings.Contains(err.Error(), "umount -l "+dir) {
				t.Errorf("refusal = %v\nwant it to say how to undo the mount over %s", err, dir)
			}
			unmountByHand()
			rep, err := h.e.Reconcile(h.ctx)
			if dir == h.dir && err != nil {
				// The mount over the state dir hid its lock files too: the rollback stopped before
				// recording anything (the lock file "removed"), so reconcile drives the claim on,
				// and the plugin, whose mount at the path the unmount by hand took with it,
				// answers from a bare staging or target, refused and rolled back (checkTarget).
				for _, p := range rep.Problems {
					if p.VolumeID != "v" || !strings.Contains(p.Message, "rolled back") {
						t.Fatalf("reconcile once the mount over %s is undone: %+v, %v; want v's claim rolled back at most", dir, rep, err)
					}
				}
				rep, err = h.e.Reconcile(h.ctx)
			}
			if err != nil || len(rep.Problems) != 0 {
				t.Fatalf("reconcile once the mount over %s is undone: %+v, %v", dir, rep, err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("v's claims after reconcile = %+v, want none", live)
			}
			if got, err := os.ReadFile(data); err != nil || string(got) != "w" {
				t.Fatalf("w's data through its target after reconcile = %q, %v", got, err)
			}
			if live := h.liveClaims("w"); len(live) != 1 || !live[0].AtRest() {
				t.Fatalf("w's claims = %+v, want its one claim published still", live)
			}
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}) // the plugin well again: the honest claim
			h.release("v", "a")
			h.release("w", "a")
		})
	}
}

// The honest setup beside it: the state dir a mount point of its own (here bound onto itself,
// as a dedicated file system at /var/lib/volctl is one), and its staging and publish
// directories each a file system too, mounted before any claim: claims are published and
// released through them as through plain directories, as the mounts were there before the
// plugin was sent anything. Real mounts, as root.
func TestStateDirsTopLevelsMountedBeforehandAreNoRefusal(t *testing.T) {
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	h.create(volume("w"))
	for _, dir := range []string{h.dir, filepath.Join(h.dir, stagingDir), filepath.Join(h.dir, publishDir)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		src, fstype, flags := dir, "", uintptr(unix.MS_BIND)
		if dir != h.dir {
			src, fstype, flags = "tmpfs", "tmpfs", 0
		}
		if err := unix.Mount(src, dir, fstype, flags, "size=1m"); err != nil {
			t.Fatalf("mount %s on %s: %v", src, dir, err)
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	}
	for _, id := range []string{"v", "w"} {
		cl := h.claim(ClaimRequest{VolumeID: id, Alloc: "a"})
		if err := os.WriteFile(filepath.Join(cl.TargetPath, "x"), []byte(id), 0o600); err != nil {
			t.Fatalf("writing through %s's target: %v", id, err)
		}
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Fatalf("reconcile: %+v, %v; want nothing wrong", rep, err)
	}
	h.release("v", "a")
	h.release("w", "a")
}
