package agent

import (
	"context"
	"errors"
	"log/slog"
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
