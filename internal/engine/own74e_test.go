package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// ownFiveGroup is group "web" of count allocs, each with its own writer's volume "data[i]" bound at
// dataDest and, when logsDest is set, its own "logs[i]" bound at logsDest.
func ownFiveGroup(count int, dataDest, logsDest string) spec.Group {
	g := spec.Group{Name: "web", Count: count,
		Volumes: []spec.VolumeRequest{{Name: "data", Type: "csi", Source: "data", PerAlloc: true,
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}},
		Mounts: []spec.VolumeMount{{Volume: "data", Destination: dataDest}}}
	if logsDest != "" {
		g.Volumes = append(g.Volumes, spec.VolumeRequest{Name: "logs", Type: "csi", Source: "logs", PerAlloc: true,
			AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem})
		g.Mounts = append(g.Mounts, spec.VolumeMount{Volume: "logs", Destination: logsDest})
	}
	return g
}

// TestGroupScaledDownIsNotRefusedAsOverlappingItsOwnDroppedAlloc: a group run with count 2
// binds web[1]'s data at dir/1; run again with count 1 and a new volume whose volume_mount
// takes the freed path dir/1 (nothing in the new spec overlaps: it has one alloc), the run
// refuses web[0]'s new claim as invalid (exit 2), saying "the group's volume_mount destinations
// overlap across its allocs, so every run binds one and refuses the other" — the claim in the
// way is web[1]'s, an alloc past the new count that this very run releases in its scale-down.
// Run once more, unchanged, it succeeds: the spec was never invalid, and "every run refuses"
// was false. acrossOwnAllocs (refuseSharedDestinations, refuseInside) is chosen for any claim
// of the group's other allocs, without asking whether the spec now run makes the
// destinations overlap. Correct: the allocs past the count are released before the claims
// (or their claims are not taken for the spec's overlap): the run succeeds, or at least is
// not refused as an invalid spec.
// Found by helper review74 (the own review of the group changes).
func TestGroupScaledDownIsNotRefusedAsOverlappingItsOwnDroppedAlloc(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	for _, v := range []string{"data[0]", "data[1]", "logs[0]"} {
		h.createWriterVolume(t, v)
	}
	dir := hostpathtest.MountDir(t)
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if _, err := h.e.RunGroup(h.ctx, ownFiveGroup(2, filepath.Join(dir, "{index}"), "")); err != nil {
		t.Fatalf("first run, count 2: %v", err)
	}
	// Scaled down to one alloc, whose new logs volume takes the path web[1] used.
	g := ownFiveGroup(1, filepath.Join(dir, "{index}"), filepath.Join(dir, "1"))
	info, err := h.e.RunGroup(h.ctx, g)
	if err != nil && (errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "overlap across its allocs")) {
		_, again := h.e.RunGroup(h.ctx, g)
		t.Errorf("group run scaled down to 1 = %v (%s)\nrefused as a spec whose allocs' destinations overlap, every run refusing one; "+
			"the spec has one alloc, the claim in the way was web[1]'s, past the count, which the run released; the same run once more = %v: "+
			"want the scale-down not refused as an invalid spec", err, allocsWords(info), again)
	}
}

