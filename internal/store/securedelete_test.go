package store

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// TestSecretsLeavingTheStateLeaveTheFiles: a volume's secrets, once the volume is deleted or
// its secrets replaced, are in no file of the state dir: not in the database's free pages or
// freed cell space (secure_delete), not in old frames of the WAL (a truncating checkpoint after
// the commit that took them out), while the store is still open (an agent runs for days) and
// after it closed. Before, the bytes of a deleted volume's secret stayed in volctl.db and
// volctl.db-wal for whoever later read the files (a backup, a disk handed on).
func TestSecretsLeavingTheStateLeaveTheFiles(t *testing.T) {
	t.Parallel()
	forget := WithForget(func(values []string) func(string) string {
		return func(msg string) string {
			for _, v := range values {
				msg = strings.ReplaceAll(msg, v, "[GONE]")
			}
			return msg
		}
	})
	for _, tc := range []struct {
		what       string
		checkpoint bool // the secret's commit copied into the database file before it went
		remove     func(tx *Tx, v *Volume) error
	}{
		{"volume deleted, secret in the WAL", false, func(tx *Tx, v *Volume) error { return tx.Volumes().Delete(v.ID) }},
		{"volume deleted, secret in the database file", true, func(tx *Tx, v *Volume) error { return tx.Volumes().Delete(v.ID) }},
		{"secrets replaced, secret in the WAL", false, func(tx *Tx, v *Volume) error {
			v.Secrets = spec.Secrets{"password": "the-new-one"}
			return tx.Volumes().Update(v)
		}},
		{"secrets replaced, secret in the database file", true, func(tx *Tx, v *Volume) error {
			v.Secrets = spec.Secrets{"password": "the-new-one"}
			return tx.Volumes().Update(v)
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			secret := "Zq9-volctl-distinctive-secret-" + strings.ReplaceAll(tc.what, " ", "_")
			dir := filepath.Join(t.TempDir(), "state")
			s, err := Open(context.Background(), dir, forget)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			vol := Volume{ID: "db", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"password": secret}}
			other := Volume{ID: "other", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"password": "not-this-one"}}
			update(t, s, func(tx *Tx) error {
				return errors.Join(tx.Volumes().Insert(&vol), tx.Volumes().Insert(&other),
					tx.Events().Append(&Event{Kind: "x", Message: "plugin said " + secret}))
			})
			if tc.checkpoint {
				s.checkpointNow()
			}
			if fileHolds(t, dir, secret) == "" {
				t.Fatalf("the secret is in no file of %s before it went: the test scans the wrong files", dir)
			}
			update(t, s, func(tx *Tx) error { return tc.remove(tx, &vol) })
			if name := fileHolds(t, dir, secret); name != "" {
				t.Errorf("%s: the secret gone from the state is still in %s while the store is open", tc.what, name)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if name := fileHolds(t, dir, secret); name != "" {
				t.Errorf("%s: the secret gone from the state is still in %s after the store closed", tc.what, name)
			}
		})
	}
}

// fileHolds names the first regular file under dir whose bytes hold secret; "" if none does.
func fileHolds(t *testing.T, dir, secret string) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			found = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestSecretsLeaveTheWALOnceNoReaderHoldsThem: a reader holding a snapshot from before the
// commit that took a secret out stops the truncating checkpoint short; the next commit after
// the reader is done truncates the WAL.
func TestSecretsLeaveTheWALOnceNoReaderHoldsThem(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(context.Background(), dir, WithForget(func([]string) func(string) string { return func(m string) string { return m } }))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	secret := "Zq9-volctl-distinctive-secret-reader"
	vol := Volume{ID: "db", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"password": secret}}
	update(t, s, func(tx *Tx) error { return tx.Volumes().Insert(&vol) })
	view(t, s, func(tx *Tx) error {
		update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("db") })
		return nil
	})
	if !s.secretsInWAL.Load() {
		t.Errorf("a reader held a snapshot with the secret, yet the WAL counts as wiped")
	}
	update(t, s, func(tx *Tx) error { return tx.Volumes().Insert(&Volume{ID: "next", PluginID: "p", State: VolumeReady}) })
	if name := fileHolds(t, dir, secret); name != "" || s.secretsInWAL.Load() {
		t.Errorf("after the reader finished and another commit, the secret is still in %q (wipe pending: %v)", name, s.secretsInWAL.Load())
	}
}
