package store

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// groupWithPassword is group g whose volume request mounts with "password=secret": a secret
// the state holds (SecretValues reads the groups' specs), and the engine scrubs.
func groupWithPassword(secret string) *Group {
	return &Group{Name: "g", State: GroupStopped, Spec: spec.Group{Name: "g", Volumes: []spec.VolumeRequest{{
		Name: "data", MountOptions: &spec.MountOptions{MountFlags: spec.MountFlags{"password=" + secret}}}}}}
}

// `group purge` deletes a group (Groups().Delete), and its mount flags' secrets leave the state
// with it, as a deleted volume's do: but Delete did not note them, so nothing forgot them. The
// event log kept a message a hostile plugin worded with one (printed whole from then on, the
// state no longer knowing it), and the WAL kept the group's old pages after the command exited.
func TestGroupPurgeForgetsItsMountFlagSecrets(t *testing.T) {
	t.Parallel()
	const secret = "Zq9-group-mount-password-57"
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(context.Background(), dir, WithForget(forgottenAsGone))
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Groups().Put(groupWithPassword(secret)),
			tx.Events().Append(&Event{Kind: "x", Message: "node id " + secret}))
	})
	if fileHolds(t, dir, secret) == "" {
		t.Fatalf("the secret is in no file of %s before the purge: the test scans the wrong files", dir)
	}
	update(t, s, func(tx *Tx) error { return tx.Groups().Delete("g") })
	var evs []Event
	view(t, s, func(tx *Tx) (err error) {
		evs, err = tx.Events().Recent(1, EventFilter{})
		return err
	})
	if len(evs) != 1 || evs[0].Message != "node id [GONE]" {
		t.Errorf("after the purge of the group holding the only copy of the secret, the event log reads %+v; want %q", evs, "node id [GONE]")
	}
	// `volctl group purge` exits through CloseAtExit, which leaves the WAL as it is.
	if err := s.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	if name := fileHolds(t, dir, secret); name != "" {
		t.Errorf("the purged group's mount-flag secret is still in %s after the command exited", name)
	}
}

// A snapshot, and a snapshot being created, keep the driver name their plugin gave (Reach's
// provider), which an error names once the plugin's record is gone or says another: data a
// plugin returned, kept raw, in which a hostile plugin may echo a secret. It was not among the
// data looked for (pluginData): volume a's secret echoed into it was let go with a, and the
// error naming the driver printed it whole from then on.
func TestSecretInASnapshotsRecordedDriverNameStaysScrubbed(t *testing.T) {
	t.Parallel()
	const secret = "vol-a-s3cret-57"
	reach := PluginReach{Type: spec.PluginController, Socket: "/run/p.sock", Provider: "driver-" + secret}
	for _, tc := range []struct {
		what string
		put  func(tx *Tx) error
	}{
		{"snapshot", func(tx *Tx) error {
			return tx.Snapshots().Put(&Snapshot{PluginID: "p", SnapshotID: "snap-1", Name: "n", Reach: reach})
		}},
		{"snapshot being created", func(tx *Tx) error {
			return tx.Snapshots().PutCreate(&SnapshotCreate{PluginID: "p", Name: "n", Reach: reach})
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, WithForget(forgottenAsGone))
			a := Volume{ID: "a", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": secret}}
			update(t, s, func(tx *Tx) error { return errors.Join(tx.Volumes().Insert(&a), tc.put(tx)) })
			update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("a") })
			if vs := secretValues(t, s); !slices.Contains(vs, secret) {
				t.Errorf("after volume a's delete, the secret values are %q: a's secret, which the %s's driver name holds, is no longer scrubbed from it", vs, tc.what)
			}
		})
	}
}
