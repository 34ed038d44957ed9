package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/store"
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
			_, data, over, unmountByHand, err := h.claimVBesideW(tc.rpc, tc.up)
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
			h.onlyWPublished(data)
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

// serveMountingOnlyOver serves the harness's plugin again on its socket, with its faults, as a
// plugin whose rpc (a teardown: NodeUnpublishVolume, NodeUnstageVolume), once it answered OK,
// mounts a tmpfs over the directory up levels above the path it was given, and nothing at the
// path: the path is no mount point, as the teardown asked, while the mount over the directory
// hides what volctl keeps there. It returns the directory, known once the RPC came, and what
// unmounts it by hand (also run at the test's end).
func (h *harness) serveMountingOnlyOver(rpc string, up int) (dir func() string, unmountByHand func()) {
	h.t.Helper()
	return h.serveMounting(rpc, up, false)
}

// The same at the way back: a plugin whose NodeUnpublishVolume or NodeUnstageVolume, once it
// undid the claim's mount and answered OK, mounts over the state dir's publish or staging
// directory. Before, the release was done and the claim freed, alloc b's target of w (or w's
// staging, which w's claims are published from) hidden under the plugin's mount with nothing
// left to say so. Now the release stops naming the plugin and the directory, the claim left
// on its way back; once the mount is undone by hand, reconcile frees it, w's claim and data
// untouched. Real mounts, as root.
func TestPluginMountingOverTheStateDirsTopLevelsAtTeardownIsNotFreed(t *testing.T) {
	for _, tc := range []struct {
		rpc  string
		up   int
		sub  string
		what string
	}{
		{csi.RPCNodeUnpublishVolume, 3, publishDir, "the state dir's publish directory"},
		{csi.RPCNodeUnstageVolume, 2, stagingDir, "the state dir's staging directory"},
	} {
		t.Run(tc.rpc, func(t *testing.T) {
			h := kernelHarness(t, nil)
			h.create(volume("v"))
			h.create(volume("w"))
			wTarget := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"}).TargetPath
			data := filepath.Join(wTarget, "w-data")
			if err := os.WriteFile(data, []byte("w"), 0o600); err != nil {
				t.Fatal(err)
			}
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			over, unmountByHand := h.serveMountingOnlyOver(tc.rpc, tc.up)
			_, err := h.e.Release(h.ctx, "v", "a")
			dir := filepath.Join(h.dir, tc.sub)
			if over() != dir {
				t.Fatalf("the plugin mounted over %q, want %s", over(), dir)
			}
			if err == nil || !strings.Contains(err.Error(), tc.what+" "+dir+" leads to another mount") || !strings.Contains(err.Error(), `plugin "mem"`) {
				t.Fatalf("release through a plugin that mounted over %s = %v\nwant it stopped naming the plugin and %s", dir, err, tc.what)
			}
			if live := h.liveClaims("v"); len(live) != 1 || !live[0].Releasing {
				t.Fatalf("v's claims after the stop = %+v, want its claim on its way back", live)
			}
			unmountByHand()
			if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
				t.Fatalf("reconcile once the mount over %s is undone: %+v, %v", dir, rep, err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("v's claims after reconcile = %+v, want none", live)
			}
			if got, err := os.ReadFile(data); err != nil || string(got) != "w" {
				t.Fatalf("w's data through its target after reconcile = %q, %v", got, err)
			}
			h.release("w", "b")
		})
	}
}

// Two processes claim two volumes while the plugin, restarted, states a lower
// max_volumes_per_node (2, with v1 claimed) than the stored fingerprint (no limit): each claim
// is admitted from the fingerprint, and each, once its connection fingerprinted the plugin,
// has the limit applied again, counting the other's claim on its way in. The first to look is
// refused (nothing lost: rolled back, nothing sent), and its refusal said "release one of them
// first" naming v3, whose claim another volctl was publishing: no claim to release, and no
// command given. Now it says v3 has no claim at rest, its claim under way, and gives the
// pasteable release command of v1's claim, the one at rest; the claim tried again once v3's
// has settled is refused naming v3's release command, which run as printed lets it through.
func TestNodeLimitRefusalSaysWhichVolumesAreOnTheirWay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, id := range []string{"v1", "v2", "v3"} {
		h.create(volume(id))
	}
	h.claim(ClaimRequest{VolumeID: "v1", Alloc: "a"})
	h.restartPlugin(func(c *csitest.MemConfig) { c.MaxVolumes = 2 }, "v1", "v2", "v3")

	// As Claim does, under each volume's lock, with a probe that did not reach the plugin: both
	// admitted from the stored fingerprint, as two processes racing are.
	type admitted struct {
		cl     store.Claim
		v      store.Volume
		ld     *loaded
		unlock func()
	}
	var adm []admitted
	for _, r := range []ClaimRequest{{VolumeID: "v2", Alloc: "b"}, {VolumeID: "v3", Alloc: "c"}} {
		unlock := h.lockVolume(r.VolumeID)
		cl, v, ld, _, err := h.e.admit(h.ctx, r, true, &claimProbe{plugin: "mem"})
		if err != nil {
			unlock()
			t.Fatalf("admission of %s from the stored fingerprint: %v", r.VolumeID, err)
		}
		adm = append(adm, admitted{cl, v, ld, unlock})
	}
	_, err := h.e.driveClaim(h.ctx, adm[0].cl, adm[0].v, adm[0].ld, store.OutcomeRolledBack)
	adm[0].unlock()
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "allows 2 volume(s) per node") {
		t.Fatalf("v2's claim past the limit = %v, want a conflict naming the limit", err)
	}
	if !strings.Contains(err.Error(), "`volctl volume release v1 --alloc a`") {
		t.Errorf("v2's refusal = %v\nwant it to give the release command of v1's claim, at rest", err)
	}
	if !strings.Contains(err.Error(), `"v3" (`+"`volctl volume status v3`"+` shows where it is)`) || !strings.Contains(err.Error(), "no claim at rest") ||
		strings.Contains(err.Error(), "--alloc c") {
		t.Errorf("v2's refusal = %v\nwant it to say v3's claim is under way, with no release command for it", err)
	}
	if live := h.liveClaims("v2"); len(live) != 0 {
		t.Fatalf("v2's claims after the refusal = %+v, want none", live)
	}
	if _, err := h.e.driveClaim(h.ctx, adm[1].cl, adm[1].v, adm[1].ld, store.OutcomeRolledBack); err != nil {
		t.Fatalf("v3's claim, v2's refused: %v", err)
	}
	adm[1].unlock()

	// Tried again: refused at admission now, each volume's release command given; the one for
	// v3, run as printed, frees the place.
	_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v2", Alloc: "b"})
	const v3Release = "`volctl volume release v3 --alloc c`"
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), v3Release) {
		t.Fatalf("v2's claim again = %v, want a conflict giving %s", err, v3Release)
	}
	words := strings.Fields(strings.Trim(v3Release, "`"))
	if words[2] != "release" || words[4] != "--alloc" {
		t.Fatalf("advised command %q is not a release", v3Release)
	}
	h.release(words[3], words[5])
	h.claim(ClaimRequest{VolumeID: "v2", Alloc: "b"})
}
