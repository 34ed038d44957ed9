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

// A mount flag "password=..." is scrubbed whole from what volctl prints (engine.Redactor reads
// SecretValues), but a plugin that echoed the password alone into data volctl prints (a
// volume's context, an event's message) had it printed: the value of a flag whose key names a
// secret is a secret value of its own, wherever the flag is kept (a volume's, a claim's, a past
// claim's, a group's), and leaves the event log with the flag. A value of a key naming none
// (uid=1000) is not.
func TestSecretValuesHoldAMountFlagsSecretValue(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	vol := Volume{ID: "v", PluginID: "p", State: VolumeReady,
		MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"uid=1000", "username=alice,password=vol-pass"}}}
	live := Claim{VolumeID: "v", Alloc: "a", Mode: ClaimRead, State: ClaimTaken, MountFlags: spec.MountFlags{"secret=claim-key"}}
	group := Group{Name: "g", State: GroupRunning, Spec: spec.Group{Name: "g", Volumes: []spec.VolumeRequest{{
		Name: "data", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"token=group-tok"}}}}}}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Volumes().Insert(&vol), tx.Claims().Insert(&live), tx.Groups().Put(&group))
	})
	var got []string
	view(t, s, func(tx *Tx) (err error) {
		got, err = tx.SecretValues()
		return err
	})
	for _, want := range []string{"vol-pass", "claim-key", "group-tok", "username=alice,password=vol-pass"} {
		if !slices.Contains(got, want) {
			t.Errorf("SecretValues = %q, want it to hold %q", got, want)
		}
	}
	for _, not := range []string{"1000", "alice"} {
		if slices.Contains(got, not) {
			t.Errorf("SecretValues = %q, holds %q, the value of a flag whose key names no secret", got, not)
		}
	}
}

// TestSecretsLeavingTheStateAreScrubbedFromTheEventLog: an event's message may word data a
// plugin returned, which a plugin may have echoed a secret into, and the log outlives the
// secret. A transaction that takes a secret value out of the state (a volume deleted, its
// secrets replaced, a plugin's exec env changed or the plugin deleted, a snapshot record
// forgotten) rewrites the log with the scrubber of the values gone; a value still held
// elsewhere stays, for the display-time scrub to take; a transaction taking nothing out
// rewrites nothing.
func TestSecretsLeavingTheStateAreScrubbedFromTheEventLog(t *testing.T) {
	t.Parallel()
	var scrubbed [][]string
	s := newStore(t, WithForget(func(values []string) func(string) string {
		v := slices.Clone(values)
		slices.Sort(v)
		scrubbed = append(scrubbed, v)
		return forgottenAsGone(values)
	}))
	plugin := Plugin{ID: "p", Type: spec.PluginNode, Exec: &spec.Exec{Command: "x", Env: spec.Secrets{"TOKEN": "env-one"}}}
	vol := Volume{ID: "v", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": "vol-one", "s": "shared"}}
	other := Volume{ID: "w", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": "shared"}}
	snap := Snapshot{PluginID: "p", SnapshotID: "snap-1", Name: "n", Secrets: spec.Secrets{"k": "snap-one"}}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Plugins().Put(&plugin), tx.Volumes().Insert(&vol), tx.Volumes().Insert(&other), tx.Snapshots().Put(&snap),
			tx.Events().Append(&Event{Kind: "x", Message: "node vol-one env-one snap-one shared vol-two"}))
	})
	message := func() string {
		var evs []Event
		view(t, s, func(tx *Tx) (err error) {
			evs, err = tx.Events().Recent(1, EventFilter{})
			return err
		})
		return evs[0].Message
	}
	for _, step := range []struct {
		what string
		fn   func(tx *Tx) error
		want string
		gone []string
	}{
		{"an update that keeps the secrets", func(tx *Tx) error { vol.CapacityBytes = 5; return tx.Volumes().Update(&vol) },
			"node vol-one env-one snap-one shared vol-two", nil},
		{"the volume's secrets replaced", func(tx *Tx) error {
			vol.Secrets = spec.Secrets{"k": "vol-two", "s": "shared"}
			return tx.Volumes().Update(&vol)
		}, "node [GONE] env-one snap-one shared vol-two", []string{"vol-one"}},
		{"the volume deleted", func(tx *Tx) error { return tx.Volumes().Delete("v") },
			"node [GONE] env-one snap-one shared [GONE]", []string{"vol-two"}}, // "shared" is still w's
		{"the snapshot forgotten", func(tx *Tx) error { return tx.Snapshots().Delete("p", "snap-1") },
			"node [GONE] env-one [GONE] shared [GONE]", []string{"snap-one"}},
		{"the plugin's env changed", func(tx *Tx) error {
			plugin.Exec = &spec.Exec{Command: "x"}
			return tx.Plugins().Put(&plugin)
		}, "node [GONE] [GONE] [GONE] shared [GONE]", []string{"env-one"}},
	} {
		scrubbed = nil
		rows := s.RowsRead()
		update(t, s, step.fn)
		if step.gone == nil && s.RowsRead() != rows {
			t.Errorf("%s: read %d rows; want none (one comparison of the row's secret columns)", step.what, s.RowsRead()-rows)
		}
		if got := message(); got != step.want || len(scrubbed) != min(len(step.gone), 1) || len(step.gone) > 0 && !slices.Equal(scrubbed[0], step.gone) {
			t.Errorf("%s: the event reads %q, scrubbed of %q; want %q, scrubbed of %q", step.what, got, scrubbed, step.want, step.gone)
		}
	}
}
