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
	secondAgentsFileKept(t, "agent.pid", "4242\n", nil)
}

// As TestAgentStoppingAfterItsStateDirWasReplacedKeepsTheNewAgentsPidFile, for a supervised
// plugin's: the first agent, stopping its plugin, removed run/<id>.pid by its path, the second
// agent's record of its own process of that ID, which it could then not adopt after a restart
// (a second process started on the socket). An agent removes only a pid file naming its process.
func TestAgentStoppingAfterItsStateDirWasReplacedKeepsItsPluginsPidFiles(t *testing.T) {
	secondAgentsFileKept(t, "hp.pid", fmt.Sprintf("%d 1 - %d - -\n", os.Getpid(), os.Getpid()), func(f *fixture) { f.register(f.execPlugin("hp", "hostpath")) })
}

// secondAgentsFileKept runs an agent (with what setup registers, each plugin waited for until
// its pid file is written), moves its state dir aside once it is ready and puts a new one in
// its place holding run/<name> with data, as a second agent there writes it, stops the first,
// and fails unless the file is as the second agent wrote it.
func secondAgentsFileKept(t *testing.T, name, data string, setup func(*fixture)) {
	f := newFixture(t)
	if setup != nil {
		setup(f)
	}
	a, stop := f.startAgentWith(func(*Config) {})
	for deadline := time.Now().Add(20 * time.Second); !a.ready.Load() || setup != nil && f.pid("hp") == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the agent is not ready, its plugins started, after 20s")
		}
	}
	if err := os.Rename(f.dir, f.dir+".old"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(f.dir + ".old") })
	second := filepath.Join(f.dir, "run", name)
	if err := os.MkdirAll(filepath.Dir(second), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = stop() // its error is the replaced database's, or none when stopped before a pass saw it
	if b, err := os.ReadFile(second); err != nil || string(b) != data {
		t.Fatalf("the second agent's %s after the first stopped: %q, %v; want it kept", second, b, err)
	}
}
