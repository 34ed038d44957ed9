package csi_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A plugin's INTERNAL, UNKNOWN, FAILED_PRECONDITION or RESOURCE_EXHAUSTED answer sends the user to
// the plugin (its logs, its resources): the hint names which one, as a timeout's does. The
// chaos run's plugin root filled up: "CreateVolume: Internal: ... no space left on device (the
// plugin failed internally; check its logs)", with several plugins registered, named none.
func TestHintsSendingTheUserToThePluginNameIt(t *testing.T) {
	h := newHarness(t, csitest.DefaultMemConfig(), withClientConfig(csi.Config{Name: "hp"}))
	for _, code := range []codes.Code{codes.Internal, codes.Unknown, codes.FailedPrecondition, codes.ResourceExhausted} {
		h.faults.FailOnce(csi.RPCNodeGetInfo, code)
		_, err := h.client.NodeGetInfo(context.Background())
		if err == nil || !strings.Contains(err.Error(), `(plugin "hp" `) {
			t.Errorf("%s: error = %v, want its hint to name plugin \"hp\"", code, err)
		}
	}
}