// TestGroupScaledUpFromAnOldDestinationIsNotCalledAnOverlappingSpec: a group run with count 1
// binds web[0]'s data at dir/data; run again with count 2 and the destination dir/data/{index}
// (dir/data/0 and dir/data/1: the new spec's allocs do not overlap), web[0] is refused, rightly,
// as bound otherwise (a conflict advising the group's stop), but web[1] is refused as invalid:
// "the group's volume_mount destinations overlap across its allocs, so every run binds one and
// refuses the other; give each alloc destinations of its own" — advice the spec already
// follows, and the joined error is exit 2 (a spec error) for a spec that is valid: after the
// group's stop, the same spec runs. The overlap is with web[0]'s old bind, an earlier spec's,
// which acrossOwnAllocs takes for the spec's own. Correct: web[1] refused as a conflict with a
// claim bound at the old destination (as for another group's), the run not an invalid spec.
// Found by helper review74 (the own review of the group changes).
func TestGroupScaledUpFromAnOldDestinationIsNotCalledAnOverlappingSpec(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	for _, v := range []string{"data[0]", "data[1]"} {
		h.createWriterVolume(t, v)
	}
	dir := hostpathtest.MountDir(t)
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	if _, err := h.e.RunGroup(h.ctx, ownFiveGroup(1, filepath.Join(dir, "data"), "")); err != nil {
		t.Fatalf("first run, count 1: %v", err)
	}
	g := ownFiveGroup(2, filepath.Join(dir, "data", "{index}"), "")
	info, err := h.e.RunGroup(h.ctx, g)
	if err == nil {
		t.Fatalf("group run again with web[0]'s destination moved succeeded; want web[0] refused as bound otherwise")
	}
	if errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "overlap across its allocs") {
		t.Errorf("group run of a spec whose allocs' destinations (%s, %s) do not overlap = %v (%s)\n"+
			"refused as an invalid spec whose allocs' destinations overlap: the overlap is with web[0]'s bind of the earlier spec; want a conflict, not a spec error",
			filepath.Join(dir, "data", "0"), filepath.Join(dir, "data", "1"), err, allocsWords(info))
	}
	// The advice followed: the group's stop, then the same spec runs.
	if _, err := h.e.StopGroup(h.ctx, "web"); err != nil {
		t.Fatalf("group stop: %v", err)
	}
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatalf("the same spec after the group's stop = %v; want it run (precondition: the spec is valid)", err)
	}
}

// TestAllocWithItsMountOptionsRemovedClaimsNothing: `group run --help` and
// docs/architecture.md promise an alloc holding a claim otherwise than the spec asks now
// (mode, mount options, volume_mounts) "fails (exit 4) before anything is claimed". The last
// round made a run again compare the whole of the merged mount options (admit's exactMount),
// but only admission does: refusedBeforeClaiming still calls heldConflict without them. So a
// run again that removes a held volume's mount_options block and adds a new volume claims,
// stages, publishes and binds the new one for the alloc, then refuses the held one and
// releases the new one again: RPCs and mounts the promise says are not made (and, should the
// release fail, a claim left half-done beside a failed alloc). Correct: refusedBeforeClaiming
// compares the merged mount options as admission does (needs the volume's own, read with
// the held claims), refusing the alloc before any RPC.
// Found by helper review74 (the own review of the group changes).
func TestAllocWithItsMountOptionsRemovedClaimsNothing(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	h.createWriterVolume(t, "logs")
	dir := hostpathtest.MountDir(t)
	logs := writerBlock("l", "logs")
	logs.MountOptions = &spec.MountOptions{MountFlags: spec.MountFlags{"noexec"}}
	v1 := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{logs},
		Mounts:  []spec.VolumeMount{{Volume: "l", Destination: filepath.Join(dir, "l")}}}
	if _, err := h.e.RunGroup(h.ctx, v1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	rpcs := func() int {
		return h.faults.Calls(csi.RPCNodeStageVolume) + h.faults.Calls(csi.RPCNodePublishVolume) + h.faults.Calls(csi.RPCControllerPublishVolume)
	}
	before := rpcs()
	// The same logs volume_mount, its mount_options block removed; a new volume "data" outermost.
	v2 := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{writerBlock("d", "data"), writerBlock("l", "logs")},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(dir, "data")}, {Volume: "l", Destination: filepath.Join(dir, "l")}}}
	_, err := h.e.RunGroup(h.ctx, v2)
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "other mount options") {
		t.Fatalf("group run with the held volume's mount_options removed = %v; want a conflict (precondition)", err)
	}
	if n := rpcs() - before; n != 0 {
		t.Errorf("%d ControllerPublish/NodeStage/NodePublish RPCs sent for the new volume of an alloc refused for its held claim's mount options; "+
			"the help and design say such an alloc is refused before anything is claimed for it", n)
	}
}
