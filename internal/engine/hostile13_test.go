package engine

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"golang.org/x/sys/unix"
)

// A plugin that does not stage answers NodePublishVolume OK having bind-mounted at the claim's
// target another claim's target (another volume's: its data, or its device for a block
// claim, which the alloc would read and write beside that volume's own claims), or another
// alloc's publish directory or one of its volume directories (on the state dir's disk). No
// staging path is involved, so the comparison with volctl's directories and other volumes'
// stagings passed it and the claim was published; so was a claim of a plugin that stages
// from another alloc's publish directory. A target that is another volume's published
// target, or any directory of the publish tree other than its own, is refused, naming it,
// and the claim rolled back. Two claims of one volume share its root, as they must: the
// second is published. Real mounts, as root.
func TestTargetBoundFromAnotherClaimsTargetIsRefused(t *testing.T) {
	t.Parallel()
	wTarget := func(dir string) string {
		return publishPath(dir, "b", "w", false, spec.FileSystem, spec.MultiNodeMultiWriter)
	}
	wDevice := func(dir string) string {
		return publishPath(dir, "b", "w", false, spec.BlockDevice, spec.MultiNodeMultiWriter)
	}
	for _, tc := range []struct {
		name  string
		block bool // v and w are block volumes: a target is the device's file
		// stage: the plugin stages, v from there (its target the staging path, and the wrong
		// bind too); else it does not stage, and publishes v from there
		stage bool
		from  func(dir string) string // what the plugin mounts at v's target for alloc a
		want  func(dir string) string
	}{
		{name: "other volume's target", from: wTarget,
			want: func(dir string) string {
				return `volume "w"'s target ` + wTarget(dir) + ` (alloc "b"'s claim) bind-mounted`
			}},
		{name: "other volume's device", block: true, from: wDevice,
			want: func(dir string) string {
				return `volume "w"'s target ` + wDevice(dir) + ` (alloc "b"'s claim) bind-mounted`
			}},
		{name: "other alloc's publish directory", from: func(dir string) string { return filepath.Join(dir, "publish", "b") },
			want: func(dir string) string {
				return "a bind mount of " + filepath.Join(dir, "publish", "b") + ", a directory of volctl's state dir"
			}},
		{name: "other volume's target directory", from: func(dir string) string { return filepath.Dir(wTarget(dir)) },
			want: func(dir string) string {
				return "a bind mount of " + filepath.Dir(wTarget(dir)) + ", a directory of volctl's state dir"
			}},
		{name: "staged from another alloc's publish directory", stage: true, from: func(dir string) string { return filepath.Join(dir, "publish", "b") },
			want: func(dir string) string {
				return "a bind mount of " + filepath.Join(dir, "publish", "b") + ", a directory of volctl's state dir"
			}},
	} {
		for _, lookup := range publishLookups {
			t.Run(tc.name+"/"+lookup.name, func(t *testing.T) {
				var dir string
				h := kernelHarness(t, func(c *csitest.MemConfig) {
					if tc.stage {
						stageVFrom(c, func(string) string { return tc.from(dir) })
						return
					}
					c.Node.StageUnstageVolume = false
					c.PublishFrom = func(_, target string) string {
						if strings.Contains(target, "/publish/a/v/") {
							return tc.from(dir)
						}
						return ""
					}
				})
				dir = h.dir
				lookup.use(h)
				att, wData := spec.FileSystem, func(target string) string { return filepath.Join(target, "ws-data") }
				if tc.block {
					att, wData = spec.BlockDevice, func(target string) string { return target }
				}
				w := h.wHoldingData(att)
				// v's first claim, and a second of the same volume: one root, as it must be.
				others := []string{"c", "d"}
				if tc.stage {
					others = nil // v is staged from the wrong place at its first claim
				}
				for _, alloc := range others {
					h.claim(ClaimRequest{VolumeID: "v", Alloc: alloc, AttachmentMode: att})
				}
				h.mem.ResetCalls()

				cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: att})
				target := publishPath(h.dir, "a", "v", false, att, spec.MultiNodeMultiWriter)
				if err == nil {
					seen, _ := os.ReadFile(wData(cl.TargetPath))
					t.Fatalf("claim published at %s, a bind of %s (what the alloc reads there: %q), want it refused", cl.TargetPath, tc.from(dir), seen)
				}
				want := `plugin "mem" answered OK for volume "v", but the target ` + target + " is " + tc.want(h.dir)
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
					t.Fatalf("claim = %v\nwant an error saying %s, and the claim rolled back", err, want)
				}
				lookup.check(t, h, tc.block)
				if live := h.liveClaims("v"); len(live) != len(others) {
					t.Fatalf("claims of v after the refusal = %+v, want those of %v only", live, others)
				}
				if got := h.mem.CallCount(csi.RPCNodeUnpublishVolume); got != 1 {
					t.Errorf("NodeUnpublishVolume sent %d times, want once (the plugin asked to remove what it made)", got)
				}
				if _, err := os.Stat(wData(w.TargetPath)); err != nil {
					t.Errorf("volume w's claim after v's refusal: %v", err)
				}
				for _, alloc := range others {
					h.release("v", alloc)
				}
				h.release("w", "b")
			})
		}
	}
}

