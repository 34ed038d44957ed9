package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// A plugin that answers NodePublishVolume with OK but makes the target a symlink (to another
// directory: /etc, or its own mount elsewhere), a file for a file-system volume, a directory for
// a block volume (published as a file system), or nothing at all, or a directory (a file for a block volume) with nothing mounted on it (or the volume
// mounted at another path: "published" means mounted at the target, as reconcile's restore of a
// published claim whose target is not mounted has it), does not get the claim recorded
// published nor its path handed out: the alloc would write wherever the link leads, or into the
// state dir on the host's disk. The claim fails with an error naming the plugin, the volume, the
// target and what is there, and is rolled back, the release's NodeUnpublishVolume asking the
// plugin to remove what it made. Nothing is written where a link points.
func TestNodePublishTargetIsChecked(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir() // stands for /etc
	for _, tc := range []struct {
		name string
		make func(target string) error
		att  spec.AttachmentMode
		want string
		// unmounted: the mount table says nothing is mounted at the target.
		unmounted bool
	}{
		{"symlink", func(target string) error { return os.Symlink(elsewhere, target) }, spec.FileSystem, "is a symlink to \"" + elsewhere + "\"", false},
		{"symlink/block", func(target string) error { return os.Symlink(elsewhere, target) }, spec.BlockDevice, "is a symlink to \"" + elsewhere + "\"", false},
		{"nothing", func(string) error { return nil }, spec.FileSystem, "is missing", false},
		{"file", func(target string) error { return os.WriteFile(target, nil, 0o600) }, spec.FileSystem, "is not a directory", false},
		{"unmounted", func(target string) error { return os.Mkdir(target, 0o750) }, spec.FileSystem, "is not a mount point", true},
		{"unmounted/block", func(target string) error { return os.WriteFile(target, nil, 0o600) }, spec.BlockDevice, "is not a mount point", true},
		// A block claim published as a file system: a directory, mounted, where the alloc
		// expects the device.
		{"directory/block", func(target string) error { return os.Mkdir(target, 0o750) }, spec.BlockDevice, "is a directory", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *csitest.MemConfig) { c.MakeTarget = tc.make })
			h.mounts.notMounted(tc.unmounted)
			h.create(volume("v", spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: tc.att}))
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			target := publishPath(h.dir, "a", "v", false, tc.att, spec.SingleNodeWriter)
			if err == nil || !strings.Contains(err.Error(), target+" "+tc.want) || !strings.Contains(err.Error(), "rolled back") ||
				!strings.Contains(err.Error(), `plugin "mem" answered OK for volume "v", but the target `+target) {
				t.Fatalf("claim with the target made %s = %v\nwant an error naming plugin mem and volume v, saying %s %s, and the claim rolled back", tc.name, err, target, tc.want)
			}
			if errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
				t.Errorf("error kind: %v is a conflict or invalid request (exit 4 or 2), want a runtime error", err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("claims after the refused target = %+v, want none (rolled back)", live)
			}
			if got := h.mem.CallCount(csi.RPCNodeUnpublishVolume); got != 1 {
				t.Errorf("NodeUnpublishVolume sent %d times, want once (the plugin asked to remove what it made)", got)
			}
			if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("target after the rollback: %v, want it gone", err)
			}
			if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
				t.Errorf("something was made where the link points: %v", entries)
			}
			if tc.unmounted { // a plugin that mounts again is published at once
				h.mounts.notMounted(false)
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			}
		})
	}
}

// A plugin that answers NodeUnpublishVolume OK and leaves a symlink at the target (the link
// it "published" by, say) does not leave it there to refuse the next claim at that target with
// advice about symlinks in mount paths: volctl removes the link itself, never what it points
// to, and says so in an event.
func TestNodeUnpublishLeavingASymlinkAtTheTarget(t *testing.T) {
	t.Parallel()
	elsewhere := t.TempDir() // stands for the plugin's own mount, or /etc
	if err := os.WriteFile(filepath.Join(elsewhere, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	target := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"}).TargetPath
	h.afterFirst(csi.RPCNodeUnpublishVolume, func() {
		if err := os.Symlink(elsewhere, target); err != nil {
			t.Error(err)
		}
	})
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release: %v", err)
	}
	if fi, err := os.Lstat(target); err == nil {
		t.Fatalf("target after the release is there (%v), want the link the plugin left removed", fi.Mode())
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "keep")); err != nil {
		t.Fatalf("what the link pointed to: %v, want it untouched", err)
	}
	evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "target-link-removed", VolumeID: "v"})
	want := `plugin "mem" answered NodeUnpublishVolume OK and left a symlink to "` + elsewhere + `" at the target ` + target
	if err != nil || len(evs) != 1 || !strings.Contains(evs[0].Message, want) {
		t.Errorf("target-link-removed events = %+v, %v; want one saying %s", evs, err, want)
	}
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
}

