package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestRegisterAgainWithoutTheNodeServiceUnderMountsIsNotSilent: monolith "mem" has volume v
// published for alloc a (a staging and a target mounted through its node service). `volctl
// plugin register --id mem --type controller --socket SOCK` (what checkPluginType's refusal
// advises, "declare it as the type it serves", for a plugin answering without a node service)
// is accepted as "registered again, type, socket, controller_socket changed", the plugin shown
// healthy, and nothing names v: from then on no NodeUnpublishVolume or NodeUnstageVolume can
// be sent for v (the release is refused, "no node service on this host"), while reconcile
// passes report nothing and the claim shows published. refuseSocketMoveUnderMounts refuses the
// like for an exec plugin, and plugin deregister refuses, even with --force, to leave an owed
// unpublish with nothing to send it through; a declaration dropping the node half under
// recorded mounts is checked by neither. Correct: the registration is refused with nothing
// recorded, naming v and the way out (release first, or declare both halves), or at least its
// record says which volumes' mounts can no longer be undone through the plugin.
// Found by helper review79 (plugins).
func TestRegisterAgainWithoutTheNodeServiceUnderMountsIsNotSilent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	if live := h.liveClaims("v"); len(live) != 1 || live[0].State != store.ClaimPublished {
		t.Fatalf("premise: claims of v = %+v; want one published", live)
	}
	_, _, err := h.e.RegisterPluginOutcome(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginController, ControllerSocket: h.socket})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `volume(s) "v" are mounted`) || !strings.Contains(err.Error(), "nothing was recorded") {
		t.Fatalf("registration of mem as a controller plugin under v's mounts: %v; want it refused, naming v, nothing recorded", err)
	}
	if p := h.storedPlugin("mem"); p.Type != spec.PluginMonolith {
		t.Errorf("plugin mem after the refused registration: type %q; want it still the monolith", p.Type)
	}
	// Followed: the claim released first, the registration goes.
	if _, err := h.e.Release(h.ctx, "v", "a"); err != nil {
		t.Fatalf("release, as advised: %v", err)
	}
	if _, _, err := h.e.RegisterPluginOutcome(h.ctx, spec.Plugin{ID: "mem", Type: spec.PluginController, ControllerSocket: h.socket}); err != nil {
		t.Errorf("registration of mem as a controller plugin once v's claim is released: %v", err)
	}
}