// wHoldingData creates volumes "w" and "v" (multi-node multi-writer, attachment att), claims w
// for alloc "b" and writes "w's data" into it (ws-data in its directory, or its device file),
// which a claim of v must never show.
func (h *harness) wHoldingData(att spec.AttachmentMode) ClaimInfo {
	h.t.Helper()
	capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: att}
	h.create(volume("w", capability))
	h.create(volume("v", capability))
	w := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b", AttachmentMode: att})
	data := w.TargetPath
	if att == spec.FileSystem {
		data = filepath.Join(data, "ws-data")
	}
	if err := os.WriteFile(data, []byte("w's data"), 0o600); err != nil {
		h.t.Fatal(err)
	}
	return w
}

// stageVFrom makes the plugin's NodeStageVolume of volume "v" bind-mount from(staging) at the
// staging path instead of the volume; other volumes it stages as it does.
func stageVFrom(c *csitest.MemConfig, from func(staging string) string) {
	c.StageFrom = func(staging string) string {
		if filepath.Base(staging) == "v" {
			return from(staging)
		}
		return ""
	}
}

// A restore checks every target it publishes again against the publish tree, walked once for
// the pass (publishIndex) rather than once a claim: after a reboot, a plugin that does not
// stage binds another volume's published target at this claim's target. The restore refuses
// it, naming that target, and the other volume's data is left as it was.
func TestRestoreRefusesATargetBoundFromAnotherClaimsTarget(t *testing.T) {
	t.Parallel()
	h, v, w := wBoundAtVsTargetAfterAReboot(t)
	rep, err := h.e.Reconcile(h.ctx)
	want := `volume "w"'s target ` + w.TargetPath + ` (alloc "b"'s claim) bind-mounted`
	if err == nil && len(rep.Problems) == 0 {
		seen, _ := os.ReadFile(filepath.Join(v.TargetPath, "ws-data"))
		t.Fatalf("restore published v at %s, a bind of w's target (what the alloc reads there: %q), want it refused", v.TargetPath, seen)
	}
	if !strings.Contains(fmt.Sprint(err, rep.Problems), want) {
		t.Fatalf("reconcile = %v, problems %v\nwant the restore to say %s", err, rep.Problems, want)
	}
	if data, err := os.ReadFile(filepath.Join(w.TargetPath, "ws-data")); err != nil || string(data) != "w's data" {
		t.Errorf("volume w's claim after v's refusal: %q, %v", data, err)
	}
}

