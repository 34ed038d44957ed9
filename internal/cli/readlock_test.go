package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/engine"
	"github.com/volctl/volctl/internal/iostreams"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// holdWriteLock takes the state database's write lock (BEGIN IMMEDIATE) on a connection of its
// own, as another volctl in the middle of a write does, until the test ends.
func holdWriteLock(t *testing.T, stateDir string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(stateDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.ExecContext(context.Background(), "ROLLBACK")
		c.Close()
		db.Close()
	})
}

// readDeadline bounds each read command below: far above what one takes, far below the
// 30 s busy timeout a write would wait for the lock.
const readDeadline = 8 * time.Second

// TestReadCommandsDoNotWaitForWriters: while another process holds the write lock, the read
// commands (status, volume status, plugin status, group status, in text and JSON) answer at once, each from
// an engine of its own as a new volctl process opens it. status and plugin status probe the
// live plugin and show what the probe found even though they could not record it.
func TestReadCommandsDoNotWaitForWriters(t *testing.T) {
	h := newCLIHarness(t)
	h.createVolume(t, "db", spec.SingleNodeWriter)
	notReady, ready := false, true
	h.mem.SetReady(&notReady) // the stored health says not ready; the live probes below say ready
	if _, err := h.e.PluginStatus(h.ctx, "mem"); err != nil {
		t.Fatal(err)
	}
	h.mem.SetReady(&ready)
	if _, err := h.e.CreateSnapshot(h.ctx, "db", "snap1", nil); err != nil {
		t.Fatal(err)
	}
	holdWriteLock(t, h.state)

	var engines []*engine.Engine
	t.Cleanup(func() {
		for _, e := range engines {
			e.Close()
		}
	})
	openEngine := func(ctx context.Context) (*engine.Engine, error) {
		e, err := engine.Open(ctx, engine.Config{StateDir: h.state})
		if err == nil {
			engines = append(engines, e)
		}
		return e, err
	}
	for _, c := range []struct {
		name string
		run  func(ctx context.Context, ios *iostreams.IOStreams) error
		want []string
	}{
		{"status", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return statusRun(ctx, &StatusOptions{IO: ios, Engine: openEngine, Now: nowFunc, MaxVolumes: 20})
		}, []string{"Plugins: 1 (1 healthy)", "mem  monolith  mem.csi.volctl.test  1.0.0    healthy", "Volumes: 1 (1 schedulable, 0 in use)", "db"}},
		{"status --json", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return statusRun(ctx, &StatusOptions{IO: ios, Engine: openEngine, Now: nowFunc, MaxVolumes: 20, Exporter: exportFlags{JSON: true}})
		}, []string{`"healthy": true`, `"ready": true`, `"total": 1`}},
		{"volume status", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: openEngine, Now: nowFunc})
		}, []string{"db", "mem"}},
		{"volume status db --json", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return volumeStatusRun(ctx, &VolumeStatusOptions{IO: ios, Engine: openEngine, Now: nowFunc, ID: "db", Exporter: exportFlags{JSON: true}})
		}, []string{`"id": "db"`}},
		{"plugin status", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: openEngine, Now: nowFunc})
		}, []string{"HEALTH   LATENCY", "mem  monolith  mem.csi.volctl.test  1.0.0    healthy"}},
		{"plugin status mem --json", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return pluginStatusRun(ctx, &PluginStatusOptions{IO: ios, Engine: openEngine, Now: nowFunc, ID: "mem", Exporter: exportFlags{JSON: true}})
		}, []string{`"healthy": true`, `"ready": true`, `"provider": "mem.csi.volctl.test"`}},
		// The plugin is asked for its snapshots on a new connection, whose fingerprint is not
		// worth waiting for the lock to record.
		{"volume snapshot list", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return snapshotListRun(ctx, &SnapshotListOptions{IO: ios, Engine: openEngine, Now: nowFunc})
		}, []string{"snap1"}},
		{"volume snapshot list --plugin mem --json", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return snapshotListRun(ctx, &SnapshotListOptions{IO: ios, Engine: openEngine, Now: nowFunc, PluginID: "mem", Exporter: exportFlags{JSON: true}})
		}, []string{`"name": "snap1"`}},
		{"group status --json", func(ctx context.Context, ios *iostreams.IOStreams) error {
			return groupStatusRun(ctx, &GroupStatusOptions{IO: ios, Engine: openEngine, Now: nowFunc, Exporter: exportFlags{JSON: true}})
		}, []string{"[]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(h.ctx, readDeadline)
			defer cancel()
			ios, _, out, errOut := iostreams.Test()
			start := time.Now()
			err := c.run(ctx, ios)
			if took := time.Since(start); err != nil || took >= readDeadline {
				t.Fatalf("took %v with the write lock held elsewhere: %v\nstderr: %s", took, err, errOut)
			}
			checkHolds(t, "output", out.String(), c.want, nil)
			if strings.Contains(errOut.String(), "records only") {
				t.Errorf("the plugin was not asked for lack of the write lock:\n%s", errOut)
			}
		})
	}
}
