package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Migration 0020: a handover mark and the events an older volctl recorded with the address as
// written (a key as the user, a secret in the path and the query) were hidden only when shown;
// the database kept them at rest, and its WAL. The migration rewrites them as they are shown,
// and its commit truncates the WAL: neither file holds a credential after. An address shown
// so already, and an event that names none, are kept as they are.
func TestMigrationRewritesRecordedNomadAddresses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const (
		key   = "k3y-0f-the-gateway-7781"
		word  = "opensesame"
		token = "t0psecret99"
	)
	raw := "http://" + key + "@127.0.0.1:4646/" + word + "/?token=" + token
	shown := "http://xxxxx@127.0.0.1:4646/xxxxx/?token=xxxxx"
	db := seedAtVersion(t, dir, 19, seedV1+`
INSERT INTO volumes (id, plugin_id, external_id, state, created_at, updated_at) VALUES ('kept', 'hp', 'ext-kept', 'ready', 1, 1);
INSERT INTO nomad_handovers (volume_id, address, handed_at) VALUES ('db', '`+raw+`', 1), ('kept', 'https://nomad.example:4646', 1);
INSERT INTO events (at, kind, volume_id, message) VALUES
	(1, 'nomad-handover', 'db', 'volume "db" handed over to Nomad at `+raw+`'),
	(2, 'nomad-release', 'db', 'volume "db" taken back from Nomad at `+raw+`: gone'),
	(3, 'claim', 'db', 'claim of volume "db" by "web-0"');
UPDATE claims SET last_error = 'volume "db" is handed over to Nomad at `+raw+`, whose allocs use it';
`)
	db.Close()
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("migrate from 19: %v", err)
	}
	defer s.Close()
	check := rawDB(t, s.Path())
	for _, q := range []struct{ query, want string }{
		{`SELECT address FROM nomad_handovers WHERE volume_id = 'db'`, shown},
		{`SELECT address FROM nomad_handovers WHERE volume_id = 'kept'`, "https://nomad.example:4646"},
		{`SELECT message FROM events WHERE at = 1`, `volume "db" handed over to Nomad at ` + shown},
		{`SELECT message FROM events WHERE at = 2`, `volume "db" taken back from Nomad at ` + shown + `: gone`},
		{`SELECT message FROM events WHERE at = 3`, `claim of volume "db" by "web-0"`},
		{`SELECT last_error FROM claims`, `volume "db" is handed over to Nomad at ` + shown + `, whose allocs use it`},
	} {
		var got string
		if err := check.QueryRow(q.query).Scan(&got); err != nil || got != q.want {
			t.Errorf("%s: %q (%v), want %q", q.query, got, err, q.want)
		}
	}
	check.Close()
	for _, f := range []string{s.Path(), s.Path() + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, secret := range []string{key, word, token} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q after the migration committed", filepath.Base(f), secret)
			}
		}
	}
}
