package store

import "testing"

// SetExpansionLimit sets the limit of the pending expansion and of the one kept beneath it,
// each only where there is one; SetExpansionIntent clears the one beneath.
func TestSetExpansionLimitTouchesOnlyTheExpansionsThere(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, id := range []string{"both", "pending", "none"} {
		v := filled[Volume]()
		v.ID, v.State = id, VolumeReady
		update(t, s, func(tx *Tx) error { return tx.Volumes().Insert(&v) })
	}
	update(t, s, func(tx *Tx) error {
		if err := tx.Volumes().SetExpansionIntentOver("both", 5, 0, 6, 7); err != nil {
			return err
		}
		if err := tx.Volumes().SetExpansionIntentOver("pending", 5, 9, 0, 0); err != nil {
			return err
		}
		if err := tx.Volumes().SetExpansionIntent("none", 0, 0); err != nil {
			return err
		}
		for _, id := range []string{"both", "pending", "none"} {
			if err := tx.Volumes().SetExpansionLimit(id, 100); err != nil {
				return err
			}
		}
		return nil
	})
	want := map[string][4]int64{"both": {5, 100, 6, 100}, "pending": {5, 100, 0, 0}, "none": {0, 0, 0, 0}}
	view(t, s, func(tx *Tx) error {
		for id, w := range want {
			v, err := tx.Volumes().Get(id)
			if err != nil {
				return err
			}
			if got := [4]int64{v.ExpandMin, v.ExpandMax, v.ExpandBeneathMin, v.ExpandBeneathMax}; got != w {
				t.Errorf("%s: pending %d..%d, beneath %d..%d after SetExpansionLimit(100); want %v", id, got[0], got[1], got[2], got[3], w)
			}
		}
		return nil
	})
	update(t, s, func(tx *Tx) error { return tx.Volumes().SetExpansionIntent("both", 8, 0) })
	view(t, s, func(tx *Tx) error {
		v, err := tx.Volumes().Get("both")
		if err != nil {
			return err
		}
		if v.ExpandMin != 8 || v.ExpandBeneathMin != 0 || v.ExpandBeneathMax != 0 {
			t.Errorf("SetExpansionIntent(8) over a pending one with one beneath: pending %d, beneath %d..%d; want 8, none", v.ExpandMin, v.ExpandBeneathMin, v.ExpandBeneathMax)
		}
		return nil
	})
}
