package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/spec"
)

// A read claim an older volctl published read-write, claimed again by its alloc (its task
// restarted): the claim path must not hand the path back as if it were read-only. It says so,
// a conflict naming the target and the way out, and leaves the mount and the claim as they are.
func TestClaimAgainOfAReadClaimMountedReadWriteSaysSo(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v", capab(spec.MultiNodeSingleWriter)))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "w"})
	r := h.claim(ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	h.mounts.mountReadWrite(r.TargetPath)
	h.mem.ResetCalls()
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "mounted read-write at "+r.TargetPath) ||
		!strings.Contains(err.Error(), "`volctl volume release v --alloc r`") {
		t.Fatalf("claim again of a read claim mounted read-write: %v; want a conflict naming the target and the way out", err)
	}
	if rpcs := h.rpcs(); len(rpcs) != 0 {
		t.Errorf("the claim again sent %v: the mount is under a running alloc, and must be left", rpcs)
	}
	live := h.liveClaims("v")
	if len(live) != 2 {
		t.Fatalf("claims after the claim again = %+v, want both held", live)
	}
	// A writer's claim again is no problem, nor a read claim's once released and claimed again.
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "w"})
	h.release("v", "r")
	h.mounts.mu.Lock()
	h.mounts.readWrite = nil // the next publish honours readonly
	h.mounts.mu.Unlock()
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "r", ReadOnly: true})
}
