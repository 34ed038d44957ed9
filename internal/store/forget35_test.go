package store

import (
	"errors"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The adversary: a plugin that echoes volume a's secret into volume b's external ID and volume
// d's into the ID of a snapshot it made. A clone of b records b's external ID as its clone_id,
// and a volume restored from the snapshot records its ID as its snapshot_id: both are data a
// plugin returned, sent back as they are and shown by `volume status` (CloneID, SnapshotID)
// scrubbed with SecretValues. Then a, d and b are deleted (the snapshot was deleted before).
// keepHeld looked for the values gone in every column of plugin data but those two: no record
// it read held a's or d's secret any more, so both were let go, and the clone's clone_id and
// the restored volume's snapshot_id were printed with them whole.
func TestSecretHeldByACloneOrRestoreSourceIDStaysScrubbed(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithForget(forgottenAsGone))
	const aSecret, dSecret, eSecret = "vol-a-s3cret", "vol-d-s3cret", "vol-e-s3cret"
	plugin := Plugin{ID: "p", Type: spec.PluginNode}
	vols := []Volume{
		{ID: "a", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": aSecret}},
		{ID: "d", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": dSecret}},
		{ID: "e", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": eSecret}},
		{ID: "b", PluginID: "p", State: VolumeReady, ExternalID: "ext-" + aSecret},
		{ID: "clone", PluginID: "p", State: VolumeReady, ExternalID: "ext-clone", CloneID: "ext-" + aSecret},
		{ID: "restored", PluginID: "p", State: VolumeReady, ExternalID: "ext-restored", SnapshotID: "snap-" + dSecret},
	}
	update(t, s, func(tx *Tx) error {
		errs := []error{tx.Plugins().Put(&plugin)}
		for i := range vols {
			errs = append(errs, tx.Volumes().Insert(&vols[i]))
		}
		return errors.Join(errs...)
	})
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Volumes().Delete("a"), tx.Volumes().Delete("d"), tx.Volumes().Delete("b"))
	})
	secretValues := func() []string {
		t.Helper()
		var vs []string
		view(t, s, func(tx *Tx) error {
			var err error
			vs, err = tx.SecretValues()
			return err
		})
		return vs
	}
	vs := secretValues()
	if !slices.Contains(vs, aSecret) {
		t.Errorf("after a's and b's delete, SecretValues = %q: a's secret, which the clone's clone_id holds, is no longer scrubbed from it", vs)
	}
	if !slices.Contains(vs, dSecret) {
		t.Errorf("after d's delete, SecretValues = %q: d's secret, which the restored volume's snapshot_id holds, is no longer scrubbed from it", vs)
	}
	// Once the clone and the restored volume are gone, nothing holds them: let go by the
	// next transaction that takes secrets out (e's delete), with e's, which nothing held.
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Volumes().Delete("clone"), tx.Volumes().Delete("restored"))
	})
	update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("e") })
	if vs := secretValues(); slices.ContainsFunc(vs, func(v string) bool { return v == aSecret || v == dSecret || v == eSecret }) {
		t.Errorf("with nothing holding them, SecretValues = %q; want a's, d's and e's let go", vs)
	}
}
