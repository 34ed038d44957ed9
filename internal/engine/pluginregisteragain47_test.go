package engine

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin registered again says what the registration did, as a volume's does: Unchanged for
// the declaration it has, Updated naming what changed (an exec block's env by that name only,
// never its values; the driver's version when it answers with another), Created for a split
// plugin's half registered beside the other. Its event says the same. Before, every one said
// "registered", and recorded "plugin registered", whatever it changed.
func TestRegisterPluginAgainSaysWhatItDid(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID, cfg.Version = "node-1", "2.0.0"
	upgraded, _ := csitest.Serve(t, csitest.WithServer(csitest.NewMemPlugin(cfg)))
	const secret = "s3cr3t-env-value"
	mono := spec.Plugin{ID: "mem", Type: spec.PluginMonolith, Socket: h.socket}
	slow := mono
	slow.Timeout = 5 * time.Minute
	moved := slow
	moved.Socket = upgraded
	for i, step := range []struct {
		p       spec.Plugin
		outcome SubmitOutcome
		changed string
		event   string
	}{
		// The harness registered mem on h.socket, as mono declares it.
		{mono, Unchanged, "", `plugin "mem" registered again, unchanged (`},
		{slow, Updated, "timeout", `plugin "mem" registered again, timeout changed (`},
		{slow, Unchanged, "", `plugin "mem" registered again, unchanged (`},
		// Another process of a newer version of the driver, on another socket.
		{moved, Updated, "socket version", `plugin "mem" registered again, socket, version changed (`},
	} {
		_, reg, err := h.e.RegisterPluginOutcome(h.ctx, step.p)
		if err != nil {
			t.Fatalf("registration %d: %v", i+1, err)
		}
		if reg.Outcome != step.outcome || strings.Join(reg.Changed, " ") != step.changed {
			t.Errorf("registration %d: %v changing %q, want %v changing %q", i+1, reg.Outcome, reg.Changed, step.outcome, step.changed)
		}
		evs := h.eventsOf("plugin-register", "", "")
		if len(evs) == 0 || !strings.HasPrefix(evs[0], step.event) { // newest first
			t.Errorf("registration %d: last plugin-register event %q, want it to begin %q", i+1, evs, step.event)
		}
	}

	// An exec block's env: named, its value never said.
	withExec := func(v string) spec.Plugin {
		p := spec.Plugin{ID: "ex", Type: spec.PluginMonolith, Socket: h.socket,
			Exec: &spec.Exec{Command: "/bin/true", Env: spec.Secrets{"TOKEN": v}}}
		return p
	}
	if _, reg, err := h.e.RegisterPluginOutcome(h.ctx, withExec("first")); err != nil || reg.Outcome != Created {
		t.Fatalf("first registration of ex: %v, %v; want Created", reg, err)
	}
	_, reg, err := h.e.RegisterPluginOutcome(h.ctx, withExec(secret))
	if err != nil || reg.Outcome != Updated || strings.Join(reg.Changed, " ") != "exec" {
		t.Errorf("ex registered with another env value: %v, %v; want Updated, exec changed", reg, err)
	}
	for _, ev := range h.eventsOf("plugin-register", "", "") {
		if strings.Contains(ev, secret) {
			t.Errorf("a plugin-register event says the env's value: %q", ev)
		}
	}

	// A split plugin: each half registered anew is Created, the node half joining the
	// controller's; the node half again is Unchanged.
	backend := csitest.NewMemPlugin(cfg)
	ctrlSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) { backend.RegisterServices(s, csitest.Identity, csitest.Controller) }))
	nodeSock, _ := csitest.Serve(t, csitest.WithRegister(func(s *grpc.Server) { backend.RegisterServices(s, csitest.Identity, csitest.Node) }))
	for i, step := range []struct {
		p       spec.Plugin
		outcome SubmitOutcome
	}{
		{spec.Plugin{ID: "split", Type: spec.PluginController, ControllerSocket: ctrlSock}, Created},
		{spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}, Created},
		{spec.Plugin{ID: "split", Type: spec.PluginNode, NodeSocket: nodeSock}, Unchanged},
	} {
		if _, reg, err := h.e.RegisterPluginOutcome(h.ctx, step.p); err != nil || reg.Outcome != step.outcome {
			t.Errorf("split registration %d (%s half): %v, %v; want %v", i+1, step.p.Type, reg, err, step.outcome)
		}
	}
	evs := h.eventsOf("plugin-register", "", `plugin "split"`)
	if want := `plugin "split" registered again, unchanged, with its controller on ` + ctrlSock + " and its node on " + nodeSock; len(evs) != 3 || !strings.HasPrefix(evs[0], want) {
		t.Errorf("split plugin's events = %q, want three, the last beginning %q", evs, want)
	}
}
