package store

import (
	"errors"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// SecretValues finds every secret and mount flag the state holds, wherever it is kept, each
// once: what the engine scrubs from plugin messages.
func TestSecretValues(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	view(t, s, func(tx *Tx) error {
		got, err := tx.SecretValues()
		if err != nil || len(got) != 0 {
			t.Errorf("SecretValues of an empty state = %q, %v; want none", got, err)
		}
		return nil
	})
	vol := Volume{ID: "v", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"key": "vol-secret", "again": "shared"},
		MountOptions: &spec.MountOptions{FSType: "ext4", MountFlags: spec.MountFlags{"vol-flag", "shared"}}}
	bare := Volume{ID: "w", PluginID: "p", State: VolumeReady}
	live := Claim{VolumeID: "v", Alloc: "a", Mode: ClaimRead, State: ClaimTaken, MountFlags: spec.MountFlags{"claim-flag"}}
	freed := Claim{VolumeID: "v", Alloc: "b", Mode: ClaimRead, State: ClaimTaken, MountFlags: spec.MountFlags{"past-flag"}}
	plugin := Plugin{ID: "p", Type: spec.PluginNode, Exec: &spec.Exec{Command: "x", Env: spec.Secrets{"TOKEN": "env-value"}}}
	group := Group{Name: "g", State: GroupRunning, Spec: spec.Group{Name: "g", Volumes: []spec.VolumeRequest{{
		Name: "data", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"group-flag"}}}, {Name: "plain"}}}}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Volumes().Insert(&vol), tx.Volumes().Insert(&bare), tx.Claims().Insert(&live),
			tx.Claims().Insert(&freed), tx.Plugins().Put(&plugin), tx.Plugins().Put(&Plugin{ID: "q", Type: spec.PluginNode}),
			tx.Groups().Put(&group))
	})
	update(t, s, func(tx *Tx) error { return tx.Claims().Free(freed.ID, OutcomeReleased) })
	var got []string
	view(t, s, func(tx *Tx) (err error) {
		got, err = tx.SecretValues()
		return err
	})
	slices.Sort(got)
	want := []string{"claim-flag", "env-value", "group-flag", "past-flag", "shared", "vol-flag", "vol-secret"}
	if !slices.Equal(got, want) {
		t.Errorf("SecretValues = %q, want %q", got, want)
	}
}
