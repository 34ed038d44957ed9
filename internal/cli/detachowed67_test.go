package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
)

// TestForcedDetachThatSentTheOwedUnpublishDoesNotSayNothingToDetach: a forced detach that
// could not send ControllerUnpublishVolume leaves the attachment recorded, owed, and its warning
// says `volctl volume detach V --force` (or reconcile) ends it. Run again once the plugin
// answers, the forced detach sends the owed ControllerUnpublishVolume and detaches the volume
// from the node, and said it did nothing ("has no claims: nothing to detach"), `--json`
// `{"released":[]}`. It says where it detached the volume from now (DetachResult.DetachedFrom).
// Found by helper review67.
func TestForcedDetachThatSentTheOwedUnpublishDoesNotSayNothingToDetach(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	mem, e, info := volumeWithAnOwedDetach(t)
	ext := info.ExternalID
	if n := len(mem.PublishedNodes(ext)); n != 1 {
		t.Fatalf("premise: the plugin has the volume attached to %d nodes, want 1", n)
	}

	code, out, errOut := runOnOut(ctx, e, "volume", "detach", "v", "--force", "--yes")
	if code != ExitOK {
		t.Fatalf("second forced detach: exit %d: %s", code, errOut)
	}
	if n := len(mem.PublishedNodes(ext)); n != 0 {
		t.Fatalf("premise: the second forced detach left the volume attached to %d nodes", n)
	}
	if strings.Contains(errOut, "nothing to detach") || !strings.Contains(out, fmt.Sprintf("Detached volume \"v\" from node %q", info.AttachedTo)) {
		t.Errorf("the forced detach detached volume \"v\" from node %q (the owed ControllerUnpublishVolume) and says:\n%s%s", info.AttachedTo, out, errOut)
	}
}

// volumeWithAnOwedDetach serves a mounting mem plugin and claims volume "v" for alloc a1; a
// forced detach then fails its ControllerUnpublishVolume (UNAVAILABLE), which it leaves owed,
// the attachment recorded, and the plugin answers again. It returns the plugin, the engine and
// the volume as recorded then.
func volumeWithAnOwedDetach(t *testing.T) (*csitest.MemPlugin, *engine.Engine, engine.VolumeInfo) {
	t.Helper()
	mem, e, faults, info := volumeOwingAFailingUnpublish(t)
	faults.Clear()
	return mem, e, info
}

// volumeOwingAFailingUnpublish is volumeWithAnOwedDetach with the plugin still answering
// ControllerUnpublishVolume UNAVAILABLE (faults, to clear).
func volumeOwingAFailingUnpublish(t *testing.T) (*csitest.MemPlugin, *engine.Engine, *csitest.Faults, engine.VolumeInfo) {
	t.Helper()
	ctx := context.Background()
	faults := csitest.NewFaults()
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())
	_, e, _ := serveMem(t, mem, csitest.WithFaults(faults))
	createSingleWriter(t, e, "v")
	claimUntilCleanup(t, e, "v", "a1")
	faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Unavailable)
	if code, errOut := runOn(ctx, e, "volume", "detach", "v", "--force", "--yes"); code != ExitOK {
		t.Fatalf("first forced detach: exit %d: %s", code, errOut)
	}
	info, err := e.Volume(ctx, "v")
	if err != nil || info.AttachedTo == "" {
		t.Fatalf("premise: the attachment is owed after the first forced detach: %+v, %v", info, err)
	}
	return mem, e, faults, info
}
