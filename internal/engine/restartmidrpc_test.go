package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// chaos32: the agent restarts the plugin while one of a command's RPCs is in flight: the
// instance the RPC reached dies without answering (UNAVAILABLE), and a new one, on a new socket
// file, serves what the plugin keeps on disk (the same MemPlugin's volumes, stagings and
// targets), with the capabilities edit gives it (none changed when edit is nil).

// restartingHarness is a harness whose plugin is restarted so the first time method (a gRPC
// full method name) reaches it once arm is called; initial edits its configuration before.
func restartingHarness(t *testing.T, method string, initial, edit func(*csitest.MemConfig)) (h *harness, arm func(), restarted <-chan struct{}) {
	t.Helper()
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	if initial != nil {
		initial(&cfg)
	}
	mem := csitest.NewMemPlugin(cfg)
	var (
		mu     sync.Mutex
		armed  bool
		stop   func()
		socket string
	)
	done := make(chan struct{})
	hook := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		fire := armed && info.FullMethod == method
		armed = armed && !fire
		mu.Unlock()
		if !fire {
			return handler(ctx, req)
		}
		stop()
		if edit != nil {
			mem.Reconfigure(edit)
		}
		csitest.ServeAt(t, socket, csitest.WithServer(mem))
		close(done)
		return nil, status.Error(codes.Unavailable, "the plugin was killed")
	}
	socket, stop = csitest.Serve(t, csitest.WithServer(mem), csitest.WithInterceptor(hook))
	h = &harness{t: t, ctx: context.Background(), mem: mem, faults: csitest.NewFaults(), socket: socket, dir: t.TempDir(), mounts: newFakeMounts(mem)}
	h.open(Config{})
	h.registerPlugin("mem", socket)
	return h, func() { mu.Lock(); armed = true; mu.Unlock() }, done
}

// The same plugin restarted, same capabilities, while a claim's NodeStageVolume and a release's
// NodeUnstageVolume are in flight: the command goes on with the new instance and finishes, the
// store matching the plugin.
func TestPluginRestartedMidRPCSameCapabilitiesFinishes(t *testing.T) {
	for _, tc := range []struct{ method, op string }{
		{"/csi.v1.Node/NodeStageVolume", "claim"},
		{"/csi.v1.Node/NodePublishVolume", "claim"},
		{"/csi.v1.Node/NodeUnstageVolume", "release"},
		{"/csi.v1.Controller/ControllerUnpublishVolume", "release"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			h, arm, restarted := restartingHarness(t, tc.method, nil, nil)
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			var err error
			if tc.op == "claim" {
				arm()
				_, err = h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			} else {
				h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
				arm()
				_, err = h.e.Release(h.ctx, "v", "a")
			}
			waitFor(t, restarted, "the plugin's restart")
			if err != nil {
				t.Errorf("%s with the plugin restarted (same driver, same capabilities) during %s: %v", tc.op, tc.method, err)
			}
			h.storeMatchesPlugin(tc.op + " across the restart")
		})
	}
}

// The same driver restarted without STAGE_UNSTAGE_VOLUME while a claim's NodeStageVolume is in
// flight, and with it while a claim's NodePublishVolume is (a volume never staged): the claim's
// steps were chosen by the capabilities before, so it sends nothing more, stops saying the
// plugin restarted with other capabilities, which (it said "other capabilities or another node
// ID", not which), and what to run; reconcile then publishes it by the new capabilities, the
// store matching the plugin.
func TestPluginRestartedMidRPCWithOtherCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name, method string
		stage        bool   // the plugin's STAGE_UNSTAGE_VOLUME before the restart
		change       string // what the claim's error says changed
	}{
		{"lost-stage", "/csi.v1.Node/NodeStageVolume", true, "lost STAGE_UNSTAGE_VOLUME"},
		{"gained-stage", "/csi.v1.Node/NodePublishVolume", false, "gained STAGE_UNSTAGE_VOLUME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, arm, restarted := restartingHarness(t, tc.method,
				func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = tc.stage },
				func(c *csitest.MemConfig) { c.Node.StageUnstageVolume = !tc.stage })
			h.create(volume("v", capab(spec.SingleNodeWriter)))
			arm()
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			waitFor(t, restarted, "the plugin's restart")
			t.Logf("claim: %v", err)
			if err == nil {
				t.Fatalf("the claim succeeded by the capabilities of the plugin before its restart")
			}
			for _, want := range []string{`"v"`, "`volctl reconcile`", tc.change} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("claim: %v\nwant it to say %q: the volume, what to run, what changed", err, want)
				}
			}
			rep, rerr := h.e.Reconcile(h.ctx)
			if rerr != nil || !rep.OK() {
				t.Fatalf("reconcile after the restart: %v, problems %+v", rerr, rep.Problems)
			}
			h.storeMatchesPlugin("reconcile after the restart")
			if live := h.liveClaims("v"); len(live) != 1 {
				t.Errorf("live claims %+v, want a's, published by reconcile", live)
			}
		})
	}
}
