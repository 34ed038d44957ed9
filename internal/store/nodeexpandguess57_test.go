package store

import (
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A node expansion owed as a guess (migration 0028) is kept with its debt only: written by
// Update and Insert with one, cleared with it by SetNodeExpansion, and never read of a volume
// that owes nothing.
func TestNodeExpansionGuessIsKeptWithItsDebtOnly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	get := func() Volume {
		t.Helper()
		var v Volume
		view(t, s, func(tx *Tx) (err error) { v, err = tx.Volumes().Get("db"); return err })
		return v
	}
	edit := func(fn func(v *Volume)) {
		t.Helper()
		update(t, s, func(tx *Tx) error {
			v, err := tx.Volumes().Get("db")
			if err != nil {
				return err
			}
			fn(&v)
			return tx.Volumes().Update(&v)
		})
	}
	update(t, s, func(tx *Tx) error {
		if err := tx.Plugins().Put(&Plugin{ID: "p", Type: spec.PluginMonolith}); err != nil {
			return err
		}
		return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady, NodeExpandMin: 4 << 20, NodeExpandGuessed: true})
	})
	if v := get(); !v.NodeExpandGuessed || v.NodeExpandMin != 4<<20 {
		t.Fatalf("inserted with a guessed debt: owed %d, guessed %v", v.NodeExpandMin, v.NodeExpandGuessed)
	}
	update(t, s, func(tx *Tx) error { return tx.Volumes().SetNodeExpansion("db", 0, 0) })
	if v := get(); v.NodeExpandGuessed {
		t.Error("the debt cleared, the guess is still read")
	}
	edit(func(v *Volume) { v.NodeExpandGuessed = true })
	if v := get(); v.NodeExpandGuessed {
		t.Error("a volume owing nothing reads a guessed debt")
	}
	edit(func(v *Volume) { v.NodeExpandMin, v.NodeExpandGuessed = 2<<20, true })
	if v := get(); !v.NodeExpandGuessed {
		t.Error("updated with a guessed debt: not read back")
	}
	edit(func(v *Volume) { v.NodeExpandGuessed = false })
	if v := get(); v.NodeExpandGuessed || v.NodeExpandMin != 2<<20 {
		t.Errorf("updated with the plugin's word: owed %d, guessed %v; want the debt, no guess", v.NodeExpandMin, v.NodeExpandGuessed)
	}
}
