package cli

import (
	"regexp"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A group run cut short between the claims of one alloc (killed, or interrupted by Ctrl-C,
// after the alloc's first claim) leaves the alloc holding some of its volumes, where a run that
// ends gives each alloc all or none. group status counted that alloc ready ("Allocs Ready
// 1/1") and listed only what it held: the group read as up, its alloc without its logs
// volume. The alloc is not ready, and each volume it lacks is a row saying so and what finishes
// it; --json has them as "missing".
func TestGroupStatusSaysWhatAnAllocCutShortLacks(t *testing.T) {
	requireMount(t)
	h := newCLIHarness(t)
	h.createVolume(t, "data", spec.MultiNodeMultiWriter)
	h.createVolume(t, "logs", spec.MultiNodeMultiWriter)
	g := apiGroup(t, "data", "logs")
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	// What a run killed after the alloc's first claim leaves: that claim alone.
	if _, err := h.e.Release(h.ctx, "logs", "api[0]"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"group", "status", "api"}, []string{
			`(?m)^Allocs Ready += 0/1$`,
			`(?m)^api\[0\] +data +write +published `,
			"(?m)^api\\[0\\] +logs +<none> +missing \\(a run cut short: `volctl group run FILE` of its spec again\\) +<none> +<none>$",
		}},
		{[]string{"group", "status"}, []string{`(?m)^api +running +1 +0/1 +1$`}},
		{[]string{"group", "status", "api", "--json"}, []string{`"missing": \[\s*"logs"\s*\]`}},
	} {
		h.runMatches(t, tc.args, tc.want...)
	}
	// Run again, the group is whole.
	if _, err := h.e.RunGroup(h.ctx, g); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := h.runReported("group", "status", "api"); !regexp.MustCompile(`(?m)^Allocs Ready += 1/1$`).MatchString(out) || regexp.MustCompile(`missing`).MatchString(out) {
		t.Errorf("group status after the run again:\n%s", out)
	}
}

// runMatches runs volctl with args as main does and fails t unless it exits 0 and its output
// matches each of the regular expressions want.
func (h *cliHarness) runMatches(t *testing.T, args []string, want ...string) {
	t.Helper()
	code, out, errOut := h.runReported(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, %s", args, code, errOut)
	}
	for _, w := range want {
		if !regexp.MustCompile(w).MatchString(out) {
			t.Errorf("%v: no match for %s in\n%s", args, w, out)
		}
	}
}
