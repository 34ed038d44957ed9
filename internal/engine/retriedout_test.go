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
	t.Parallel()
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

// Attempts that failed with different codes are not "the same at each": the last one's error
// says it was the last (review25d).
func TestRetriedOutFailureOfDifferentCodesSaysTheLast(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.faults.FailNext(csi.RPCNodeStageVolume, codes.Unavailable, fastRetry.Attempts-1)
	h.faults.FailNext(csi.RPCNodeStageVolume, codes.Aborted, 1)
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "web-0"})
	if err == nil {
		t.Fatal("claim succeeded through a NodeStageVolume failing at every attempt")
	}
	if strings.Contains(err.Error(), "the same at each") || !strings.Contains(err.Error(), fmt.Sprintf("the last of volctl's %d attempts", fastRetry.Attempts)) {
		t.Errorf("claim = %v\nwant it to say the last of the attempts, not the same at each", err)
	}
	if got := csi.CodeOf(err); got != codes.Aborted {
		t.Errorf("claim's error has code %s, want the last attempt's, Aborted", got)
	}
}
