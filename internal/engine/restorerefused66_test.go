package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin that refuses the restore's NodeStageVolume after a reboot for a reason of its own it
// keeps (volctl's plugin, its root moved: FAILED_PRECONDITION, saying what to do) meets every
// reconcile pass the same way. The pass's problem promised "the next reconcile restores it",
// which no pass could keep. Found by helper review66 (restore), read from the code.
func TestRestoreRefusedForGoodPromisesNoRestore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.SingleNodeWriter)
	h.faults.FailAlways(csi.RPCNodeStageVolume, codes.FailedPrecondition)
	for pass := 1; pass <= 2; pass++ {
		rep, err := h.e.Reconcile(h.ctx)
		if err == nil || len(rep.Problems) != 1 {
			t.Fatalf("pass %d: reconcile = %+v, %v; want the claim's restore reported", pass, rep, err)
		}
		if msg := rep.Problems[0].Message; strings.Contains(msg, "the next reconcile restores it") {
			t.Errorf("pass %d: reconcile's problem %q promises a restore the plugin's refusal keeps from every pass", pass, msg)
		}
	}
}
