package engine

import (
	"strings"
	"testing"

	"github.com/volctl/volctl/internal/csi"
	"github.com/volctl/volctl/internal/csi/csitest"
)

// TestCheckFailuresNameTheRPCTheyCheckedAfter: a release stopped by a check of volctl's, not
// by an RPC failing (a plugin that answers NodeUnpublishVolume or NodeUnstageVolume OK and
// leaves its mount; one restarted without STAGE_UNSTAGE_VOLUME, a staging still mounted), is
// recorded on the claim and in its failure event with the RPC the check was made after, or in
// place of, and no code (docs/json.md): `volctl events --json` readers filtering by rpc find
// it beside the plugin's own failures of that RPC. Before, its RPC column was empty.
func TestCheckFailuresNameTheRPCTheyCheckedAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, rpc string
		plugin    func(h *harness)
	}{
		{"unpublish leaves its mount", csi.RPCNodeUnpublishVolume, func(h *harness) { h.serveLeavingMounts(csi.RPCNodeUnpublishVolume) }},
		{"unstage leaves its mount", csi.RPCNodeUnstageVolume, func(h *harness) { h.serveLeavingMounts(csi.RPCNodeUnstageVolume) }},
		{"restarted without STAGE_UNSTAGE_VOLUME", csi.RPCNodeUnstageVolume, func(h *harness) {
			h.restartPlugin(func(cfg *csitest.MemConfig) { cfg.Node.StageUnstageVolume = false }, "v")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.create(volume("v"))
			h.claim(ClaimRequest{VolumeID: "v", Alloc: "a"})
			tc.plugin(h)
			_, err := h.e.Release(h.ctx, "v", "a")
			if err == nil || !strings.Contains(err.Error(), "still mounted") {
				t.Fatalf("release = %v; want it stopped by the mount left", err)
			}
			live := h.liveClaims("v")
			if len(live) != 1 {
				t.Fatalf("claims after the release: %+v; want the claim held for reconcile", live)
			}
			if live[0].LastRPC != tc.rpc || live[0].LastCode != "" {
				t.Fatalf("claim after the release records its failure as RPC %q, code %q; want %s, no code", live[0].LastRPC, live[0].LastCode, tc.rpc)
			}
			evs, err := h.e.Events(h.ctx, 0, EventFilter{Kind: "claim", VolumeID: "v"})
			if err != nil {
				t.Fatal(err)
			}
			var failures []EventInfo
			for _, ev := range evs {
				if strings.Contains(ev.Message, "for reconcile") {
					failures = append(failures, ev)
				}
			}
			if len(failures) != 1 || failures[0].RPC != tc.rpc || failures[0].Code != "" {
				t.Fatalf("failure events: %+v; want one, its rpc %s and no code", failures, tc.rpc)
			}
		})
	}
}
