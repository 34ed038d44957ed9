package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"net/url"
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
	forget := WithForget(forgottenAsGone)
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
	s, err := Open(context.Background(), dir, forgetNothing)
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

// TestAWipeOfTheWALOwedIsPaidByAnyProcess: a reader of another process (the agent, the
// dashboard) holds a snapshot across a command's delete of a secret and the command's Close, so
// both truncations stop short; the agent then goes on committing what carries no secret, for
// days. The wipe was owed in the command's memory alone, gone with it: the secret stayed in
// volctl.db-wal. The debt is the state's (state_mark.wal_secrets): the agent's next commit reads
// it and pays it, and it is recorded paid.
func TestAWipeOfTheWALOwedIsPaidByAnyProcess(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	forget := forgetNothing
	s, err := Open(context.Background(), dir, forget)
	if err != nil {
		t.Fatal(err)
	}
	secret := "Zq9-volctl-distinctive-secret-owed"
	update(t, s, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"password": secret}})
	})
	agent, err := Open(context.Background(), dir, forget) // the agent: its own connections
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	release, reading, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		agent.View(context.Background(), func(tx *Tx) error {
			_, err := tx.Volumes().List(VolumeFilter{})
			close(reading)
			<-release
			return err
		})
	}()
	<-reading
	update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("db") })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	owed := func() (n int64, err error) {
		err = agent.View(context.Background(), func(tx *Tx) error {
			return tx.queryRow("SELECT wal_secrets FROM state_mark").Scan(&n)
		})
		return n, err
	}
	if n, err := owed(); n == 0 {
		t.Errorf("the command's wipe met the reader at its commit and at its Close, and the state records none owed (%v)", err)
	}
	update(t, agent, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "next", PluginID: "p", State: VolumeReady})
	})
	if name := fileHolds(t, dir, secret); name != "" {
		t.Errorf("the deleted volume's secret is still in %s after another process's commit: the command's wipe and its Close's both met the reader, and nothing after knew", name)
	}
	if n, err := owed(); n != 0 || err != nil {
		t.Errorf("the WAL was truncated, and the state still records a wipe owed (commit %d, %v)", n, err)
	}
}

