package engine

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/store"
)

// TestClaimWhoseFingerprintCannotBeRecordedIsNoPluginRefusal: a claim whose connection
// fingerprints the plugin (its recorded fingerprint not reusable: a restart, a new boot) and
// cannot record that fingerprint because the state's disk is full. The plugin answered every
// question; volctl's own state write failed. This round's first fix of claimProbe.refusal
// wrapped every connection error neither a conflict nor invalid as a conflict, so the
// disk-full error came back as the plugin's refusal of the claim, exit 4, advising to "claim
// again once `volctl plugin status mem` shows it healthy" of a plugin that is healthy. Only a
// plugin's error is a refusal now. Found by helper review67's own review.
func TestClaimWhoseFingerprintCannotBeRecordedIsNoPluginRefusal(t *testing.T) {
	h, after, free := diskFullHarness(t)
	defer free()
	h.create(volume("v"))
	h.update(func(tx *store.Tx) error {
		p, err := tx.Plugins().Get("mem")
		if err != nil {
			return err
		}
		p.Fingerprint.Sockets = nil // not reusable: the claim's connection fingerprints the plugin
		return tx.Plugins().SetFingerprint("mem", p.Fingerprint)
	})
	h.open(Config{})
	*after = csi.RPCNodeGetInfo // the fingerprint's last question answered, the disk fills
	_, err := h.e.Claim(h.ctx, ClaimRequest{VolumeID: "v", Alloc: "a"})
	*after = ""
	t.Logf("claim: %v", err)
	if err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("premise: the claim did not fail on the full disk: %v", err)
	}
	if errors.Is(err, ErrConflict) {
		t.Errorf("a claim that failed writing the state (disk full) is a conflict (exit 4, a refusal by the plugin): %v", err)
	}
	if strings.Contains(err.Error(), "shows it healthy") {
		t.Errorf("a claim that failed writing the state advises waiting for the (healthy) plugin: %v", err)
	}
}

// TestForcedDetachOfALegacyRowSaysTheNodeItDetached: a volume owed a
// ControllerUnpublishVolume whose staging row records no node ID (a row from before node IDs
// were recorded: attachedNode reads it as "this node"). The forced detach sends the unpublish
// to the plugin's node ID (c.fp.NodeID, "node-1") and then reports DetachResult.DetachedFrom =
// attachedNode(st) = "this node": --json said "detached_from": "this node", and stdout
// `Detached volume "v" from node "this node"`: no node is called that. It says the node the
// unpublish was sent for now. Found by helper review67's own review.
func TestForcedDetachOfALegacyRowSaysTheNodeItDetached(t *testing.T) {
	h := newHarness(t, nil)
	h.create(volume("v"))
	h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
	h.faults.FailAlways(csi.RPCControllerUnpublishVolume, codes.Unavailable)
	if _, err := h.e.Detach(h.ctx, "v", true); err != nil {
		t.Fatalf("first forced detach: %v", err)
	}
	h.faults.Clear()
	st, ok := h.staging("v")
	if !ok || !st.ControllerPublished {
		t.Fatalf("premise: the attachment is owed after the first forced detach: %+v %v", st, ok)
	}
	h.update(func(tx *store.Tx) error {
		st.NodeID = "" // as recorded before node IDs were
		return tx.Stagings().Put(&st)
	})
	res, err := h.e.Detach(h.ctx, "v", true)
	t.Logf("second forced detach: %+v %v", res, err)
	if err != nil {
		t.Fatalf("second forced detach: %v", err)
	}
	if res.DetachedFrom != "node-1" {
		t.Errorf("the forced detach sent ControllerUnpublishVolume for node %q and says it detached the volume from %q", "node-1", res.DetachedFrom)
	}
}
