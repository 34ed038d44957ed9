package engine

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
)

// A plugin answering ABORTED (or UNAVAILABLE) at every attempt: the claim's error said only
// the code's hint, "retry shortly", as if nobody had, where volctl had tried the RPC at each of
// its attempts, waiting between them. It says so now, its code and class kept.
func TestRetriedOutFailureSaysTheAttempts(t *testing.T) {
	for _, code := range []codes.Code{codes.Aborted, codes.Unavailable} {
		t.Run(code.String(), func(t *testing.T) {
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.faults.FailNext(csi.RPCNodeStageVolume, code, fastRetry.Attempts)
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"})
			if err == nil {
				t.Fatalf("claim succeeded through a NodeStageVolume failing %s at every attempt", code)
			}
			want := fmt.Sprintf("at each of volctl's %d attempts", fastRetry.Attempts)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("claim = %v\nwant it to say %q", err, want)
			}
			if got := csi.CodeOf(err); got != code || !csi.IsRetryable(err) {
				t.Errorf("claim's error has code %s, retryable %v; want %s, retryable", got, csi.IsRetryable(err), code)
			}
			if n := h.faults.Calls(csi.RPCNodeStageVolume); n != fastRetry.Attempts {
				t.Errorf("NodeStageVolume sent %d times, want %d", n, fastRetry.Attempts)
			}
		})
	}
}