// TestAnOlderVolctlsDeletedSecretsLeaveTheFreePages: secure_delete is not retroactive. A state
// an older volctl (schema 11, no secure_delete) deleted a secret volume from keeps the secret in
// its free pages; this volctl opened, wrote and closed it, and the secret stayed in volctl.db.
// The migration to 12 records a VACUUM owed, which Open pays once and records done.
func TestAnOlderVolctlsDeletedSecretsLeaveTheFreePages(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	forget := forgetNothing
	s, err := open(context.Background(), dir, debtVersion-1, forget)
	if err != nil {
		t.Fatal(err)
	}
	old := "Zq9-volctl-distinctive-secret-older-volctl"
	update(t, s, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "old", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"password": old}})
	})
	s.checkpointNow()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The older volctl's delete: no secure_delete.
	q := url.Values{}
	q.Add("_pragma", "secure_delete(0)")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: filepath.Join(dir, FileName), RawQuery: q.Encode()}).String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM volumes WHERE id = 'old'`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fileHolds(t, dir, old) == "" {
		t.Fatalf("the older volctl's delete left the secret in no file of %s: the test shows nothing", dir)
	}
	s, err = Open(context.Background(), dir, forget)
	if err != nil {
		t.Fatal(err)
	}
	if name := fileHolds(t, dir, old); name != "" {
		t.Errorf("a secret an older volctl deleted is still in %s after this volctl opened the state", name)
	}
	update(t, s, func(tx *Tx) error { return tx.Events().Append(&Event{Kind: "x", Message: "y"}) })
	var vacuum, walSecrets int64
	view(t, s, func(tx *Tx) error {
		return tx.queryRow("SELECT vacuum, wal_secrets FROM state_mark").Scan(&vacuum, &walSecrets)
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if name := fileHolds(t, dir, old); name != "" {
		t.Errorf("a secret an older volctl deleted is still in %s after this volctl opened, wrote and closed the state", name)
	}
	if vacuum != 0 || walSecrets != 0 {
		t.Errorf("the VACUUM and the WAL's truncation are done, and the state records them owed (vacuum %d, wal_secrets %d)", vacuum, walSecrets)
	}
}

// TestAFailedVacuumStillPaysTheCommitsWipe: a process whose first commit took a secret out of
// the state while the one-time VACUUM was still owed (the migrating process's failed) tries
// the VACUUM there; when that failed too, the commit's own wipe of the WAL was skipped
// (review28g), and Close, told of no debt it could not pay, tried nothing: the secret stayed
// in the WAL until some later commit paid. Now a failed VACUUM still pays the commit's wipe.
func TestAFailedVacuumStillPaysTheCommitsWipe(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	forget := forgetNothing
	s, err := Open(context.Background(), dir, forget)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := "Zq9-volctl-distinctive-secret-failed-vacuum"
	update(t, s, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "db", PluginID: "p", State: VolumeReady, Secrets: spec.Secrets{"password": secret}})
	})
	// The VACUUM left owed (its process's try failed), and this one's fails too.
	s.vacuumSQL = "VACUUM no_such_schema"
	update(t, s, func(tx *Tx) error {
		_, err := tx.exec("UPDATE state_mark SET vacuum = 1")
		return err
	})
	s.vacuumTried.Store(false)
	update(t, s, func(tx *Tx) error { return tx.Volumes().Delete("db") })
	if name := fileHolds(t, dir, secret); name != "" {
		t.Errorf("the deleted volume's secret is still in %s after its commit, the VACUUM owed having failed", name)
	}
	var vacuum int64
	view(t, s, func(tx *Tx) error { return tx.queryRow("SELECT vacuum FROM state_mark").Scan(&vacuum) })
	if vacuum != 1 {
		t.Errorf("the failed VACUUM is recorded done (vacuum %d); want it left owed for the next process", vacuum)
	}
}

// forgetNothing is a store's WithForget whose scrubber leaves messages as they are: the
// engine's takes secret values out of the event log; these tests look at the files only.
var forgetNothing = WithForget(func([]string) func(string) string { return func(m string) string { return m } })

// TestPrunedClaimHistoryLeavesTheFiles: the claim history keeps its newest entries up to a
// limit (DefaultHistoryLimit); the Free that goes past it deletes the oldest, and with it the
// last copy of that claim's mount flags, which may hold a password (a CIFS mount's). The prune
// was no change of secrets to the store: the flag stayed in the WAL's old frames (no truncation
// owed) and in the event log's messages a plugin had echoed it into (no scrub), for whoever
// later read the state dir. Now a prune that takes flags out is followed by both, as a delete is.
func TestPrunedClaimHistoryLeavesTheFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	forget := WithForget(forgottenAsGone)
	s, err := Open(context.Background(), dir, forget, WithHistoryLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret := "password=Zq9-volctl-distinctive-secret-pruned-history"
	update(t, s, func(tx *Tx) error {
		return tx.Volumes().Insert(&Volume{ID: "share", PluginID: "p", State: VolumeReady})
	})
	free := func(alloc string, flags spec.MountFlags, message string) {
		update(t, s, func(tx *Tx) error {
			c := Claim{VolumeID: "share", Alloc: alloc, Mode: ClaimRead, State: ClaimControllerDetached, MountFlags: flags}
			if err := tx.Claims().Insert(&c); err != nil {
				return err
			}
			return errors.Join(tx.Claims().Free(c.ID, OutcomeReleased), tx.Events().Append(&Event{Kind: "x", Message: message}))
		})
	}
	free("first", spec.MountFlags{"ro", secret}, "plugin said "+secret)
	if fileHolds(t, dir, secret) == "" {
		t.Fatalf("the mount flag is in no file of %s while a freed claim holds it: the test scans the wrong files", dir)
	}
	free("second", spec.MountFlags{"ro"}, "released") // the history's limit is 1: the first claim's entry goes
	var past []PastClaim
	view(t, s, func(tx *Tx) (err error) { past, err = tx.History("", 0); return err })
	if len(past) != 1 || past[0].Alloc != "second" {
		t.Fatalf("history after the prune = %+v; want the second claim alone", past)
	}
	if name := fileHolds(t, dir, secret); name != "" {
		t.Errorf("the pruned claim's mount flag is still in %s while the store is open", name)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if name := fileHolds(t, dir, secret); name != "" {
		t.Errorf("the pruned claim's mount flag is still in %s after the store closed", name)
	}
}

// A pruned claim-history entry leaves a secret only with a mount flag volume status does not
// show, in a list no kept entry and no live claim holds: only then does the free read every
// secret the state holds to compare them at commit (noteSecrets). Before, every pruned entry
// with flags paid it, `noatime` as much as a password, every free once the history was full
// (BenchmarkFreeWithFullHistory). One whose flags hold a secret still owes the wipe.
func TestPrunedClaimHistoryNotesSecretsOnlyWhenOneLeaves(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name          string
		pruned, other spec.MountFlags // the pruned entry's flags, the flags of the free that prunes it
		live          spec.MountFlags // a live claim's, nil for none
		noted         bool
	}{
		// uid=1000 is a flag that may be a secret (any but mount(8)'s own words: secrets38 made
		// noatime, which these cases had, one of those).
		{"the same flags kept by the newer entry", spec.MountFlags{"uid=1000"}, spec.MountFlags{"uid=1000"}, nil, false},
		{"the same flags kept by a live claim", spec.MountFlags{"uid=1000", "nodev"}, spec.MountFlags{"ro"}, spec.MountFlags{"uid=1000", "nodev"}, false},
		{"only flags volume status shows", spec.MountFlags{"suid", "exec"}, spec.MountFlags{"ro"}, nil, false},
		{"only mount(8)'s own words", spec.MountFlags{"noatime", "rw,nodiratime"}, spec.MountFlags{"ro"}, nil, false},
		{"a flag no kept row holds", spec.MountFlags{"uid=1000"}, spec.MountFlags{"ro"}, nil, true},
		{"a password beside the kept flags", spec.MountFlags{"uid=1000", "password=Zq9-pruned"}, spec.MountFlags{"uid=1000"}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Open(context.Background(), filepath.Join(t.TempDir(), "state"), forgetNothing, WithHistoryLimit(1))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			update(t, s, func(tx *Tx) error {
				return tx.Volumes().Insert(&Volume{ID: "share", PluginID: "p", State: VolumeReady})
			})
			claim := func(tx *Tx, alloc string, flags spec.MountFlags) (int64, error) {
				c := Claim{VolumeID: "share", Alloc: alloc, Mode: ClaimRead, State: ClaimControllerDetached, MountFlags: flags}
				return c.ID, tx.Claims().Insert(&c)
			}
			update(t, s, func(tx *Tx) error {
				id, err := claim(tx, "first", tt.pruned)
				if err != nil {
					return err
				}
				if tt.live != nil {
					if _, err := claim(tx, "live", tt.live); err != nil {
						return err
					}
				}
				return tx.Claims().Free(id, OutcomeReleased)
			})
			noted := false
			update(t, s, func(tx *Tx) error {
				id, err := claim(tx, "second", tt.other)
				if err != nil {
					return err
				}
				err = tx.Claims().Free(id, OutcomeReleased) // the history's limit is 1: the first entry goes
				noted = tx.noted
				return err
			})
			var past []PastClaim
			view(t, s, func(tx *Tx) (err error) { past, err = tx.History("", 0); return err })
			if len(past) != 1 || past[0].Alloc != "second" {
				t.Fatalf("history after the prune = %+v; want the second claim alone: the test shows nothing", past)
			}
			if noted != tt.noted {
				t.Errorf("pruning an entry with flags %q (the free's %q, a live claim's %q): secrets noted %v, want %v",
					tt.pruned.Plain(), tt.other.Plain(), tt.live.Plain(), noted, tt.noted)
			}
		})
	}
}
