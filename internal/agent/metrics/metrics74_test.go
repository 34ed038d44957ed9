package metrics

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/store/storetest"
)

// TestScrapeOfAReplacedStateDatabaseDoesNotServeTheOldFilesCounts: SQLite reads the file it
// opened, by inode. Once volctl.db is replaced under the agent (a backup restored over it, the
// state dir moved), every other volctl reads and writes the new file, while the agent's
// /metrics went on answering 200 with the old file's claims and volumes: volctl_claims said a
// published claim that `volctl status` no longer has, for up to reconcile_interval (1m by
// default, up to 24h) until a reconcile pass noticed and stopped the agent. events --follow and
// the dashboard check the file before they read (Engine.CheckStateFile); the scrape's state
// collector does not. Correct: a scrape of a replaced state fails as one that cannot read the
// state does (500 naming the replacement), so Prometheus sees the target down rather than
// counts of a file no volctl writes to any more.
// Found by helper review74.
func TestScrapeOfAReplacedStateDatabaseDoesNotServeTheOldFilesCounts(t *testing.T) {
	m, e := fixture(t) // volume db claimed by web-0
	addr := serve(t, m, nil)
	resp, body := httpGet(t, "http://"+addr+"/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics before the replacement: %d\n%s", resp.StatusCode, body)
	}
	fams := parse(t, body)
	if v, ok := value(fams, "volctl_volumes", map[string]string{"plugin": "mem"}); !ok || v != 1 {
		t.Fatalf("precondition: volctl_volumes{plugin=\"mem\"} = %v (present %t), want 1", v, ok)
	}

	replaceStateDir(t, e.StateDir())

	// What every other volctl (volctl status) reads now.
	ctx := context.Background()
	now, err := engine.Open(ctx, engine.Config{StateDir: e.StateDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer now.Close()
	claims, err := now.Claims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vols, err := now.Volumes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 0 || len(vols) != 0 {
		t.Fatalf("precondition: the restored state has %d claims and %d volumes, want none", len(claims), len(vols))
	}

	resp, body = httpGet(t, "http://"+addr+"/metrics")
	if resp.StatusCode == http.StatusOK {
		fams := parse(t, body)
		v, _ := value(fams, "volctl_volumes", map[string]string{"plugin": "mem"})
		var live float64
		for _, s := range fams["volctl_claims"].GetMetric() {
			live += s.GetGauge().GetValue()
		}
		t.Fatalf("/metrics after volctl.db was replaced answered 200 with the old file's counts (%v live claims, volctl_volumes{plugin=\"mem\"} = %v) "+
			"where volctl status reads %d claims and %d volumes; want a failed scrape (500) naming the replaced state", live, v, len(claims), len(vols))
	}
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "replaced") && !strings.Contains(body, "another file") {
		t.Errorf("/metrics after volctl.db was replaced: %d %q; want 500 saying the state database was replaced", resp.StatusCode, body)
	}
}

// replaceStateDir moves the state dir aside (its files with it, the agent's connection on them)
// and seeds a new one in its place, as `volctl` makes at its first command; the old one is put
// back before the fixture's cleanups, which unmount the claim's mounts at their paths.
func replaceStateDir(t *testing.T, dir string) {
	t.Helper()
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
		if err := os.Rename(moved, dir); err != nil {
			t.Errorf("putting the state dir back for its mounts' cleanup: %v", err)
		}
	})
	storetest.Seed(t, dir)
}