// A restore's pass indexes the publish tree when it checks its first target (publishIndex).
// Meanwhile another command (the agent serving a claim, or a CLI process) publishes volume w
// for alloc b: its own claim walks the tree, finds nothing wrong, and is published. Then the
// pass publishes v, and the plugin binds w's target there. The index, built before w's target
// was mounted, knows it as the bare directory it was: v's check must still tell w's data,
// as the walk it replaced did (both claims were held, v reading and writing w's data).
func TestRestoreIndexSeesATargetPublishedSinceItWasBuilt(t *testing.T) {
	t.Parallel()
	var wTarget string
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		c.Node.StageUnstageVolume = false
		c.PublishFrom = func(_, target string) string {
			if strings.Contains(target, "/publish/a/v/") {
				return wTarget
			}
			return ""
		}
	})
	capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	for _, id := range []string{"x", "w", "v"} {
		h.create(volume(id, capability))
	}
	wTarget = publishPath(h.dir, "b", "w", false, spec.FileSystem, spec.MultiNodeMultiWriter)
	pass := withPublishIndex(h.ctx)
	if _, err := h.e.Claim(pass, ClaimRequest{VolumeID: "x", Alloc: "c"}); err != nil { // the pass's first check builds the index
		t.Fatal(err)
	}
	w := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"}) // another command, outside the pass
	if err := os.WriteFile(filepath.Join(w.TargetPath, "ws-data"), []byte("w's data"), 0o600); err != nil {
		t.Fatal(err)
	}
	cl, err := h.e.Claim(pass, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		seen, _ := os.ReadFile(filepath.Join(cl.TargetPath, "ws-data"))
		t.Fatalf("claim of v published at %s, a bind of w's target (what the alloc reads there: %q), want it refused", cl.TargetPath, seen)
	}
	want := `volume "w"'s target ` + w.TargetPath + ` (alloc "b"'s claim) bind-mounted`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("claim = %v\nwant an error saying %s", err, want)
	}
	h.release("w", "b")
	h.release("x", "c")
}

// A target the pass's index took in, and that then failed its check (a read claim the plugin
// mounted read-write) and was rolled back, unmounted, stayed in the index as volume u's
// published target. A later claim of the pass that the plugin publishes from u's storage (two
// volumes the plugin maps onto one; a fresh claim's walk finds no target of u and publishes
// it) was refused as "volume u's target bind-mounted", naming a target no longer there. A
// path the index matches is looked at again.
func TestRestoreIndexForgetsATargetRolledBack(t *testing.T) {
	t.Parallel()
	var root, uBacking string
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		root, c.Node.StageUnstageVolume, c.IgnoreReadOnly = c.MountRoot, false, true
		c.PublishFrom = func(_, target string) string {
			if strings.Contains(target, "/publish/b/w/") {
				return uBacking
			}
			return ""
		}
	})
	capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	h.create(volume("u", capability))
	h.create(volume("w", capability))
	uBacking = filepath.Join(root, url.PathEscape(h.volumeInfo("u").ExternalID))
	pass := withPublishIndex(h.ctx)
	_, err := h.e.Claim(pass, ClaimRequest{VolumeID: "u", Alloc: "a", ReadOnly: true})
	if err == nil || !strings.Contains(err.Error(), "mounted read-write") {
		t.Fatalf("read claim of u mounted read-write = %v, want it refused", err)
	}
	if _, err := h.e.Claim(pass, ClaimRequest{VolumeID: "w", Alloc: "b"}); err != nil {
		t.Fatalf("claim of w, published from u's storage after u's only target was rolled back: %v\nwant it published, as a claim outside a pass is", err)
	}
	h.release("w", "b")
}

// wBoundAtVsTargetAfterAReboot claims volume w (holding data, alloc b) and volume v (alloc a)
// through a plugin that does not stage, unmounts v's target as a reboot does, and serves the
// plugin again binding w's target at v's when asked to publish v there.
func wBoundAtVsTargetAfterAReboot(t *testing.T) (h *harness, v, w ClaimInfo) {
	t.Helper()
	var root string
	h = kernelHarness(t, func(c *csitest.MemConfig) {
		root, c.Node.StageUnstageVolume = c.MountRoot, false
	})
	w = h.wHoldingData(spec.FileSystem)
	v = h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err := unix.Unmount(v.TargetPath, unix.MNT_DETACH); err != nil { // a reboot, for v's target
		t.Fatal(err)
	}
	p := h.restartPlugin(func(c *csitest.MemConfig) {
		c.MountRoot, c.Node.StageUnstageVolume = root, false
		c.PublishFrom = func(_, target string) string {
			if target == v.TargetPath {
				return w.TargetPath
			}
			return ""
		}
	}, "w", "v")
	t.Cleanup(func() {
		if err := p.UnmountAll(); err != nil {
			t.Errorf("memplugin: %v", err)
		}
	})
	return h, v, w
}
