package cli

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// review31c found: a plugin that allocates in whole GiB answers an expand to 1536MiB with 2GiB (the
// spec lets it: at least required_bytes). The node expansion owed is recorded at the size asked
// (min(size, newSize)), and when NodeExpandVolume fails the error says to run
// `volctl volume expand v --size 1536MiB` again: below the 2GiB the volume is now recorded at,
// which expand refuses ("volumes cannot shrink").
func TestOwedExpandAdviceAfterARoundedAnswer(t *testing.T) {
	requireMount(t)
	ctx := context.Background()
	faults := csitest.NewFaults()
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())
	_, e, _ := serveMem(t, mem, csitest.WithFaults(faults))
	createSingleWriter(t, e, "v")
	claimUntilCleanup(t, e, "v", "a1")
	mem.AnswerExpandWith(2 << 30)
	faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	code, errOut := runOn(ctx, e, "volume", "expand", "v", "--size", "1536MiB")
	faults.Clear()
	if code != ExitError {
		t.Fatalf("expand with the node failing: exit %d: %s", code, errOut)
	}
	again := lastAdvised(errOut, "volctl volume expand")
	if again == "" {
		t.Fatalf("no expand advised: %s", errOut)
	}
	if code, out := runOn(ctx, e, shellquotetest.RunArgs(t, again)...); code != ExitOK {
		t.Fatalf("the advised `%s`: exit %d: %s\n(the error that advised it: %s)", again, code, out, errOut)
	}
}
