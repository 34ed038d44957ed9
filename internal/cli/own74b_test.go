package cli

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// TestOwedUnpublishRefusalsAdviseADeregisterThatRunsAsPrinted: volume "v" is left attached,
// a ControllerUnpublishVolume owed (a forced detach whose ControllerUnpublishVolume the plugin
// keeps refusing). `volctl volume deregister v --yes` and `volctl plugin deregister mem --force
// --yes` then refuse, and both name the way past as `volctl volume deregister v --force`
// (refuseOwedUnpublish in engine/volumes_register.go, refuseOwedUnpublishPlugin's forget in
// engine/plugins.go). Run as printed off a terminal (a script, or pasted into one), that
// command is refused for want of --yes (exit 2): the same defect the last commits fixed in
// volumes_delete.go's and release.go's deregister/detach advice (`--force --yes`), left in
// these two siblings. Correct: the advice carries --yes (`volctl volume deregister v --force
// --yes`), and followed as printed it deregisters the volume, forgetting the attachment the
// plugin cannot take back, exit 0.
// Found by helper review74 (the last own review).
func TestOwedUnpublishRefusalsAdviseADeregisterThatRunsAsPrinted(t *testing.T) {
	requireMount(t)
	for _, refused := range [][]string{
		{"volume", "deregister", "v", "--yes"},
		{"plugin", "deregister", "mem", "--force", "--yes"},
	} {
		t.Run(refused[0], func(t *testing.T) {
			ctx := context.Background()
			faults := csitest.NewFaults()
			mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())
			_, e, _ := serveMem(t, mem, csitest.WithFaults(faults))
			createSingleWriter(t, e, "v")
			claimUntilCleanup(t, e, "v", "a1")
			faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Internal)
			t.Cleanup(func() { faults.Clear() })
			if code, errOut := runOn(ctx, e, "volume", "detach", "v", "--force", "--yes"); code != ExitOK {
				t.Fatalf("forced detach: exit %d: %s", code, errOut)
			}
			if info, err := e.Volume(ctx, "v"); err != nil || info.AttachedTo == "" {
				t.Fatalf("premise: the attachment is owed after the forced detach: %+v, %v", info, err)
			}
			code, errOut := runOn(ctx, e, refused...)
			if code != ExitConflict {
				t.Fatalf("%v with an owed ControllerUnpublishVolume: exit %d, want %d: %s", refused, code, ExitConflict, errOut)
			}
			advised := lastAdvised(errOut, "volctl volume deregister")
			if advised == "" {
				t.Fatalf("%v names no volume deregister: %s", refused, errOut)
			}
			if code, out := runOn(ctx, e, shellquotetest.RunArgs(t, advised)...); code != ExitOK {
				t.Errorf("the advised `%s`, run as printed off a terminal: exit %d: %s\nadvised in: %s", advised, code, out, errOut)
			}
		})
	}
}
