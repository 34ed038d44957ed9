package engine

import (
	"sync"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// hookedMounts is a mount table that runs hook once, at the first read of the table: before
// it reads (atRead: the table read sees what hook did) or after (stale: hook's mounts are not in
// the table returned), as another process acting while a reconcile pass reads the table does.
type hookedMounts struct {
	MountTable
	stale bool
	hook  func()
	once  sync.Once
}

func (m *hookedMounts) MountsUnder(dir string) (map[string]bool, error) {
	if !m.stale {
		m.once.Do(m.hook)
	}
	out, err := m.MountTable.MountsUnder(dir)
	if m.stale {
		m.once.Do(m.hook)
	}
	return out, err
}

// A reconcile pass after a reboot lists volume v staged (its staging lost) with a published
// claim whose target is gone, then reads the mount table; meanwhile, after the table was read,
// another process claims v for another alloc, staging it again (mounted after the pass's
// table). The pass must not take that staging as lost from its stale table (marking it
// unstaged would record a staging the plugin holds as gone, and stage it a second time): the
// claim's commits changed the staging row, which the pass compares with the one it listed, and
// reads the table again. The claim is restored onto the staging the other process made.
func TestReconcileWithAStaleTableKeepsAStagingMadeAfterItWasRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.claimThenReboot("v", "a", spec.MultiNodeMultiWriter)
	h.faults.ResetCounts()
	base := &republishedMounts{fakeMounts: h.mounts, mem: h.mem, since: len(h.mem.Calls())}
	table := &hookedMounts{MountTable: base, stale: true, hook: func() { h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"}) }}
	rep, err := h.processWith(table).Reconcile(h.ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile: %+v, %v; want no problem", rep.Problems, err)
	}
	for _, cl := range h.liveClaims("v") {
		if !cl.AtRest() || cl.Degraded {
			t.Errorf("claim %+v; want it published", cl)
		}
	}
	if st, ok := h.staging("v"); !ok || !st.Staged {
		t.Errorf("staging of v = %+v (found %v); want staged: the plugin holds it staged", st, ok)
	}
	if n := h.faults.Calls(csi.RPCNodeStageVolume); n != 1 {
		t.Errorf("NodeStageVolume sent %d times; want once, by the other process's claim", n)
	}
}

// The other way round: another process claims volume w while a reconcile pass, which listed
// the claims and stagings before, reads the mount table, so the table has the claim's staging
// and target mounts that the pass's lists lack. They are a live claim's, not mounts nothing
// accounts for: reconcile must not report them as orphans, failing (exit 1) and advising the
// user to unmount by hand what an alloc is using.
func TestReconcileDoesNotReportAClaimMadeWhileItReadTheTableAsOrphans(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("w"))
	base := &republishedMounts{fakeMounts: h.mounts, mem: h.mem, since: len(h.mem.Calls())}
	table := &hookedMounts{MountTable: base, hook: func() { h.claim(ClaimRequest{VolumeID: "w", Alloc: "c"}) }}
	rep, err := h.processWith(table).Reconcile(h.ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("reconcile: %+v, %v; want no problem (the mounts are claim c's, made meanwhile)", rep.Problems, err)
	}
	if live := h.liveClaims("w"); len(live) != 1 || !live[0].AtRest() {
		t.Errorf("claims of w = %+v; want c's, published", live)
	}
}
