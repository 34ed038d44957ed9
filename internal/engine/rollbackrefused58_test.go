package engine

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// A claim whose NodePublishVolume the plugin refused for good (it published nothing) is rolled
// back, and the rollback's NodeUnpublishVolume was answered FAILED_PRECONDITION "not published"
// (none of CSI's answers to it: a target not published is OK) or UNIMPLEMENTED (by a plugin
// that implements neither): the claim the alloc never got was held unpublishing for good, sent
// NodeUnpublishVolume at every reconcile pass, and the single-node volume refused every other
// alloc until a forced detach (found by review 58). The mount table decides, as for a staging
// never confirmed: nothing mounted at the target, the publication is taken as undone. The
// same answers for a target that was published are not taken: FAILED_PRECONDITION is the
// plugin's refusal then, and UNIMPLEMENTED over a mount leaves it mounted.
func TestTargetNeverPublishedWhoseUnpublishIsRefusedIsNotHeldForGood(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.FailedPrecondition, codes.Unimplemented} {
		t.Run(code.String(), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v")) // single-node-writer
			h.faults.FailOnce(csi.RPCNodePublishVolume, codes.InvalidArgument)
			h.faults.Inject(csi.RPCNodeUnpublishVolume, csitest.Fault{Code: code, Message: "volume is not published at this target"})
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err == nil || !strings.Contains(err.Error(), "(the claim was rolled back)") {
				t.Fatalf("claim whose NodePublishVolume was refused = %v; want it rolled back", err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("the claim the alloc never got is held %s (releasing %t): %s", live[0].State, live[0].Releasing, live[0].LastError)
			}
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"}) // fails the test if refused

			// Published, the same answers keep the claim.
			_, err = h.e.Release(h.ctx, "v", "b")
			want := map[codes.Code]string{
				codes.FailedPrecondition: "volume is not published at this target",
				codes.Unimplemented:      "is still mounted, but plugin \"mem\", a node plugin, answered",
			}[code]
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("release of a published claim whose NodeUnpublishVolume is answered %v = %v; want it refused (%q)", code, err, want)
			}
			if live := h.liveClaims("v"); len(live) != 1 {
				t.Fatalf("after the refused release of a published claim, live claims = %+v; want it held", live)
			}
		})
	}
}

// The controller side (found by review 58): a claim whose only ControllerPublishVolume the
// plugin refused for good is rolled back, the attach intent undone by ControllerUnpublishVolume,
// which a plugin answers FAILED_PRECONDITION "not published to the node" (none of CSI's
// answers to it) or UNIMPLEMENTED (it advertises PUBLISH_UNPUBLISH_VOLUME and implements neither
// call): the claim was held node-detached for good, and the volume with it. The plugin's own
// listing decides, as after an OK: it lists the volume published nowhere, so the attachment is
// taken as undone. An attachment it lists is kept: a published claim whose ControllerUnpublish
// is answered FAILED_PRECONDITION stays held.
func TestAttachmentNeverMadeWhoseUnpublishIsRefusedIsNotHeldForGood(t *testing.T) {
	t.Parallel()
	for _, code := range []codes.Code{codes.FailedPrecondition, codes.Unimplemented} {
		t.Run(code.String(), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.faults.FailOnce(csi.RPCControllerPublishVolume, codes.InvalidArgument)
			h.faults.Inject(csi.RPCControllerUnpublishVolume, csitest.Fault{Code: code, Message: "volume is not published to node node-1"})
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err == nil || !strings.Contains(err.Error(), "(the claim was rolled back)") {
				t.Fatalf("claim whose ControllerPublishVolume was refused = %v; want it rolled back", err)
			}
			if live := h.liveClaims("v"); len(live) != 0 {
				t.Fatalf("the claim the alloc never got is held %s (releasing %t): %s", live[0].State, live[0].Releasing, live[0].LastError)
			}
			if st, ok := h.staging("v"); ok && st.ControllerPublished {
				t.Fatalf("the attachment never made is still recorded: %+v", st)
			}
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "b"})
			if nodes := h.mem.PublishedNodes(h.externalID("v")); len(nodes) != 1 {
				t.Fatalf("published to %v after b's claim (harness)", nodes)
			}
			_, err = h.e.Release(h.ctx, "v", "b")
			if err == nil || !strings.Contains(err.Error(), "volume is not published to node node-1") {
				t.Fatalf("release of a claim whose attachment the plugin lists, its ControllerUnpublishVolume answered %v = %v; want it refused", code, err)
			}
			if st, ok := h.staging("v"); !ok || !st.ControllerPublished {
				t.Errorf("the attachment the plugin lists is no longer recorded: %+v", st)
			}
		})
	}
}
