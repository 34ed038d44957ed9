package cli

import (
	"testing"
)

// agent38: a `group run` every alloc of which failed (here its volume is not registered) left
// group status saying "running", 0/1 allocs ready, and nothing of why. It says failed, each
// alloc's error, and what to do: run it again, or stop it (pasteable); --json's state is
// "failed", the alloc's error in "error".
func TestGroupStatusSaysARunEveryAllocOfWhichFailedFailed(t *testing.T) {
	t.Parallel()
	h := newCLIHarness(t)
	if _, err := h.e.RunGroup(h.ctx, apiGroup(t, "nope")); err == nil {
		t.Fatal("group run of an unregistered volume: no error")
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"group", "status"}, []string{`(?m)^api +failed +1 +0/1 +0$`}},
		{[]string{"group", "status", "api"}, []string{
			`(?m)^State += failed$`,
			`(?m)^api\[0\] .*volume "nope"`,
			"Every alloc failed at the last `volctl group run`.*or release it: `volctl group stop api`",
		}},
		{[]string{"group", "status", "api", "--json"}, []string{`"state": "failed"`, `"error": ".*volume \\"nope\\"`}},
	} {
		h.runMatches(t, tc.args, tc.want...)
	}
}
