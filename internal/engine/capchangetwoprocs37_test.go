package engine

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// agent37: the agent (one volctl process) restarts a supervised plugin with other capabilities
// while a claim runs in another volctl process, between two of the claim's steps: its
// NodeStageVolume answered by the old instance, its NodePublishVolume not sent yet. The new
// instance listens (its socket file renamed over the old one's) while the old one still runs,
// so the claim's connection still reaches the old instance, which would take the publish by the
// capabilities it had. What must hold: the claim sends no step to either instance by the
// capabilities it started with (its NodePublishVolume is not sent, and its error says what
// changed); the change is recorded once, whichever process fingerprints the new instance first
// and however they race; and plugin status, in either process, shows it.

// stageHeldHarness is a harness whose plugin holds the first NodeStageVolume's answer, once it
// has staged, until release is called: staged is closed then. replace starts the plugin's new
// instance on its socket with edit applied, the old one still serving.
func stageHeldHarness(t *testing.T) (h *harness, staged <-chan struct{}, release func(), replace func(edit func(*csitest.MemConfig))) {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	cfg.Node.StageUnstageVolume = true
	mem := csitest.NewMemPlugin(cfg)
	stagedCh, gate := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if info.FullMethod == "/csi.v1.Node/NodeStageVolume" && err == nil {
			first := false
			once.Do(func() { first = true })
			if first {
				close(stagedCh)
				<-gate
			}
		}
		return resp, err
	}
	socket, _ := csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(hold))
	h = &harness{t: t, ctx: context.Background(), mem: mem, faults: csitest.NewFaults(), socket: socket, dir: t.TempDir(), mounts: newFakeMounts(mem)}
	h.open(Config{})
	h.registerPlugin("mem", socket)
	var relOnce sync.Once
	release = func() { relOnce.Do(func() { close(gate) }) }
	t.Cleanup(release)
	replace = func(edit func(*csitest.MemConfig)) {
		mem.Reconfigure(edit)
		csitest.ServeAt(t, socket, csitest.WithServer(mem), csitest.ReplacingSocket())
	}
	return h, stagedCh, release, replace
}

func TestPluginRestartedWithOtherCapabilitiesBetweenAnotherProcesssClaimSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// first is who fingerprints the new instance first: the agent's probe, or the claim's
		// process (its next step), the agent's probe then racing its next connection.
		agentFirst bool
	}{
		{"agent-probes-first", true},
		{"claim-sees-it-first", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, staged, release, replace := stageHeldHarness(t)
			agent := h.openSecond() // the agent's process, on the same state dir
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			done := make(chan error, 1)
			go func() {
				_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
				done <- err
			}()
			waitFor(t, staged, "the claim's NodeStageVolume to be staged")
			h.mem.ResetCalls()
			// The agent restarts the plugin without STAGE_UNSTAGE_VOLUME: the new instance
			// listens on the socket, the old one still runs (the claim's connection reaches it).
			replace(func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = false })
			if tc.agentFirst {
				if _, err := agent.PluginStatus(h.ctx, "mem"); err != nil {
					t.Fatalf("the agent's probe of the new instance: %v", err)
				}
			}
			release()
			err := <-done
			t.Logf("claim: %v", err)
			if err == nil {
				t.Fatalf("the claim succeeded by the capabilities of the plugin before its restart")
			}
			for _, want := range []string{`"v"`, "lost STAGE_UNSTAGE_VOLUME", "`volctl reconcile`"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("claim: %v\nwant it to say %q: the volume, what changed, what to run", err, want)
				}
			}
			for _, c := range h.mem.Calls() {
				if c.RPC == csi.RPCNodePublishVolume || c.RPC == csi.RPCNodeStageVolume {
					t.Errorf("%s sent after the restart by the claim's steps, chosen by the capabilities before it", c.RPC)
				}
			}
			if !tc.agentFirst {
				// Both processes fingerprint the new instance at once: the agent's probe and
				// the claim's process's next connection (its plugin status).
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, e := range []*Engine{agent, h.e} {
					wg.Add(1)
					go func() { defer wg.Done(); _, errs[i] = e.PluginStatus(h.ctx, "mem") }()
				}
				wg.Wait()
				if errs[0] != nil || errs[1] != nil {
					t.Fatalf("plugin status in the two processes: %v, %v", errs[0], errs[1])
				}
			}
			for _, e := range []*Engine{h.e, agent} {
				ps, err := e.PluginStatus(h.ctx, "mem")
				if err != nil || len(ps) != 1 {
					t.Fatalf("plugin status: %+v, %v", ps, err)
				}
				ch := ps[0].CapabilityChange
				if ch == nil || !slices.Equal(ch.Lost, []string{"STAGE_UNSTAGE_VOLUME"}) || len(ch.Gained) != 0 {
					t.Errorf("plugin status shows capability change %+v; want STAGE_UNSTAGE_VOLUME lost", ch)
				}
				if slices.Contains(ps[0].Capabilities.Node, "STAGE_UNSTAGE_VOLUME") {
					t.Errorf("plugin status shows node capabilities %v, the old instance's", ps[0].Capabilities.Node)
				}
			}
			if evs := h.eventsSaying("plugin-capabilities", "lost: STAGE_UNSTAGE_VOLUME"); len(evs) != 1 {
				t.Errorf("%d plugin-capabilities events for the one restart, want 1: %q", len(evs), evs)
			}
		})
	}
}
