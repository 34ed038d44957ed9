package engine

import (
	"context"

	"github.com/volctl/volctl/internal/store"
)

// History and pastClaimInfo serve only the tests (no command lists freed claims): they read
// what a release or a rollback left in claim_history, as ClaimInfo.

// History returns up to limit freed claims, newest first; of one volume when volumeID is set.
func (e *Engine) History(ctx context.Context, volumeID string, limit int) ([]ClaimInfo, error) {
	var out []ClaimInfo
	err := e.store.View(ctx, func(tx *store.Tx) error {
		past, err := tx.History(volumeID, limit)
		for _, p := range past {
			out = append(out, pastClaimInfo(p))
		}
		return err
	})
	return out, err
}

func pastClaimInfo(p store.PastClaim) ClaimInfo {
	out := claimInfo(p.Claim)
	out.FreedAt, out.Outcome = p.FreedAt, string(p.Outcome)
	return out
}
