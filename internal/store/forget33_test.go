package store

import (
	"errors"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// The adversary: a plugin that echoes volume a's secret into data it returns for volume b (a
// node ID, a publish context), which the engine words into b's claim's last error, a freed
// claim's in the history, and the plugin's last probe error; then a is deleted, its secret
// leaving the state. The command line scrubs what it prints with the secrets the state holds
// then, which no longer include a's, and only the event log was scrubbed of the values that
// left: the three last errors kept a's secret, shown by volume status and plugin status.
// Now they are scrubbed in the same transaction, as the events are; a last error holding a
// value still held (b's own secret, the same value another volume holds) is kept as it is.
func TestSecretsLeavingTheStateAreScrubbedFromTheLastErrors(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithForget(forgottenAsGone))
	const echo = `node ID "n-vol-a-s3cret" is not the one recorded; b-kept-s3cret`
	const want = `node ID "n-[GONE]" is not the one recorded; b-kept-s3cret`
	plugin := Plugin{ID: "p", Type: spec.PluginNode}
	a := Volume{ID: "a", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": "vol-a-s3cret"}}
	b := Volume{ID: "b", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": "b-kept-s3cret"}}
	live := Claim{VolumeID: "b", Alloc: "live", Mode: ClaimWrite, State: ClaimTaken, LastRPC: "NodeStageVolume", LastError: echo}
	freed := Claim{VolumeID: "b", Alloc: "freed", Mode: ClaimWrite, State: ClaimTaken, LastRPC: "NodeStageVolume", LastError: echo}
	update(t, s, func(tx *Tx) error {
		if err := errors.Join(tx.Plugins().Put(&plugin), tx.Volumes().Insert(&a), tx.Volumes().Insert(&b)); err != nil {
			return err
		}
		if err := errors.Join(tx.Claims().Insert(&live), tx.Claims().Insert(&freed)); err != nil {
			return err
		}
		return errors.Join(tx.Claims().Free(freed.ID, OutcomeReleased), tx.Plugins().SetHealth("p", Health{LastError: "probe: " + echo}))
	})
	update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("a") })
	view(t, s, func(tx *Tx) error {
		cl, err := tx.Claims().Get(live.ID)
		if err != nil {
			return err
		}
		past, err := tx.History("b", 0)
		if err != nil {
			return err
		}
		p, err := tx.Plugins().Get("p")
		if err != nil {
			return err
		}
		if cl.LastError != want {
			t.Errorf("b's claim's last error after a's delete = %q; want %q", cl.LastError, want)
		}
		if len(past) != 1 || past[0].LastError != want {
			t.Errorf("b's claim history after a's delete = %+v; want one entry whose last error is %q", past, want)
		}
		if p.Health.LastError != "probe: "+want {
			t.Errorf("the plugin's last error after a's delete = %q; want %q", p.Health.LastError, "probe: "+want)
		}
		return nil
	})
}
