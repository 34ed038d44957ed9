package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestPublishContextOverGRPCLimit: a plugin whose publish_context is over gRPC's message
// limit fails ControllerPublishVolume on volctl's side with RESOURCE_EXHAUSTED. That is final:
// sent once, not retried, the claim rolled back (which undoes the attachment the plugin did
// make), and the error says what happened instead of blaming the node's max volumes.
func TestPublishContextOverGRPCLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *csitest.MemConfig) {
		c.PublishContext = map[string]string{"device": strings.Repeat("x", 5<<20)}
	})
	h.create(volume("v"))
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	if err == nil || !strings.Contains(err.Error(), "the plugin answered with a message of ") ||
		!strings.Contains(err.Error(), "publish_context") || strings.Contains(err.Error(), "max volumes") {
		t.Fatalf("claim error = %v, want the oversized answer explained", err)
	}
	if n := h.faults.Calls(csi.RPCControllerPublishVolume); n != 1 {
		t.Errorf("ControllerPublishVolume sent %d times, want once (final, not retried)", n)
	}
	if !strings.Contains(err.Error(), "rolled back") {
		t.Errorf("error does not say the claim was rolled back: %v", err)
	}
	if live := h.liveClaims("v"); len(live) != 0 {
		t.Fatalf("claim left after a final error: %+v", live)
	}
	if pub := h.mem.PublishedNodes(h.externalID("v")); len(pub) != 0 {
		t.Fatalf("volume still controller-published to %v after rollback", pub)
	}
}
