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
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// kernelHarness is a harness reading the kernel's mount table, its in-memory plugin mounting
// for real (as root) as cfg further says, under a state dir where mounts are allowed.
func kernelHarness(t *testing.T, mutate func(*csitest.MemConfig)) *harness {
	t.Helper()
	return kernelHarnessConfig(t, mutate, Config{})
}

// kernelHarnessConfig is kernelHarness with the engine opened on cfg (its mounts the
// kernel's).
func kernelHarnessConfig(t *testing.T, mutate func(*csitest.MemConfig), cfg Config) *harness {
	t.Helper()
	hostpathtest.RequireMount(t)
	root := t.TempDir()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.MountRoot = root
		if mutate != nil {
			mutate(c)
		}
	})
	t.Cleanup(func() {
		if err := h.mem.UnmountAll(); err != nil {
			t.Errorf("memplugin: %v", err)
		}
	})
	h.dir = hostpathtest.MountDir(t)
	h.e = nil
	cfg.Mounts = kernelMounts{}
	h.open(cfg)
	h.registerPlugin("mem", h.socket)
	return h
}

// A plugin that answers NodePublishVolume OK for a read-only claim but mounts the target
// read-write (it ignores the readonly field) would hand an alloc that holds the volume only for
// reading a path it can write, beside the volume's one writer: Nomad's access modes (one writer,
// readers) would hold on paper only. The target of a read claim must be a read-only mount, as it
// must be a mount point: otherwise the claim fails naming the plugin, the volume and the target,
// and is rolled back (the plugin asked to unpublish it), the writer's claim untouched. Real
// mounts, as root.
func TestReadClaimPublishedReadWriteIsRefused(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, func(c *csitest.MemConfig) { c.IgnoreReadOnly = true })
	h.create(volume("v", capab(spec.MultiNodeSingleWriter)))
	w := h.claim(ClaimRequest{VolumeID: "v", Alloc: "w"})
	h.mem.ResetCalls()

	cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	target := publishPath(h.dir, "r", "v", true, spec.FileSystem, spec.MultiNodeSingleWriter)
	if err == nil {
		werr := os.WriteFile(filepath.Join(cl.TargetPath, "written-by-a-reader"), []byte("x"), 0o600)
		t.Fatalf("read-only claim published read-write at %s (a write through it: %v), want it refused", cl.TargetPath, werr)
	}
	want := `plugin "mem" answered OK for volume "v", but the target ` + target + " is mounted read-write"
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("claim = %v\nwant an error saying %s, and the claim rolled back", err, want)
	}
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
		t.Errorf("error kind: %v is a conflict or invalid request (exit 4 or 2), want a runtime error", err)
	}
	if live := h.liveClaims("v"); len(live) != 1 || live[0].Alloc != "w" {
		t.Fatalf("claims after the refusal = %+v, want only the writer's", live)
	}
	if got := h.mem.CallCount(csi.RPCNodeUnpublishVolume); got != 1 {
		t.Errorf("NodeUnpublishVolume sent %d times, want once (the plugin asked to remove what it made)", got)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target after the rollback: %v, want it gone", err)
	}
	if err := os.WriteFile(filepath.Join(w.TargetPath, "by-the-writer"), []byte("x"), 0o600); err != nil {
		t.Errorf("the writer's claim after the reader's refusal: %v", err)
	}
}

// A plugin that honours readonly is published as before, and the read claim's target refuses
// writes (EROFS): the check does not refuse what it should pass. Real mounts, as root.
func TestReadClaimPublishedReadOnlyIsKept(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeSingleWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "w"})
	r := h.claim(ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	if err := os.WriteFile(filepath.Join(r.TargetPath, "x"), []byte("x"), 0o600); !errors.Is(err, unix.EROFS) {
		t.Fatalf("write through the read claim's target: %v, want EROFS", err)
	}
	h.release("v", "r")
	h.release("v", "w")
}

// A block claim whose plugin publishes the device file (a file bind-mounted at the target) is
// published, and released leaving nothing mounted: the checks of a block target against the
// kernel (a file, not a directory; a mount point) pass what they should. Real mounts, as root.
func TestBlockClaimPublishedAsAFileOnKernelMounts(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
	if fi, err := os.Lstat(cl.TargetPath); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("block target %s: %v, %v; want the device file", cl.TargetPath, fi, err)
	}
	h.release("v", "a")
	if _, err := os.Lstat(cl.TargetPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("block target after the release: %v, want it gone", err)
	}
}

// A plugin that answers NodeStageVolume OK having mounted nothing at the staging path, or only
// the staging directory bound onto itself (a mount point, whose root is the bare directory),
// then publishes by bind-mounting the staging path at the target, leaves a target that is a
// mount point, but of the bare staging directory on the state dir's own disk: the alloc's
// writes would land on the host, not the volume. That target is refused like one with nothing
// mounted on it, naming the staging path, and the claim rolled back. Real mounts, as root.
func TestTargetBoundFromAnEmptyStagingIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*csitest.MemConfig)
		want   string
	}{
		{name: "nothing staged", mutate: func(c *csitest.MemConfig) { c.StageNothing = true }, want: "where nothing is mounted"},
		{name: "staging bound onto itself", mutate: func(c *csitest.MemConfig) {
			stageVFrom(c, func(staging string) string { return staging })
		}, want: "where only the staging directory itself is mounted (bound onto itself)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := kernelHarness(t, tc.mutate)
			h.create(volume("v"))
			cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			staging := stagingPath(h.dir, "mem", "v")
			if err == nil {
				werr := os.WriteFile(filepath.Join(cl.TargetPath, "data"), []byte("x"), 0o600)
				_, serr := os.Stat(filepath.Join(staging, "data"))
				t.Fatalf("claim published at %s, a bind of the bare staging path (a write through it: %v; found in the staging directory: %v)",
					cl.TargetPath, werr, serr == nil)
			}
			target := publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
			want := `plugin "mem" answered OK for volume "v", but the target ` + target + " is the staging path " + staging + ", " + tc.want
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
				t.Fatalf("claim = %v\nwant an error saying %s, and the claim rolled back", err, want)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("claims after the refusal = %+v, want none", live)
			}
		})
	}
}
