package store

import (
	"errors"
	"slices"
	"testing"
)

// A mark's servers (Handover.Peers, migration 0023): written by Put and by SetOutcome, read
// back in order by Get and List; none is read back as none (a mark made before the column, or
// whose cluster named no servers), not as one empty server.
func TestHandoverPeers(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	peers := []string{"10.0.1.1:4647", "[fd00::1]:4647"}
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			insertReady(tx, "a", "b"),
			tx.Handovers().Put(&Handover{VolumeID: "a", Address: "http://n1:4646", Peers: peers}),
			tx.Handovers().Put(&Handover{VolumeID: "b", Address: "http://n1:4646"}),
			tx.Handovers().SetOutcome("b", false, 9, []string{"10.0.2.1:4647"}),
		)
	})
	view(t, s, func(tx *Tx) error {
		a, aerr := tx.Handovers().Get("a")
		hs, lerr := tx.Handovers().List()
		if aerr != nil || lerr != nil || !slices.Equal(a.Peers, peers) || len(hs) != 2 || !slices.Equal(hs[1].Peers, []string{"10.0.2.1:4647"}) || hs[1].Index != 9 {
			t.Errorf("marks: a %+v (%v), list %+v (%v)", a, aerr, hs, lerr)
		}
		return nil
	})
	update(t, s, func(tx *Tx) error { return tx.Handovers().SetOutcome("a", false, 0, nil) })
	view(t, s, func(tx *Tx) error {
		if a, err := tx.Handovers().Get("a"); err != nil || a.Peers != nil {
			t.Errorf("a mark whose servers were cleared: %+v (%v), want none", a, err)
		}
		return nil
	})
}
