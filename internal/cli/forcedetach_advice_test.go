package cli

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// A release the plugin fails for good leaves the claim for reconcile and advises
// `volctl volume detach V --force` to drop it if the plugin is gone. Off a terminal (a script,
// the advice pasted into one) detach refuses without --yes (exit 2): the advice did not run
// as written (review31c's lead). Run as advised, it drops the claim.
func TestAdvisedForceDetachRunsAsWritten(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	faults := csitest.NewFaults()
	_, e, _ := serveMem(t, csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig()), csitest.WithFaults(faults))
	createSingleWriter(t, e, "v")
	claimUntilCleanup(t, e, "v", "a1")
	faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Internal)
	code, errOut := runOn(ctx, e, "volume", "release", "v", "--alloc", "a1")
	faults.Clear()
	if code == ExitOK {
		t.Fatalf("release with NodeUnpublishVolume failing: exit 0: %s", errOut)
	}
	detach := lastAdvised(errOut, "volctl volume detach")
	if detach == "" {
		t.Fatalf("the failed release advises no detach: %s", errOut)
	}
	if code, out := runOn(ctx, e, shellquotetest.RunArgs(t, detach)...); code != ExitOK {
		t.Fatalf("the advised `%s`, run as written off a terminal: exit %d: %s", detach, code, out)
	}
	if info, err := e.Volume(ctx, "v"); err != nil || len(info.Claims) != 0 {
		t.Errorf("after the advised `%s`: claims %+v, err %v", detach, info.Claims, err)
	}
}
