package engine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/volctl/volctl/internal/spec"
)

// Mount flags are each claim's (docs/architecture.md: "NodePublishVolume carries them, and the
// plugin applies them to the target's mount (the hostpath plugin remounts with them) or, as
// CSI asks, fails it"). Against volctl's own plugin, the claim that stages the volume sends its
// flags in NodeStageVolume, the plugin mounts the staging with them, and every later claim's
// target, a bind of the staging, carries them: a claim asking no flag after one asking
// "noexec" is published noexec without a word, and a writer after a claim asking "ro" is
// rolled back as if the plugin had misbehaved ("the plugin did not publish the volume there"),
// while `volume claim` promises only an fs_type conflict. A later claim must get its own
// flags, or be refused as a conflict naming the claim that staged the volume, before anything
// is sent. Found by helper review66.
func TestLaterClaimDoesNotGetTheStagingClaimsMountFlags(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	sv := spec.Volume{ID: "v", Name: "v", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeMultiWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"noexec"}}}); err != nil {
		t.Fatal(err)
	}
	b, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "b"})
	switch {
	case errors.Is(err, ErrConflict):
	case err != nil:
		t.Errorf("claim of v by alloc b (no mount flags) beside alloc a's noexec claim: %v; want it published as asked or refused as a conflict", err)
	default:
		var st unix.Statfs_t
		if err := unix.Statfs(b.TargetPath, &st); err != nil {
			t.Fatal(err)
		}
		if st.Flags&unix.ST_NOEXEC != 0 {
			t.Errorf("alloc b's claim asked no mount flags and was published at %s noexec, alloc a's flag (statfs flags %#x)", b.TargetPath, st.Flags)
		}
	}
	for _, al := range []string{"a", "b"} {
		if _, err := h.e.Release(h.ctx, "v", al); err != nil && al == "a" {
			t.Fatal(err)
		}
	}

	// A claim asking "ro" (its own choice: a writer's slot fenced, warned of) stages the
	// volume; a plain writer claims beside it.
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "c", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"ro"}}}); err != nil {
		t.Fatal(err)
	}
	d, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "d"})
	switch {
	case errors.Is(err, ErrConflict):
	case err != nil:
		t.Errorf("writer claim of v by alloc d (no mount flags) beside alloc c's \"ro\" claim: %v\nwant it published read-write, or refused as a conflict naming alloc c's claim", err)
	default:
		if err := os.WriteFile(filepath.Join(d.TargetPath, "w"), []byte("x"), 0o644); err != nil {
			t.Errorf("alloc d's write claim published OK, but its target is not writable: %v", err)
		}
	}
}
