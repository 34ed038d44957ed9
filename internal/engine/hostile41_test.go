package engine

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
	"github.com/volctl/volctl/internal/spec"
)

// A plugin attaches the volume on a claim's first ControllerPublishVolume and the answer is
// lost (DEADLINE_EXCEEDED after it acted); the retry of the same request is answered
// ALREADY_EXISTS, which a plugin that made the attachment itself would have answered OK (the
// CSI spec's idempotence). Found by TestFaultSequences (seed 396): before, the claim took that
// for another orchestrator's attachment (attachedOtherwise), withdrew its attach intent and
// left the attachment it had made itself, recorded nowhere: the plugin held the volume
// attached, the store knew of nothing, and nothing would ever detach it.
//
// Where the plugin could say before the first attempt that the volume was attached to the node
// by nobody (LIST_VOLUMES_PUBLISHED_NODES, asked by attachedAlready), the attachment is the lost
// attempt's: the intent stays recorded, the claim fails naming the refusal and the lost
// attempt, and its rollback detaches the volume. Where the plugin cannot say, volctl cannot tell
// that attachment from another orchestrator's, made between, and leaves it as the design has
// it for an attachment that may be in use; the error then says it may be this claim's own lost
// attempt's, and how to find out.
func TestAlreadyExistsAfterALostAttachIsTheClaimsOwnWhereThePluginListedNone(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		mutate func(*csitest.MemConfig)
		detach bool // the claim's rollback detaches the attachment
		want   []string
	}{
		{name: "listed none before", detach: true,
			want: []string{`volume "v"`, `plugin "mem"`, "ControllerPublishVolume", "AlreadyExists", "answer was lost",
				"listed no attachment", "rolled back", "ControllerUnpublishVolume"}},
		{name: "cannot list", mutate: func(c *csitest.MemConfig) { c.Controller.ListVolumesPublishedNodes = false }, detach: false,
			want: []string{`volume "v"`, "AlreadyExists", "answer was lost", "may be that attempt's", "left that attachment as it is"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.mutate)
			h.create(volume("v"))
			ext := h.externalID("v")
			h.faults.Inject(csi.RPCControllerPublishVolume, csitest.Fault{Code: codes.DeadlineExceeded, Lost: true, Times: 1})
			h.faults.Inject(csi.RPCControllerPublishVolume, csitest.Fault{Code: codes.AlreadyExists, Message: "volume is published to this node already", Times: 1})
			_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
			if err == nil {
				t.Fatal("the claim passed a ControllerPublishVolume answered ALREADY_EXISTS")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the claim's error does not say %q: %v", w, err)
				}
			}
			if cls := h.liveClaims("v"); len(cls) != 0 {
				t.Fatalf("claims after the final failure: %+v; want it rolled back", cls)
			}
			nodes := h.mem.PublishedNodes(ext)
			unpublished := h.faults.Calls(csi.RPCControllerUnpublishVolume)
			st, ok := h.staging("v")
			recorded := ok && st.ControllerPublished
			if tt.detach {
				if len(nodes) != 0 || unpublished != 1 || recorded {
					t.Errorf("after the rollback: the plugin has the volume attached to %v, ControllerUnpublishVolume sent %d times, the store records the attachment %v; "+
						"want it detached by one ControllerUnpublishVolume and nothing recorded", nodes, unpublished, recorded)
				}
				return
			}
			// The design's choice where volctl cannot tell: the attachment is left and the user
			// told; nothing of it is recorded, nor detached.
			if len(nodes) != 1 || unpublished != 0 || recorded {
				t.Errorf("the plugin has the volume attached to %v, ControllerUnpublishVolume sent %d times, the store records the attachment %v; "+
					"want it left attached, not detached, not recorded", nodes, unpublished, recorded)
			}
		})
	}
}

// A claim attached to node-1 whose NodeStageVolume failed (UNAVAILABLE: left for reconcile) is
// re-driven by reconcile after the plugin restarted reporting node-2: NodeStageVolume is not
// sent with node-1's publish context (attachedElsewhere), and the claim, not yet published, is
// rolled back, its release detaching node-1. Found by TestFaultSequences (seed 7128): the
// pass's problem then told the user to release alloc "a"'s claim, which its rollback had just
// released (`volctl volume release v --alloc a` finds no claim), and then to claim again. Its
// advice is now what is left to do: claim again, which attaches node-2; the claim of an alloc
// that still holds the attachment is still named.
func TestRolledBackClaimRefusedForAnotherNodesAttachmentIsNotAdvisedToBeReleased(t *testing.T) {
	t.Parallel()
	const key = "topology.hostpath.volctl.dev/node"
	at := func(node string) *spec.Topology { return &spec.Topology{Segments: map[string]string{key: node}} }
	for _, tt := range []struct {
		name     string
		topology bool // the volume is accessible from node-1's topology only, keyed by node ID
		want     []string
	}{
		{name: "no topology", want: []string{"rolled back", "claim the volume again, which attaches node \"node-2\""}},
		// Claiming again on node-2 is refused by the topology: the way out is the plugin back as
		// node-1 (TestHostRenamedUnderATopologyKeyedByNodeID).
		{name: "topology keyed by node ID", topology: true,
			want: []string{"rolled back", "cannot be claimed on node \"node-2\"", `start plugin "mem" with node ID "node-1" again`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(c *csitest.MemConfig) {
				if tt.topology {
					c.Topology, c.CreateTopology = at("node-1"), at("node-1")
				}
			})
			h.create(volume("v", capab(spec.MultiNodeMultiWriter)))
			ext := h.externalID("v")
			h.faults.FailNext(csi.RPCNodeStageVolume, codes.Unavailable, fastRetry.Attempts)
			if _, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"}); err == nil {
				t.Fatal("the claim passed a NodeStageVolume answered UNAVAILABLE at every attempt")
			}
			h.restartKeepingState(func(c *csitest.MemConfig) {
				c.NodeID = "node-2"
				if tt.topology {
					c.Topology = at("node-2")
				}
			})
			rep, err := h.e.Reconcile(h.ctx)
			if err == nil || len(rep.Problems) != 1 {
				t.Fatalf("reconcile after the node ID changed: %v, problems %+v; want the re-driven claim's refusal", err, rep.Problems)
			}
			msg := rep.Problems[0].Message
			for _, w := range append([]string{`volume "v" is attached to node "node-1"`, `now reports node "node-2"`, `this claim's rollback detaches node "node-1"`}, tt.want...) {
				if !strings.Contains(msg, w) {
					t.Errorf("the problem does not say %q: %s", w, msg)
				}
			}
			if strings.Contains(msg, "volume release") || strings.Contains(msg, `alloc "a"'s claim`) {
				t.Errorf("the problem advises releasing alloc \"a\"'s claim, which its rollback released: %s", msg)
			}
			if cls := h.liveClaims("v"); len(cls) != 0 {
				t.Errorf("claims after the rollback: %+v", cls)
			}
			if nodes := h.mem.PublishedNodes(ext); len(nodes) != 0 {
				t.Errorf("the volume is still attached to %v after the rollback", nodes)
			}
			if tt.topology {
				return
			}
			// Claimed again, it attaches node-2.
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			if nodes := h.mem.PublishedNodes(ext); !slices.Equal(nodes, []string{"node-2"}) {
				t.Errorf("claimed again: attached to %v, want node-2", nodes)
			}
		})
	}
}
