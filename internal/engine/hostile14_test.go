package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A restore's pass indexes the publish tree when it checks its first target (publishIndex).
// Meanwhile another command (the agent serving a claim, or a CLI process) claims volume w for
// alloc b: it makes alloc b's publish directory, and its target under it. Then the pass
// publishes v through a staging plugin that stages v from alloc b's publish directory, and
// binds that staging at v's target. The target is the plugin's own staging, so it is compared
// with the tree's directories only, and the index, built before alloc b's directory was made,
// does not know it: the claim was published, alloc a handed a directory of volctl's state dir
// (and, the mount being shared, every target mounted under alloc b's directory after). The
// check must tell it as a claim outside a pass does. So must that of a plugin that does not
// stage, whose check reads the mount table, when the directory has no target mounted under
// it yet (the other command between making it and its NodePublishVolume).
func TestRestoreIndexSeesADirectoryMadeSinceItWasBuilt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		from func(dir string) string
		// unstaged: the plugin does not stage, and publishes v from there; w's claim has made
		// its directories and not published yet
		unstaged bool
	}{
		{name: "alloc directory", from: func(dir string) string { return filepath.Join(dir, "publish", "b") }},
		{name: "volume directory", from: func(dir string) string { return filepath.Join(dir, "publish", "b", "w") }},
		{name: "volume directory, no target yet", unstaged: true, from: func(dir string) string { return filepath.Join(dir, "publish", "b", "w") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := wrongBindHarness(t, !tc.unstaged, tc.from, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = !tc.unstaged })
			dir := h.dir
			capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
			for _, id := range []string{"x", "w", "v"} {
				h.create(volume(id, capability))
			}
			pass := withPublishIndex(h.ctx)
			if _, err := h.e.Claim(pass, ClaimRequest{VolumeID: "x", Alloc: "c"}); err != nil { // the pass's first check builds the index
				t.Fatal(err)
			}
			if tc.unstaged {
				if err := os.MkdirAll(tc.from(dir), 0o700); err != nil { // another command's claim, before its NodePublishVolume
					t.Fatal(err)
				}
			} else {
				h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"}) // another command, outside the pass
				defer h.release("w", "b")
			}
			cl, err := h.e.Claim(pass, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err == nil {
				entries, _ := os.ReadDir(cl.TargetPath)
				t.Fatalf("claim of v published at %s, a bind of %s (what the alloc sees there: %v), want it refused", cl.TargetPath, tc.from(dir), entries)
			}
			want := "a bind mount of " + tc.from(h.dir) + ", a directory of volctl's state dir"
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("claim = %v\nwant an error saying %s", err, want)
			}
			h.release("x", "c")
		})
	}
}

// What catching a directory made since the index was built costs a pass: a target bound from
// its volume's staging, born before the pass (as a volume's storage is, made at its create),
// is not a reason to walk the tree again; the pass's claims are checked against one walk.
func TestRestoreIndexWalksTheTreeOnceForStoragesBornBefore(t *testing.T) {
	t.Parallel()
	h := kernelHarness(t, nil)
	capability := spec.Capability{AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}
	ids := []string{"x", "w", "v"}
	for _, id := range ids {
		h.create(volume(id, capability))
		h.claim(ClaimRequest{VolumeID: id, Alloc: "before"}) // the plugin makes the storage at its first staging
		h.release(id, "before")
	}
	time.Sleep(2 * clockLag) // the storages are born before the pass, as after a reboot
	pass := withPublishIndex(h.ctx)
	for _, id := range ids {
		if _, err := h.e.Claim(pass, ClaimRequest{VolumeID: id, Alloc: "a-" + id}); err != nil {
			t.Fatal(err)
		}
	}
	if got := publishIndexOf(pass).builds; got != 1 {
		t.Errorf("the pass walked the publish tree %d times for %d claims, want once", got, len(ids))
	}
	for _, id := range ids {
		h.release(id, "a-"+id)
	}
}

