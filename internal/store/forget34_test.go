package store

import (
	"errors"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The adversary: a plugin that echoes volume a's secret into the data it returns for other
// records (volume b's publish context, volume context and external ID, the plugin's node ID),
// which is kept raw, to be sent back as it is; then a is deleted. The command line scrubs what
// it prints with the secrets the state holds (SecretValues), which no longer held a's: b's
// publish context and the node ID were printed with a's secret whole. Now a value leaving the
// state that data a plugin returned still holds is kept among the secret values (kept_secrets)
// until that data goes, and the data itself is not changed (it is what the plugin is sent).
func TestSecretHeldByAnotherRecordsPluginDataStaysScrubbed(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithForget(forgottenAsGone))
	const aSecret, other, dSecret = "vol-a-s3cret", "vol-c-s3cret", "vol-d-s3cret"
	plugin := Plugin{ID: "p", Type: spec.PluginNode}
	a := Volume{ID: "a", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": aSecret}}
	c := Volume{ID: "c", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": other}}
	d := Volume{ID: "d", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": dSecret}}
	e := Volume{ID: "e", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": "vol-e-s3cret"}}
	b := Volume{ID: "b", PluginID: "p", State: VolumeReady, ExternalID: "ext-b", Context: map[string]string{"share": "//srv/" + aSecret}}
	live := Claim{VolumeID: "b", Alloc: "live", Mode: ClaimWrite, State: ClaimTaken, PublishContext: map[string]string{"token": aSecret}}
	update(t, s, func(tx *Tx) error {
		if err := errors.Join(tx.Plugins().Put(&plugin), tx.Plugins().SetFingerprint("p", Fingerprint{NodeID: "node-" + aSecret, Topology: map[string]string{"zone": dSecret}}),
			tx.Volumes().Insert(&a), tx.Volumes().Insert(&b), tx.Volumes().Insert(&c), tx.Volumes().Insert(&d), tx.Volumes().Insert(&e)); err != nil {
			return err
		}
		return tx.Claims().Insert(&live)
	})
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Volumes().Delete("a"), tx.Volumes().Delete("c"), tx.Volumes().Delete("d"))
	})
	view(t, s, func(tx *Tx) error {
		vs, err := tx.SecretValues()
		if err != nil {
			return err
		}
		if !slices.Contains(vs, aSecret) || !slices.Contains(vs, dSecret) {
			t.Errorf("after a's delete, SecretValues = %q: a's secret, which b's publish context and the plugin's node ID hold, is no longer scrubbed from them", vs)
		}
		if slices.Contains(vs, other) {
			t.Errorf("after c's delete, SecretValues = %q: c's secret, which no record holds, is kept", vs)
		}
		cl, err := tx.Claims().Get(live.ID)
		if err != nil {
			return err
		}
		if cl.PublishContext["token"] != aSecret {
			t.Errorf("b's claim's publish context after a's delete = %q; want it as the plugin gave it, to be sent back", cl.PublishContext)
		}
		return nil
	})
	// Once no record holds it (the plugin's topology another), the value is let go by the next
	// transaction that takes secrets out (e's delete); a's, which b's claim still holds, stays.
	update(t, s, func(tx *Tx) error {
		return tx.Plugins().SetFingerprint("p", Fingerprint{NodeID: "node-" + aSecret, Topology: map[string]string{"zone": "z1"}})
	})
	update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("e") })
	view(t, s, func(tx *Tx) error {
		vs, err := tx.SecretValues()
		if err != nil {
			return err
		}
		if slices.Contains(vs, dSecret) || !slices.Contains(vs, aSecret) {
			t.Errorf("with no record holding d's secret, SecretValues = %q; want it let go, a's kept", vs)
		}
		return nil
	})
}
