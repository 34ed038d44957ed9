package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/spec"
)

// A mount something takes again and again is restored by every reconcile pass (the agent runs
// one a minute, more while claims are left): one "restore" event per claim per pass, which for
// a host of a few dozen such claims pushed every other event (claims, releases) out of the
// 10,000-row log within hours. A claim's restores are bounded as a looping plugin's starts
// are: within an hour, its first six and one notice saying so; another claim's restores, and
// this one's once the loop's are an hour old, are recorded as they are.
func TestRestoredAgainAndAgainIsBoundedInTheEventLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	later := h.onAClock()
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	cl := h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	lose := func() {
		st, _ := h.staging("v")
		h.mounts.markGone(cl.TargetPath)
		h.mounts.markGone(st.StagingPath)
	}
	restoreAt := func() {
		t.Helper()
		lose()
		rep, err := h.e.Reconcile(h.ctx)
		if err != nil || len(rep.Actions) == 0 {
			t.Fatalf("reconcile after the mounts went: %+v, %v; want the claim restored", rep, err)
		}
	}
	for range 100 { // 100 minutes of a mount taken at every pass
		later(time.Minute)
		restoreAt()
	}
	evs := messagesOf(h, EventFilter{Kind: "restore", VolumeID: "v", Alloc: "a"})
	if len(evs) > 2*(flapChanges+1) {
		t.Fatalf("%d restore events of a claim restored for 100 minutes; want at most %d:\n%s", len(evs), 2*(flapChanges+1), strings.Join(evs, "\n"))
	}
	notice := fmt.Sprintf(`the mount of alloc "a"'s claim on volume "v" is restored again and again: %d times within an hour`, flapChanges)
	if !strings.Contains(strings.Join(evs, "\n"), notice) {
		t.Errorf("restore events = %q; want one saying %q", evs, notice)
	}
	// Another claim's restore is its own.
	h.create(volume("w", capab(spec.SingleNodeWriter)))
	other := h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	st, _ := h.staging("w")
	h.mounts.markGone(other.TargetPath)
	h.mounts.markGone(st.StagingPath)
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatal(err)
	}
	if evs := messagesOf(h, EventFilter{Kind: "restore", VolumeID: "w", Alloc: "b"}); len(evs) != 1 || !strings.HasPrefix(evs[0], "restored the mount at ") {
		t.Errorf("another claim's restore: %q; want it recorded as it is", evs)
	}
	// Once the loop's restores are an hour old, a restore is recorded as it is again.
	later(2 * flapWindow)
	restoreAt()
	if evs := messagesOf(h, EventFilter{Kind: "restore", VolumeID: "v", Alloc: "a"}); !strings.HasPrefix(evs[0], "restored the mount at ") {
		t.Errorf("newest restore after the window = %q; want it recorded as it is", evs[0])
	}
}
