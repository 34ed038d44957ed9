package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
	"github.com/volctl/volctl/internal/store"
)

// TestPluginGoneAtConnectSaysWhatIsLeft: a claim or a release whose plugin's socket is gone
// fails before any RPC, at the connection. The claim stays recorded (taken, or on its way out)
// for reconcile, holding the volume, so the error must say so and what undoes it, as an RPC's
// retryable failure does: otherwise "is the plugin running?" reads as if nothing happened.
func TestPluginGoneAtConnectSaysWhatIsLeft(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.SingleNodeWriter)))
	h.create(volume("w", capab(spec.SingleNodeWriter)))
	h.claim(ClaimRequest{VolumeID: "w", Alloc: "b"})
	h.open(Config{}) // a new process: no cached connection
	h.stopServe()    // the plugin died: its socket is gone

	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil {
		t.Fatal("claim with the plugin's socket gone succeeded")
	}
	live := h.liveClaims("v")
	if len(live) != 1 || live[0].State != store.ClaimTaken {
		t.Fatalf("claims after the failed claim = %+v; want it held, taken", live)
	}
	for _, want := range []string{"does not exist", "left taken", "volctl reconcile", "volctl volume release v --alloc a"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("claim error = %q; want it to say %q", err, want)
		}
	}

	_, err = h.e.Release(h.ctx, "w", "b")
	if err == nil {
		t.Fatal("release with the plugin's socket gone succeeded")
	}
	for _, want := range []string{"does not exist", "left unpublishing", "volctl reconcile", "`volctl volume detach w --force --yes`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("release error = %q; want it to say %q", err, want)
		}
	}
}
