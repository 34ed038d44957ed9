package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/hostpath/hostpathtest"
	"github.com/volctl/volctl/internal/spec"
)

// TestAllocWhoseSecondDestinationHoldsFilesClaimsNothing: `volctl group run --help`
// promises that a volume_mount destination holding files "is not bound over ...: the alloc
// fails (exit 4) before anything is claimed, naming them". For an alloc of two volumes whose
// second destination holds the owner's files, the first volume was staged, published and bound
// (and then released again): the pre-admission check (bindsBindable) was per claim, not per
// alloc; refusedBeforeClaiming checks the whole alloc first now. Real mounts, as root.
// Found by helper review70.
func TestAllocWhoseSecondDestinationHoldsFilesClaimsNothing(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	h.createWriterVolume(t, "logs")
	dir := hostpathtest.MountDir(t)
	second := filepath.Join(dir, "logs")
	if err := os.MkdirAll(second, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(second, "owner.log"), []byte("the owner's"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{writerBlock("d", "data"), writerBlock("l", "logs")},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(dir, "data")}, {Volume: "l", Destination: second}}}
	_, err := h.e.RunGroup(h.ctx, g)
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `is a directory holding "owner.log"`) {
		t.Fatalf("group run = %v; want a conflict naming owner.log", err)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume) + h.faults.Calls(csi.RPCNodePublishVolume) + h.faults.Calls(csi.RPCControllerPublishVolume); n != 0 {
		t.Errorf("%d ControllerPublish/NodeStage/NodePublish RPCs sent for an alloc refused for files at its volume_mount destination; "+
			"the help promises it fails before anything is claimed", n)
	}
	if evs, err := h.e.Events(h.ctx, 0, EventFilter{Alloc: spec.AllocName("web", 0)}); err != nil || len(evs) != 0 {
		t.Errorf("events of the alloc refused before anything was claimed: %d, %v; want none", len(evs), err)
	}
	if m := mountsUnder(t, dir); len(m) != 0 {
		t.Errorf("mounts left: %v", m)
	}
}

// TestAllocWithAChangedVolumeMountClaimsNothing: docs/architecture.md says an alloc
// holding a claim on a volume the spec no longer names "is refused before anything is claimed
// for it, as a changed volume_mount is". A spec that adds a volume (listed first) and moves a
// held volume's volume_mount elsewhere has the new volume staged, published and bound for the
// alloc before the held claim's changed volume_mount is refused, then released again: the
// refusal is found per claim at admission (heldOtherwise), after the earlier claims were made.
// Real mounts, as root.
// Found by helper review70.
func TestAllocWithAChangedVolumeMountClaimsNothing(t *testing.T) {
	t.Parallel()
	h := newHostpathEngine(t)
	h.createWriterVolume(t, "data")
	h.createWriterVolume(t, "logs")
	dir := hostpathtest.MountDir(t)
	v1 := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{writerBlock("l", "logs")},
		Mounts:  []spec.VolumeMount{{Volume: "l", Destination: filepath.Join(dir, "l1")}}}
	if _, err := h.e.RunGroup(h.ctx, v1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = h.e.StopGroup(h.ctx, "web") })
	before := h.faults.Calls(csi.RPCNodeStageVolume) + h.faults.Calls(csi.RPCNodePublishVolume) + h.faults.Calls(csi.RPCControllerPublishVolume)
	v2 := spec.Group{Name: "web", Count: 1,
		Volumes: []spec.VolumeRequest{writerBlock("d", "data"), writerBlock("l", "logs")},
		Mounts:  []spec.VolumeMount{{Volume: "d", Destination: filepath.Join(dir, "data")}, {Volume: "l", Destination: filepath.Join(dir, "l2")}}}
	_, err := h.e.RunGroup(h.ctx, v2)
	if err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "bind-mounted otherwise") {
		t.Fatalf("group run with a changed volume_mount = %v; want a conflict", err)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume) + h.faults.Calls(csi.RPCNodePublishVolume) + h.faults.Calls(csi.RPCControllerPublishVolume) - before; n != 0 {
		t.Errorf("%d ControllerPublish/NodeStage/NodePublish RPCs sent for the new volume of an alloc refused for its changed volume_mount; "+
			"the design says such an alloc is refused before anything is claimed for it", n)
	}
}

// writerBlock is a group's volume block name, of volume source, for a single-node writer's
// file-system claim.
func writerBlock(name, source string) spec.VolumeRequest {
	return spec.VolumeRequest{Name: name, Type: "csi", Source: source, AccessMode: spec.SingleNodeWriter, AttachmentMode: spec.FileSystem}
}