// A block claim's target is a file: the device file bind-mounted there. A plugin that answers
// NodePublishVolume OK having bind-mounted one of volctl's own files there instead (the state
// database, its write-ahead log, a lock file) leaves a mount point that is not a directory,
// which every check passed: ownDirectory compared the target with volctl's directories only.
// The alloc was handed the state database as its "device", to read (every volume's secrets)
// and write (the record of every claim). A target that is a file of the state dir, or below
// its directories (its staging and publish trees aside, which are compared as they are), is
// refused naming the file, and the claim rolled back. Real mounts, as root.
func TestBlockTargetBoundFromVolctlsOwnFilesIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		from func(dir string) string
	}{
		{name: "state database", from: func(dir string) string { return filepath.Join(dir, "volctl.db") }},
		{name: "lock file", from: func(dir string) string { return filepath.Join(dir, "locks", lockFileOf(t, dir)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := wrongBindHarness(t, false, tc.from, func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })
			dir := h.dir
			capability := spec.Capability{AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.BlockDevice}
			h.create(volume("v", capability))
			h.mem.ResetCalls()
			cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", AttachmentMode: spec.BlockDevice})
			if err == nil {
				head := make([]byte, 16)
				if f, err := os.Open(cl.TargetPath); err == nil {
					f.Read(head)
					f.Close()
				}
				t.Fatalf("block claim published at %s, a bind of %s (what the alloc reads there: %q), want it refused", cl.TargetPath, tc.from(dir), head)
			}
			h.wantRefused(err, "a bind mount of "+tc.from(h.dir)+", a file of volctl's state dir")
		})
	}
}

// lockFileOf names a file of the state dir's lock directory.
func lockFileOf(t *testing.T, dir string) string {
	t.Helper()
	for _, name := range entryNames(filepath.Join(dir, "locks")) {
		if fi, err := os.Stat(filepath.Join(dir, "locks", name)); err == nil && fi.Mode().IsRegular() {
			return name
		}
	}
	t.Fatalf("no lock file in %s", filepath.Join(dir, "locks"))
	return ""
}

// A plugin that answers NodePublishVolume OK having bind-mounted at the target a directory the
// state dir is under (its parent, or the host's root) passed every check: only the state dir
// and what is below it were compared. The alloc was handed, on the same file system, the
// state dir itself one level down: the state database, every staging and target, and the rest
// of the host's disk. A target that is a directory above the state dir is refused, naming it,
// and the claim rolled back; so is a staging made of one. Real mounts, as root.
func TestTargetBoundFromAboveTheStateDirIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		from  func(dir string) string
		stage bool // the plugin stages v from there, and publishes from the staging path
	}{
		{name: "state dir's parent", from: filepath.Dir},
		{name: "host's root", from: func(string) string { return "/" }},
		{name: "staged from the state dir's parent", stage: true, from: filepath.Dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := wrongBindHarness(t, tc.stage, tc.from, nil)
			dir := h.dir
			h.create(volume("v"))
			h.mem.ResetCalls()
			cl, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err == nil {
				_, serr := os.Stat(filepath.Join(cl.TargetPath, strings.TrimPrefix(h.dir, tc.from(h.dir)), "volctl.db"))
				t.Fatalf("claim published at %s, a bind of %s (the state database reached through it: %v), want it refused", cl.TargetPath, tc.from(dir), serr)
			}
			h.wantRefused(err, "a bind mount of "+tc.from(h.dir)+", a directory above volctl's state dir")
		})
	}
}

// wrongBindHarness is kernelHarness with a plugin that, mutated as mutate says, stages volume
// "v" from from(the state dir) when stage is true, else publishes v's target for alloc "a"
// from there (publishAVFrom).
func wrongBindHarness(t *testing.T, stage bool, from func(dir string) string, mutate func(*csitest.MemConfig)) *harness {
	t.Helper()
	var dir string
	h := kernelHarness(t, func(c *csitest.MemConfig) {
		if mutate != nil {
			mutate(c)
		}
		if stage {
			stageVFrom(c, func(string) string { return from(dir) })
			return
		}
		publishAVFrom(c, func() string { return from(dir) })
	})
	dir = h.dir
	return h
}

// publishAVFrom makes the plugin's NodePublishVolume of volume "v" for alloc "a" bind-mount
// from() at the target instead of the volume; other targets it publishes as it does.
func publishAVFrom(c *csitest.MemConfig, from func() string) {
	c.PublishFrom = func(_, target string) string {
		if strings.Contains(target, "/publish/a/v/") {
			return from()
		}
		return ""
	}
}

// wantRefused fails the test unless err refuses volume v's claim saying want, rolled back, and
// v is left with no live claim.
func (h *harness) wantRefused(err error, want string) {
	h.t.Helper()
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "rolled back") {
		h.t.Fatalf("claim = %v\nwant an error saying %s, and the claim rolled back", err, want)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		h.t.Fatalf("claims after the refusal = %+v, want none", live)
	}
}
