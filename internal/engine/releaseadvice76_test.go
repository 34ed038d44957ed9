package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/spec"
)

// A release that fails leaves the claim for reconcile and advises, "if the plugin is gone",
// `volctl volume detach VOLUME --force --yes`: a forced detach of the whole volume, which frees
// every claim of it and unmounts every claim's target and the staging, not the one claim whose
// release failed. On a volume two allocs hold (multi-node-multi-writer), alloc a's failed release
// so tells the user to paste a command that also pulls alloc b's mount from under it (b never
// asked to be released, and its alloc may still be running on that mount) without a word about
// b. The advice must not drop claims it does not name: on a volume other allocs hold, either no
// volume-wide forced detach is advised, or the advice names the other claims it frees too.
// Found by helper review76.
func TestFailedReleaseAdviceDoesNotDropAnotherAllocsClaimUnsaid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cut  func(h *harness)
	}{
		{"plugin gone", func(h *harness) { h.stopServe() }},
		{"NodeUnpublishVolume failing", func(h *harness) { h.faults.FailAlways(csi.RPCNodeUnpublishVolume, codes.Internal) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			b := h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
			tc.cut(h)
			_, err := h.e.Release(h.ctx, "v", "a")
			if err == nil {
				t.Fatal("premise: alloc a's release passed")
			}
			advice := forceDetachCommand("v")
			if !strings.Contains(err.Error(), advice) {
				t.Fatalf("alloc a's failed release: %v\nwant it to name `%s` for a plugin gone", err, advice)
			}
			if !strings.Contains(err.Error(), `alloc "b"`) || !strings.Contains(err.Error(), "only once their allocs are done") {
				t.Errorf("alloc a's failed release advises `%s` without naming alloc b's claim (published at %s), which it frees too:\n%v", advice, b.TargetPath, err)
			}
			// Alloc b released first, a's failed release again advises the detach bare: it drops a alone.
			h.faults.Clear()
			if tc.name == "plugin gone" {
				h.serveAgain(t)
			}
			if _, err := h.e.Release(h.ctx, "v", "b"); err != nil {
				t.Fatalf("release of b with the plugin back: %v", err)
			}
			tc.cut(h)
			_, err = h.e.Release(h.ctx, "v", "a")
			if err == nil || !strings.Contains(err.Error(), advice+"` drops it if the plugin is gone") || strings.Contains(err.Error(), "other claim") {
				t.Errorf("alloc a's failed release, the volume's last claim: %v\nwant `%s` advised bare", err, advice)
			}
		})
	}
}
