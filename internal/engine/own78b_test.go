package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestOwedUnpublishThroughANodeOnlyRegistrationDoesNotSayThePluginAdvertisesControllerService:
// volume v is claimed (attached) through plugin mem, a monolith. The plugin then comes back
// node-only (it advertises no CONTROLLER_SERVICE, as its recorded fingerprint shows), and is
// registered again as what it now is, type "node". The attachment stays owed, and every word of
// it — the forced detach's warning, the volume deregister refusal (owedUnpublishWay) and
// reconcile's problem — says `plugin "mem" advertises CONTROLLER_SERVICE and only its node half
// is registered`: the plugin advertises no such thing. unpublishBlocked (release.go) picks
// controllerHalfGone's words whenever the registration has no controller socket (socketless),
// and those words assert the advertising that needsControllerHalf once checked. Before this
// commit the same state was said as it is ("no longer serves its controller service (no
// CONTROLLER_SERVICE)"). Correct: a registration without a controller socket whose process
// advertises no CONTROLLER_SERVICE is said as that (node half alone registered, and its
// process serves no controller service), never that it advertises CONTROLLER_SERVICE.
// Found by helper review78 (own5).
func TestOwedUnpublishThroughANodeOnlyRegistrationDoesNotSayThePluginAdvertisesControllerService(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.restartWith(func(c *csitest.MemConfig) { c.Plugin.ControllerService = false })
	p, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginNode, NodeSocket: h.socket})
	if err != nil {
		t.Fatalf("premise: register plugin mem again as the node plugin it now is: %v", err)
	}
	if slices.Contains(p.Capabilities.Plugin, "CONTROLLER_SERVICE") {
		t.Fatalf("premise: plugin mem's fingerprint %v advertises CONTROLLER_SERVICE; want a node-only process", p.Capabilities.Plugin)
	}
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("forced detach: %v", err)
	}
	if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
		t.Fatalf("premise: staging after the forced detach = %+v (kept %v); want the attachment kept, owed", st, ok)
	}
	said := map[string]string{"forced detach warnings": strings.Join(res.Warnings, "\n")}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", false); err == nil {
		t.Fatal("premise: volume deregister with an owed unpublish went through")
	} else {
		said["volume deregister refusal"] = err.Error()
	}
	rep, _ := h.e.Reconcile(h.ctx)
	for _, pr := range rep.Problems {
		if pr.VolumeID == "v" {
			said["reconcile problem"] += pr.Message
		}
	}
	for what, words := range said {
		if strings.Contains(words, "advertises CONTROLLER_SERVICE") {
			t.Errorf("%s:\n%s\nit says plugin mem advertises CONTROLLER_SERVICE; its process advertises %v (no CONTROLLER_SERVICE), as its fingerprint records: "+
				"want it said as it is", what, words, p.Capabilities.Plugin)
		}
	}
}

// TestForcedDetachThroughANeverControllerPluginNamesAWayOutThatWorks: plugin nodeonly is a node-only
// driver (it never serves a controller: no CONTROLLER_SERVICE), registered as type "node", and
// volume v through it carries an attachment row no claim holds (left by an older volctl). Before
// this commit a forced detach — the user's word to let go — dropped that record, saying the
// plugin serves no controller service and to detach with the storage provider's tools. Now
// (forceDetach, controllerHalfAway: any registration without a controller socket) it keeps it
// owed and its only advice is "register the plugin's controller half (a plugin block with the
// same ID, type "controller") and `volctl reconcile` sends it". Followed on the only socket the
// driver has, the registration is refused (the halves would share one socket), and there is no
// other controller to register: the attachment can never be sent, reconcile reports it every
// pass, the volume and plugin deregisters refuse, and the forced detach named no way to forget
// it (a release keeping the same attachment names `volctl volume deregister v --force --yes`,
// keptAttachment). Correct: the forced detach either forgets what no controller can ever undo,
// as before, or names the way out that works (the storage provider's tools and `volctl volume
// deregister v --force --yes`), not only a registration that cannot be made.
// Found by helper review78 (own5).
func TestForcedDetachThroughANeverControllerPluginNamesAWayOutThatWorks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := csitest.DefaultMemConfig()
	cfg.NodeID = "node-1"
	cfg.Plugin.ControllerService = false
	node := csitest.NewMemPlugin(cfg)
	sock, _ := csitest.Serve(t, csitest.WithServer(node))
	p, err := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "nodeonly", Type: spec.PluginNode, NodeSocket: sock})
	if err != nil {
		t.Fatalf("premise: register node-only plugin nodeonly as type node: %v", err)
	}
	if slices.Contains(p.Capabilities.Plugin, "CONTROLLER_SERVICE") {
		t.Fatalf("premise: plugin nodeonly advertises CONTROLLER_SERVICE (%v); want a node-only driver", p.Capabilities.Plugin)
	}
	node.AddVolume(csi.Volume{ID: "ext-v"})
	sv := volume("v")
	sv.PluginID, sv.ExternalID = "nodeonly", "ext-v"
	if _, err := h.e.RegisterVolume(h.ctx, sv); err != nil {
		t.Fatalf("premise: register volume v: %v", err)
	}
	// An attachment row no claim holds, as an older volctl left it.
	h.update(func(tx *store.Tx) error {
		return tx.Stagings().Put(&store.Staging{VolumeID: "v", PluginID: "nodeonly", NodeID: "node-1", ControllerPublished: true})
	})
	res, err := h.e.Detach(h.ctx, "v", true)
	if err != nil {
		t.Fatalf("forced detach: %v", err)
	}
	w := strings.Join(res.Warnings, "\n")
	st, kept := h.staging("v")
	if !kept || !st.ControllerPublished {
		t.Fatalf("forced detach through node-only plugin nodeonly: staging %+v (kept %v); want the attachment kept, owed (a controller half may exist)", st, kept)
	}
	// Its controller half cannot be registered here (there is none)...
	if _, regErr := h.e.RegisterPlugin(h.ctx, spec.Plugin{ID: "nodeonly", Type: spec.PluginController, ControllerSocket: sock}); regErr == nil {
		t.Fatal("precondition: a controller half registered on the node-only driver's socket")
	}
	// ...so the other way out it names, followed, ends it.
	if !strings.Contains(w, "volctl volume deregister v --force --yes") || !strings.Contains(w, "storage provider's tools") {
		t.Fatalf("forced detach through node-only plugin nodeonly kept v's attachment recorded, owed, and warned:\n%s\n"+
			"want the way out that works where no controller half exists: the storage provider's tools and `volctl volume deregister v --force --yes`", w)
	}
	if _, err := h.e.DeregisterVolume(h.ctx, "v", true); err != nil {
		t.Fatalf("volume deregister v --force, as advised: %v", err)
	}
}
