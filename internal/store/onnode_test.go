package store

import (
	"errors"
	"slices"
	"testing"
)

// OnNode is what admission counts against max_volumes_per_node: a plugin's volumes with a live
// claim or a staging row.
func TestVolumesOnNode(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			tx.Volumes().Insert(&Volume{ID: "claimed", PluginID: "hp", State: VolumeReady}),
			tx.Volumes().Insert(&Volume{ID: "staged", PluginID: "hp", State: VolumeReady}),
			tx.Volumes().Insert(&Volume{ID: "idle", PluginID: "hp", State: VolumeReady}),
			tx.Volumes().Insert(&Volume{ID: "other", PluginID: "nfs", State: VolumeReady}),
			tx.Claims().Insert(&Claim{VolumeID: "claimed", Alloc: "a", Mode: ClaimWrite, AccessMode: "single-node-writer",
				AttachmentMode: "file-system", State: ClaimTaken}),
			tx.Claims().Insert(&Claim{VolumeID: "other", Alloc: "a", Mode: ClaimWrite, AccessMode: "single-node-writer",
				AttachmentMode: "file-system", State: ClaimTaken}),
			tx.Stagings().Put(&Staging{VolumeID: "staged", PluginID: "hp", StagingPath: "/s", ControllerPublished: true}),
		)
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.Volumes().OnNode("hp")
		if err != nil {
			return err
		}
		if want := []string{"claimed", "staged"}; !slices.Equal(got, want) {
			t.Errorf("OnNode(hp) = %v, want %v", got, want)
		}
		return nil
	})
}
