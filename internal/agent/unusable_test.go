package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volctl/volctl/internal/store"
	"github.com/volctl/volctl/internal/store/storetest"
)

// The state database replaced under a running agent (a backup restored over volctl.db, the
// state dir moved aside and another put in its place): the agent went on reading the file it
// had opened, which the commands no longer use, each pass that wrote nothing finding nothing
// wrong and each that wrote failing, with no end and no word when nothing needed a write. Now
// its next pass stops it, Run's error naming the file and saying to restart it.
func TestAgentStopsWhenItsStateDatabaseIsReplaced(t *testing.T) {
	f := newFixture(t)
	a, err := New(Config{Engine: f.e, Settings: testSettings,
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !a.ready.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent is not ready after 10s")
		}
	}

	db := filepath.Join(f.dir, store.FileName)
	storetest.Restore(t, f.dir, nil)

	select {
	case err := <-done:
		if !errors.Is(err, store.ErrReplaced) || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "restart") {
			t.Fatalf("the agent's run once its database was replaced: %v; want ErrReplaced naming %s and saying to restart", err, db)
		}
	case <-time.After(10 * testSettings.ReconcileInterval):
		t.Fatalf("the agent still runs %s after its state database %s was replaced; want it stopped", 10*testSettings.ReconcileInterval, db)
	}
}

// The state dir moved aside under a running agent and a new one put in its place, where a
// second agent started: the first, stopping on its next pass, removed run/agent.pid by its
// path, the second agent's, which then named no pid to a third agent refused its lock or to
// the engine's plugin records. An agent removes only the pid file it wrote.
func TestAgentStoppingAfterItsStateDirWasReplacedKeepsTheNewAgentsPidFile(t *testing.T) {
	f := newFixture(t)
	a, err := New(Config{Engine: f.e, Settings: testSettings,
		Logger: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); !a.ready.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent is not ready after 10s")
		}
	}
	if err := os.Rename(f.dir, f.dir+".old"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(f.dir + ".old") })
	newPid := filepath.Join(f.dir, "run", "agent.pid")
	if err := os.MkdirAll(filepath.Dir(newPid), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newPid, []byte("4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * testSettings.ReconcileInterval):
		cancel()
		<-done
	}
	if b, err := os.ReadFile(newPid); err != nil || string(b) != "4242\n" {
		t.Fatalf("the second agent's %s after the first stopped: %q, %v; want it kept", newPid, b, err)
	}
}

// As TestAgentStoppingAfterItsStateDirWasReplacedKeepsTheNewAgentsPidFile, for a supervised
// plugin's: the first agent, stopping its plugin, removed run/<id>.pid by its path, the second
// agent's record of its own process of that ID, which it could then not adopt after a restart
// (a second process started on the socket). An agent removes only a pid file naming its process.
func TestAgentStoppingAfterItsStateDirWasReplacedKeepsItsPluginsPidFiles(t *testing.T) {
	f := newFixture(t)
	hp := f.execPlugin("hp", "hostpath")
	f.register(hp)
	a, stop := f.startAgentWith(func(*Config) {})
	for deadline := time.Now().Add(20 * time.Second); !a.ready.Load() || f.pid("hp") == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent is not ready, its plugin started, after 20s")
		}
	}
	if err := os.Rename(f.dir, f.dir+".old"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(f.dir + ".old") })
	newPid := filepath.Join(f.dir, "run", "hp.pid")
	if err := os.MkdirAll(filepath.Dir(newPid), 0o700); err != nil {
		t.Fatal(err)
	}
	second := fmt.Sprintf("%d 1 - %d - -\n", os.Getpid(), os.Getpid())
	if err := os.WriteFile(newPid, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = stop() // its error is the replaced database's, or none when stopped before a pass saw it
	if b, err := os.ReadFile(newPid); err != nil || string(b) != second {
		t.Fatalf("the second agent's %s after the first stopped its plugin: %q, %v; want it kept", newPid, b, err)
	}
}
