package engine

import (
	"context"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// withoutControllerService is a server interceptor for a node-only process of a split plugin:
// its GetPluginCapabilities advertises no CONTROLLER_SERVICE, as CSI has a process that serves
// no controller RPCs answer.
func withoutControllerService(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := resp.(*csipb.GetPluginCapabilitiesResponse); ok && err == nil {
		var kept []*csipb.PluginCapability
		for _, c := range r.GetCapabilities() {
			if c.GetService().GetType() == csipb.PluginCapability_Service_CONTROLLER_SERVICE {
				continue
			}
			kept = append(kept, c)
		}
		return &csipb.GetPluginCapabilitiesResponse{Capabilities: kept}, nil
	}
	return resp, err
}

// TestForcedDetachThroughANodeOnlyProcessKeepsTheAttachmentForTheControllerHalf: volume v is
// claimed (and attached, ControllerPublishVolume) through plugin mem registered as a monolith.
// The plugin is then registered by its node half alone, on the socket of a node-only process of
// the same driver, which (as CSI has a process that serves no controller RPCs) advertises no
// CONTROLLER_SERVICE. A forced detach then says the plugin "no longer serves its controller
// service" and drops the attachment record: registering the controller half again (the way
// volctl itself gives for a node-half registration, controllerHalfGone) and running reconcile
// sends nothing, and the volume stays attached to node-1 with nothing recorded to detach it.
// The registration lacks the controller half whatever the node process advertises; only its
// advertising decides (needsControllerHalf reads fp.Capabilities.Plugin.ControllerService, which
// a node-only process does not set), so the same registration state is kept owed for a monolith's
// process and forgotten for a node-only one. Correct: a plugin registered without a controller
// socket keeps the attachment owed, as TestForcedDetachWithoutTheControllerHalfKeepsTheAttachmentOwed
// has it, naming the controller half's registration, and reconcile sends the unpublish once the
// controller half is registered again.
// Found by helper review78 (detach).
func TestForcedDetachThroughANodeOnlyProcessKeepsTheAttachmentForTheControllerHalf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	ext := h.externalID("v")
	if got := h.mem.PublishedNodes(ext); len(got) != 1 {
		t.Fatalf("premise: plugin's attachments after the claim = %v, want node-1's", got)
	}
	// The driver's node-only process, on a socket of its own, the same backend.
	nodeSock, _ := csitest.Serve(t, csitest.WithInterceptor(withoutControllerService), csitest.WithRegister(func(s *grpc.Server) {
		h.mem.RegisterServices(s, csitest.Identity, csitest.Node)
	}))
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginNode, NodeSocket: nodeSock}); err != nil {
		t.Fatalf("register plugin mem's node half on the node-only process: %v", err)
	}
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("forced detach: %v", err)
	}
	w := strings.Join(res.Warnings, "\n")
	if strings.Contains(w, "no longer serves its controller service") {
		t.Errorf("forced detach warnings:\n%s\nthey say the plugin lost its controller service; plugin mem is registered by its node half alone (no controller socket): "+
			"want them to name the controller half's registration", w)
	}
	// The controller half registered again (the monolith's socket, as a controller plugin),
	// as the node-half advice says: reconcile should send the unpublish.
	if _, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginController, ControllerSocket: h.socket}); err != nil {
		t.Fatalf("register plugin mem's controller half again: %v", err)
	}
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Logf("reconcile: %v", err)
	}
	if got := h.mem.PublishedNodes(ext); len(got) != 0 {
		st, ok := h.staging("v")
		t.Fatalf("volume still attached to %v after a forced detach and a reconcile with the controller half registered again (ControllerUnpublishVolume sent %d times; staging row %+v, %v): "+
			"the forced detach forgot the attachment; it said:\n%s", got, h.mem.CallCount(csi.RPCControllerUnpublishVolume), st, ok, w)
	}
}

// TestOwedUnpublishRefusalReadsThePluginAsItIsNow: a release through plugin mem restarted
// without PUBLISH_UNPUBLISH_VOLUME keeps v's attachment owed. The plugin is then restarted with
// the capability again. `volume deregister v` refuses (the unpublish is still owed, rightly), but
// its advice is read from the fingerprint recorded before that restart: "Nothing can send it
// now, as last fingerprinted: plugin "mem" no longer has the controller capability
// PUBLISH_UNPUBLISH_VOLUME; start the plugin with that capability again": the plugin has it, and
// `volctl reconcile` alone sends the unpublish (shown below). owedUnpublishWay reads
// recordedFingerprint without reaching the plugin, where the same refusal for an owed
// NodeExpandVolume reaches it first (refreshForOwed) for this very reason. Correct: the
// refusal reaches the plugin first (or says the reading may be stale), and tells to run
// reconcile, not to restart a plugin that is fine.
// Found by helper review78 (detach).
func TestOwedUnpublishRefusalReadsThePluginAsItIsNow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = false })
	h.release("v", "a")
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("premise: staging after the release = %+v (kept %v); want the attachment kept, owed", st, ok)
	}
	h.restartWith(func(c *csitest.MemConfig) { c.Controller.PublishUnpublishVolume = true })
	_, err := h.e.DeregisterVolume(h.ctx, "v", false)
	if err == nil {
		t.Fatal("volume deregister with an owed unpublish: done, want a refusal")
	}
	if strings.Contains(err.Error(), "Nothing can send it now") || strings.Contains(err.Error(), "start the plugin with that capability again") {
		t.Errorf("volume deregister refusal:\n%v\nit says nothing can send the unpublish and to start the plugin with PUBLISH_UNPUBLISH_VOLUME again; "+
			"the plugin answers with it already, and `volctl reconcile` sends it: want the refusal to read the plugin as it is now", err)
	}
	// Premise of the complaint: reconcile, with nothing restarted, sends it.
	if _, err := h.e.Reconcile(h.ctx); err != nil {
		t.Fatalf("reconcile with the capability back: %v", err)
	}
	if n := h.mem.CallCount(csi.RPCControllerUnpublishVolume); n != 1 {
		t.Fatalf("premise: reconcile with the capability back sent ControllerUnpublishVolume %d times, want 1", n)
	}
}