// A symlink at a new claim's target (left by a plugin under an older volctl, or by hand) is
// refused, never followed, with an error that says what it is and the remedy that works for
// volctl's own path: remove the link, not "use the path it points to".
func TestClaimOnASymlinkLeftAtTheTargetSaysWhatToDo(t *testing.T) {
	t.Parallel()
	h, target, elsewhere := linkAtNewClaimsTarget(t)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	want := fmt.Sprintf("claim target: %s is a symlink, and volctl does not follow symlinks in mount paths (it points to %q, left there by a plugin or by hand: remove the link with `rm %s`, which leaves what it points to, and claim again)",
		target, elsewhere, target)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("claim on a symlinked target = %v\nwant it to say %s", err, want)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("something was made where the link points: %v", entries)
	}
}

// A new claim refused for a symlink at its target is rolled back, not left node-staged for
// reconcile: every pass found the link there and refused it again, and a pass resuming the
// claim from node-staged cannot tell it from the plugin's own answer to an earlier
// NodePublishVolume (TestCrashAfterNodePublishOfALinkedTarget), which it rolls back with a
// NodeUnpublishVolume the plugin would send through the link. This claim sent no
// NodePublishVolume: its rollback sends no NodeUnpublishVolume, and undoes its staging and
// attachment.
func TestClaimOnASymlinkLeftAtTheTargetIsRolledBack(t *testing.T) {
	t.Parallel()
	h, target, elsewhere := linkAtNewClaimsTarget(t)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "the claim was rolled back") {
		t.Errorf("claim on a symlinked target = %v; want a conflict saying the claim was rolled back", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims after the refused target = %+v, want none (rolled back)", live)
	}
	for _, rpc := range []string{csi.RPCNodePublishVolume, csi.RPCNodeUnpublishVolume} {
		if n := h.mem.CallCount(rpc); n != 0 {
			t.Errorf("%s sent %d times; want none (nothing was published at the link, and the plugin would follow it)", rpc, n)
		}
	}
	for _, rpc := range []string{csi.RPCNodeUnstageVolume, csi.RPCControllerUnpublishVolume} {
		if n := h.mem.CallCount(rpc); n != 1 {
			t.Errorf("%s sent %d times; want once (the claim's staging and attachment undone)", rpc, n)
		}
	}
	if dest, err := os.Readlink(target); err != nil || dest != elsewhere {
		t.Errorf("the link at the target: %q, %v; want it left as it was, for its owner to remove", dest, err)
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || !rep.OK() {
		t.Errorf("reconcile after the rollback: %+v, %v; want nothing to do", rep, err)
	}
}

// A NodeGetInfo max_volumes_per_node below zero is a bad answer (the CSI spec: 0 is no limit,
// else a positive count), not "no limit": read as one, volctl would publish past whatever the
// node allows. Registering, or connecting to, such a plugin fails naming it and the value.
func TestNegativeMaxVolumesPerNodeIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := csitest.DefaultMemConfig()
	cfg.MaxVolumes = -1
	socket, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	_, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "neg", Type: spec.PluginMonolith, Socket: socket})
	want := `plugin "` + cfg.Name + `" reported max_volumes_per_node -1`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"neg"`) {
		t.Fatalf("register a plugin reporting max_volumes_per_node -1 = %v\nwant an error naming the plugin \"neg\" and saying %s", err, want)
	}
}

// A negative limit recorded before volctl refused it (an older volctl's fingerprint) is not
// read as "no limit" either: the claim is refused naming the plugin and the value.
func TestNegativeMaxVolumesPerNodeRecordedIsNotNoLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.update(func(tx *store.Tx) error {
		p, err := tx.Plugins().Get("mem")
		if err != nil {
			return err
		}
		p.Fingerprint.MaxVolumes = -1
		return tx.Plugins().SetFingerprint("mem", p.Fingerprint)
	})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	want := `plugin "mem" reported max_volumes_per_node -1`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("claim with max_volumes_per_node -1 recorded = %v\nwant an error saying %s", err, want)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claims = %+v, want none", live)
	}
}

// linkAtNewClaimsTarget is a harness with volume v and a symlink, to an empty directory
// elsewhere, at the target alloc a's claim of v would publish to: left there by a plugin under
// an older volctl, or by hand.
func linkAtNewClaimsTarget(t *testing.T) (h *harness, target, elsewhere string) {
	t.Helper()
	elsewhere = t.TempDir()
	h = newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	target = publishPath(h.dir, "a", "v", false, spec.FileSystem, spec.SingleNodeWriter)
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, target); err != nil {
		t.Fatal(err)
	}
	return h, target, elsewhere
}
