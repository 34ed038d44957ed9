package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
	"golang.org/x/sys/unix"
)

// publishLookup is one of publishTreeEntry's two ways of looking at the publish tree, which
// the tests of a target bound from the tree run each: the walk (a tree of a few paths, the
// tests' own) and the mount table (a larger one; the tests' engine told to use it always).
type publishLookup struct {
	name  string
	table bool
}

var publishLookups = []publishLookup{{name: "walk"}, {name: "table", table: true}}

// use sets h's engine to this way.
func (l publishLookup) use(h *harness) {
	if l.table {
		h.e.publishWalkPaths = 0
	}
}

// check fails t unless h's engine looked at the tree this way: the table's way walks only
// for a target that is not a directory (walked says it was one).
func (l publishLookup) check(t *testing.T, h *harness, walked bool) {
	t.Helper()
	switch n := h.e.publishWalks.Load(); {
	case !l.table && n == 0:
		t.Errorf("the publish tree was never walked, want the claims checked by the walk")
	case l.table && !walked && n != 0:
		t.Errorf("the publish tree was walked %d times, want every check answered from the mount table", n)
	case l.table && walked && n == 0:
		t.Errorf("the publish tree was never walked, want a device target's check walked")
	}
}

// On a host with more paths in the publish tree than publishTreeEntry walks, a claim's check
// reads the mount table instead (a walk costs a directory read an alloc and a statx a claim).
// A claim of the volume's own root, which nothing in the tree is, walks as far as its limit and
// is then answered from the table, not by the rest of the walk. The table still tells each
// thing a plugin that does not stage can bind at the target, as the walk does (the engine told
// to read the table at once, as the order a walk meets paths in is the directories'): another
// volume's published target, another alloc's directory, a volume directory of it, and a bare
// target of another volume (its directory on the state dir's disk, unmounted since). The same
// with the state dir a bind mount of another directory (a container's, say), which the table
// names by that directory's path. Real mounts, as root.
func TestLargePublishTreeIsLookedUpInTheMountTable(t *testing.T) {
	t.Parallel()
	const others = publishWalkPaths + 6 // one alloc's volume directories
	wTarget := func(dir, alloc string) string {
		return publishPath(dir, alloc, "w", false, spec.FileSystem, spec.MultiNodeMultiWriter)
	}
	for _, tc := range []struct {
		name string
		from func(dir string) string // what the plugin mounts at v's target for alloc a
		want func(dir string) string // "" for none: published
	}{
		{name: "other volume's target", from: func(dir string) string { return wTarget(dir, "b") },
			want: func(dir string) string {
				return `volume "w"'s target ` + wTarget(dir, "b") + ` (alloc "b"'s claim) bind-mounted`
			}},
		{name: "other alloc's directory", from: func(dir string) string { return filepath.Join(dir, "publish", "b") },
			want: func(dir string) string {
				return "a bind mount of " + filepath.Join(dir, "publish", "b") + ", a directory of volctl's state dir"
			}},
		{name: "other volume's target directory", from: func(dir string) string { return filepath.Dir(wTarget(dir, "b")) },
			want: func(dir string) string {
				return "a bind mount of " + filepath.Dir(wTarget(dir, "b")) + ", a directory of volctl's state dir"
			}},
		{name: "other volume's bare target", from: func(dir string) string { return wTarget(dir, "x") },
			want: func(dir string) string {
				return `volume "w"'s target ` + wTarget(dir, "x") + ` (alloc "x"'s claim) bind-mounted`
			}},
		{name: "this volume's root", from: func(string) string { return "" }},
	} {
		for _, bound := range []bool{false, true} {
			name := tc.name
			if bound {
				name += "/state dir bound from elsewhere"
			}
			t.Run(name, func(t *testing.T) {
				h := wrongBindHarness(t, false, tc.from, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })
				dir := h.dir
				if bound {
					src := hostpathtest.MountDir(t)
					if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { // before src is removed: its directories are the mount points
						if err := hostpath.UnmountAll(dir); err != nil {
							t.Errorf("cleaning up mounts: %v", err)
						}
					})
					h.open(Config{Mounts: kernelMounts{}})
					h.registerPlugin("mem", h.socket)
				}
				w := h.wHoldingData(spec.FileSystem)
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "c"})
				if err := os.MkdirAll(wTarget(dir, "x"), 0o750); err != nil { // a claim of w left unmounted
					t.Fatal(err)
				}
				for i := range others {
					if err := os.MkdirAll(filepath.Join(dir, "publish", "other", fmt.Sprintf("vol-%02d", i)), 0o750); err != nil {
						t.Fatal(err)
					}
				}
				if tc.want != nil {
					h.e.publishWalkPaths = 0
				}
				walks := h.e.publishWalks.Load()

				cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				if n := h.e.publishWalks.Load() - walks; n != 0 {
					t.Errorf("the publish tree of over %d paths was walked %d times, want the check answered from the mount table", others, n)
				}
				if tc.want == nil {
					if err != nil {
						t.Fatalf("claim of v sharing its root with alloc c's claim: %v", err)
					}
					return
				}
				if err == nil {
					seen, _ := os.ReadFile(filepath.Join(cl.TargetPath, "ws-data"))
					t.Fatalf("claim published at %s, a bind of %s (what the alloc reads there: %q), want it refused", cl.TargetPath, tc.from(dir), seen)
				}
				target := publishPath(dir, "a", "v", false, spec.FileSystem, spec.MultiNodeMultiWriter)
				want := `plugin "mem" answered OK for volume "v", but the target ` + target + " is " + tc.want(dir)
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
					t.Fatalf("claim = %v\nwant an error saying %s, and the claim rolled back", err, want)
				}
				if _, err := os.Stat(filepath.Join(w.TargetPath, "ws-data")); err != nil {
					t.Errorf("volume w's claim after v's refusal: %v", err)
				}
			})
		}
	}
}

// A plugin that answers NodePublishVolume OK having bind-mounted the target onto itself (the
// directory it made there, or the file of a block target) leaves a mount point whose root is
// the bare target on the state dir's disk: the mount-point check passes it, and so did every
// comparison of identities, as no other path shows that directory (the mount covers it). The
// alloc would write to the host's disk, not the volume. It is refused, naming the target, and
// the claim rolled back, whether the plugin stages or not. Real mounts, as root.
func TestTargetBoundOntoItselfIsRefused(t *testing.T) {
	t.Parallel()
	for _, att := range []spec.AttachmentMode{spec.FileSystem, spec.BlockDevice} {
		for _, stage := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stage=%v", att, stage), func(t *testing.T) {
				itself := func(dir string) string { return publishPath(dir, "a", "v", false, att, spec.SingleNodeWriter) }
				h := wrongBindHarness(t, false, itself, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = stage })
				capability := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: att}
				h.create(volume("v", capability))
				cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: att})
				target := publishPath(h.dir, "a", "v", false, att, spec.SingleNodeWriter)
				if err == nil {
					t.Fatalf("claim published at %s, a bind of itself (the host's disk), want it refused", cl.TargetPath)
				}
				want := `plugin "mem" answered OK for volume "v", but the target ` + target + " is a bind mount of itself (the bare target, on the host's disk"
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
					t.Fatalf("claim = %v\nwant an error saying %s, and the claim rolled back", err, want)
				}
				if live := h.liveClaims("v"); len(live) != 0 {
					t.Fatalf("claims after the refusal = %+v, want none", live)
				}
			})
		}
	}
}
