package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestWriteClaimAskingReadOnlyMountedWritableIsRefused: a write claim whose mount flags asked
// for "ro" (the volume's mount_flags = ["ro"], or the claim's own --mount-flag ro or
// "noatime,ro") was published by a plugin that ignored the flag and mounted the target
// read-write, and volctl recorded the claim published and handed out the writable path.
// docs/specs.md says of such a flag that "every claim's mount is then read-only, a write
// claim's too", and checkTarget already holds the other direction (a write claim mounted
// read-only without asking "ro" is refused, TestWriteClaimMountedReadOnlyByThePluginIsRefused),
// reading the same flags with spec.ReadOnlyFlag: the read-only mount asked for is what the
// writer's slot is held through (a backup fencing writers out), and an alloc handed a writable
// one writes where the user said nothing should. Real mounts, as root. Found by helper review73.
func TestWriteClaimAskingReadOnlyMountedWritableIsRefused(t *testing.T) {
	if err := hostpathtest.CanMount(); err != nil {
		t.Fatalf("this test bind-mounts, as root with CAP_SYS_ADMIN: %v", err)
	}
	t.Parallel()
	// A plugin that ignores readonly and the "ro" mount flag.
	h := kernelHarness(t, func(c *csitest.MemConfig) { c.IgnoreReadOnly = true })
	h.create(volume("v"))
	ro := volume("w")
	ro.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"ro"}}
	h.create(ro)
	for _, c := range []struct {
		what string
		req  ClaimRequest
	}{
		{"the volume's mount_flags [\"ro\"]", ClaimRequest{VolumeID: "w", Alloc: "a"}},
		{"--mount-flag ro", ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"ro"}}}},
		{"--mount-flag noatime,ro", ClaimRequest{VolumeID: "v", Alloc: "b", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noatime,ro"}}}},
	} {
		cl, err := h.e.Claim(h.ctx, c.req)
		if err == nil {
			werr := os.WriteFile(filepath.Join(cl.TargetPath, "written-through-a-read-only-mount"), []byte("x"), 0o600)
			h.release(c.req.VolumeID, c.req.Alloc)
			t.Errorf("write claim asking %s recorded published at %s, mounted read-write (a write through it: %v); want it refused, its mount not read-only as asked", c.what, cl.TargetPath, werr)
			continue
		}
		if !strings.Contains(err.Error(), "read-write") {
			t.Errorf("write claim asking %s = %v\nwant it saying the target is mounted read-write", c.what, err)
		}
		if live := h.liveClaims(c.req.VolumeID); len(live) != 0 {
			t.Errorf("claims after the refusal of the write claim asking %s = %+v, want none", c.what, live)
		}
	}
}

// TestWriteClaimAskingReadOnlyFoundWritableIsReported: a write claim asking "ro" published
// read-only, then found mounted read-write (remounted since, or published so by a volctl from
// before TestWriteClaimAskingReadOnlyMountedWritableIsRefused), is held to the rule as a read
// claim is (claimWritable): reconcile reports it each pass, sending nothing and leaving the
// mount under the alloc; claimed again it is a conflict, not the path; released and claimed
// again, as the report advises, it is read-only once more. Real mounts, as root.
func TestWriteClaimAskingReadOnlyFoundWritableIsReported(t *testing.T) {
	if err := hostpathtest.CanMount(); err != nil {
		t.Fatalf("this test bind-mounts, as root with CAP_SYS_ADMIN: %v", err)
	}
	t.Parallel()
	h := kernelHarness(t, nil)
	h.create(volume("v"))
	req := ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"ro"}}}
	cl := h.claim(req)
	probe := filepath.Join(cl.TargetPath, "probe")
	if err := os.WriteFile(probe, []byte("x"), 0o600); err == nil {
		t.Fatalf("the write claim asking \"ro\" was mounted writable by a plugin that honours the flag")
	}
	remount(t, cl.TargetPath, 0)
	h.mem.ResetCalls()
	rep, _ := h.e.Reconcile(h.ctx) // its error says problems remain
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Message, "write claim \"v\" for alloc \"a\" is mounted read-write at "+cl.TargetPath) ||
		!strings.Contains(rep.Problems[0].Message, "`volctl volume release v --alloc a`") {
		t.Fatalf("reconcile problems = %+v; want the write claim asking \"ro\" reported mounted read-write, with the way out", rep.Problems)
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("reconcile sent %v: the mount is under a running alloc, and must be left", rpcs)
	}
	if _, err := h.e.Claim(h.ctx, req); !errors.Is(err, ErrConflict) {
		t.Errorf("claim again of the write claim found read-write: %v; want a conflict, not the path", err)
	}
	h.release("v", "a")
	cl = h.claim(req)
	if err := os.WriteFile(probe, []byte("x"), 0o600); err == nil {
		t.Errorf("claimed again after the release, the write claim asking \"ro\" is writable")
	}
	if rep, err := h.e.Reconcile(h.ctx); err != nil || len(rep.Problems) != 0 {
		t.Errorf("reconcile after the claim again: %+v, %v; want no problem", rep.Problems, err)
	}
	h.release("v", "a")
}
