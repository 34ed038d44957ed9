package store

import "testing"

// A clone's clone_id as its spec wrote it (migration 0013's clone_spec): written by Insert, kept
// by Update (which does not write it), and "" for a volume that is no clone.
func TestCloneSpecIsWrittenOnceAndKept(t *testing.T) {
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		if err := tx.Volumes().Insert(&Volume{ID: "clone", PluginID: "hp", State: VolumeReady, CloneID: "vol-1", CloneSpec: "src"}); err != nil {
			return err
		}
		return tx.Volumes().Insert(&Volume{ID: "plain", PluginID: "hp", State: VolumeReady})
	})
	update(t, s, func(tx *Tx) error {
		v, err := tx.Volumes().Get("clone")
		if err != nil {
			return err
		}
		v.CloneSpec, v.CapacityBytes = "", 5
		return tx.Volumes().Update(&v)
	})
	view(t, s, func(tx *Tx) error {
		for id, want := range map[string]string{"clone": "src", "plain": ""} {
			v, err := tx.Volumes().Get(id)
			if err != nil {
				return err
			}
			if v.CloneSpec != want {
				t.Errorf("volume %s: CloneSpec %q, want %q", id, v.CloneSpec, want)
			}
		}
		return nil
	})
}
