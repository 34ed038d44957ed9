package csitest_test

import (
	"context"
	"os"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// citime35: a plugin restarted with its new instance listening before the old one stops
// (ReplacingSocket): the old instance's stop, and the listener's close, removed the socket path
// whatever file was there by then, the new instance's included, and a client reconnecting found
// nothing listening. Stop removes only the socket file its server made; the new instance
// answers at the path, before and after the old one stops, and its own stop removes its file.
func TestStopRemovesOnlyTheSocketItMade(t *testing.T) {
	t.Parallel()
	oldMem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "the-new-instance"
	socket, stopOld := csitest.Serve(t, csitest.WithServer(oldMem))
	stopNew := csitest.ServeAt(t, socket, csitest.WithServer(csitest.NewMemPlugin(cfg)), csitest.ReplacingSocket())
	nodeID := func(when string) {
		t.Helper()
		c, err := csi.New(csi.Config{NodeSocket: socket})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		defer c.Close()
		info, err := c.NodeGetInfo(context.Background())
		if err != nil || info.NodeID != cfg.NodeID {
			t.Fatalf("%s: NodeGetInfo at %s = %+v, %v; want the new instance's node ID %q", when, socket, info, err, cfg.NodeID)
		}
	}
	nodeID("the new instance listening, the old one not stopped yet")
	stopOld()
	if _, err := os.Lstat(socket); err != nil {
		t.Fatalf("the old instance's stop removed the new instance's socket file: %v", err)
	}
	nodeID("the old instance stopped")
	stopNew()
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Errorf("the new instance's stop left its socket file %s: %v", socket, err)
	}
}

// The honest restart, stop then serve again at the same path (as most tests restart a plugin),
// still works, and a stop removes the file when it is its own.
func TestStopThenServeAtTheSamePath(t *testing.T) {
	t.Parallel()
	mem := csitest.NewMemPlugin(csitest.DefaultMemConfig())
	socket, stop := csitest.Serve(t, csitest.WithServer(mem))
	stop()
	if _, err := os.Lstat(socket); !os.IsNotExist(err) {
		t.Fatalf("stop left its socket file %s: %v", socket, err)
	}
	csitest.ServeAt(t, socket, csitest.WithServer(mem))
	c := csitest.NewClient(t, csi.Config{NodeSocket: socket})
	if _, err := c.NodeGetInfo(context.Background()); err != nil {
		t.Fatalf("NodeGetInfo after the restart at %s: %v", socket, err)
	}
}
