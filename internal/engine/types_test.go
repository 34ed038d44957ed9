package engine

import (
	"testing"

	"github.com/volctl/volctl/internal/store"
)

// ClaimInfo.AtRest is store.Claim.AtRest: `volctl status` lists the claims that are not at rest,
// and the volume list counts them with the store's rule, so the two must agree.
func TestClaimInfoAtRestMatchesTheStore(t *testing.T) {
	t.Parallel()
	for _, state := range store.ClaimStates {
		for _, releasing := range []bool{false, true} {
			for _, reconcile := range []bool{false, true} {
				ci := ClaimInfo{State: string(state), Releasing: releasing, NeedsReconcile: reconcile}
				sc := store.Claim{State: state, Releasing: releasing, NeedsReconcile: reconcile}
				if ci.AtRest() != sc.AtRest() {
					t.Errorf("state %s releasing %v needs_reconcile %v: ClaimInfo.AtRest %v, store %v",
						state, releasing, reconcile, ci.AtRest(), sc.AtRest())
				}
			}
		}
	}
	if !(ClaimInfo{State: string(store.ClaimPublished)}).AtRest() {
		t.Error("a plain published claim is not at rest")
	}
	if (ClaimInfo{State: string(store.ClaimPublished), NeedsReconcile: true}).AtRest() {
		t.Error("a published claim waiting for reconcile (its mount is gone) is at rest")
	}
}
