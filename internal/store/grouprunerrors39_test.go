package store

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// Migration 0024: a group's run errors (Group.RunErrors) were kept inside the spec column's
// JSON, beside the spec they are not part of. A state dir an older volctl wrote holds them
// there: opened by this one, they move to the groups.run_errors column, the spec column is left
// as Put writes it (no run_errors key), and Get reads them as before. A group without any, and
// one whose spec holds an empty object, keep none.
func TestGroupRunErrorsMigrateFromTheSpecColumn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const msg = `claim \"db\" for alloc \"web[0]\": NodeStageVolume: rpc error: code = Internal desc = <no space> & \"quoted\"`
	db := seedAtVersion(t, dir, 23, seedV1+`
INSERT INTO groups (name, spec, count, state, created_at, updated_at) VALUES
	('failing', '{"name":"failing","count":2,"volumes":null,"volume_mounts":null,"run_errors":{"failing[0]":"`+msg+`","failing[1]":"second"}}', 2, 'running', 1, 1),
	('emptied', '{"name":"emptied","count":1,"volumes":null,"volume_mounts":null,"run_errors":{}}', 1, 'running', 1, 1);
`)
	db.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 23: %v", err)
	}
	defer s.Close()
	want := map[string]map[string]string{
		"failing": {"failing[0]": strings.ReplaceAll(msg, `\"`, `"`), "failing[1]": "second"},
		"emptied": nil,
		"web":     nil,
	}
	view(t, s, func(tx *Tx) error {
		for name, runErrors := range want {
			g, err := tx.Groups().Get(name)
			if err != nil {
				return err
			}
			if !maps.Equal(g.RunErrors, runErrors) {
				t.Errorf("group %q's run errors after the migration = %q; want %q", name, g.RunErrors, runErrors)
			}
			if g.Spec.Name != name || g.Count < 1 {
				t.Errorf("group %q's spec after the migration = %+v, count %d", name, g.Spec, g.Count)
			}
		}
		return nil
	})
	check := rawDB(t, s.Path())
	defer check.Close()
	var specs, column int
	if err := check.QueryRow(`SELECT count(*) FROM groups WHERE spec LIKE '%run_errors%'`).Scan(&specs); err != nil || specs != 0 {
		t.Errorf("groups whose spec column still holds run_errors: %d (%v); want 0", specs, err)
	}
	if err := check.QueryRow(`SELECT count(*) FROM groups WHERE run_errors IS NOT NULL`).Scan(&column); err != nil || column != 1 {
		t.Errorf("groups with a run_errors column: %d (%v); want 1 (failing)", column, err)
	}
	// What the migration wrote is what Put writes: putting it back changes neither column.
	var before, after string
	q := `SELECT spec || '|' || coalesce(run_errors, 'NULL') FROM groups WHERE name = 'failing'`
	if err := check.QueryRow(q).Scan(&before); err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error {
		g, err := tx.Groups().Get("failing")
		if err != nil {
			return err
		}
		return tx.Groups().Put(&g)
	})
	if err := check.QueryRow(q).Scan(&after); err != nil || after != before {
		t.Errorf("failing's columns put back as read: %q (%v); migrated %q", after, err, before)
	}
}

// The adversary: a plugin that echoes volume a's secret into its error for a claim of volume
// b, which a `group run` records as an alloc's run error (shown by group status and the
// dashboard while the alloc holds nothing); then a is deleted, its secret leaving the state.
// The command line scrubs what it prints with the secrets the state holds then, no longer a's,
// and the claims', history's and plugins' last errors are scrubbed of it at the delete
// (forgetGone), but a group's run errors were not: group status printed a's secret. Now they
// are scrubbed in the same transaction; a run error holding a value still held is kept.
func TestSecretsLeavingTheStateAreScrubbedFromGroupRunErrors(t *testing.T) {
	t.Parallel()
	s := newStore(t, WithForget(forgottenAsGone))
	// A secret with characters JSON escapes: the scrub reads the message, not its encoding.
	const secret = `vol-a-<s3cret>&"`
	echo := `claim "b" for alloc "g[0]": NodeStageVolume: node ID "n-` + secret + `" is not the one recorded; b-kept-s3cret`
	const want = `claim "b" for alloc "g[0]": NodeStageVolume: node ID "n-[GONE]" is not the one recorded; b-kept-s3cret`
	plugin := Plugin{ID: "p", Type: spec.PluginNode}
	a := Volume{ID: "a", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": secret}}
	b := Volume{ID: "b", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"k": "b-kept-s3cret"}}
	g := Group{Name: "g", Spec: spec.Group{Name: "g", Count: 2}, Count: 2, State: GroupRunning,
		RunErrors: map[string]string{"g[0]": echo, "g[1]": "b-kept-s3cret refused"}}
	update(t, s, func(tx *Tx) error {
		return errors.Join(tx.Plugins().Put(&plugin), tx.Volumes().Insert(&a), tx.Volumes().Insert(&b), tx.Groups().Put(&g))
	})
	update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("a") })
	view(t, s, func(tx *Tx) error {
		got, err := tx.Groups().Get("g")
		if err != nil {
			return err
		}
		if w := map[string]string{"g[0]": want, "g[1]": "b-kept-s3cret refused"}; !maps.Equal(got.RunErrors, w) {
			t.Errorf("group g's run errors after a's delete = %q; want %q", got.RunErrors, w)
		}
		return nil
	})
}
