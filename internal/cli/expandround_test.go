package cli

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/shellquote/shellquotetest"
)

// review31c found: a plugin that allocates in whole GiB answers an expand to 1536MiB with 2GiB (the
// spec lets it: at least required_bytes). The node expansion owed is recorded at the size asked
// (min(size, newSize)), and when NodeExpandVolume fails the error says to run
// `volctl volume expand v --size 1536MiB` again: below the 2GiB the volume is now recorded at,
// which expand refuses ("volumes cannot shrink").
func TestOwedExpandAdviceAfterARoundedAnswer(t *testing.T) {
	advisedAfterNodeExpandFails(t, 2<<30, "--size", "1536MiB")
}

// advisedAfterNodeExpandFails claims volume v on a mounting mem plugin that answers
// ControllerExpandVolume with answer bytes and fails NodeExpandVolume, runs `volctl volume
// expand v` with flags (exit 1 wanted), then the expand its error advises (exit 0 wanted), and
// returns the engine, for a test to look further.
func advisedAfterNodeExpandFails(t *testing.T, answer int64, flags ...string) *engine.Engine {
	t.Helper()
	requireMount(t)
	ctx := context.Background()
	faults := csitest.NewFaults()
	mem := csitest.NewMountingMemPlugin(t, csitest.DefaultMemConfig())
	_, e, _ := serveMem(t, mem, csitest.WithFaults(faults))
	createSingleWriter(t, e, "v")
	claimUntilCleanup(t, e, "v", "a1")
	mem.AnswerExpandWith(answer)
	faults.FailAlways(csi.RPCNodeExpandVolume, codes.Internal)
	code, errOut := runOn(ctx, e, append([]string{"volume", "expand", "v"}, flags...)...)
	faults.Clear()
	mem.AnswerExpandWith(0)
	if code != ExitError {
		t.Fatalf("expand answered with %d bytes, the node failing: exit %d: %s", answer, code, errOut)
	}
	again := lastAdvised(errOut, "volctl volume expand")
	if again == "" {
		t.Fatalf("no expand advised: %s", errOut)
	}
	if code, out := runOn(ctx, e, shellquotetest.RunArgs(t, again)...); code != ExitOK {
		t.Fatalf("the advised `%s`: exit %d: %s\n(the error that advised it: %s)", again, code, out, errOut)
	}
	return e
}
