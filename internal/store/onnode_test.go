package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// OnNode is what admission counts against max_volumes_per_node: a plugin's volumes with a live
// claim or a staging row.
func TestVolumesOnNode(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			insertReady(tx, "claimed", "staged", "idle"),
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

// A snapshot intent round-trips every field, names are taken by records and intents alike,
// and the secrets it keeps print redacted.
func TestSnapshotCreates(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	sc := filled[SnapshotCreate]()
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Snapshots().PutCreate(&sc),
			tx.Snapshots().Put(&Snapshot{PluginID: sc.PluginID, SnapshotID: "id-1", Name: "recorded"}))
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.Snapshots().GetCreate(sc.PluginID, sc.Name)
		if err != nil {
			return err
		}
		diff(t, "snapshot intent", got, sc)
		for _, name := range []string{sc.Name, "recorded"} {
			if taken, err := tx.Snapshots().NameTaken(sc.PluginID, name); err != nil || !taken {
				t.Errorf("NameTaken(%q) = %v, %v; want true", name, taken, err)
			}
		}
		if taken, _ := tx.Snapshots().NameTaken(sc.PluginID, "free"); taken {
			t.Error("NameTaken(free) = true")
		}
		all, err := tx.Snapshots().ListCreates("")
		if err != nil || len(all) != 1 {
			t.Errorf("ListCreates = %v, %v", all, err)
		}
		for _, v := range []any{got, &got} {
			for k, secret := range got.Secrets.Plain() {
				if out := fmt.Sprintf("%s %+v %#v", v, v, v); strings.Contains(out, secret) {
					t.Errorf("intent prints secret %s: %s", k, out)
				}
			}
		}
		return nil
	})
	update(t, s, func(tx *Tx) error { return tx.Snapshots().DeleteCreate(sc.PluginID, sc.Name) })
	view(t, s, func(tx *Tx) error {
		if _, err := tx.Snapshots().GetCreate(sc.PluginID, sc.Name); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetCreate after delete: %v", err)
		}
		return nil
	})
}

// The secrets a snapshot keeps (to be deleted after its volume is forgotten) are among those
// the engine scrubs from plugin messages.
func TestSecretValuesIncludeSnapshots(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	update(t, s, func(tx *Tx) error {
		return errors.Join(
			tx.Snapshots().Put(&Snapshot{PluginID: "p", SnapshotID: "s1", Secrets: spec.Secrets{"k": "snap-secret"}}),
			tx.Snapshots().PutCreate(&SnapshotCreate{PluginID: "p", Name: "n", Secrets: spec.Secrets{"k": "intent-secret"}}))
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.SecretValues()
		slices.Sort(got)
		if want := []string{"intent-secret", "snap-secret"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("SecretValues = %q, %v; want %q", got, err, want)
		}
		return nil
	})
}
