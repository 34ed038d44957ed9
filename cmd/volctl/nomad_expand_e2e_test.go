package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// Nomad 2.0.5 has db from before (registered there by hand, no capacity). volctl's update
// sends its capacity_min, so Nomad's Register expands the volume through the controller
// (expandVolume), whose ControllerExpandVolume fails for a while (Unavailable): Nomad answers
// "unable to update volume: unable to expand volume: ...". Run again once the controller
// answers, the same command goes through.
func TestNomadRegisterWhileTheControllersExpandFails(t *testing.T) {
	if os.Getenv("NOMAD_BIN") == "" {
		t.Skip("set NOMAD_BIN to a Nomad binary to run the registration against a real agent whose controller expand fails")
	}
	w := makeNomadWorld(t, 4*time.Minute)
	var failing atomic.Bool
	var expands atomic.Int32
	failing.Store(true)
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "n1"
	cfg.Topology = &spec.Topology{Segments: map[string]string{"topology.hostpath.volctl.dev/node": "n1"}}
	mem := csitest.NewMemPlugin(cfg)
	socket := filepath.Join(w.dir, "mem.sock")
	csitest.ServeAt(t, socket, csitest.WithServer(mem), csitest.WithInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if strings.HasSuffix(info.FullMethod, "/ControllerExpandVolume") {
			expands.Add(1)
			if failing.Load() {
				return nil, status.Error(codes.Unavailable, "the storage backend is restarting")
			}
		}
		return h(ctx, req)
	}))
	w.stepTo("start nomad agent -dev on 127.0.0.1")
	w.startAgent()
	w.nomadAddr = w.agentAddr
	w.runLinkedPlugins("mem-plugin", socket, []string{"mem"})
	w.volctl(0, "plugin", "register", "--id", "mem", "--socket", socket)
	ext := w.createMemDB()
	w.stepTo("Nomad has db from before, registered by hand without a capacity")
	w.editInNomad("byhand.hcl", ext, `capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}`)
	w.stepTo("volctl nomad register db while the controller's expand fails")
	run := func(args ...string) (int, string) {
		cmd := exec.CommandContext(w.ctx, "volctl", args...)
		cmd.Env = append(append(os.Environ(), "VOLCTL_STATE_DIR="+w.state, "NOMAD_ADDR="+w.nomadAddr, "NO_COLOR=1"), w.env...)
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(b)
		}
		return 0, string(b)
	}
	code, out := run("nomad", "register", "db")
	if code != 1 || strings.Contains(out, "refuses this registration again") || !strings.Contains(out, "`volctl nomad register db` again") {
		t.Errorf("register while the controller's expand fails for a while (%d ControllerExpandVolume calls): exit %d, want 1 (running it again may finish it), saying to run it again:\n%s", expands.Load(), code, out)
	} else {
		t.Logf("register while the controller's expand fails: exit 1\n%s", out)
	}
	w.stepTo("the controller answers again: the same command")
	failing.Store(false)
	if code, out := run("nomad", "register", "db"); code != 0 {
		t.Errorf("register again once the controller answers: exit %d\n%s", code, out)
	} else {
		t.Logf("register again once the controller answers: exit 0\n%s", out)
	}
	w.nomad("volume", "deregister", "db")
	run("nomad", "release", "db")
	w.stopMemPluginInNomad("mem")
}
