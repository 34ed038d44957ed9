package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// RunGroup promises
// that running a group again is idempotent, and a held claim is a conflict only when the run
// asks for "other volume_mount binds" (heldOtherwise). Two specs that asked for the very same
// binds were refused all the same when they were merely written otherwise: the volume's two
// volume_mount blocks listed in the other order, or a destination written with a trailing
// slash (every other check cleans it, as bind opens it). The refusal said the claim was
// "bind-mounted otherwise (at A, B)", naming exactly what the spec asked for, and advised a
// `group stop` (taking the alloc's volumes away) to apply a change that changed nothing.
// Real mounts, as root. Found by helper review68.
func TestGroupRunAgainWithTheSameVolumeMountsWrittenOtherwiseIsNoChange(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	sv := spec.Volume{ID: "shared", Name: "shared", Type: "csi", PluginID: "hp", CapacityMin: 1 << 20,
		Capabilities: []spec.Capability{capab(spec.MultiNodeMultiWriter)}}
	if _, err := h.e.CreateVolume(h.ctx, sv); err != nil {
		t.Fatal(err)
	}
	dir := hostpathtest.MountDir(t)
	group := func(mounts ...spec.VolumeMount) spec.Group {
		return spec.Group{Name: "web", Count: 1,
			Volumes: []spec.VolumeRequest{{Name: "s", Type: "csi", Source: "shared", AccessMode: spec.MultiNodeMultiWriter, AttachmentMode: spec.FileSystem}},
			Mounts:  mounts}
	}
	a := spec.VolumeMount{Volume: "s", Destination: filepath.Join(dir, "a"), PropagationMode: spec.PropagationPrivate}
	b := spec.VolumeMount{Volume: "s", Destination: filepath.Join(dir, "b"), ReadOnly: true, PropagationMode: spec.PropagationPrivate}
	if _, err := h.e.RunGroup(h.ctx, group(a, b)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	slash := a
	slash.Destination += "/"
	for _, tc := range []struct {
		name string
		g    spec.Group
	}{
		{"volume_mount blocks in the other order", group(b, a)},
		{"a destination with a trailing slash", group(slash, b)},
	} {
		info, err := h.e.RunGroup(h.ctx, tc.g)
		if err != nil {
			t.Errorf("group run again with %s (the same binds) = %v; want it idempotent, as the first run's spec is", tc.name, err)
			continue
		}
		if len(info.Allocs) != 1 || len(info.Allocs[0].Claims) != 1 {
			t.Errorf("group run again with %s = %+v; want web[0] holding its claim", tc.name, info)
		}
	}
	if m := mountsUnder(t, dir); len(m) != 2 {
		t.Errorf("mounts under %s: %v; want the two binds kept", dir, m)
	}
}

// A claim again in another mode was refused with "release it first", naming no command, where a
// claim again bound otherwise named the one that frees it. It names the release now (the
// group's stop and run again for a group's claim, as heldOtherwise's refusal does), and that
// release frees the alloc for the claim it asked for.
func TestClaimAgainInAnotherModeNamesTheReleaseThatFreesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("db", capab(spec.MultiNodeMultiWriter), capab(spec.MultiNodeReaderOnly)))
	h.claim(ClaimRequest{VolumeID: "db", Alloc: "web-0", AccessMode: spec.MultiNodeMultiWriter})
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0", AccessMode: spec.MultiNodeReaderOnly, ReadOnly: true})
	want := "`volctl volume release db --alloc web-0` releases it first"
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), want) {
		t.Fatalf("claim again in another mode = %v; want a conflict naming %s", err, want)
	}
	h.release("db", "web-0")
	if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "db", Alloc: "web-0", AccessMode: spec.MultiNodeReaderOnly, ReadOnly: true}); err != nil {
		t.Fatalf("the claim after the advised release: %v", err)
	}
}
